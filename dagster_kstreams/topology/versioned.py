"""A versioned key-value store's user-facing types: its supplier (Kafka Streams'
``VersionedBytesStoreSupplier``, made by ``Stores.persistent_versioned_key_value_store``), which a
table materialized with it or a processor's store (``Stores.versioned_key_value_store_builder``)
is kept in, and :class:`VersionedRecord`, what a processor reads from such a store. The store keeps,
per key, every version whose validity ends within ``history_retention_ms`` of the store's observed
stream time, so that a stream-table join (or a processor's ``get(key, as_of_timestamp)``) can read
it as of a record's timestamp."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["VersionedBytesStoreSupplier", "VersionedRecord", "PUT_RETURN_CODE_VALID_TO_UNDEFINED",
           "PUT_RETURN_CODE_NOT_PUT"]

# What a versioned store's put returns besides a validTo (Kafka Streams' VersionedKeyValueStore constants).
PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1  # the version put is the key's latest
PUT_RETURN_CODE_NOT_PUT = -(2 ** 63)     # Long.MIN_VALUE: older than the history retention, not put


@dataclass(frozen=True)
class VersionedBytesStoreSupplier:
    """``name``: the store; ``history_retention_ms``: how far behind the store's observed stream
    time (the largest timestamp put into it) versions stay readable, and out-of-order puts are
    taken (Kafka Streams uses the history retention as the store's grace period too)."""

    name: str
    history_retention_ms: int


class VersionedRecord:
    """A value, the timestamp it is valid from and, where known, the timestamp it is valid to
    (exclusive; None: Kafka Streams' ``Optional.empty()``), as Kafka Streams' ``VersionedRecord``.
    Methods as Java's: ``value()``, ``timestamp()``, ``valid_to()``."""

    __slots__ = ("_value", "_timestamp", "_valid_to")

    def __init__(self, value: Any, timestamp: int, valid_to: Optional[int] = None):
        if value is None:
            raise ValueError("value cannot be null.")
        self._value, self._timestamp = value, int(timestamp)
        self._valid_to = None if valid_to is None else int(valid_to)

    def value(self) -> Any:
        return self._value

    def timestamp(self) -> int:
        return self._timestamp

    def valid_to(self) -> Optional[int]:
        return self._valid_to

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, VersionedRecord) and self._value == other._value
                and self._timestamp == other._timestamp and self._valid_to == other._valid_to)

    def __hash__(self) -> int:
        return hash((self._value, self._timestamp, self._valid_to))

    def __repr__(self) -> str:
        return f"<{self._value},{self._timestamp},{'Optional.empty' if self._valid_to is None else f'Optional[{self._valid_to}]'}>"
