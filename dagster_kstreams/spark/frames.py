"""A sub-topology's program as Spark's Python workers run it: Arrow batches and pandas groups in,
sink records out.

:class:`SparkProgram` is the engine-neutral
:class:`~dagster_kstreams.processors.program.SubtopologyProgram` plus what Spark needs around it:

* :meth:`SparkProgram.process_arrow_batch` — stateless sub-topologies, through ``mapInArrow``:
  a ``pyarrow.RecordBatch`` of source records in, one of sink records out;
  :meth:`SparkProgram.process_collected` the same on the driver, over a whole collected batch,
  its records left as the Python lists the producer sends.
* :meth:`SparkProgram.process_key_group` — stateful sub-topologies, through
  ``applyInPandasWithState`` grouped by the source record key.
* :meth:`SparkProgram.process_task_batch` — task-grouped sub-topologies (stream-stream joins),
  grouped by a constant: the task's whole micro-batch.
* :meth:`SparkProgram.jvm_count` — whether Spark's own streaming aggregation can run it with no
  Python at all; ``column_plan`` — the sub-topology as JVM Column operations
  (:mod:`dagster_kstreams.spark.expressions`), set by :mod:`dagster_kstreams.spark.compile`.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable, Iterator, Optional

import pandas as pd
import pyarrow as pa

from dagster_kstreams.kafka.table_producer import RecordColumns, python_list
from dagster_kstreams.processors.program import SubtopologyProgram
from dagster_kstreams.processors.records import Output, RecordContext
from dagster_kstreams.spark.state_keys import STATE_KEY_COLUMN

__all__ = ["SparkProgram", "HAND_OFF_COLUMN", "HAND_OFF_PATH_COLUMN", "OUTPUT_COLUMNS", "OUTPUT_SPARK_SCHEMA",
           "PLACED_COLUMNS", "SOURCE_COLUMNS", "output_schema"]

# What a task's pass emits: the columns Spark's Kafka sink reads, plus ``timestamp_ms``, the
# timestamp a record keeps on a repartition topic (null elsewhere), which the batch writer turns
# into a header in the JVM, and ``emit_order``, where the record goes in the task's output (the
# processing position of the source record that produced it; see records.FLUSH_ORDER for a
# cached store's flush), by which the batch writer sorts a batch whose rows come out grouped by
# key. No `partition` column unless a sink places records itself (PLACED_COLUMNS below): the
# producer's default partitioner (murmur2 of the key bytes) places each record, exactly as Kafka
# Streams and every Java client would.
OUTPUT_COLUMNS = ("topic", "key", "value", "headers", "timestamp_ms", "emit_order")
OUTPUT_SPARK_SCHEMA = ("topic string, key binary, value binary, headers array<struct<key: string, value: binary>>, "
                       "timestamp_ms long, emit_order long")
# A program whose sinks place records themselves (a stream partitioner: program.placed_topics)
# adds ``partition`` (null: the producer's default partitioner), which Spark's Kafka sink and the
# exactly-once producer honour; the others carry no such column, so they pay nothing for it.
PLACED_COLUMNS = (*OUTPUT_COLUMNS, "partition")
PLACED_SPARK_SCHEMA = OUTPUT_SPARK_SCHEMA + ", partition int"


def output_schema(program: Any) -> str:
    """The Spark schema of ``program``'s output rows."""
    return PLACED_SPARK_SCHEMA if program.placed_topics else OUTPUT_SPARK_SCHEMA


# What the task reads from Spark's Kafka source (event_time: the record's timestamp in epoch ms,
# see dagster_kstreams.spark.event_time).
SOURCE_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "event_time")
# ... and ``headers`` when the task carries its records' headers (spark/source.py), without the
# runner's own (``__dagster_kstreams.*``); null for a record with none.

# ... and ``hand_off`` when a Column plan ran the sub-topology's first processors: where each of its
# records enters the program (SubtopologyProgram.hand_offs; spark/column_hand_off.py). A source
# record may then come as several rows of one position, ``hand_off_path`` saying their order (a
# string that sorts as Kafka Streams forwards them: processors/hand_offs.py, path_step).
HAND_OFF_COLUMN = "hand_off"
HAND_OFF_PATH_COLUMN = "hand_off_path"

_ARROW_HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


