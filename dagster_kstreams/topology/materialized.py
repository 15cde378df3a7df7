"""``Materialized``: a state store's name, serdes, changelog, cache, retention and type (Kafka
Streams' ``Materialized.java``). Immutable: ``with_*`` returns a copy."""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Optional

from .durations import duration_millis
from .fluent import WithLogging, WithSerdes
from .named import validate_name
from .serdes import Serde

__all__ = ["Materialized"]


@dataclass(frozen=True)
class Materialized(WithSerdes, WithLogging):
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

    def with_caching_enabled(self) -> "Materialized":
        return replace(self, caching_enabled=True)

    def with_caching_disabled(self) -> "Materialized":
        return replace(self, caching_enabled=False)

    def with_retention(self, retention: timedelta) -> "Materialized":
        duration_millis(retention, "retention")
        return replace(self, retention=retention)

    def with_store_type(self, store_type: str) -> "Materialized":
        return replace(self, store_type=store_type)
