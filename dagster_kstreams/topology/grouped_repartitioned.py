"""The two configurations that name a repartition topic and its serdes: ``Grouped`` (for
``group_by``) and ``Repartitioned`` (for ``repartition``), as Kafka Streams' ``Grouped.java`` and
``Repartitioned.java``. Immutable: ``with_*`` returns a copy."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

from .fluent import WithName, WithSerdes, install_static_factories
from .named import validate_name
from .serdes import Serde

__all__ = ["Grouped", "Repartitioned"]


@dataclass(frozen=True)
class Grouped(WithName, WithSerdes):
    name: Optional[str] = None
    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None

    def __post_init__(self):
        validate_name(self.name)

    @staticmethod
    def as_(name: str) -> "Grouped":
        return Grouped(name)

    @staticmethod
    def with_(*args) -> "Grouped":
        """``Grouped.with_(key_serde, value_serde)`` or ``Grouped.with_(name, key_serde, value_serde)``."""
        if len(args) == 3:
            return Grouped(args[0], args[1], args[2])
        if len(args) == 2:
            return Grouped(None, args[0], args[1])
        raise TypeError("Grouped.with_ takes (key_serde, value_serde) or (name, key_serde, value_serde)")


@dataclass(frozen=True)
class Repartitioned(WithName, WithSerdes):
    name: Optional[str] = None
    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    number_of_partitions: Optional[int] = None
    stream_partitioner: Optional[Callable] = None

    def __post_init__(self):
        validate_name(self.name)
        if self.number_of_partitions is not None and (
            not isinstance(self.number_of_partitions, int) or self.number_of_partitions < 1
        ):
            raise ValueError(f"Repartitioned number_of_partitions must be a positive int, got {self.number_of_partitions!r}")

    @staticmethod
    def as_(name: str) -> "Repartitioned":
        return Repartitioned(name=name)

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None) -> "Repartitioned":
        return Repartitioned(key_serde=key_serde, value_serde=value_serde)

    @staticmethod
    def number_of_partitions_(n: int) -> "Repartitioned":
        return Repartitioned(number_of_partitions=n)

    @staticmethod
    def stream_partitioner_(partitioner: Callable) -> "Repartitioned":
        return Repartitioned(stream_partitioner=partitioner)

    def with_number_of_partitions(self, n: int) -> "Repartitioned":
        return replace(self, number_of_partitions=n)

    def with_stream_partitioner(self, partitioner: Callable) -> "Repartitioned":
        return replace(self, stream_partitioner=partitioner)


install_static_factories(Grouped, {"key_serde": lambda serde: Grouped(key_serde=serde),
                                   "value_serde": lambda serde: Grouped(value_serde=serde)})
install_static_factories(Repartitioned, {"number_of_partitions": Repartitioned.number_of_partitions_,
                                         "stream_partitioner": Repartitioned.stream_partitioner_})
