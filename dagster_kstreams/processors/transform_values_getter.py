"""A ``KTable.transform_values`` table without a store of its own, read by a stream-table join (or by an
inner table-table join whose result goes to ``to_stream`` only, for the other table's updates) through
its value getter (Kafka Streams 4.3.1's ``KTableTransformValues.KTableTransformValuesGetter``).

Kafka Streams' getter asks the parent table's getter for the key's row, then calls ``transform(key,
value)`` of a transformer of its own (a second ``supplier()`` call: not the processor's instance), on a
missing row too (``transform(key, None)``: what the transformer makes of no row is the joined value).
That transformer was ``init``-ed with the reading processor's context with forwarding refused
(``ForwardingDisabledProcessorContext``), and while it transforms, the record context is the parent
row's: its timestamp (-1 with no row), no topic, partition and offset -1.

The runner gives the reader's :class:`TransformedView` a fresh transformer per micro-batch, as a user
processor's (README, "The Processor API": instance fields do not outlive a batch), made and ``init``-ed
at the batch's start and closed at its end. Its context (:class:`GetterTransformerContext`) gives the
parent row's time and that record metadata, the task id and the wall clock; it refuses ``forward``,
a store not connected to the join (Kafka Streams' ``getStateStore`` throws there too: the join is
connected to the parent table's stores only), the parent table's store itself (Kafka Streams gives the
join's view of it, not modelled here yet) and ``schedule``/``current_stream_time_ms`` (a punctuator of
the join's node is not modelled).
"""

from __future__ import annotations

from typing import Any, Optional

from dagster_kstreams.processors.base import Processor
from dagster_kstreams.processors.errors import ProcessingError, UnsupportedTopologyError
from dagster_kstreams.processors.punctuation import wall_clock_ms
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.processor_api import RecordMetadata
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["GetterTransformerContext", "TransformedView", "UNKNOWN_TIMESTAMP", "joined_without_old_values"]

# Kafka Streams' UNKNOWN: the record context's timestamp when the parent table has no row for the key.
UNKNOWN_TIMESTAMP = -1
# The getter's record context: Kafka Streams knows no topic, partition or offset of a stored row.
_STORED_ROW = RecordMetadata(None, -1, -1)


class GetterTransformerContext:
    """What the getter's transformer gets in ``init``: the reader's context, forwarding refused, the
    record context the parent row's while it transforms (Kafka Streams' ``transformValue``)."""

    def __init__(self, reader_name: str, transform_name: str, task_id: TaskId, reader_stores: tuple = ()):
        self._reader_name, self._transform_name, self._task_id = reader_name, transform_name, task_id
        self._reader_stores = reader_stores  # the stores Kafka Streams connects to the reader
        self.row_timestamp: Optional[int] = None  # the parent row's, while transform runs

    def _refused(self, what: str) -> ProcessingError:
        return ProcessingError(
            f"processor {self._reader_name} reads the table of {self._transform_name} (transform_values) through "
            f"its value getter, whose transformer called {what}; the Spark runner does not model that there yet")

    def forward(self, *args, **kwargs) -> None:
        raise ProcessingError(f"processor {self._reader_name}: ProcessorContext#forward() is not supported from "
                              "this context, as the return value of transformValues is used instead.")

    def get_state_store(self, name: str):
        if name in self._reader_stores:
            raise self._refused(f"get_state_store({name!r}), a store of the table behind it")
        raise ProcessingError(f"Processor {self._reader_name} has no access to StateStore {name} as the store is "
                              "not connected to the processor.")

    def schedule(self, interval, punctuation_type, punctuator):
        raise self._refused("schedule")

    def current_stream_time_ms(self) -> int:
        raise self._refused("current_stream_time_ms")

    def timestamp(self) -> int:
        if self.row_timestamp is None:
            raise self._refused("timestamp outside transform")
        return self.row_timestamp

    def record_metadata(self) -> RecordMetadata:
        return _STORED_ROW

    def task_id(self) -> TaskId:
        return self._task_id

    def current_system_time_ms(self) -> int:
        return wall_clock_ms()


class TransformedView:
    """The transform_values table's value for a key: ``parent``'s (a
    :class:`~.value_getters.ValueGetter` of the table behind it), through the view's own transformer.
    Read by a :class:`~.value_getters.ValueGetter` as a table it reads through (its ``joined``)."""

    def __init__(self, transform_name: str, supplier, parent, reader_stores: tuple = ()):
        self.transform_name, self.supplier, self.parent = transform_name, supplier, parent
        self.reader_stores = reader_stores  # the stores Kafka Streams connects to the reader
        self._transformer = None  # this micro-batch's, between start_batch and end_batch
        self._context: Optional[GetterTransformerContext] = None

    def bind(self, program) -> None:
        if not program.task_grouped:  # the transform_values' own node makes its sub-topology task-grouped
            raise UnsupportedTopologyError(
                f"the table of {self.transform_name} (transform_values) is read outside a task-grouped program")
        self.parent.bind(program)
        self.parent.keep_timestamps(program)  # the transformer's context gives the row's time

    def keep_timestamps(self, program) -> None:
        self.parent.keep_timestamps(program)

    def start_batch(self, reader: Processor, task_id: TaskId, context) -> None:
        """A fresh transformer of the supplier, ``init``-ed with the reader's context (``context``: the
        batch's first record's, naming it in a failure)."""
        self._context = GetterTransformerContext(reader.name, self.transform_name, task_id, self.reader_stores)
        self._transformer = self.supplier()
        reader.call(context, self._transformer.init, self._context)

    def end_batch(self) -> None:
        if self._transformer is not None:
            self._transformer.close()
        self._transformer = self._context = None

    def get(self, reader: Processor, key, state, context) -> Any:
        """The value (ABSENT: none)."""
        return self.get_timestamped(reader, key, state, context)[0]

    def get_timestamped(self, reader: Processor, key, state, context) -> tuple[Any, int]:
        """``(value or ABSENT, timestamp)``: the parent row's timestamp (Kafka Streams' ``UNKNOWN`` with no
        row, whatever the transformer makes of it)."""
        value, timestamp = self.parent.get_timestamped(reader, key, state, context)
        timestamp = UNKNOWN_TIMESTAMP if value is None else timestamp
        self._context.row_timestamp = timestamp
        try:
            transformed = reader.call(context, self._transformer.transform, key, value)
        finally:
            self._context.row_timestamp = None
        return ABSENT if transformed is None else transformed, timestamp


def joined_without_old_values(sub, reader) -> bool:
    """Whether ``reader``, a child of a transform_values without a store, is an inner table-table join
    whose result goes to ``to_stream`` only, without a store: no side of it then sends old values (Kafka
    Streams asks a left join's left table and an outer join's tables for them, and a join's sides when a
    reader of its result does, which a transform_values without a store makes by calling its transformer
    on the old value too, not modelled yet), and the other table's updates read this one through its
    value getter."""
    if reader.kind is not NodeKind.TABLE_TABLE_JOIN or reader.params["join_type"] != "inner":
        return False
    (merge_name,) = reader.children
    merge = sub.node(merge_name)
    store = merge.params.get("store_name")
    return (store is None or store not in merge.stores) and all(
        sub.node(child).kind is NodeKind.TABLE_TO_STREAM for child in merge.children)
