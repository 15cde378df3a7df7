"""What a user processor gets in ``init``: its :class:`ProcessorContext` (Kafka Streams 4.3.1's
``api.ProcessorContext``, as ``ProcessorContextImpl`` runs it): ``forward`` to its children, its
stores (its own: :mod:`.user_stores`; a DSL operation's, through that store's view), ``schedule``
of punctuators (:mod:`.punctuation`), the record's metadata, the task id and its times.

The context belongs to one :class:`~.user_processors.UserProcessorNode` for one micro-batch; the
node tells it which record is being processed (or which punctuator runs), which decides the
context a forwarded record or a DSL store's write carries.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any, Callable, Optional

from dagster_kstreams.processors.base import Processor
from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.processors.own_groups import own_group
from dagster_kstreams.processors.punctuation import PunctuationSchedule, current_stream_time, wall_clock_ms
from dagster_kstreams.processors.user_stores import open_store
from dagster_kstreams.topology.processor_api import PunctuationType, Record, RecordMetadata
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["ProcessorContext", "NO_RECORD", "record_context_time", "leave_old_value", "processing"]

NO_RECORD = RecordMetadata(None, -1, -1)


class ProcessorContext:
    """What a user processor gets in ``init`` (Kafka Streams' ``api.ProcessorContext``)."""

    # ``node``: its UserProcessorNode (annotated by the base class: user_processors.py imports this module)
    def __init__(self, node: Processor, task, out, subtopology_id: int, saved: list, partition: int):
        self._node, self._task, self._out = node, task, out
        self._task_id = TaskId(subtopology_id, partition)
        self._saved = saved  # (due, cancelled) of the schedules of the last batch, in the order made
        self._record_context = None  # the record being processed (None: in a punctuator or init)
        self._last_context = None
        self._group = None
        self._input_key: Any = None
        self._punctuation_time: Optional[int] = None  # while a punctuator runs
        self.schedules: list[PunctuationSchedule] = []

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
        # The record goes on with its own headers (Kafka Streams sets them as the record context's);
        # from a punctuator, with a context of no input record (what a topic-name extractor sees).
        context = dataclasses.replace(base, timestamp=record.timestamp, headers=record.headers.to_column(),
                                      from_punctuator=self._record_context is None or base.from_punctuator)
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
        return open_store(name, store, self._task.values.setdefault(f"papi.store.{name}", {}))

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

    def schedule(self, interval, punctuation_type: PunctuationType, punctuator: Callable[[int], None]) -> PunctuationSchedule:
        """Call ``punctuator(timestamp)`` every ``interval`` (ms or timedelta) of stream time or wall-clock time."""
        interval_ms = int(interval.total_seconds() * 1000) if isinstance(interval, timedelta) else int(interval)
        if interval_ms < 1:
            raise ValueError("The minimum supported scheduling interval is 1 millisecond.")
        if not isinstance(punctuation_type, PunctuationType):
            raise TypeError(f"schedule(): punctuation_type must be a PunctuationType, got {punctuation_type!r}")
        first = 0 if punctuation_type is PunctuationType.STREAM_TIME else wall_clock_ms() + interval_ms
        schedule = PunctuationSchedule(first, interval_ms, punctuation_type, punctuator)
        if len(self.schedules) < len(self._saved):  # the same schedule, made again: it keeps its time
            schedule.due, schedule.cancelled = self._saved[len(self.schedules)]
        self.schedules.append(schedule)
        return schedule

    def record_metadata(self) -> RecordMetadata:
        context = self._record_context
        if context is None:  # init() or a punctuator: Kafka Streams' dummy record context
            return NO_RECORD
        return RecordMetadata(context.topic, context.partition, context.offset)

    def task_id(self) -> TaskId:
        return self._task_id

    def current_stream_time_ms(self) -> int:
        return current_stream_time(self._task)

    def current_system_time_ms(self) -> int:
        return wall_clock_ms()


# -- for the runner's own processors on this context (the old API's ``timestamp()``, a sent old value) ----
def record_context_time(context: ProcessorContext) -> int:
    """Kafka Streams' record context's time: the record's; in a punctuator the punctuation's; in
    ``init`` the wall clock's (``StreamTask.punctuate``, ``initializeTopology``)."""
    if context._record_context is not None:
        return context._record_context.timestamp
    if context._punctuation_time is not None:
        return context._punctuation_time
    return context.current_system_time_ms()


def leave_old_value(context: ProcessorContext, slot: str, value: Any) -> None:
    """Leave ``value`` as the old value of the update being processed, in its key's group under ``slot``,
    for a reader that subtracts it (a re-grouping: Kafka Streams' ``Change.oldValue``)."""
    context._group.old_values[slot] = value


def processing(context: ProcessorContext) -> tuple:
    """``(node, record context, group)``: the node the context belongs to, the record it is processing
    (None in a punctuator) and that record's key's group, for a put into a store the node keeps in a
    slot of the group (a transform_values' cached store)."""
    return context._node, context._record_context, context._group
