"""A user processor's versioned key-value store (``Stores.versioned_key_value_store_builder(
Stores.persistent_versioned_key_value_store(name, history_retention), ...)``), as Kafka Streams 4.3.1
gives one to a processor: ``RocksDBVersionedStore`` behind its metered layer.

Its versions and observed stream time follow the versioned tables' rules, in one place
(:mod:`.version_history`): a put or delete older than the observed time (the largest timestamp put
or deleted at, all keys) minus the history retention is not taken and moves nothing; a lookup as of
a time older than that reads only the latest version, if it is old enough. The content is a
task-level value of the task's state (``{"time": observed time, "versions": {serialized key:
[[timestamp, serialized value or None], ...]}}``), so it survives a crash with the task's checkpoint;
a key's versions are pruned to the history retention whenever the key is written, as a versioned
table's are.

What a processor gets back is what Kafka Streams' metered store returns: ``put`` the new version's
validTo (the next version's timestamp), ``PUT_RETURN_CODE_VALID_TO_UNDEFINED`` (-1) when it is the
latest, ``PUT_RETURN_CODE_NOT_PUT`` when expired; ``get``/``delete`` a
:class:`~dagster_kstreams.topology.versioned.VersionedRecord` whose ``valid_to()`` is None even for a
version found in the history (``MeteredVersionedKeyValueStore`` passes a record through
``ValueAndTimestamp``, which has no validTo).
"""

from __future__ import annotations

from typing import Optional

from dagster_kstreams.processors import version_history
from dagster_kstreams.topology.versioned import (
    PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED, VersionedBytesStoreSupplier, VersionedRecord,
)

__all__ = ["VersionedKeyValueStore"]


class VersionedKeyValueStore:
    """A versioned key-value store as a processor uses it (Kafka Streams' ``VersionedKeyValueStore``)."""

    PUT_RETURN_CODE_VALID_TO_UNDEFINED = PUT_RETURN_CODE_VALID_TO_UNDEFINED
    PUT_RETURN_CODE_NOT_PUT = PUT_RETURN_CODE_NOT_PUT

    def __init__(self, name: str, key_serde, value_serde, supplier: VersionedBytesStoreSupplier, content: dict):
        self.name = name
        self._key_serde, self._value_serde = key_serde, value_serde
        self._retention_ms = supplier.history_retention_ms
        self._content = content
        self._versions = content.setdefault("versions", {})

    @property
    def _time(self) -> int:
        return self._content.get("time", version_history.NO_TIME)

    def _key(self, key) -> bytes:
        if key is None:
            raise ValueError(f"versioned store {self.name}: key cannot be null")
        return self._key_serde.serialize(key)

    def put(self, key, value, timestamp: int) -> int:
        """Add the version of ``key`` valid from ``timestamp`` (None: a tombstone, as a delete);
        returns its validTo, ``PUT_RETURN_CODE_VALID_TO_UNDEFINED`` (latest) or
        ``PUT_RETURN_CODE_NOT_PUT`` (older than the history retention: not put)."""
        raw = self._key(key)
        data = None if value is None else self._value_serde.serialize(value)
        if version_history.expired(timestamp, self._time, self._retention_ms):
            return PUT_RETURN_CODE_NOT_PUT  # Kafka Streams: "Skipping record for expired put"
        valid_to = self._put(raw, data, timestamp)
        return PUT_RETURN_CODE_VALID_TO_UNDEFINED if valid_to is None else valid_to

    def delete(self, key, timestamp: int) -> Optional[VersionedRecord]:
        """Put a tombstone at ``timestamp``; returns the record valid at it before (None: none, or
        the delete is older than the history retention and is not made)."""
        raw = self._key(key)
        if version_history.expired(timestamp, self._time, self._retention_ms):
            return None  # Kafka Streams: "Skipping record for expired delete"
        existing = self._read(version_history.version_as_of(self._versions.get(raw), timestamp, self._time,
                                                            self._retention_ms))
        self._put(raw, None, timestamp)
        return existing

    def get(self, key, as_of_timestamp: Optional[int] = None) -> Optional[VersionedRecord]:
        """The key's latest record, or the one valid at ``as_of_timestamp`` (None: none, a
        tombstone, or past the history and the latest is newer)."""
        versions = self._versions.get(self._key(key))
        if as_of_timestamp is None:
            return self._read(versions[-1] if versions else None)
        return self._read(version_history.version_as_of(versions, as_of_timestamp, self._time, self._retention_ms))

    def latest_values(self) -> dict:
        """``{key: latest value}`` of every key whose latest version is not a tombstone (what the
        runner's ``read_store`` gives; not Kafka Streams' API)."""
        return {self._key_serde.deserialize(raw): self._value_serde.deserialize(versions[-1][1])
                for raw, versions in sorted(self._versions.items()) if versions and versions[-1][1] is not None}

    def _put(self, raw: bytes, data: Optional[bytes], timestamp: int) -> Optional[int]:
        """Store a version the caller checked is not expired; its validTo (None: the latest)."""
        store_time = max(self._time, timestamp)
        self._content["time"] = store_time
        versions = self._versions.setdefault(raw, [])
        version_history.put(versions, timestamp, data)
        valid_to = version_history.valid_to(versions, timestamp)
        version_history.prune(versions, store_time, self._retention_ms)
        return valid_to

    def _read(self, version: Optional[list]) -> Optional[VersionedRecord]:
        # No validTo: Kafka Streams' metered store hands the record over as a ValueAndTimestamp.
        if version is None or version[1] is None:
            return None
        return VersionedRecord(self._value_serde.deserialize(version[1]), version[0])

    def __repr__(self) -> str:
        return f"VersionedKeyValueStore({self.name!r}, history_retention_ms={self._retention_ms})"
