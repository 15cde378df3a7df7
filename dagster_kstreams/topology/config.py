"""Kafka Streams' DSL configuration objects, named as in Java (``as`` is ``as_``).

Each is immutable: the ``with_*`` methods return a copy, as Java's fluent setters do in effect.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Callable, Optional

from .serdes import Serde

__all__ = [
    "Named", "Consumed", "Produced", "Grouped", "Materialized", "Repartitioned", "Joined",
    "StreamJoined", "Branched", "Printed", "Suppressed", "BufferConfig", "TopologyException",
    "AutoOffsetReset",
]

_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_NAME_LENGTH = 249


class TopologyException(Exception):
    """An invalid topology (Kafka Streams' ``TopologyException``)."""

    def __init__(self, message: str):
        super().__init__(f"Invalid topology: {message}")


def validate_name(name: Optional[str], what: str = "Name") -> Optional[str]:
    if name is None:
        return None
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a str, got {type(name).__name__}")
    if not name:
        raise TopologyException(f"{what} is illegal, it can't be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise TopologyException(f"{what} is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, name: {name}")
    if not _LEGAL_NAME.match(name):
        raise TopologyException(
            f"{what} \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        )
    return name


def _millis(duration: timedelta | int | None, what: str) -> Optional[int]:
    if duration is None:
        return None
    if isinstance(duration, timedelta):
        ms = duration // timedelta(milliseconds=1)
    elif isinstance(duration, int) and not isinstance(duration, bool):
        ms = duration
    else:
        raise TypeError(f"{what} must be a datetime.timedelta, got {type(duration).__name__}")
    if ms < 0:
        raise ValueError(f"{what} must not be negative: {duration}")
    return ms


class AutoOffsetReset:
    EARLIEST = "earliest"
    LATEST = "latest"
    NONE = "none"


@dataclass(frozen=True)
class Named:
    name: Optional[str] = None

    def __post_init__(self):
        validate_name(self.name)

    @staticmethod
    def as_(name: str) -> "Named":
        return Named(name)

    def with_name(self, name: str) -> "Named":
        return Named(name)


@dataclass(frozen=True)
class Consumed:
    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    timestamp_extractor: Optional[Callable] = None
    offset_reset: Optional[str] = None
    processor_name: Optional[str] = None

    def __post_init__(self):
        validate_name(self.processor_name, "Processor name")

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None,
              timestamp_extractor: Optional[Callable] = None, offset_reset: Optional[str] = None) -> "Consumed":
        return Consumed(key_serde, value_serde, timestamp_extractor, offset_reset)

    @staticmethod
    def as_(processor_name: str) -> "Consumed":
        return Consumed(processor_name=processor_name)

    def with_key_serde(self, serde: Serde) -> "Consumed":
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Serde) -> "Consumed":
        return replace(self, value_serde=serde)

    def with_timestamp_extractor(self, extractor: Callable) -> "Consumed":
        return replace(self, timestamp_extractor=extractor)

    def with_offset_reset_policy(self, policy: str) -> "Consumed":
        return replace(self, offset_reset=policy)

    def with_name(self, processor_name: str) -> "Consumed":
        return replace(self, processor_name=processor_name)


@dataclass(frozen=True)
class Produced:
    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    stream_partitioner: Optional[Callable] = None
    processor_name: Optional[str] = None

    def __post_init__(self):
        validate_name(self.processor_name, "Processor name")

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None,
              partitioner: Optional[Callable] = None) -> "Produced":
        return Produced(key_serde, value_serde, partitioner)

    @staticmethod
    def as_(processor_name: str) -> "Produced":
        return Produced(processor_name=processor_name)

    @staticmethod
    def key_serde_(serde: Serde) -> "Produced":
        return Produced(key_serde=serde)

    @staticmethod
    def value_serde_(serde: Serde) -> "Produced":
        return Produced(value_serde=serde)

    def with_key_serde(self, serde: Serde) -> "Produced":
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Serde) -> "Produced":
        return replace(self, value_serde=serde)

    def with_stream_partitioner(self, partitioner: Callable) -> "Produced":
        return replace(self, stream_partitioner=partitioner)

    def with_name(self, processor_name: str) -> "Produced":
        return replace(self, processor_name=processor_name)


