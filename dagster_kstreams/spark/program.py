"""The processors of one sub-topology, run record by record inside Spark's Python workers.

A :class:`SubtopologyProgram` is what a Spark task ships to its Python workers (pickled with the
user's functions). It holds the sub-topology's processors as :class:`ExecNode` objects, already
resolved (serdes chosen, user functions in ``(key, value)`` form), and runs a whole Arrow batch
or a whole key group through all of them in one Python pass: consecutive processors are fused,
never one Python call per operator per row through Spark.

Three entry points, one per kind of sub-topology:

* :meth:`SubtopologyProgram.process_arrow_batch` — stateless sub-topologies, through
  ``mapInArrow``: source records in, sink records out.
* :meth:`SubtopologyProgram.process_key_group` — sub-topologies with state (aggregations,
  tables), through ``applyInPandasWithState`` grouped by the source record key: all records of
  one key in a micro-batch, in offset order, with that key's stored values of every store of the
  sub-topology. Within one sub-topology every stateful processor sees the source key (Kafka
  Streams inserts a repartition topic before any stateful processor whose key changed), so one
  state row per source key holds the key's value in each store.
* :meth:`SubtopologyProgram.process_task_batch` — sub-topologies whose semantics span keys
  (stream-stream joins, :data:`TASK_GROUPED_KINDS`), grouped by a constant: the task's whole
  micro-batch in processing order, with one state value holding every key's slots and the
  task-level state (:mod:`dagster_kstreams.spark.task_state`).

Aggregations emit like Kafka Streams with its record cache: after the group's records are
applied, each updated store forwards its final value for the key downstream once
(``caching_enabled=False`` in ``Materialized`` forwards every update instead).
"""

from __future__ import annotations

import logging
import pickle
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Optional

from dagster_kstreams.kafka.dead_letter import (
    DeadLetterPolicy,
    DeserializationError,
    DeserializationHandler,
    dead_letter_headers,
)
from dagster_kstreams.spark.event_time import TIMESTAMP_HEADER, encode_timestamp

__all__ = [
    "ExecNode",
    "SubtopologyProgram",
    "ProcessingError",
    "OUTPUT_COLUMNS",
    "DROPPED_LATE_TOPIC",
    "OUTPUT_SPARK_SCHEMA",
    "SOURCE_COLUMNS",
]

log = logging.getLogger(__name__)

# What a task's Python pass emits: the columns Spark's Kafka sink reads. There is no
# `partition` column on purpose: the producer's default partitioner (murmur2 of the key bytes)
# places each record, exactly as Kafka Streams and every Java client would.
OUTPUT_COLUMNS = ("topic", "key", "value", "headers")
OUTPUT_SPARK_SCHEMA = "topic string, key binary, value binary, headers array<struct<key: string, value: binary>>"
# What the task reads from Spark's Kafka source (event_time: the record's timestamp in epoch ms,
# see dagster_kstreams.spark.event_time).
SOURCE_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "event_time")

STATELESS_KINDS = {
    "source", "sink", "filter", "map", "map_values", "flat_map", "flat_map_values", "select_key",
    "peek", "foreach", "print", "merge", "branch", "branch_child", "repartition_filter",
    "table_filter", "table_map_values", "table_to_stream",
}
STATEFUL_KINDS = {"aggregate", "to_table", "table_source", "session_aggregate"}
# Processors that read other processors' stores (dagster_kstreams.spark.joins).
JOIN_KINDS = {"stream_table_join", "table_table_join"}
# Windowed aggregations (dagster_kstreams.spark.windows): one state slot holds a key's windows.
WINDOW_KINDS = {"time_window_aggregate", "sliding_window_aggregate"}
# Processors that read the task's stream time (dagster_kstreams.spark.event_time).
STREAM_TIME_KINDS: set[str] = {"session_aggregate", *WINDOW_KINDS}
# Of those, the ones whose stream time skips records with a null value too (not only a null key).
STREAM_TIME_SKIPS_NULL_VALUES_KINDS = {"sliding_window_aggregate"}
# Stream-stream joins (dagster_kstreams.spark.stream_joins): each join window buffers its side per key.
STREAM_JOIN_KINDS = {"join_window", "stream_stream_join"}
STATEFUL_KINDS.add("join_window")
STREAM_TIME_KINDS.update(STREAM_JOIN_KINDS)
# Processors whose semantics span keys: their sub-topology runs task-grouped
# (SubtopologyProgram.process_task_batch, dagster_kstreams.spark.task_state).
TASK_GROUPED_KINDS = {"stream_stream_join"}
# A pseudo-topic: one row per record dropped because its window had closed (key: the raw source
# key). The runner counts these rows (TaskResult.records_dropped_late) and writes none of them.
DROPPED_LATE_TOPIC = "__dagster_kstreams.dropped-late"


