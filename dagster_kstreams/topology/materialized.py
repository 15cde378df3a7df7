"""``Materialized``: a state store's name, serdes, changelog, cache, retention and type (Kafka
Streams' ``Materialized.java``), or a store's supplier (``Materialized.as_(supplier)``: a key-value,
window, session or versioned store from ``Stores``), which then names the store and decides whether
it is RocksDB's or in memory. Immutable: ``with_*`` returns a copy."""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Optional, Union

from .durations import duration_millis
from .errors import TopologyException
from .fluent import WithLogging, WithSerdes
from .named import validate_name
from .serdes import Serde
from .store_suppliers import (
    BYTES_STORE_SUPPLIERS, KeyValueBytesStoreSupplier, SessionBytesStoreSupplier, WindowBytesStoreSupplier,
)
from .streams_config import StreamsConfig
from .versioned import VersionedBytesStoreSupplier

__all__ = ["Materialized", "ROCKS_DB", "IN_MEMORY", "STORE_TYPES"]

ROCKS_DB, IN_MEMORY = StreamsConfig.ROCKS_DB, StreamsConfig.IN_MEMORY  # default.dsl.store's values
STORE_TYPES = (ROCKS_DB, IN_MEMORY)


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
    # the key-value, window or session store's supplier (Materialized.as_(Stores.in_memory_window_store(...)))
    supplier: Optional[Union[KeyValueBytesStoreSupplier, WindowBytesStoreSupplier, SessionBytesStoreSupplier]] = None

    def __post_init__(self):
        validate_name(self.store_name, "Store name")

    @staticmethod
    def as_(store) -> "Materialized":
        """A store by name, or a store's supplier: a key-value one for a table or a plain aggregation,
        a window one for a time- or sliding-windowed aggregation, a session one for a session-windowed
        aggregation (the operation checks which: :meth:`check_supplier`), or a versioned one for the
        tables Kafka Streams takes one for (it never caches a versioned store)."""
        if isinstance(store, VersionedBytesStoreSupplier):
            return Materialized(store_name=store.name, history_retention_ms=store.history_retention_ms)
        if isinstance(store, BYTES_STORE_SUPPLIERS):
            return Materialized(store_name=store.name, supplier=store)
        return Materialized(store_name=store)

    def check_supplier(self, expected: type, operation: str) -> None:
        """Kafka Streams' ``Materialized<K, V, WindowStore<...>>`` types the supplier an operation takes
        (a key-value supplier where a window store is built fails its cast); here: one line naming both."""
        if self.supplier is not None and not isinstance(self.supplier, expected):
            raise TopologyException(f"{operation}: store {self.store_name} is given a {type(self.supplier).__name__}, "
                                    f"where the operation builds a {expected.__name__}'s store")

    @property
    def persistent(self) -> Optional[bool]:
        """Whether the store is RocksDB's (its supplier's, else ``with_store_type``'s; None: the
        builder's ``default.dsl.store``)."""
        if self.supplier is not None:
            return self.supplier.persistent
        if self.versioned:
            return True
        return None if self.store_type is None else self.store_type != IN_MEMORY

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
        """``rocksDB`` or ``in_memory`` (Kafka Streams' ``Materialized.StoreType``)."""
        if store_type not in STORE_TYPES:
            raise TopologyException(f"store type must be one of {', '.join(STORE_TYPES)}, got {store_type!r}")
        return replace(self, store_type=store_type)
