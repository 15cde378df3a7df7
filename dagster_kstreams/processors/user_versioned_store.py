"""A user processor's versioned key-value store (``Stores.versioned_key_value_store_builder(
Stores.persistent_versioned_key_value_store(name, history_retention), ...)``), as Kafka Streams 4.3.1
gives one to a processor: ``RocksDBVersionedStore`` behind its metered layer.

Its versions and observed stream time follow the versioned tables' rules, in one place
(:mod:`.version_history`): a put or delete older than the observed time (the largest timestamp put
or deleted at, all keys) minus the history retention is not taken and moves nothing; a lookup as of
a time older than that reads only the latest version, if it is old enough. The content is a
task-level value of the task's state, holding the versions (serialized) and the observed time as
a versioned table keeps them (:class:`~.versioned_tables.VersionedTable`), so it survives a crash
with the task's checkpoint; a key's versions are pruned to the history retention whenever the key
is written, as a versioned table's are.

What a processor gets back is what Kafka Streams' metered store returns: ``put`` the new version's
validTo (the next version's timestamp), ``PUT_RETURN_CODE_VALID_TO_UNDEFINED`` (-1) when it is the
latest, ``PUT_RETURN_CODE_NOT_PUT`` when expired; ``get``/``delete`` a
:class:`~dagster_kstreams.topology.versioned.VersionedRecord` whose ``valid_to()`` is None even for a
version found in the history (``MeteredVersionedKeyValueStore`` passes a record through
``ValueAndTimestamp``, which has no validTo).
"""

from __future__ import annotations

from typing import Optional

from dagster_kstreams.processors.versioned_tables import VersionedTable
from dagster_kstreams.topology.versioned import (
    PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED, VersionedBytesStoreSupplier, VersionedRecord,
)

__all__ = ["VersionedKeyValueStore"]


class VersionedKeyValueStore:
    """A versioned key-value store as a processor uses it (Kafka Streams' ``VersionedKeyValueStore``)
    over ``content``, where ``table`` keeps its versions and observed time. A processor's own store
    keeps serialized keys and values; :mod:`.user_dsl_versioned_store` overrides the hooks
    (:meth:`_key`, :meth:`_stored`, :meth:`_value`, :meth:`_put_latest`) to view a versioned table's."""

    PUT_RETURN_CODE_VALID_TO_UNDEFINED = PUT_RETURN_CODE_VALID_TO_UNDEFINED
    PUT_RETURN_CODE_NOT_PUT = PUT_RETURN_CODE_NOT_PUT
    kind = "versioned store"  # as errors name it

    def __init__(self, name: str, key_serde, value_serde, table: VersionedTable, content: dict):
        self.name = name
        self._key_serde, self._value_serde = key_serde, value_serde
        self._table = table
        self._content = content
        self._versions = content.setdefault(table.history_key, {})

    @classmethod
    def of(cls, name: str, key_serde, value_serde, supplier: VersionedBytesStoreSupplier, content: dict):
        """A processor's own store, added with ``add_state_store``."""
        return cls(name, key_serde, value_serde, VersionedTable(name, supplier.history_retention_ms), content)

    def put(self, key, value, timestamp: int) -> int:
        """Add the version of ``key`` valid from ``timestamp`` (None: a tombstone, as a delete);
        returns its validTo, ``PUT_RETURN_CODE_VALID_TO_UNDEFINED`` (latest) or
        ``PUT_RETURN_CODE_NOT_PUT`` (older than the history retention: not put)."""
        raw, stored = self._key(key), self._stored(value)
        if self._table.expired(self._content, timestamp):
            return PUT_RETURN_CODE_NOT_PUT  # Kafka Streams: "Skipping record for expired put"
        valid_to = self._table.put(self._content, raw, timestamp, stored)
        if valid_to is not None:
            return valid_to
        self._put_latest(key, raw, stored, timestamp)
        return PUT_RETURN_CODE_VALID_TO_UNDEFINED

    def delete(self, key, timestamp: int) -> Optional[VersionedRecord]:
        """Put a tombstone at ``timestamp``; returns the record valid at it before (None: none, or
        the delete is older than the history retention and is not made)."""
        if self._table.expired(self._content, timestamp):
            self._key(key)
            return None  # Kafka Streams: "Skipping record for expired delete"
        existing = self.get(key, timestamp)
        self.put(key, None, timestamp)
        return existing

    def get(self, key, as_of_timestamp: Optional[int] = None) -> Optional[VersionedRecord]:
        """The key's latest record, or the one valid at ``as_of_timestamp`` (None: none, a
        tombstone, or past the history and the latest is newer)."""
        version = self._table.version_as_of(self._content, self._key(key), as_of_timestamp)
        # No validTo: Kafka Streams' metered store hands the record over as a ValueAndTimestamp.
        if version is None or version[1] is None:
            return None
        return VersionedRecord(self._value(version[1]), version[0])

    def latest_values(self) -> dict:
        """``{key: latest value}`` of every key whose latest version is not a tombstone (what the
        runner's ``read_store`` gives; not Kafka Streams' API)."""
        return {self._key_serde.deserialize(raw): self._value(versions[-1][1])
                for raw, versions in sorted(self._versions.items()) if versions and versions[-1][1] is not None}

    # -- hooks ------------------------------------------------------------------------------
    def _key(self, key) -> bytes:
        """The key as the versions are kept under it."""
        if key is None:
            raise ValueError(f"{self.kind} {self.name}: key cannot be null")
        return self._key_serde.serialize(key)

    def _stored(self, value):
        """A value as a version keeps it (None: a tombstone)."""
        return None if value is None else self._value_serde.serialize(value)

    def _value(self, stored):
        """A kept version's value as a read returns it."""
        return self._value_serde.deserialize(stored)

    def _put_latest(self, key, raw: bytes, stored, timestamp: int) -> None:
        """What else a put that made the key's latest version does (here: nothing)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, history_retention_ms={self._table.retention_ms})"