class ProcessingError(RuntimeError):
    """A user function failed; the message names the processor and the source record."""


@dataclass
class ExecNode:
    """One resolved processor.

    ``kind`` is a :class:`dagster_kstreams.topology.graph.NodeKind` value (``"filter"``,
    ``"aggregate"`` ...). ``fn`` is in ``(key, value)`` form for record functions; aggregations
    use ``initializer()``, ``aggregator(key, value, aggregate)`` or ``reducer(aggregate, value)``.
    """

    name: str
    kind: str
    children: list[int] = field(default_factory=list)
    fn: Optional[Callable] = None
    # filter / table_filter: keep records for which fn is False (filterNot)
    negate: bool = False
    # source
    topics: tuple[str, ...] = ()
    key_serde: Any = None
    value_serde: Any = None
    # sink: a static topic or a topic extractor fn(key, value) -> str
    topic: Optional[str] = None
    topic_extractor: Optional[Callable] = None
    # branch: one predicate per child, in order; a None predicate is the default branch
    predicates: tuple = ()
    # aggregate: "count" | "reduce" | "aggregate"
    aggregation: Optional[str] = None
    initializer: Optional[Callable] = None
    aggregator: Optional[Callable] = None
    reducer: Optional[Callable] = None
    # stateful nodes: the store's name and its column in the task's state row
    store: Optional[str] = None
    state_slot: Optional[int] = None
    # Kafka Streams' record cache: emit once per key per batch (True) or on every update
    cached: bool = True
    # joins and windows (dagster_kstreams.spark.joins / .windows): their own settings
    options: dict = field(default_factory=dict)

    @property
    def stateful(self) -> bool:
        return self.kind in STATEFUL_KINDS or self.kind in WINDOW_KINDS


class _Output:
    """Sink records of one pass, column by column (the shape Arrow and pandas want)."""

    def __init__(self) -> None:
        self.topic: list[str] = []
        self.key: list[Optional[bytes]] = []
        self.value: list[Optional[bytes]] = []
        self.headers: list[Optional[list[dict]]] = []

    def append(self, topic: str, key: Optional[bytes], value: Optional[bytes], headers=None) -> None:
        self.topic.append(topic)
        self.key.append(key)
        self.value.append(value)
        self.headers.append(
            None if headers is None else [{"key": name, "value": data} for name, data in headers]
        )

    def __len__(self) -> int:
        return len(self.topic)


@dataclass
class _RecordContext:
    topic: str
    partition: int
    offset: int
    # the record's timestamp (epoch ms) and the task's stream time after it (None: not read)
    timestamp: Optional[int] = None
    stream_time: Optional[int] = None
    stream_time_before: Optional[int] = None  # the task's stream time before this record
    # the source record's key bytes (task-grouped programs route records to their key's state by it)
    raw_key: Optional[bytes] = None

    def describe(self) -> str:
        return f"topic {self.topic!r} partition {self.partition} offset {self.offset}"


class _GroupState:
    """The stored values of one key, one slot per store, for the length of one key group."""

    def __init__(self, values: list[Any]):
        self.values = values
        self.keys: list[Any] = [None] * len(values)  # the key each store last saw (for its emit)
        self.dirty: set[int] = set()  # slots whose final value is still to be forwarded
        self.changed = False
        # task-grouped programs (SubtopologyProgram.process_task_batch): the task's state, this
        # key's source key bytes and the context its cached stores flush with
        self.task = None
        self.raw_key: Optional[bytes] = None
        self.last_context: Optional[_RecordContext] = None


_ABSENT = object()


