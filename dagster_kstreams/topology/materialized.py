"""``Materialized``: a state store's name, serdes, changelog, cache, retention and type (Kafka
Streams' ``Materialized.java``), or a versioned store's supplier (``Materialized.as_(supplier)``).
Immutable: ``with_*`` returns a copy."""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Optional, Union

from .durations import duration_millis
from .fluent import WithLogging, WithSerdes
from .named import validate_name
from .serdes import Serde
from .versioned import VersionedBytesStoreSupplier

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
    # a versioned store's history retention (Materialized.as_(Stores.persistent_versioned_key_value_store))
    history_retention_ms: Optional[int] = None

    def __post_init__(self):
        validate_name(self.store_name, "Store name")

    @staticmethod
    def as_(store: Union[str, VersionedBytesStoreSupplier]) -> "Materialized":
        """A store by name, or a versioned store's supplier (tables only: ``StreamsBuilder.table``,
        ``KStream.to_table``; Kafka Streams never caches a versioned store)."""
        if isinstance(store, VersionedBytesStoreSupplier):
            return Materialized(store_name=store.name, history_retention_ms=store.history_retention_ms)
        return Materialized(store_name=store)

    @property
    def versioned(self) -> bool:
        return self.history_retention_ms is not None

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
