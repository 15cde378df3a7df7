"""The Processor API on the runner: ``KStream.process`` / ``process_values`` with a user's
:class:`~dagster_kstreams.topology.processor_api.Processor`, its stores (key-value here; window, session and
versioned stores in :mod:`.user_window_store`, :mod:`.user_session_store`, :mod:`.user_versioned_store`; a DSL
operation's key-value store in :mod:`.user_dsl_store`, a versioned table's in :mod:`.user_dsl_versioned_store`, a
windowed aggregation's in :mod:`.user_dsl_window_store`, a session aggregation's in :mod:`.user_dsl_session_store`)
and punctuators, as Kafka Streams 4.3.1 runs them (``ProcessorNode``, ``ProcessorContextImpl``, ``StreamTask``,
``PunctuationQueue``).

A user processor may read and write any key of its stores and forward records of any key from a
punctuator, so its sub-topology runs task-grouped (:mod:`.task_state`): the task's records in
processing order, one at a time, with the task-level values holding

* each store's content, ``serialized key -> serialized value`` (reads deserialize a copy, as a
  store of bytes does; ``range``/``all`` iterate in the serialized keys' byte order, RocksDB's and
  the in-memory store's order);
* the task's stream time (Kafka Streams' ``PartitionGroup.streamTime``: the largest timestamp of
  every record the task has taken, null keys and values included);
* each processor's punctuation schedules' next times.

Punctuation, stream time: ``schedule(interval, STREAM_TIME, punctuator)`` is aligned to 0 (the
first fires as soon as a record has been processed, then at each multiple of the interval);
after each record has gone through the sub-topology, every schedule whose time is at most the
stream time fires once, with the stream time as its argument, and is moved to the next multiple
of the interval after it (missed ones are skipped: ``PunctuationSchedule.next``). Kafka Streams
checks after a varying number of records (its thread's ``numIterations``); checking after every
record is the finest it ever does, and what its ``TopologyTestDriver`` does.

Punctuation, wall clock: checked against the worker's clock after each record, so it fires no
later than the last record of the batch in which it came due (Kafka Streams: at its thread's next
loop); an idle task (no micro-batch) does not punctuate. Both kinds fire in order of due time
across the task's processors, as Kafka Streams' one queue per task.

Lifetime: the processor instance lives for one micro-batch: ``supplier()`` then ``init(context)``
at the batch's start (before its first record; a batch with no records does not start one), ``close()`` at its end. A schedule made again in a later batch keeps its time
and whether it was cancelled (schedules are matched by the order they are made in: make them in
``init``), and the stores persist with the task's checkpoint, so a killed and rerun task continues
exactly; instance fields do not outlive a batch.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import timedelta
from typing import Any, Callable, Iterator, Optional

from dagster_kstreams.processors.base import Processor, register
from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.processors.own_groups import own_group
from dagster_kstreams.processors.state import load_state
from dagster_kstreams.processors.user_dsl_session_store import AggregationSessionStore
from dagster_kstreams.processors.user_dsl_store import TimestampedKeyValueStore, check_dsl_store
from dagster_kstreams.processors.user_dsl_versioned_store import VersionedTableStore
from dagster_kstreams.processors.user_dsl_window_store import TimestampedWindowStore
from dagster_kstreams.processors.user_session_store import SessionStore
from dagster_kstreams.processors.user_versioned_store import VersionedKeyValueStore
from dagster_kstreams.processors.user_window_store import WindowStore
from dagster_kstreams.topology.headers import Headers
from dagster_kstreams.topology.node_specs import NodeKind, StoreType
from dagster_kstreams.topology.processor_api import (
    KeyValue, PunctuationType, Record, RecordMetadata, SessionBytesStoreSupplier, WindowBytesStoreSupplier,
)
from dagster_kstreams.topology.task_id import TaskId
from dagster_kstreams.topology.versioned import VersionedBytesStoreSupplier

__all__ = ["KeyValue", "KeyValueStore", "UserProcessorNode", "advance_stream_time", "punctuate", "user_store_content",
           "BUILDERS"]

_STREAM_TIME = "papi.stream_time"
_NO_TIME = -1  # Kafka's RecordQueue.UNKNOWN


def punctuate(nodes: list["UserProcessorNode"], stream_time: int, context, group) -> None:
    """After the record ``context`` (its key's ``group``) has gone through the sub-topology: fire
    every due schedule of the task's user processors, stream time first, then wall clock, each in
    order of due time across processors (Kafka Streams keeps one ``PunctuationQueue`` per type
    per task; equal times go in the order the schedules were made)."""
    for kind in (PunctuationType.STREAM_TIME, PunctuationType.WALL_CLOCK_TIME):
        now = stream_time if kind is PunctuationType.STREAM_TIME else _wall_clock_ms()
        if now == _NO_TIME:
            continue  # no record yet: stream time unknown
        while True:
            due = [(schedule.due, rank, node, schedule)
                   for rank, (node, schedule) in enumerate((node, schedule) for node in nodes
                                                           for schedule in node.schedules())
                   if schedule.kind is kind and not schedule.cancelled and schedule.due <= now]
            if not due:
                break
            _, _, node, schedule = min(due, key=lambda entry: entry[:2])
            node.fire(schedule, now, context, group)


def advance_stream_time(task, timestamp: Optional[int]) -> int:
    """The task's stream time after taking a record stamped ``timestamp`` (kept in ``task``)."""
    current = task.values.get(_STREAM_TIME, _NO_TIME)
    if timestamp is not None and timestamp > current:
        current = task.values[_STREAM_TIME] = timestamp
    return current


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

    def reverse_all(self) -> Iterator[KeyValue]:
        return self._entries(sorted(self._content, reverse=True))

    def approximate_num_entries(self) -> int:
        return len(self._content)

    def _entries(self, raws) -> Iterator[KeyValue]:
        # A snapshot: writes while iterating do not disturb it.
        content = self._content
        return iter([KeyValue(self._key_serde.deserialize(raw), self._value_serde.deserialize(content[raw]))
                     for raw in list(raws)])


def _open_store(name: str, store: tuple, content: dict):
    """The store a processor reads and writes over its ``content`` (a task-level value)."""
    key_serde, value_serde, supplier = store
    if isinstance(supplier, WindowBytesStoreSupplier):
        return WindowStore(name, key_serde, value_serde, supplier, content)
    if isinstance(supplier, SessionBytesStoreSupplier):
        return SessionStore(name, key_serde, value_serde, supplier, content)
    if isinstance(supplier, VersionedBytesStoreSupplier):
        return VersionedKeyValueStore.of(name, key_serde, value_serde, supplier, content)
    return KeyValueStore(name, key_serde, value_serde, content)


def user_store_content(program, stored: Optional[bytes], store_name: str) -> dict:
    """``{key: value}`` of a user processor's store in a dumped task state (``read_store``); a window
    or session store's keys are ``Windowed(key, window)`` (of a window store that retains duplicates,
    the last value in its order stands for each window); a versioned store's values are the keys' latest."""
    serdes = next((node.stores[store_name] for node in program.nodes
                   if isinstance(node, UserProcessorNode) and store_name in node.stores), None)
    if serdes is None:
        raise KeyError(f"no user processor of sub-topology {program.subtopology_id} has the store {store_name!r}")
    if stored is None:
        return {}
    content = load_state(stored)["values"].get(f"papi.store.{store_name}", {})
    store = _open_store(store_name, serdes, content)
    if isinstance(store, VersionedKeyValueStore):
        return store.latest_values()
    entries = store.fetch(None, None) if isinstance(store, SessionStore) else store.all()
    return {entry.key: entry.value for entry in entries}


class _Schedule:
    def __init__(self, due: int, interval: int, kind: PunctuationType, punctuator: Callable[[int], None]):
        self.due, self.interval, self.kind, self.punctuator = due, interval, kind, punctuator
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def advance(self, now: int) -> None:
        """``PunctuationSchedule.next``: the next due time after ``now``, skipping missed ones."""
        due = self.due + self.interval
        if now >= due:
            due = self.due + ((now - self.due) // self.interval + 1) * self.interval
        self.due = due


class ProcessorContext:
    """What a user processor gets in ``init`` (Kafka Streams' ``api.ProcessorContext``)."""

    def __init__(self, node: "UserProcessorNode", task, out, subtopology_id: int, saved: list, partition: int):
        self._node, self._task, self._out = node, task, out
        self._task_id = TaskId(subtopology_id, partition)
        self._saved = saved  # (due, cancelled) of the schedules of the last batch, in the order made
        self._record_context = None  # the record being processed (None: in a punctuator or init)
        self._last_context = None
        self._group = None
        self._input_key: Any = None
        self._punctuation_time: Optional[int] = None  # while a punctuator runs
        self.schedules: list[_Schedule] = []

    # -- what the processor asks -------------------------------------------------------
    def forward(self, record: Record, child_name: Optional[str] = None) -> None:
        """Pass ``record`` to every child (or to the child named ``child_name``)."""
        if not isinstance(record, Record):
            raise TypeError(f"processor {self._node.name}: forward() takes a Record, got {type(record).__name__}")
        node = self._node
        if node.fixed_key and self._record_context is not None and record.key != self._input_key:
            raise ProcessingError(f"processor {node.name} (process_values) changed the key of a record from "
                                  f"{self._input_key!r} to {record.key!r}; a FixedKeyProcessor cannot change keys")
        base = self._record_context or self._last_context
        if base is None:
            raise ProcessingError(f"processor {node.name}: forward() was called outside process() and a punctuator "
                                  "(in init() or close()), where Kafka Streams refuses it too")
        # The record goes on with its own headers (Kafka Streams sets them as the record context's).
        context = dataclasses.replace(base, timestamp=record.timestamp, headers=record.headers.to_column())
        forward = node.program._forward
        children = node.children if child_name is None else [node.child_position(child_name)]
        group = own_group(node, record.key, self._group)  # a punctuator's records of other keys: theirs
        for child in children:
            forward(child, record.key, record.value, context, self._out, group)

    def get_state_store(self, name: str):
        if name in self._node.dsl_stores:
            key_serde, value_serde, view = self._node.dsl_stores[name]
            program = self._node.program
            # each store's state by the key as that store's serde writes it (store_keyed_groups.py)
            return view(name, key_serde, value_serde, program.store_owner(name), program.store_key_serde(name),
                        self._task, self._write_context)
        store = self._node.stores.get(name)
        if store is None:
            raise ProcessingError(
                f"Processor {self._node.name} has no access to StateStore {name} as the store is not connected to the "
                "processor. Name it in process(supplier, *store_names) after adding it with add_state_store()")
        return _open_store(name, store, self._task.values.setdefault(f"papi.store.{name}", {}))

    def _write_context(self, timestamp: Optional[int]):
        """The record context a write to a DSL store made now is stamped (and, cached, flushed) with:
        the record's, or in a punctuator Kafka Streams' (the punctuation time, no headers); with
        ``timestamp`` (a ValueAndTimestamp's) in place of its time unless None (a delete)."""
        context = self._record_context
        if context is None:
            if self._last_context is None:
                raise ProcessingError(f"processor {self._node.name}: a DSL store was written in init() or close(), "
                                      "where no record gives the write its context")
            context = dataclasses.replace(self._last_context, timestamp=self._punctuation_time, headers=None)
        return context if timestamp is None else dataclasses.replace(context, timestamp=timestamp)

    def schedule(self, interval, punctuation_type: PunctuationType, punctuator: Callable[[int], None]) -> _Schedule:
        """Call ``punctuator(timestamp)`` every ``interval`` (ms or timedelta) of stream time or wall-clock time."""
        interval_ms = int(interval.total_seconds() * 1000) if isinstance(interval, timedelta) else int(interval)
        if interval_ms < 1:
            raise ValueError("The minimum supported scheduling interval is 1 millisecond.")
        if not isinstance(punctuation_type, PunctuationType):
            raise TypeError(f"schedule(): punctuation_type must be a PunctuationType, got {punctuation_type!r}")
        first = 0 if punctuation_type is PunctuationType.STREAM_TIME else _wall_clock_ms() + interval_ms
        schedule = _Schedule(first, interval_ms, punctuation_type, punctuator)
        if len(self.schedules) < len(self._saved):  # the same schedule, made again: it keeps its time
            schedule.due, schedule.cancelled = self._saved[len(self.schedules)]
        self.schedules.append(schedule)
        return schedule

    def record_metadata(self) -> Optional[RecordMetadata]:
        context = self._record_context
        return None if context is None else RecordMetadata(context.topic, context.partition, context.offset)

    def task_id(self) -> TaskId:
        return self._task_id

    def current_stream_time_ms(self) -> int:
        return self._task.values.get(_STREAM_TIME, _NO_TIME)

    def current_system_time_ms(self) -> int:
        return _wall_clock_ms()


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


@register
class UserProcessorNode(Processor):
    """A node of ``process``/``process_values``: runs a fresh user processor each micro-batch."""

    kind = "process"
    task_grouped = True
    punctuates = True
    forwards_other_keys = True  # from punctuators, and process() may change keys
    looks_up_each_store = True  # each view finds a key's state in its store's own key bytes

    def __init__(self, name: str, supplier: Callable, stores: dict, fixed_key: bool, child_names: list[str],
                 dsl_stores: Optional[dict] = None):
        super().__init__(name)
        self.supplier = supplier
        self.stores = stores  # store name -> (key serde, value serde, window, session or versioned store supplier or None)
        # a DSL operation's stores it names: store name -> (key serde, value serde, the view a processor
        # gets: user_dsl_store.py, user_dsl_versioned_store.py, user_dsl_window_store.py, user_dsl_session_store.py)
        self.dsl_stores = dsl_stores or {}
        self.fixed_key = fixed_key
        self.child_names = child_names
        self._instance = None
        self._context: Optional[ProcessorContext] = None

    def schedules(self) -> list[_Schedule]:
        return [] if self._context is None else self._context.schedules

    def child_position(self, child_name: str) -> int:
        if child_name not in self.child_names:
            raise ProcessingError(f"processor {self.name}: Unknown downstream node: {child_name} "
                                  f"(children: {self.child_names})")
        return self.children[self.child_names.index(child_name)]

    def start_task_batch(self, task, out, first_context) -> None:
        saved = task.values.get(f"papi.schedules.{self.name}", [])
        self._context = context = ProcessorContext(self, task, out, self.program.subtopology_id, saved,
                                                   first_context.partition)
        self._instance = self.supplier()
        self._instance.init(context)

    def process(self, key, value, context, out, state) -> None:
        ctx = self._context
        ctx._record_context = ctx._last_context = context
        ctx._group, ctx._input_key = state, key
        try:
            record = Record(key, value, context.timestamp, Headers.from_column(context.headers))
            self.call(context, self._instance.process, record)
        finally:
            ctx._record_context = None

    def fire(self, schedule: _Schedule, now: int, context, group) -> None:
        """Run one due punctuator, after the record ``context`` (its key's ``group``)."""
        ctx = self._context
        ctx._last_context, ctx._group, ctx._punctuation_time = context, group, now
        try:
            schedule.punctuator(now)
        except Exception as cause:  # noqa: BLE001 - re-raised naming the processor
            raise ProcessingError(f"processor {self.name}: punctuator failed at {schedule.kind.name} {now}: "
                                  f"{type(cause).__name__}: {cause}") from cause
        finally:
            ctx._punctuation_time = None
        schedule.advance(now)

    def end_task_batch(self, task) -> None:
        context = self._context
        if context is None:
            return
        saved = [(s.due, s.cancelled) for s in context.schedules]
        task.values[f"papi.schedules.{self.name}"] = saved + context._saved[len(saved):]
        self._instance.close()
        self._instance = self._context = None


# -- definition time -------------------------------------------------------------------------
def build(factory, ctx) -> UserProcessorNode:
    stores, dsl_stores = {}, {}
    for store_name in factory.stores:
        spec = ctx.topology.state_stores[store_name]
        serdes = (spec.key_serde or ctx.default_key_serde, spec.value_serde or ctx.default_value_serde)
        if spec.type is StoreType.USER_VERSIONED:
            stores[store_name] = (*serdes, VersionedBytesStoreSupplier(store_name, spec.history_retention_ms))
        elif spec.type in (StoreType.USER_KEY_VALUE, StoreType.USER_WINDOW, StoreType.USER_SESSION):
            stores[store_name] = (*serdes, spec.window)  # the window or session store's supplier (None: key-value)
        else:
            check_dsl_store(factory, spec, ctx.subtopology)
            view = VersionedTableStore if spec.history_retention_ms is not None else _DSL_STORE_VIEWS.get(
                spec.type, TimestampedKeyValueStore)
            dsl_stores[store_name] = (*serdes, view)
    return UserProcessorNode(factory.name, factory.params["supplier"], stores,
                             fixed_key=factory.kind is NodeKind.PROCESS_VALUES, child_names=list(factory.children),
                             dsl_stores=dsl_stores)


# The view of a DSL store a processor names, by the store's type (check_dsl_store admits which).
_DSL_STORE_VIEWS = {StoreType.WINDOW: TimestampedWindowStore, StoreType.SESSION: AggregationSessionStore}

BUILDERS = {NodeKind.PROCESS: build, NodeKind.PROCESS_VALUES: build}
