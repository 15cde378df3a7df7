"""The key-value store of a DSL operation keyed by windows, as a user processor sees it: a
materialized table-table join of windowed tables (time-windowed or sliding), a ``filter``/``map_values``
with a store of its own after one, or after a windowed aggregation's table. Kafka Streams' store is a
``TimestampedKeyValueStore<Windowed<K>, V>`` whose key serde is a time-windowed one (the key's bytes,
then the window's start, 8 bytes big-endian): ``get``/``put``/``delete`` find a window's entry by its key
and start (its end plays no part), and ``all``/``range`` answer in those bytes' order, each key read
back with the end its serde's window size puts it at. Over a session aggregation's table the serde is a
session-windowed one (the key's bytes, the session's end, its start): a session's entry is found by its
key, start and end, and listed in that order.

The runner keeps each window of such a store in the window's group of the task's state (the key's
bytes and the window's start, and in a sub-topology with session windows its end too:
:mod:`.own_groups`), Kafka Streams' entry, so the view is
:class:`~.user_dsl_store.TimestampedKeyValueStore` finding a window's group as a record forwarded
under that window finds it, and reading a group's key back as ``read_store`` does.
"""

from __future__ import annotations

from dagster_kstreams.processors.own_groups import group_key, key_of_group
from dagster_kstreams.processors.user_dsl_store import TimestampedKeyValueStore
from dagster_kstreams.topology.serdes import Windowed

__all__ = ["WindowedKeyValueStore", "window_group_key"]


def window_group_key(view, key):
    """What the task's state keeps the window ``key``'s group under, for the view ``view`` of a store keyed
    by windows (``view._owner``: the store's processor, in its program)."""
    if key is None:
        raise ValueError(f"{view.kind} {view.name}: the key cannot be null")
    if not isinstance(key, Windowed):  # Kafka Streams' windowed serializers fail it (ClassCastException)
        raise TypeError(f"{view.kind} {view.name}: its keys are windows (Windowed(key, Window(start, end))), "
                        f"got {type(key).__name__}")
    return group_key(view._owner.program, key)


class WindowedKeyValueStore(TimestampedKeyValueStore):
    """A user processor's view of a DSL key-value store keyed by ``Windowed`` keys (see the module
    docstring); its key serde is a time-windowed serde with its window size, or over sessions a
    session-windowed one (``check_dsl_store``)."""

    def _group(self, key):
        return self._task.group(window_group_key(self, key))

    def _key_of_group(self, raw_key):
        return key_of_group(raw_key, self._store_key_serde, self._key_serde.window_size_ms)
