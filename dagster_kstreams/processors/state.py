"""The stored values a record sees: one slot per store of the sub-topology, for one source key.

Within one sub-topology every stateful processor sees the source key (Kafka Streams inserts a
repartition topic before any stateful processor whose key changed), so one state row per source
key holds the key's value in each store; :class:`GroupState` is that row while a key group (or,
task-grouped, a task batch) runs. A slot with no value holds :data:`ABSENT`. A key-value store that
keeps its timestamps (Kafka Streams' ``ValueAndTimestamp``) keeps the key's in the row too, the slot's
value and timestamp pickled together (:func:`slot_blob`); task-grouped, the task's state holds them.
"""

from __future__ import annotations

import io
import pickle
from typing import Any, Optional

from dagster_kstreams.processors.records import RecordContext

__all__ = ["ABSENT", "GroupState", "StampedSlot", "load_state", "slot_blob", "slot_value"]

# Classes that state written by earlier versions names at their old place (module, class) ->
# their module now: a task's checkpoint outlives the code layout that wrote it.
_MOVED_CLASSES = {
    ("dagster_kstreams.spark.stream_joins", "JoinTracker"): "dagster_kstreams.processors.join_buffers",
}


class _StateUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(_MOVED_CLASSES.get((module, name), module), name)


def load_state(blob: bytes) -> Any:
    """A pickled state value that may hold the library's own classes (a task's state)."""
    return _StateUnpickler(io.BytesIO(blob)).load()


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


class StampedSlot:
    """A slot's value with the timestamp Kafka Streams stores beside it, as a key-grouped row keeps
    them (a class of its own, so that no user value is ever taken for one)."""

    __slots__ = ("value", "timestamp")

    def __init__(self, value: Any, timestamp: int):
        self.value, self.timestamp = value, timestamp

    def __reduce__(self):
        return StampedSlot, (self.value, self.timestamp)


def slot_value(blob: bytes) -> tuple[Any, Optional[int]]:
    """``(value, timestamp)`` of a key-grouped row's slot (timestamp None: the store keeps none, or
    the row was written before it did)."""
    value = pickle.loads(blob)
    if type(value) is StampedSlot:
        return value.value, value.timestamp
    return value, None


def slot_blob(value: Any, timestamp: Optional[int]) -> bytes:
    """A key-grouped row's slot: ``value`` pickled, with ``timestamp`` where the store keeps it."""
    return pickle.dumps(value if timestamp is None else StampedSlot(value, timestamp),
                        protocol=pickle.HIGHEST_PROTOCOL)


class GroupState:
    """The stored values of one key, one slot per store, for the length of one key group."""

    def __init__(self, values: list[Any]):
        self.values = values
        # key-grouped: slot -> the timestamp stored with its value, for a store that keeps them
        # (task-grouped programs keep them in the task's state: TaskState.timestamps)
        self.stamps: dict[int, int] = {}
        self.keys: list[Any] = [None] * len(values)  # the key each store last saw (for its emit)
        # Slots whose final value is still to be forwarded, each with the context of the record
        # that last updated it (Kafka Streams' cache entry keeps its own record context, and its
        # flush forwards with it: not the key's last record of another input), in update order.
        self.dirty: dict[int, RecordContext] = {}
        # Key-value stores: the value downstream saw last, before the update being forwarded (a
        # table's old value: Kafka Streams' Change.oldValue; cached, the value at the last flush).
        self.old_values: dict[int, Any] = {}
        # Kafka Streams' Change.isLatest of the update being forwarded: False only while a versioned
        # table forwards an out-of-order update (versioned_tables.py), which the processors reading
        # that table's updates with versioned semantics skip
        self.latest = True
        self.changed = False
        # Windowed stores' record-cache entries of this group, by slot (created on first use,
        # taken at the flush; see windows.py and sessions.py).
        self.window_cache: Optional[dict[int, Any]] = None
        # task-grouped programs (SubtopologyProgram.run_task_batch): the task's state and this
        # key's source key bytes
        self.task = None
        self.raw_key: Optional[bytes] = None

    @classmethod
    def of_row(cls, row: Optional[tuple], slots: int) -> "GroupState":
        """The group of a key-grouped state row (:meth:`row`; None: the key has no state yet)."""
        state = cls([ABSENT] * slots)
        for slot, blob in enumerate(row or ()):
            if blob is not None:
                state.values[slot], stamp = slot_value(blob)
                if stamp is not None:
                    state.stamps[slot] = stamp
        return state

    def row(self) -> Optional[tuple]:
        """The key-grouped state row: one pickled value per store (with its timestamp where the
        store keeps one: :func:`slot_blob`); None when no store holds a value for the key."""
        if all(value is ABSENT for value in self.values):
            return None
        return tuple(None if value is ABSENT else slot_blob(value, self.stamps.get(slot))
                     for slot, value in enumerate(self.values))

    def mark_dirty(self, slot: int, context: RecordContext) -> None:
        """A cached store's slot was updated while processing ``context``: forward its final value
        at the flush, with that context unless a later update replaces it."""
        self.dirty.pop(slot, None)
        self.dirty[slot] = context

    def cache_entry(self, slot: int) -> Any:
        """The record-cache entry of a windowed store's slot in this group (None: none yet)."""
        cache = self.window_cache
        return None if cache is None else cache.get(slot)

    def new_cache_entry(self, slot: int, entry: Any) -> Any:
        if self.window_cache is None:
            self.window_cache = {}
        self.window_cache[slot] = entry
        return entry

    def take_cache_entry(self, slot: int) -> Any:
        """The slot's record-cache entry, removed (None: there is none)."""
        cache = self.window_cache
        return None if cache is None else cache.pop(slot, None)
