"""The store suppliers ``Stores`` makes (Kafka Streams' ``KeyValueBytesStoreSupplier``,
``WindowBytesStoreSupplier``, ``SessionBytesStoreSupplier``): what a store is called, whether it is
RocksDB's (``persistent``) or in memory, and a window or session store's retention. A processor's
store is built from one (``Stores.*_store_builder``); a DSL operation's store is one when given
(``Materialized.as_(supplier)``, ``StreamJoined.with_this_store_supplier``), which then names it."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "KeyValueBytesStoreSupplier", "WindowBytesStoreSupplier", "SessionBytesStoreSupplier", "BYTES_STORE_SUPPLIERS",
]


@dataclass(frozen=True)
class KeyValueBytesStoreSupplier:
    """A key-value store (in memory or RocksDB: both iterate by the key's bytes)."""

    name: str
    persistent: bool


@dataclass(frozen=True)
class WindowBytesStoreSupplier:
    """A window store: a value per (key, window start), kept for ``retention_ms`` of the store's
    observed time (the largest window start put into it); ``segment_interval_ms`` is Kafka Streams'
    RocksDB segment size, which orders a persistent store's iteration; ``timestamped``: a RocksDB
    store that keeps each value's timestamp (``persistentTimestampedWindowStore``; a plain one under a
    DSL operation reads its values back with no timestamp)."""

    name: str
    persistent: bool
    retention_ms: int
    window_size_ms: int
    retain_duplicates: bool
    segment_interval_ms: int
    # Stores.persistentTimestampedWindowStore's: it keeps each value's timestamp. A plain RocksDB one does not
    # (the DSL reads it through WindowToTimestampedWindowByteStoreAdapter: timestamp -1); one kept in memory does
    # (InMemoryTimestampedWindowStoreMarker).
    timestamped: bool = False

    @property
    def keeps_timestamps(self) -> bool:
        return self.timestamped or not self.persistent


@dataclass(frozen=True)
class SessionBytesStoreSupplier:
    """A session store: a value per (key, session start, session end), kept for ``retention_ms`` of
    the store's observed time (the largest session end put into it); ``segment_interval_ms`` is
    Kafka Streams' RocksDB segment size, which orders a persistent store's iteration."""

    name: str
    persistent: bool
    retention_ms: int
    segment_interval_ms: int


BYTES_STORE_SUPPLIERS = (KeyValueBytesStoreSupplier, WindowBytesStoreSupplier, SessionBytesStoreSupplier)
