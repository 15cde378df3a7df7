"""Task-grouped execution: the state of a whole task in one value, for processors whose
semantics span keys.

Most stateful sub-topologies run grouped by the source key (``applyInPandasWithState`` by
``key``, :meth:`~dagster_kstreams.processors.program.SubtopologyProgram.run_key_group`): a key's
state is only visited when the key has records in a micro-batch. Kafka Streams' stream-stream
joins need more than that (``KStreamKStreamJoin``): a record of *any* key advances the join's
stream time, which emits the pending left/outer records of *other* keys whose window closed,
in one order across keys (the shared outer-join store); and each join store expires its records
by its own observed stream time (the largest timestamp stored in it, all keys).

A task-grouped sub-topology (``SubtopologyProgram.task_grouped``) therefore runs grouped by a
constant: the task's micro-batch is one group, processed record by record in the task's order
(``seq``), and one state row holds the :class:`TaskState`: every key's slots (the same values
:class:`~dagster_kstreams.processors.state.GroupState` holds in the key-grouped mode, so all
processors run unchanged) plus the task-level values Kafka Streams keeps per task
(``TaskState.values``: each join's ``TimeTracker`` with its stream time and smallest pending
timestamp, each join store's observed time, each join's outer-join store).

Exactness against state size: the task mode reproduces Kafka Streams' stream-stream joins
exactly (left/outer emission across keys, per-store expiry, inner joins included, so no input
needs the two sides to advance together), at the price of reading and writing the whole task
state once per micro-batch. That state is bounded by the join windows: join buffers are pruned
by each store's retention at the end of every batch (as Kafka Streams drops expired segments,
for all keys), and a pending left/outer record lives until its window closes. So one pickled row
per task is acceptable for join sub-topologies. It would not be for unbounded per-key stores:
an aggregation in the same sub-topology as a join (feeding it, or downstream of it) keeps all its
keys in the task's row too; put a ``repartition()`` between them when it has many keys.
"""


from __future__ import annotations

import pickle
from typing import Any, Iterator, Optional

from dagster_kstreams.processors.state import ABSENT, GroupState, load_state

__all__ = ["TaskState", "task_state_of"]

_FORMAT = 1


def task_state_of(processor, state) -> "TaskState":
    """The task's state behind ``state`` (a key's group in a task-grouped program); a processor that
    needs it in any other mode is a bug, named here."""
    task = None if state is None else state.task
    if task is None:
        raise ValueError(f"processor {processor.name} needs the task's state: its sub-topology runs task-grouped")
    return task


def _windows_by_start(keys: dict) -> dict:
    """``keys`` with each ``(key bytes, start, end)`` group kept under ``(key bytes, start)``; the
    slots of windows of one start and different sizes, which Kafka Streams keeps in one entry, merge."""
    if not any(isinstance(raw_key, tuple) and len(raw_key) == 3 for raw_key in keys):
        return keys
    merged: dict = {}
    for raw_key, slots in keys.items():
        if isinstance(raw_key, tuple):
            raw_key = raw_key[:2]
        merged.setdefault(raw_key, {}).update(slots)
    return merged


class TaskState:
    """One task's state while a micro-batch runs: per-key groups and task-level values."""

    def __init__(self, slots: int, keys: dict, values: dict):
        self.slots = slots
        self._stored_keys = keys  # raw key -> {slot: value}, not loaded into a group yet
        self.groups: dict[Optional[bytes], GroupState] = {}  # raw key -> its group, in first-touch order
        self.values = values  # task-level values, owned by the processor families

    @classmethod
    def load(cls, stored: Optional[bytes], slots: int, windows_by_start: bool = False) -> "TaskState":
        """``windows_by_start``: the program keeps a window's group under its key and start
        (own_groups.WindowKeys); a checkpoint written when every window's group also named its end
        is read into those groups, so an upgrade keeps the state of stores after windowed tables."""
        if stored is None:
            return cls(slots, {}, {})
        data = load_state(stored)
        if data.get("format") != _FORMAT:
            raise ValueError(f"task state format {data.get('format')!r} is not {_FORMAT}")
        keys = _windows_by_start(data["keys"]) if windows_by_start else data["keys"]
        return cls(slots, keys, data["values"])

    def group(self, raw_key: Optional[bytes]) -> GroupState:
        """The :class:`~dagster_kstreams.processors.state.GroupState` of one source key."""
        group = self.groups.get(raw_key)
        if group is None:
            stored = self._stored_keys.pop(raw_key, None) or {}
            group = GroupState([stored.get(slot, ABSENT) for slot in range(self.slots)])
            group.task = self
            group.raw_key = raw_key
            self.groups[raw_key] = group
        return group

    def slot_entries(self, slot: int) -> list[tuple[Optional[bytes], Any]]:
        """``(raw key, value)`` of every key that holds a value in store ``slot``, without loading the
        groups of the keys this batch did not touch (a user processor iterating a DSL store)."""
        entries = [(raw_key, slots[slot]) for raw_key, slots in self._stored_keys.items() if slot in slots]
        entries += [(raw_key, group.values[slot]) for raw_key, group in self.groups.items()
                    if group.values[slot] is not ABSENT]
        return entries

    def timestamps(self, store: str) -> dict[Optional[bytes], int]:
        """``{raw key: timestamp}`` of a DSL key-value store that keeps its timestamps (one a user
        processor reads: ``ValueAndTimestamp``); a task-level value, so its slots stay values alone."""
        return self.values.setdefault(f"dsl.timestamps.{store}", {})

    def touched(self) -> list[GroupState]:
        return list(self.groups.values())

    def all_groups(self) -> Iterator[GroupState]:
        """Every key's group, loading the keys this batch did not touch."""
        for raw_key in list(self._stored_keys):
            self.group(raw_key)
        return iter(self.touched())

    def dump(self) -> Optional[bytes]:
        keys = dict(self._stored_keys)
        for raw_key, group in self.groups.items():
            slots = {slot: value for slot, value in enumerate(group.values) if value is not ABSENT}
            if slots:
                keys[raw_key] = slots
        if not keys and not self.values:
            return None
        return pickle.dumps({"format": _FORMAT, "keys": keys, "values": self.values},
                            protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def store_content(stored: Optional[bytes], slot: int) -> dict:
        """``{raw key: value}`` of one store slot in a dumped task state (``read_store``)."""
        if stored is None:
            return {}
        return {raw_key: slots[slot] for raw_key, slots in load_state(stored)["keys"].items() if slot in slots}