class SparkProgram(SubtopologyProgram):
    """A sub-topology program fed with Spark's frames."""

    # The sub-topology as Column operations in the JVM (spark/expressions.py), or None; in a stateful
    # one, those in front of its state (spark/column_hand_off.py).
    column_plan = None
    # The Column operations after its state, on the way to sinks (spark/column_hand_back.py), or None.
    columns_after_state = None

    def hand_back(self, after: Any) -> None:
        """Run the Columns after the state in the JVM (``after``: a ColumnsAfterState): each one a
        record enters first from a Python processor is replaced by its hand-back, which writes the
        record into the output where it stands, for ``after.project`` to run it on from there."""
        for index, processor in after.hand_backs().items():
            processor.init(self)
            self.nodes[index] = processor
        self.columns_after_state = after
        self._entries = self._compile_entries()  # the chains that led to those Columns end at their hand-backs

    def jvm_count(self) -> Optional[tuple[str, Any, Any]]:
        """``(store, source, sink)`` when the whole sub-topology is ``source -> count ->
        to_stream -> to(topic)`` with keys passed through unchanged: Spark's own streaming
        aggregation (JVM, RocksDB state, update mode = one update per key per batch) then does it,
        with no Python at all. None otherwise."""
        chain = [node for node in self.nodes if node.kind not in ("merge", "repartition_filter")]
        if [node.kind for node in chain] != ["source", "aggregate", "table_to_stream", "sink"]:
            return None
        source, count, to_stream, sink = chain
        if count.aggregation != "count" or not count.cached or to_stream.fn is not None or sink.topic is None \
                or sink.placement is not None:
            return None
        if any(len(node.children) != 1 for node in self.nodes if node.kind != "sink"):
            return None
        # The key bytes go out as they came in: same serde on both sides, one that cannot fail.
        if type(source.key_serde) is not type(sink.key_serde) or source.key_serde.name not in ("String", "ByteArray"):
            return None
        if sink.value_serde.name != "Long":
            return None
        return count.store, source, sink

    def process_arrow_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Run a batch of source records through a stateless sub-topology; return the sink records."""
        out = self._process_batches([batch])
        columns = [
            pa.array(out.topic, type=pa.string()),
            pa.array(out.key, type=pa.binary()),
            pa.array(out.value, type=pa.binary()),
            pa.array(out.headers, type=_ARROW_HEADERS),
            pa.array(out.timestamp_ms, type=pa.int64()),
            pa.nulls(len(out), type=pa.int64()),  # written as it comes: the batch is in processing order
        ]
        if self.placed_topics:
            columns.append(pa.array(out.partition_column(), type=pa.int32()))
            return pa.RecordBatch.from_arrays(columns, names=list(PLACED_COLUMNS))
        return pa.RecordBatch.from_arrays(columns, names=list(OUTPUT_COLUMNS))

    def process_collected(self, table: pa.Table) -> RecordColumns:
        """:meth:`process_arrow_batch` over a whole micro-batch collected to the driver (its
        batches in order), the sink records left as the lists the producer sends."""
        out = self._process_batches(table.to_batches())
        return RecordColumns(out.topic, out.key, out.value, out.timestamp_ms, out.headers,
                             out.partition_column() if out.placed else None)

    def _process_batches(self, batches: Iterable[pa.RecordBatch]) -> Output:
        out = Output()
        names = ("key", "value", "topic", "partition", "offset", "event_time")
        for batch in batches:
            columns = [python_list(batch.column(batch.schema.get_field_index(name))) for name in names]
            self.process_columns(*columns, _arrow_headers(batch), out)
        return out

    def process_key_group(self, records: pd.DataFrame, stored: Optional[tuple],
                          watermark_ms: Optional[int] = None) -> tuple[Optional[pd.DataFrame], Optional[tuple]]:
        """Run all records of one source key (a pandas DataFrame with :data:`SOURCE_COLUMNS`,
        plus the ordering columns of :func:`~dagster_kstreams.spark.event_time.with_processing_order`
        when :attr:`needs_processing_order`) through a stateful sub-topology.

        ``stored`` is the key's state row (one pickled value per store, or None);
        ``watermark_ms`` is the stream time at the start of the micro-batch. Returns the sink
        records as a pandas DataFrame (None if there are none) and the new state row (None:
        nothing stored any more).
        """
        out, state = self.run_key_group(self._source_records(records, watermark_ms), stored)
        return _frame(out, bool(self.placed_topics)), state

    def process_task_batch(self, records: pd.DataFrame, stored: Optional[bytes],
                           watermark_ms: Optional[int] = None) -> tuple[Optional[pd.DataFrame], Optional[bytes]]:
        """Run a whole micro-batch of one task (all keys, in processing order) through a
        task-grouped sub-topology with the task's state (one pickled value, or None; see
        :mod:`dagster_kstreams.processors.task_state`). Returns the sink records (a pandas
        DataFrame or None) and the new task state."""
        out, state = self.run_task_batch(self._source_records(records, watermark_ms), stored)
        return _frame(out, bool(self.placed_topics)), state

    def _source_records(self, records: pd.DataFrame,
                        watermark_ms: Optional[int]) -> Iterator[tuple[RecordContext, Optional[bytes], Any]]:
        """``(context, raw key, raw value)`` of each record of a pandas batch, in the task's
        processing order. A record's position is its ``seq``, else (one source partition) its offset."""
        handed = HAND_OFF_COLUMN in records.columns
        if "seq" in records.columns:
            # The task's processing order across its partitions (Kafka Streams' timestamp merge).
            if handed:  # a record's rows in their forwarding order, which a shuffle does not keep
                records = records.sort_values(["seq", HAND_OFF_PATH_COLUMN], kind="stable")
            elif not records["seq"].is_monotonic_increasing:
                records = records.sort_values("seq", kind="stable")
        elif len(self.source_by_topic) > 1:
            raise ValueError(f"sub-topology {self.subtopology_id} reads several topics: its records need the "
                             "processing order (event_time.with_processing_order)")
        elif handed:
            records = records.sort_values(["offset", HAND_OFF_PATH_COLUMN], kind="stable")
        elif not records["offset"].is_monotonic_increasing:
            records = records.sort_values("offset", kind="stable")
        if "stream_time" in records.columns:
            floor = -1 if watermark_ms is None else watermark_ms
            stream_times = [max(floor, t) for t in records["stream_time"].tolist()]
            befores = [max(floor, t) for t in records["stream_time_before"].tolist()] \
                if "stream_time_before" in records.columns else [None] * len(records)
        else:
            stream_times = befores = [None] * len(records)
        offsets = records["offset"].tolist()
        positions = records["seq"].tolist() if "seq" in records.columns else offsets
        keys = records["key"].tolist()
        hand_offs = iter(records[HAND_OFF_COLUMN].tolist()) if handed else None
        # What the record's state is kept by: its key's bytes, or the store's (spark/state_keys.py).
        state_keys = records[STATE_KEY_COLUMN].tolist() if STATE_KEY_COLUMN in records.columns else keys
        for key, state_key, value, topic, partition, offset, timestamp, stream_time, before, position, headers in zip(
            keys, state_keys, records["value"].tolist(), records["topic"].tolist(),
            records["partition"].tolist(), offsets, records["event_time"].tolist(),
            stream_times, befores, positions, _pandas_headers(records),
        ):
            raw_key = None if key is None else bytes(key)
            state_key = raw_key if state_key is key else None if state_key is None else bytes(state_key)
            context = RecordContext(topic, partition, offset, timestamp, stream_time, before, state_key, position,
                                    headers)
            if handed:
                yield context, raw_key, value, next(hand_offs)
            else:
                yield context, raw_key, value


