"""A versioned key-value store's supplier (Kafka Streams' ``VersionedBytesStoreSupplier``, made by
``Stores.persistent_versioned_key_value_store``): a table materialized with it keeps, per key, every
version whose validity ends within ``history_retention_ms`` of the store's observed stream time, so
that a stream-table join can read the table as of a stream record's timestamp."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["VersionedBytesStoreSupplier"]


@dataclass(frozen=True)
class VersionedBytesStoreSupplier:
    """``name``: the store; ``history_retention_ms``: how far behind the store's observed stream
    time (the largest timestamp put into it) versions stay readable, and out-of-order puts are
    taken (Kafka Streams uses the history retention as the store's grace period too)."""

    name: str
    history_retention_ms: int
