"""Options of two KStream operators: ``Branched`` (a branch of ``split()``) and ``Printed``
(``print()``), as Kafka Streams' ``Branched.java`` and ``Printed.java``. Immutable: ``with_*``
returns a copy."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

from .fluent import WithName
from .named import validate_name

__all__ = ["Branched", "Printed"]


@dataclass(frozen=True)
class Branched(WithName):
    name: Optional[str] = None
    chain_function: Optional[Callable] = None
    chain_consumer: Optional[Callable] = None

    def __post_init__(self):
        validate_name(self.name)

    @staticmethod
    def as_(name: str) -> "Branched":
        return Branched(name=name)

    @staticmethod
    def with_function(chain: Callable, name: Optional[str] = None) -> "Branched":
        return Branched(name=name, chain_function=chain)

    @staticmethod
    def with_consumer(chain: Callable, name: Optional[str] = None) -> "Branched":
        return Branched(name=name, chain_consumer=chain)


@dataclass(frozen=True)
class Printed:
    label: Optional[str] = None
    to_sys_out: bool = True
    file_path: Optional[str] = None
    name: Optional[str] = None
    mapper: Optional[Callable] = None

    @staticmethod
    def to_sys_out_() -> "Printed":
        return Printed()

    @staticmethod
    def to_file(file_path: str) -> "Printed":
        return Printed(to_sys_out=False, file_path=file_path)

    def with_label(self, label: str) -> "Printed":
        return replace(self, label=label)

    def with_name(self, name: str) -> "Printed":
        validate_name(name)
        return replace(self, name=name)

    def with_key_value_mapper(self, mapper: Callable) -> "Printed":
        return replace(self, mapper=mapper)


# Java's Printed.toSysOut() is a static factory; keep that spelling available too.
Printed.to_sys_out = staticmethod(Printed.to_sys_out_)  # type: ignore[assignment]
Printed.toSysOut = staticmethod(Printed.to_sys_out_)  # type: ignore[attr-defined]