class SubtopologyProgram:
    """All processors of one sub-topology, ready to run in a Python worker."""

    def __init__(
        self,
        subtopology_id: int,
        nodes: list[ExecNode],
        dead_letters: DeadLetterPolicy = DeadLetterPolicy(),
    ):
        self.subtopology_id = subtopology_id
        self.nodes = nodes
        self.dead_letters = dead_letters
        self.source_by_topic: dict[str, int] = {}
        for index, node in enumerate(nodes):
            if node.kind == "source":
                for topic in node.topics:
                    self.source_by_topic[topic] = index
        self.stateful_nodes = [index for index, node in enumerate(nodes) if node.stateful]
        self.store_slots = {nodes[i].store: nodes[i].state_slot for i in self.stateful_nodes}
        self._last_raw_key = self._last_key = self._last_key_node = None
        self._check()

    def _check(self) -> None:
        for index, node in enumerate(self.nodes):
            if node.kind not in STATELESS_KINDS | STATEFUL_KINDS | JOIN_KINDS | WINDOW_KINDS | STREAM_JOIN_KINDS:
                raise ValueError(f"processor {node.name}: kind {node.kind!r} is not runnable on Spark")
            for child in node.children:
                if not index < child < len(self.nodes):
                    raise ValueError(f"processor {node.name}: children must follow it in topological order")
            if node.stateful and (node.store is None or node.state_slot is None):
                raise ValueError(f"processor {node.name}: a stateful processor needs a store and a state slot")

    @property
    def stateful(self) -> bool:
        return bool(self.stateful_nodes)

    @property
    def uses_stream_time(self) -> bool:
        return any(node.kind in STREAM_TIME_KINDS for node in self.nodes)

    @property
    def stream_time_skips_null_values(self) -> bool:
        """Whether stream time advances only on records with a key and a value (sliding windows)."""
        return any(node.kind in STREAM_TIME_SKIPS_NULL_VALUES_KINDS for node in self.nodes)

    @property
    def needs_processing_order(self) -> bool:
        """Whether the task must order its records across partitions and track stream time
        before grouping them by key (:func:`dagster_kstreams.spark.event_time.with_processing_order`)."""
        return self.stateful and (len(self.source_by_topic) > 1 or self.uses_stream_time)

    def jvm_count(self) -> Optional[tuple[str, "ExecNode", "ExecNode"]]:
        """``(store, source, sink)`` when the whole sub-topology is ``source -> count ->
        to_stream -> to(topic)`` with keys passed through unchanged: Spark's own streaming
        aggregation (JVM, RocksDB state, update mode = one update per key per batch) then does it,
        with no Python at all. None otherwise."""
        chain = [node for node in self.nodes if node.kind not in ("merge", "repartition_filter")]
        if [node.kind for node in chain] != ["source", "aggregate", "table_to_stream", "sink"]:
            return None
        source, count, to_stream, sink = chain
        if count.aggregation != "count" or not count.cached or to_stream.fn is not None or sink.topic is None:
            return None
        if any(len(node.children) != 1 for node in self.nodes if node.kind != "sink"):
            return None
        # The key bytes go out as they came in: same serde on both sides, one that cannot fail.
        if type(source.key_serde) is not type(sink.key_serde) or source.key_serde.name not in ("String", "ByteArray"):
            return None
        if sink.value_serde.name != "Long":
            return None
        return count.store, source, sink

    @property
    def store_names(self) -> list[str]:
        return [self.nodes[i].store for i in sorted(self.stateful_nodes, key=lambda i: self.nodes[i].state_slot)]

    # -- entry points -----------------------------------------------------------------
    def process_arrow_batch(self, batch) -> "Any":
        """Run a batch of source records (a ``pyarrow.RecordBatch``) through a stateless
        sub-topology; return the sink records as a ``pyarrow.RecordBatch``."""
        import pyarrow as pa

        out = _Output()
        names = ("key", "value", "topic", "partition", "offset", "event_time")
        columns = {name: batch.column(batch.schema.get_field_index(name)).to_pylist() for name in names}
        for key, value, topic, partition, offset, timestamp in zip(*(columns[name] for name in names)):
            self._process_source_record(_RecordContext(topic, partition, offset, timestamp), key, value, out, None)
        return pa.RecordBatch.from_arrays(
            [
                pa.array(out.topic, type=pa.string()),
                pa.array(out.key, type=pa.binary()),
                pa.array(out.value, type=pa.binary()),
                pa.array(out.headers, type=_arrow_headers_type()),
            ],
            names=list(OUTPUT_COLUMNS),
        )

    def process_key_group(
        self, records, stored: Optional[tuple], watermark_ms: Optional[int] = None
    ) -> tuple[Any, Optional[tuple]]:
        """Run all records of one source key (a pandas DataFrame with :data:`SOURCE_COLUMNS`,
        plus the ordering columns of :func:`~dagster_kstreams.spark.event_time.with_processing_order`
        when :attr:`needs_processing_order`) through a stateful sub-topology.

        ``stored`` is the key's state row (one pickled value per store, or None);
        ``watermark_ms`` is the stream time at the start of the micro-batch. Returns the sink
        records as a pandas DataFrame (None if there are none) and the new state row (None:
        nothing stored any more).
        """
        slots = len(self.stateful_nodes)
        values = [_ABSENT] * slots
        if stored is not None:
            values = [_ABSENT if blob is None else pickle.loads(blob) for blob in stored]
        state = _GroupState(values)
        out = _Output()
        last_context = None
        for context, key, value in self._source_records(records, watermark_ms):
            context = self._process_source_record(context, key, value, out, state)
            last_context = context or last_context
        if last_context is not None:
            self._flush(state, out, last_context)
        frame = _frame(out)
        if not state.changed:
            return frame, stored
        if all(value is _ABSENT for value in state.values):
            return frame, None
        return frame, tuple(
            None if value is _ABSENT else pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            for value in state.values
        )

    @property
    def task_grouped(self) -> bool:
        """Whether the sub-topology runs task-grouped (:meth:`process_task_batch`): it has a
        processor in :data:`TASK_GROUPED_KINDS`, whose semantics span keys."""
        return any(node.kind in TASK_GROUPED_KINDS for node in self.nodes)

    def process_task_batch(
        self, records, stored: Optional[bytes], watermark_ms: Optional[int] = None
    ) -> tuple[Any, Optional[bytes]]:
        """Run a whole micro-batch of one task (all keys, in processing order) through a
        task-grouped sub-topology with the task's state (one pickled value, or None; see
        :mod:`dagster_kstreams.spark.task_state`). Each record runs with its source key's
        :class:`_GroupState` (as in :meth:`process_key_group`); keys are flushed at the end of the
        batch. Returns the sink records (a pandas DataFrame or None) and the new task state."""
        from dagster_kstreams.spark.task_state import TaskState

        task = TaskState.load(stored, len(self.stateful_nodes))
        out = _Output()
        for context, key, value in self._source_records(records, watermark_ms):
            group = task.group(context.raw_key)
            context = self._process_source_record(context, key, value, out, group)
            if context is not None:
                group.last_context = context
        for group in task.touched():
            if group.dirty and group.last_context is not None:
                self._flush(group, out, group.last_context)
        task.end_of_batch(self)
        return _frame(out), task.dump()

    def _source_records(self, records, watermark_ms: Optional[int]):
        """``(context, raw key, raw value)`` of each record of a pandas batch, in the task's
        processing order."""
        if "seq" in records.columns:
            # The task's processing order across its partitions (Kafka Streams' timestamp merge).
            if not records["seq"].is_monotonic_increasing:
                records = records.sort_values("seq", kind="stable")
        elif len(self.source_by_topic) > 1:
            raise ValueError(f"sub-topology {self.subtopology_id} reads several topics: its records need the "
                             "processing order (event_time.with_processing_order)")
        elif not records["offset"].is_monotonic_increasing:
            records = records.sort_values("offset", kind="stable")
        if "stream_time" in records.columns:
            floor = -1 if watermark_ms is None else watermark_ms
            stream_times = [max(floor, t) for t in records["stream_time"].tolist()]
            befores = [max(floor, t) for t in records["stream_time_before"].tolist()] \
                if "stream_time_before" in records.columns else [None] * len(records)
        else:
            stream_times = befores = [None] * len(records)
        for key, value, topic, partition, offset, timestamp, stream_time, before in zip(
            records["key"].tolist(), records["value"].tolist(), records["topic"].tolist(),
            records["partition"].tolist(), records["offset"].tolist(), records["event_time"].tolist(),
            stream_times, befores,
        ):
            raw_key = None if key is None else bytes(key)
            yield _RecordContext(topic, partition, offset, timestamp, stream_time, before, raw_key), raw_key, value

    # -- record flow ------------------------------------------------------------------
    def _process_source_record(self, context: _RecordContext, raw_key, raw_value, out: _Output, state):
        topic, partition, offset = context.topic, context.partition, context.offset
        index = self.source_by_topic.get(topic)
        if index is None:
            raise ValueError(f"record at {context.describe()}: topic is not a source of sub-topology {self.subtopology_id}")
        node = self.nodes[index]
        raw_key = None if raw_key is None else bytes(raw_key)
        raw_value = None if raw_value is None else bytes(raw_value)
        try:
            part = "key"
            if raw_key is not None and raw_key == self._last_raw_key and node is self._last_key_node:
                key = self._last_key  # a key group (and a skewed batch) repeats the same key
            else:
                key = node.key_serde.deserialize(raw_key)
                self._last_raw_key, self._last_key, self._last_key_node = raw_key, key, node
            part = "value"
            value = node.value_serde.deserialize(raw_value)
        except Exception as cause:  # noqa: BLE001 - any serde failure is the handler's to judge
            serde = node.key_serde if part == "key" else node.value_serde
            error = DeserializationError(topic, partition, offset, part, repr(serde), cause)
            if self.dead_letters.handler is DeserializationHandler.FAIL:
                raise error from cause
            log.warning("skipping a record: %s", error)
            if self.dead_letters.dead_letter_topic:
                out.append(
                    self.dead_letters.dead_letter_topic, raw_key, raw_value,
                    dead_letter_headers(topic, partition, offset, error),
                )
            return None
        for child in node.children:
            self._forward(child, key, value, context, out, state)
        return context

    def _call(self, node: ExecNode, context: _RecordContext, fn: Callable, *args):
        try:
            return fn(*args)
        except Exception as cause:  # noqa: BLE001 - re-raised with the record's coordinates
            raise ProcessingError(
                f"processor {node.name} ({node.kind}) failed on the record at {context.describe()}: "
                f"{type(cause).__name__}: {cause}"
            ) from cause

    def _forward(self, index: int, key, value, context: _RecordContext, out: _Output, state) -> None:
        node = self.nodes[index]
        kind = node.kind
        children = node.children
        if kind == "filter":
            if bool(self._call(node, context, node.fn, key, value)) != node.negate:
                for child in children:
                    self._forward(child, key, value, context, out, state)
        elif kind == "map_values":
            new_value = self._call(node, context, node.fn, key, value)
            for child in children:
                self._forward(child, key, new_value, context, out, state)
        elif kind == "map":
            new_key, new_value = _pair(node, self._call(node, context, node.fn, key, value))
            for child in children:
                self._forward(child, new_key, new_value, context, out, state)
        elif kind == "select_key":
            new_key = self._call(node, context, node.fn, key, value)
            for child in children:
                self._forward(child, new_key, value, context, out, state)
        elif kind == "flat_map":
            for pair in self._call(node, context, node.fn, key, value) or ():
                new_key, new_value = _pair(node, pair)
                for child in children:
                    self._forward(child, new_key, new_value, context, out, state)
        elif kind == "flat_map_values":
            for new_value in self._call(node, context, node.fn, key, value) or ():
                for child in children:
                    self._forward(child, key, new_value, context, out, state)
        elif kind in ("peek", "foreach", "print"):
            if node.fn is not None:
                self._call(node, context, node.fn, key, value)
            for child in children:
                self._forward(child, key, value, context, out, state)
        elif kind in ("merge", "branch_child"):
            for child in children:
                self._forward(child, key, value, context, out, state)
        elif kind == "branch":
            for predicate, child in zip(node.predicates, children):
                if predicate is None or self._call(node, context, predicate, key, value):
                    self._forward(child, key, value, context, out, state)
                    break
        elif kind == "repartition_filter":
            if key is not None:
                for child in children:
                    self._forward(child, key, value, context, out, state)
        elif kind == "sink":
            topic = node.topic
            if topic is None:
                topic = self._call(node, context, node.topic_extractor, key, value)
            try:
                key_bytes = node.key_serde.serialize(key)
                value_bytes = node.value_serde.serialize(value)
            except Exception as cause:  # noqa: BLE001
                raise ProcessingError(
                    f"sink {node.name} cannot serialize the record for topic {topic!r} (from the record at "
                    f"{context.describe()}) with key serde {node.key_serde!r} and value serde "
                    f"{node.value_serde!r}: {type(cause).__name__}: {cause}"
                ) from cause
            headers = None
            if node.options.get("carry_timestamp") and context.timestamp is not None:
                # A repartition topic: the record keeps its timestamp (event_time.TIMESTAMP_HEADER).
                headers = ((TIMESTAMP_HEADER, encode_timestamp(context.timestamp)),)
            out.append(topic, key_bytes, value_bytes, headers)
        elif kind == "table_filter":
            keep = value is not None and bool(self._call(node, context, node.fn, key, value)) != node.negate
            for child in children:
                self._forward(child, key, value if keep else None, context, out, state)
        elif kind == "table_map_values":
            new_value = None if value is None else self._call(node, context, node.fn, key, value)
            for child in children:
                self._forward(child, key, new_value, context, out, state)
        elif kind == "table_to_stream":
            if node.fn is not None:
                value = self._call(node, context, node.fn, key, value)
            for child in children:
                self._forward(child, key, value, context, out, state)
        elif kind in JOIN_KINDS:
            from dagster_kstreams.spark import joins

            joins.forward(self, node, key, value, context, out, state)
        elif kind in STREAM_JOIN_KINDS:
            from dagster_kstreams.spark import stream_joins

            stream_joins.forward(self, node, key, value, context, out, state)
        elif kind == "session_aggregate":
            from dagster_kstreams.spark import sessions

            sessions.forward(self, node, key, value, context, out, state)
        elif kind in WINDOW_KINDS:
            from dagster_kstreams.spark import windows

            windows.forward(self, node, key, value, context, out, state)
        elif kind in STATEFUL_KINDS:
            if state is None:
                raise ValueError(f"processor {node.name} needs state but runs in a stateless pass")
            self._update_store(node, key, value, context, out, state)
        else:  # pragma: no cover - _check rejects unknown kinds
            raise ValueError(f"processor {node.name}: unknown kind {kind!r}")

    def _update_store(self, node: ExecNode, key, value, context, out: _Output, state: _GroupState) -> None:
        slot = node.state_slot
        current = state.values[slot]
        if node.kind == "aggregate":
            # Kafka Streams' aggregations skip records with a null key or a null value.
            if key is None or value is None:
                return
            if node.aggregation == "count":
                new = (0 if current is _ABSENT else current) + 1
            elif node.aggregation == "reduce":
                new = value if current is _ABSENT else self._call(node, context, node.reducer, current, value)
            else:
                base = self._call(node, context, node.initializer) if current is _ABSENT else current
                new = self._call(node, context, node.aggregator, key, value, base)
        else:  # to_table / table_source: the latest value per key; a tombstone deletes it
            if key is None:
                return
            new = _ABSENT if value is None else value
        state.values[slot] = new
        state.keys[slot] = key
        state.changed = True
        if node.cached:
            state.dirty.add(slot)
        else:
            for child in node.children:
                self._forward(child, key, None if new is _ABSENT else new, context, out, state)

    def _flush(self, state: _GroupState, out: _Output, context: _RecordContext) -> None:
        """Forward each updated store's final value downstream, upstream stores first."""
        for index in self.stateful_nodes:  # topological order: a downstream store is flushed later
            node = self.nodes[index]
            slot = node.state_slot
            if slot not in state.dirty:
                continue
            state.dirty.discard(slot)
            if node.kind == "session_aggregate":
                from dagster_kstreams.spark import sessions

                sessions.flush(self, node, state, out, context)
                continue
            if node.kind in WINDOW_KINDS:
                from dagster_kstreams.spark import windows

                windows.flush(self, node, state, out, context)
                continue
            value = state.values[slot]
            for child in node.children:
                self._forward(child, state.keys[slot], None if value is _ABSENT else value, context, out, state)


def _frame(out: _Output):
    """The sink records of a pass as a pandas DataFrame (None: there are none)."""
    if not len(out):
        return None
    import pandas as pd

    return pd.DataFrame(
        {"topic": out.topic, "key": out.key, "value": out.value, "headers": out.headers},
        columns=list(OUTPUT_COLUMNS),
    )


def _pair(node: ExecNode, result) -> tuple[Any, Any]:
    try:
        key, value = result
    except (TypeError, ValueError) as cause:
        raise ProcessingError(
            f"processor {node.name} ({node.kind}) must return a (key, value) pair, got {result!r}"
        ) from cause
    return key, value


def _arrow_headers_type():
    import pyarrow as pa

    return pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
