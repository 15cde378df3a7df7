"""A user processor's own stores (``add_state_store``) over their content in the task state: the
key-value store here, and :func:`open_store`, which opens whichever kind a store's supplier makes
(window, session and versioned stores: :mod:`.user_window_store`, :mod:`.user_session_store`,
:mod:`.user_versioned_store`).

A store's content is a task-level value of the task state, ``serialized key -> serialized value``:
reads deserialize a copy, as a store of bytes does; ``range``/``all``/``prefix_scan`` iterate in the
serialized keys' byte order, RocksDB's and the in-memory store's order.
"""

from __future__ import annotations

from typing import Iterator

from dagster_kstreams.processors.user_session_store import SessionStore
from dagster_kstreams.processors.user_versioned_store import VersionedKeyValueStore
from dagster_kstreams.processors.user_window_store import WindowStore
from dagster_kstreams.topology.processor_api import KeyValue, SessionBytesStoreSupplier, WindowBytesStoreSupplier
from dagster_kstreams.topology.versioned import VersionedBytesStoreSupplier

__all__ = ["KeyValueStore", "open_store"]


class KeyValueStore:
    """A key-value store as a processor uses it; the content is a task-level value of the task state."""

    def __init__(self, name: str, key_serde, value_serde, content: dict):
        self.name = name
        self._key_serde, self._value_serde = key_serde, value_serde
        self._content = content  # serialized key -> serialized value

    def _key(self, key) -> bytes:
        if key is None:
            raise ValueError(f"store {self.name}: the key cannot be null")
        return self._key_serde.serialize(key)

    def get(self, key):
        data = self._content.get(self._key(key))
        return None if data is None else self._value_serde.deserialize(data)

    def put(self, key, value) -> None:
        """Store ``value`` under ``key`` (None deletes it)."""
        raw = self._key(key)
        data = None if value is None else self._value_serde.serialize(value)
        if data is None:
            self._content.pop(raw, None)
        else:
            self._content[raw] = data

    def put_if_absent(self, key, value):
        """Store ``value`` unless ``key`` has one; returns the value it had (None: none)."""
        old = self.get(key)
        if old is None:
            self.put(key, value)
        return old

    def put_all(self, entries) -> None:
        for key, value in entries:
            self.put(key, value)

    def delete(self, key):
        """Remove ``key``; returns the value it had (None: none)."""
        old = self.get(key)
        self._content.pop(self._key(key), None)
        return old

    def range(self, from_key=None, to_key=None) -> Iterator[KeyValue]:
        """The entries with ``from_key <= key <= to_key`` in serialized-key order (None: unbounded)."""
        low = None if from_key is None else self._key(from_key)
        high = None if to_key is None else self._key(to_key)
        return self._entries(raw for raw in sorted(self._content)
                             if (low is None or raw >= low) and (high is None or raw <= high))

    def reverse_range(self, from_key=None, to_key=None) -> Iterator[KeyValue]:
        return iter(list(self.range(from_key, to_key))[::-1])

    def all(self) -> Iterator[KeyValue]:
        return self._entries(sorted(self._content))

    def prefix_scan(self, prefix, prefix_key_serializer) -> Iterator[KeyValue]:
        """Kafka Streams' ``prefixScan``: the entries whose serialized key starts with ``prefix`` as
        ``prefix_key_serializer`` (a serde) writes it, in serialized-key order."""
        start = prefix_key_serializer.serialize(prefix)
        return self._entries(raw for raw in sorted(self._content) if raw.startswith(start))

    def reverse_all(self) -> Iterator[KeyValue]:
        return self._entries(sorted(self._content, reverse=True))

    def approximate_num_entries(self) -> int:
        return len(self._content)

    def _entries(self, raws) -> Iterator[KeyValue]:
        # A snapshot: writes while iterating do not disturb it.
        content = self._content
        return iter([KeyValue(self._key_serde.deserialize(raw), self._value_serde.deserialize(content[raw]))
                     for raw in list(raws)])


def open_store(name: str, store: tuple, content: dict):
    """The store a processor reads and writes over its ``content`` (a task-level value)."""
    key_serde, value_serde, supplier = store
    if isinstance(supplier, WindowBytesStoreSupplier):
        return WindowStore(name, key_serde, value_serde, supplier, content)
    if isinstance(supplier, SessionBytesStoreSupplier):
        return SessionStore(name, key_serde, value_serde, supplier, content)
    if isinstance(supplier, VersionedBytesStoreSupplier):
        return VersionedKeyValueStore.of(name, key_serde, value_serde, supplier, content)
    return KeyValueStore(name, key_serde, value_serde, content)