@dataclass(frozen=True)
class Grouped:
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

    def with_name(self, name: str) -> "Grouped":
        return replace(self, name=name)

    def with_key_serde(self, serde: Serde) -> "Grouped":
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Serde) -> "Grouped":
        return replace(self, value_serde=serde)


@dataclass(frozen=True)
class Materialized:
    store_name: Optional[str] = None
    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    logging_enabled: bool = True
    caching_enabled: bool = True
    retention: Optional[timedelta] = None
    store_type: Optional[str] = None

    def __post_init__(self):
        validate_name(self.store_name, "Store name")

    @staticmethod
    def as_(store_name: str) -> "Materialized":
        return Materialized(store_name=store_name)

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None) -> "Materialized":
        return Materialized(key_serde=key_serde, value_serde=value_serde)

    def with_key_serde(self, serde: Serde) -> "Materialized":
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Serde) -> "Materialized":
        return replace(self, value_serde=serde)

    def with_logging_enabled(self, config: Optional[dict] = None) -> "Materialized":
        return replace(self, logging_enabled=True)

    def with_logging_disabled(self) -> "Materialized":
        return replace(self, logging_enabled=False)

    def with_caching_enabled(self) -> "Materialized":
        return replace(self, caching_enabled=True)

    def with_caching_disabled(self) -> "Materialized":
        return replace(self, caching_enabled=False)

    def with_retention(self, retention: timedelta) -> "Materialized":
        _millis(retention, "retention")
        return replace(self, retention=retention)

    def with_store_type(self, store_type: str) -> "Materialized":
        return replace(self, store_type=store_type)


@dataclass(frozen=True)
class Repartitioned:
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

    def with_name(self, name: str) -> "Repartitioned":
        return replace(self, name=name)

    def with_key_serde(self, serde: Serde) -> "Repartitioned":
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Serde) -> "Repartitioned":
        return replace(self, value_serde=serde)

    def with_number_of_partitions(self, n: int) -> "Repartitioned":
        return replace(self, number_of_partitions=n)

    def with_stream_partitioner(self, partitioner: Callable) -> "Repartitioned":
        return replace(self, stream_partitioner=partitioner)


@dataclass(frozen=True)
class Joined:
    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    other_value_serde: Optional[Serde] = None
    name: Optional[str] = None
    grace_period: Optional[timedelta] = None

    def __post_init__(self):
        validate_name(self.name)

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None,
              other_value_serde: Optional[Serde] = None, name: Optional[str] = None) -> "Joined":
        return Joined(key_serde, value_serde, other_value_serde, name)

    @staticmethod
    def as_(name: str) -> "Joined":
        return Joined(name=name)

    def with_name(self, name: str) -> "Joined":
        return replace(self, name=name)

    def with_key_serde(self, serde: Serde) -> "Joined":
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Serde) -> "Joined":
        return replace(self, value_serde=serde)

    def with_other_value_serde(self, serde: Serde) -> "Joined":
        return replace(self, other_value_serde=serde)

    def with_grace_period(self, grace: timedelta) -> "Joined":
        return replace(self, grace_period=grace)


@dataclass(frozen=True)
class StreamJoined:
    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    other_value_serde: Optional[Serde] = None
    name: Optional[str] = None
    store_name: Optional[str] = None
    logging_enabled: bool = True

    def __post_init__(self):
        validate_name(self.name)
        validate_name(self.store_name, "Store name")

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None,
              other_value_serde: Optional[Serde] = None) -> "StreamJoined":
        return StreamJoined(key_serde, value_serde, other_value_serde)

    @staticmethod
    def as_(store_name: str) -> "StreamJoined":
        return StreamJoined(store_name=store_name)

    def with_name(self, name: str) -> "StreamJoined":
        return replace(self, name=name)

    def with_store_name(self, store_name: str) -> "StreamJoined":
        return replace(self, store_name=store_name)

    def with_key_serde(self, serde: Serde) -> "StreamJoined":
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Serde) -> "StreamJoined":
        return replace(self, value_serde=serde)

    def with_other_value_serde(self, serde: Serde) -> "StreamJoined":
        return replace(self, other_value_serde=serde)

    def with_logging_disabled(self) -> "StreamJoined":
        return replace(self, logging_enabled=False)

    def with_logging_enabled(self, config: Optional[dict] = None) -> "StreamJoined":
        return replace(self, logging_enabled=True)


