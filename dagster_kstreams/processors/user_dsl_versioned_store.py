"""A versioned table's store as a user processor sees it: ``process(supplier, "prices")`` on the
store of ``builder.table(topic, Materialized.as_(Stores.persistent_versioned_key_value_store("prices",
...)))``, of a ``to_table`` into one or of a foreign-key join's result kept in one (Kafka Streams'
``VersionedKeyValueStore``, the store its ``KTableSource`` puts into); any other writer's (an aggregation's,
a join's, a filter's or map_values', whose store over a windowed table is keyed by windows:
:class:`WindowedVersionedTableStore`).

The view reads and writes the table's own versions and observed time (task-level values of the
task's state: :class:`~.versioned_tables.VersionedTable`), with the methods and answers of a
processor's own versioned store (:class:`~.user_versioned_store.VersionedKeyValueStore`), so the
table's next update is put by the time and versions a processor left, and a stream-table join reads
them. A put that makes the key's latest version also becomes the table's current value, through the
table's own :meth:`~.aggregations.KeyValueStoreProcessor.write` (which forwards nothing: a versioned
store has no record cache, and Kafka Streams' store, written by another processor, forwards nothing).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.user_dsl_windowed_keys import window_group_key
from dagster_kstreams.processors.user_versioned_store import VersionedKeyValueStore

__all__ = ["VersionedTableStore", "WindowedVersionedTableStore"]


class VersionedTableStore(VersionedKeyValueStore):
    """A user processor's view of a versioned table's store (``owner``: the table's processor, a
    :class:`~.versioned_tables.VersionedTableSource`). Versions keep the table's values (not bytes)
    under the key as the task's state keys this store (``store_key_serde``)."""

    def __init__(self, name: str, key_serde, value_serde, owner, store_key_serde, task,
                 write_context: Callable[[Optional[int]], Any]):
        super().__init__(name, key_serde, value_serde, owner.table, task.values)
        self._owner, self._store_key_serde, self._task = owner, store_key_serde, task
        self._write_context = write_context

    def _key(self, key) -> bytes:
        if key is None:
            raise ValueError(f"{self.kind} {self.name}: key cannot be null")
        return self._store_key_serde.serialize(key)

    def _stored(self, value):
        # the value as its serde reads it back (never the caller's object), as the table keeps values
        return None if value is None else self._value_serde.deserialize(self._value_serde.serialize(value))

    def _value(self, stored):
        return self._value_serde.deserialize(self._value_serde.serialize(stored))

    def _put_latest(self, key, raw: bytes, stored, timestamp: int) -> None:
        self._owner.write(key, ABSENT if stored is None else stored, self._write_context(timestamp),
                          self._task.group(raw), by_user_processor=True)


class WindowedVersionedTableStore(VersionedTableStore):
    """A user processor's view of a windowed table's ``filter``/``map_values`` versioned store
    (``VersionedKeyValueStore<Windowed<K>, V>``, its key serde a time-windowed one with its window size or a
    session-windowed one: :mod:`.windowed_store_keys`). Kafka Streams keeps a window's versions under its
    serde's bytes (the key and the start; a session's end too); the runner keeps them, and the window's
    current value, under the window's group (:mod:`.own_groups`, by key and start beside no session
    windows), as a record forwarded under that window finds it."""

    def _key(self, key):
        return window_group_key(self, key)
