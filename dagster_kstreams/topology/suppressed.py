"""``Suppressed`` and its ``BufferConfig``: when a KTable's updates are let through (Kafka Streams'
``Suppressed.java``). Immutable: ``with_*`` returns a copy."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Optional

from .durations import duration_millis
from .fluent import WithLogging, WithName, install_static_factories
from .named import validate_name

__all__ = ["BufferConfig", "Suppressed"]


@dataclass(frozen=True)
class BufferConfig(WithLogging):
    """Suppression buffer limits (``Suppressed.BufferConfig``): at most ``max_records`` records and
    ``max_bytes`` bytes (None: no bound); when full, emit the oldest records early, or (a strict
    config, ``shutdown_when_full``) stop the application, as Kafka Streams' ``BufferFullStrategy``.

    ``unbounded()`` is strict (Java's ``StrictBufferConfig``); ``max_records(n)`` and ``max_bytes(n)``
    emit early (``EagerBufferConfig``) until ``shut_down_when_full()`` makes them strict."""

    max_records: Optional[int] = None
    max_bytes: Optional[int] = None
    shutdown_when_full: bool = False
    logging_enabled: bool = True

    @property
    def strict(self) -> bool:
        """Java's ``StrictBufferConfig``: the buffer never emits early (``until_window_closes`` needs it)."""
        return self.shutdown_when_full

    @property
    def bounded(self) -> bool:
        return self.max_records is not None or self.max_bytes is not None

    @staticmethod
    def unbounded() -> "BufferConfig":
        return BufferConfig(shutdown_when_full=True)

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

    def with_no_bound(self) -> "BufferConfig":
        return replace(self, max_records=None, max_bytes=None, shutdown_when_full=True)

    def shut_down_when_full(self) -> "BufferConfig":
        return replace(self, shutdown_when_full=True)

    should_suspend_when_full = shut_down_when_full  # the earlier spelling

    def emit_early_when_full(self) -> "BufferConfig":
        return replace(self, shutdown_when_full=False)


@dataclass(frozen=True)
class Suppressed(WithName):
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
        if not buffer_config.strict:
            # Java's untilWindowCloses takes a StrictBufferConfig only (a compile error otherwise).
            raise TypeError("Suppressed.until_window_closes takes a strict buffer config: BufferConfig.unbounded() "
                            "or a bounded one with .shut_down_when_full()")
        return Suppressed("until_window_closes", buffer_config)

    @staticmethod
    def until_time_limit(time_to_wait_for_more_events: timedelta, buffer_config: BufferConfig) -> "Suppressed":
        duration_millis(time_to_wait_for_more_events, "time_to_wait_for_more_events")
        return Suppressed("until_time_limit", buffer_config, time_to_wait_for_more_events)


install_static_factories(BufferConfig, {"max_records": BufferConfig.max_records_, "max_bytes": BufferConfig.max_bytes_})