@dataclass(frozen=True)
class Branched:
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

    def with_name(self, name: str) -> "Branched":
        return replace(self, name=name)


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


@dataclass(frozen=True)
class BufferConfig:
    """Suppression buffer limits (``Suppressed.BufferConfig``)."""

    max_records: Optional[int] = None
    max_bytes: Optional[int] = None
    shutdown_when_full: bool = False
    logging_enabled: bool = True
    strict: bool = False

    @staticmethod
    def unbounded() -> "BufferConfig":
        return BufferConfig(strict=True)

    @staticmethod
    def max_records_(n: int) -> "BufferConfig":
        return BufferConfig(max_records=n)

    @staticmethod
    def max_bytes_(n: int) -> "BufferConfig":
        return BufferConfig(max_bytes=n)

    def with_max_records(self, n: int) -> "BufferConfig":
        return replace(self, max_records=n)

    def with_max_bytes(self, n: int) -> "BufferConfig":
        return replace(self, max_bytes=n)

    def should_suspend_when_full(self) -> "BufferConfig":
        return replace(self, shutdown_when_full=True)

    def emit_early_when_full(self) -> "BufferConfig":
        return replace(self, shutdown_when_full=False)

    def with_logging_disabled(self) -> "BufferConfig":
        return replace(self, logging_enabled=False)

    def with_logging_enabled(self, config: Optional[dict] = None) -> "BufferConfig":
        return replace(self, logging_enabled=True)


@dataclass(frozen=True)
class Suppressed:
    """``Suppressed.until_window_closes(...)`` or ``Suppressed.until_time_limit(...)``."""

    kind: str  # "until_window_closes" | "until_time_limit"
    buffer_config: BufferConfig = field(default_factory=BufferConfig)
    time_to_wait_for_more_events: Optional[timedelta] = None
    name: Optional[str] = None

    BufferConfig = BufferConfig

    def __post_init__(self):
        validate_name(self.name)

    @staticmethod
    def until_window_closes(buffer_config: BufferConfig) -> "Suppressed":
        return Suppressed("until_window_closes", buffer_config)

    @staticmethod
    def until_time_limit(time_to_wait_for_more_events: timedelta, buffer_config: BufferConfig) -> "Suppressed":
        _millis(time_to_wait_for_more_events, "time_to_wait_for_more_events")
        return Suppressed("until_time_limit", buffer_config, time_to_wait_for_more_events)

    def with_name(self, name: str) -> "Suppressed":
        return replace(self, name=name)


class _ClassFactory:
    """On the class, a static factory; on an instance, the field of the same name.

    Java has both ``Grouped.keySerde(serde)`` (a factory) and ``grouped.keySerde()``; in Python
    ``Grouped.key_serde(serde)`` builds a ``Grouped`` while ``grouped.key_serde`` is the field.
    (The ``..._`` spellings, e.g. ``Repartitioned.number_of_partitions_(3)``, stay available.)
    """

    def __init__(self, factory):
        self.factory = factory

    def __get__(self, instance, owner):
        if instance is None:
            return self.factory
        raise AttributeError(self.factory.__name__)  # unset field: instances always have it set


def _install_factories() -> None:
    factories = {
        Produced: {"key_serde": Produced.key_serde_, "value_serde": Produced.value_serde_},
        Grouped: {"key_serde": lambda serde: Grouped(key_serde=serde),
                  "value_serde": lambda serde: Grouped(value_serde=serde)},
        Repartitioned: {"number_of_partitions": Repartitioned.number_of_partitions_,
                        "stream_partitioner": Repartitioned.stream_partitioner_},
        Joined: {"key_serde": lambda serde: Joined(key_serde=serde),
                 "value_serde": lambda serde: Joined(value_serde=serde),
                 "other_value_serde": lambda serde: Joined(other_value_serde=serde)},
        BufferConfig: {"max_records": BufferConfig.max_records_, "max_bytes": BufferConfig.max_bytes_},
    }
    for cls, by_name in factories.items():
        for name, factory in by_name.items():
            setattr(cls, name, _ClassFactory(factory))


_install_factories()