def _arrow_headers(batch: pa.RecordBatch) -> Iterable[Optional[list]]:
    """Each record's headers (the column's form, :class:`RecordContext`), with no per-record work
    when the batch has none (no ``headers`` column read, or every record without headers)."""
    index = batch.schema.get_field_index("headers")
    if index < 0 or batch.column(index).null_count == batch.num_rows:
        return itertools.repeat(None)
    return batch.column(index).to_pylist()


def _pandas_headers(records: pd.DataFrame) -> Iterable[Optional[list]]:
    """Each record's headers, as :func:`_arrow_headers`, from a pandas batch (Arrow's lists of
    structs arrive as numpy arrays of dicts: made lists again, as the output column wants)."""
    if "headers" not in records.columns:
        return itertools.repeat(None)
    column = records["headers"]
    if not column.notna().any():
        return itertools.repeat(None)
    return [None if headers is None or not len(headers) else list(headers) for headers in column.tolist()]


def _frame(out: Output, placed: bool) -> Optional[pd.DataFrame]:
    """The sink records of a pass as a pandas DataFrame (None: there are none); ``placed``: with
    the ``partition`` column (:data:`PLACED_COLUMNS`)."""
    if not len(out):
        return None
    columns = {"topic": out.topic, "key": out.key, "value": out.value, "headers": out.headers,
               "timestamp_ms": pd.array(out.timestamp_ms, dtype="Int64"),
               "emit_order": pd.array(out.emit_order(), dtype="Int64")}
    if placed:
        columns["partition"] = pd.array(out.partition_column(), dtype="Int32")
        return pd.DataFrame(columns, columns=list(PLACED_COLUMNS))
    return pd.DataFrame(columns, columns=list(OUTPUT_COLUMNS))
