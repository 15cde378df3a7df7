"""How a task's records are processed: one execution strategy per shape of sub-topology.

The processors are compiled by :mod:`dagster_kstreams.spark.compile` into a program; a
strategy turns the task's source DataFrame into its output rows (``topic, key, value,
headers``) with that program, and knows how its state is laid out in the checkpoint (for
:meth:`~dagster_kstreams.spark.task_runner.TaskRunner.read_store`). :func:`strategy_for` picks
the first of :data:`STRATEGIES` that applies, fastest first:

* :class:`ColumnPlan` — Column expressions: DataFrame operations on the JVM, with no Python pass, or
  with their chains of Python functions as ``mapInArrow`` segments of the same plan. (In a stateful
  sub-topology they run in front of its state, which takes the records they hand over:
  :mod:`dagster_kstreams.spark.column_hand_off`.)
* :class:`JvmCount` — a sub-topology that is exactly ``source -> count -> to_stream -> to`` (the
  downstream half of a word count) runs as Spark's own streaming aggregation, with no Python.
* :class:`TaskGroupedState` — one pass per batch with the task's whole state, when the
  semantics span keys (stream-stream joins, suppress, emit-on-window-close:
  :mod:`dagster_kstreams.processors.task_state`).
* :class:`KeyedState` — one pass per key and batch (``applyInPandasWithState`` grouped by the
  source key, or the store's: :mod:`dagster_kstreams.spark.state_keys`) when the sub-topology
  keeps state.
* :class:`Stateless` — one Python pass per batch (``mapInArrow``), or, under exactly-once, where
  the batch's output is collected to the driver anyway, on the driver (:class:`StatelessOnDriver`).

Order: every strategy processes a task's records in Kafka Streams' order (offsets within a
partition; across the partitions of several topics, the timestamp merge of
:func:`~dagster_kstreams.spark.source.in_processing_order`). Where the output rows come out in
another order (grouped by key, or one branch after another), :meth:`Strategy.orders_output` says
so and each row carries its ``emit_order``; the batch writer sorts the batch by it before writing.

State lives in Spark's state store with the RocksDB provider, in the task's checkpoint
(:mod:`dagster_kstreams.spark.checkpoint`): ``<state_location>/<app>/tasks/<task>/checkpoint``.
Any process that sees the same location continues the task where it stopped.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable, Optional

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from dagster_kstreams.kafka.dead_letter import DeadLetterPolicy
from dagster_kstreams.kafka.table_producer import RecordColumns
from dagster_kstreams.processors import session_store, sessions, window_store
from dagster_kstreams.processors.own_groups import key_of_group
from dagster_kstreams.processors.state import slot_value
from dagster_kstreams.processors.task_state import TaskState
from dagster_kstreams.processors.user_processors import user_store_content
from dagster_kstreams.processors.windows import WINDOW_KINDS
from dagster_kstreams.spark.checkpoint_files import CheckpointFiles
from dagster_kstreams.spark.frames import output_schema
from dagster_kstreams.spark.source import in_processing_order, on_state_partitions
from dagster_kstreams.spark.state_keys import state_key_column

__all__ = ["Strategy", "STRATEGIES", "COLLECTED_STRATEGIES", "STATELESS_PASS_PLACES", "DEFAULT_STATELESS_PASS",
           "check_stateless_pass",
           "strategy_for"]

log = logging.getLogger(__name__)

_TASK_GROUP = "_task_group"  # the constant a task-grouped sub-topology is grouped by


class Strategy:
    """One way to run a program: :meth:`applies` to it, :meth:`build` its output, :meth:`store_content`."""

    def applies(self, program: Any) -> bool:
        raise NotImplementedError

    def build(self, source: DataFrame, program: Any, dead_letters: DeadLetterPolicy) -> DataFrame:
        raise NotImplementedError

    def on_driver(self, program: Any) -> Optional[Callable[[pa.Table], RecordColumns]]:
        """What turns a batch :meth:`build` computed, once collected to the driver (Arrow), into
        its output records: None when the built rows are those records."""
        return None

    def store_content(self, rows: Iterable[Any], program: Any, slot: int, key_serde: Any) -> dict[Any, Any]:
        """``{key: value}`` of store ``slot`` in one task's state rows (Spark's ``statestore`` source)."""
        return {}  # no state

    def orders_output(self, program: Any) -> bool:
        """Whether the output rows must be sorted by ``emit_order`` before they are written (they
        do not come out in processing order)."""
        return False

    def reads_record_timestamps(self, program: Any) -> bool:
        """Whether the output depends on the records' timestamps (``event_time``). Those of a
        repartition topic travel in a header, and reading headers costs Spark's Kafka source
        about as much as the rest of a record: a strategy that never looks spares it."""
        return True

    def carries_headers(self, program: Any) -> bool:
        """Whether the output records carry their input records' headers, as Kafka Streams' do
        (the source then reads headers, which costs; README, "Record headers")."""
        return True

    def on_checkpoint(self, files: CheckpointFiles) -> "Strategy":
        """This strategy as a query on the checkpoint ``files`` must run: one whose state an earlier
        version of the runner wrote in another layout keeps that layout (Spark refuses a query whose
        state schema is not its checkpoint's)."""
        return self

    def __repr__(self) -> str:
        return type(self).__name__


class ColumnPlan(Strategy):
    def applies(self, program: Any) -> bool:
        # A stateful sub-topology's Columns run in front of its state (_state_input).
        return getattr(program, "column_plan", None) is not None and not program.stateful

    def build(self, source, program, dead_letters):
        return program.column_plan.build(in_processing_order(source, program), dead_letters)

    def orders_output(self, program: Any) -> bool:
        # One partition in offset order, but the plan is a union of branches (one per source
        # node and sink): with several topics, or two branches writing one topic, its rows go out
        # by ``seq`` (or offset).
        return program.needs_processing_order or program.column_plan.interleaves_branches


class JvmCount(Strategy):
    """Spark's own streaming count; ``stamped``: its state keeps each key's largest timestamp beside the
    count (a checkpoint written before it did keeps the count alone: :meth:`on_checkpoint`)."""

    # The aggregation's state schema, as Spark records it in the checkpoint (operator 0, partition 0)
    _SCHEMA_FILE = ("state", "0", "0", "_metadata", "schema")

    def __init__(self, stamped: bool = True):
        self.stamped = stamped

    def applies(self, program: Any) -> bool:
        return program.jvm_count() is not None

    def on_checkpoint(self, files: CheckpointFiles) -> Strategy:
        schema = files.join(*self._SCHEMA_FILE)
        if not files.exists(schema) or '"name":"max"' in files.read_text(schema):
            return self
        log.warning("the checkpoint %s holds counts without their timestamps (written by an earlier version): "
                    "its counts go out stamped with the time they are written, not Kafka Streams' timestamp "
                    "(reset the application to start a checkpoint that keeps them)", files.root)
        return JvmCount(stamped=False)

    def build(self, source, program, dead_letters):
        _, _, sink = program.jvm_count()
        # Kafka Streams' count skips null keys and null values; the count goes out as a
        # big-endian Long, as Serdes.Long() writes it, stamped as Kafka Streams stamps a count's
        # update: the larger of its record's timestamp and the count's, so the key's largest. A batch's
        # updates go out in the order of Spark's state partitions, not in last-update order (README,
        # "Semantics that differ"): ordering them would need the key's last offset in the aggregation's state.
        return (
            source.where(F.col("key").isNotNull() & F.col("value").isNotNull())
            .groupBy("key").agg(F.count(F.lit(1)).alias("count"),
                                *([F.max("event_time").alias("timestamp_ms")] if self.stamped else []))
            .select(
                F.lit(sink.topic).alias("topic"),
                F.col("key"),
                F.unhex(F.lpad(F.hex(F.col("count")), 16, "0")).alias("value"),
                F.lit(None).cast("array<struct<key: string, value: binary>>").alias("headers"),
                (F.col("timestamp_ms") if self.stamped else F.lit(None).cast("long").alias("timestamp_ms")),
                F.lit(None).cast("long").alias("emit_order"),
            )
        )

    def reads_record_timestamps(self, program: Any) -> bool:
        # Kafka's own timestamps only, not the header a repartition record carries where its producer could
        # not write one (0 or less: kafka.timestamp_header): reading headers would cost the word count's
        # source about as much as the rest of each record.
        return False

    def carries_headers(self, program: Any) -> bool:
        # Kafka Streams' cached count gives an update the headers of the record that last counted; Spark's
        # aggregation keeps the count only (README, "Semantics that differ").
        return False

    def store_content(self, rows, program, slot, key_serde):
        # Spark's aggregation state: the count itself.
        return {_row_key(row, key_serde): int(row.value[0]) for row in rows}


class TaskGroupedState(Strategy):
    """The task's whole micro-batch is one group, its state one value (processors/task_state.py)."""

    def applies(self, program: Any) -> bool:
        return program.task_grouped

    def build(self, source, program, dead_letters):
        uses_stream_time = program.uses_stream_time

        def run_task(key, frames, state):
            records = _one_frame(frames)
            stored = state.get[0] if state.exists else None
            watermark = state.getCurrentWatermarkMs() if uses_stream_time else None
            output, new_state = program.process_task_batch(records, stored, watermark)
            if new_state is None:
                if state.exists:
                    state.remove()
            else:
                state.update((new_state,))
            if output is not None:
                yield output

        records, columns_output = _state_input(source, program, dead_letters)
        output = records.withColumn(_TASK_GROUP, F.lit(0)).groupBy(_TASK_GROUP).applyInPandasWithState(
            run_task, output_schema(program), "task binary", "Update", GroupStateTimeout.NoTimeout
        )
        output = _after_state(output, program)
        return output if columns_output is None else output.unionByName(columns_output)

    def orders_output(self, program: Any) -> bool:
        return True  # the end-of-batch flush, and the rows land in one of the state partitions

    def user_store_content(self, rows, program, store_name: str) -> dict[Any, Any]:
        """``{key: value}`` of a user processor's store (the Processor API's, task-level state)."""
        table: dict[Any, Any] = {}
        for row in rows:  # one row per task
            blob = _state_columns(row.value)[0]
            table.update(user_store_content(program, None if blob is None else bytes(blob), store_name))
        return table

    def store_content(self, rows, program, slot, key_serde):
        node = _store_node(program, slot)
        window_size = program.window_keys.sizes.get(node.store)  # a window kept by its start: its end
        table: dict[Any, Any] = {}
        for row in rows:  # one row per task: every key's slots
            blob = _state_columns(row.value)[0]
            for raw_key, value in TaskState.store_content(None if blob is None else bytes(blob), slot).items():
                _add_entries(table, node, key_of_group(raw_key, key_serde, window_size), value)
        return table


class KeyedState(Strategy):
    """One group per source key (or the store's: spark/state_keys.py), one state column per store."""

    def applies(self, program: Any) -> bool:
        return program.stateful

    def build(self, source, program, dead_letters):
        uses_stream_time = program.uses_stream_time
        state_schema = ", ".join(f"store_{slot} binary" for slot in range(len(program.store_names)))

        def run_key_group(key, frames, state):
            records = _one_frame(frames)
            stored = state.get if state.exists else None
            watermark = state.getCurrentWatermarkMs() if uses_stream_time else None
            output, new_state = program.process_key_group(records, stored, watermark)
            if new_state is None:
                if state.exists:
                    state.remove()
            elif new_state is not stored:
                state.update(new_state)
            if output is not None:
                yield output

        records, columns_output = _state_input(source, program, dead_letters)
        output = records.groupBy(state_key_column(program)).applyInPandasWithState(
            run_key_group, output_schema(program), state_schema, "Update", GroupStateTimeout.NoTimeout
        )
        output = _after_state(output, program)
        return output if columns_output is None else output.unionByName(columns_output)

    def orders_output(self, program: Any) -> bool:
        return True  # key group after key group

    def store_content(self, rows, program, slot, key_serde):
        node = _store_node(program, slot)
        table: dict[Any, Any] = {}
        for row in rows:
            blob = _state_columns(row.value)[slot]
            if blob is not None:
                _add_entries(table, node, _row_key(row, key_serde), slot_value(bytes(blob))[0])
        return table


class Stateless(Strategy):
    def applies(self, program: Any) -> bool:
        return True

    def build(self, source, program, dead_letters):
        def run_batches(batches):
            for batch in batches:
                yield program.process_arrow_batch(batch)

        # Several topics: one partition in processing order, so the output is already in order.
        return in_processing_order(source, program).mapInArrow(run_batches, output_schema(program))


class StatelessOnDriver(Stateless):
    """The Python pass of :class:`Stateless` run on the driver over the collected source rows.

    Under exactly-once the driver collects each batch's output and sends it itself
    (:mod:`~dagster_kstreams.spark.transactional_writer`), so passing the source rows through a
    Python worker first only adds a round trip (JVM -> Python worker -> JVM -> driver) and its
    fixed cost per batch; the same pass on the same Arrow batches, in the same order, gives the
    same records (bench/README.md, "The Python pass on the driver")."""

    def build(self, source, program, dead_letters):
        return in_processing_order(source, program)

    def on_driver(self, program: Any) -> Optional[Callable[[pa.Table], RecordColumns]]:
        return program.process_collected


STRATEGIES: tuple[Strategy, ...] = (ColumnPlan(), JvmCount(), TaskGroupedState(), KeyedState(), Stateless())
# When every batch is collected to the driver (exactly-once): the same, the Python pass there.
COLLECTED_STRATEGIES: tuple[Strategy, ...] = (*STRATEGIES[:-1], StatelessOnDriver())


# Where a stateless Python pass runs when every batch is collected to the driver (exactly-once):
# there (one core, no trip through a Python worker per batch), or in Spark's Python workers (every
# executor core: for functions that cost more than a batch's trip, on a worker with many cores).
STATELESS_PASS_PLACES = ("driver", "executors")
DEFAULT_STATELESS_PASS = "driver"


def check_stateless_pass(place: str) -> str:
    if place not in STATELESS_PASS_PLACES:
        raise ValueError(f"stateless_pass must be one of {', '.join(STATELESS_PASS_PLACES)}, got {place!r}")
    return place


def strategy_for(program: Any, stateless_on_driver: bool = False) -> Strategy:
    """The first strategy that applies to ``program``: of :data:`COLLECTED_STRATEGIES` when the
    writer collects every batch to the driver and a stateless pass is to run there
    (``stateless_on_driver``), else of :data:`STRATEGIES`."""
    strategies = COLLECTED_STRATEGIES if stateless_on_driver else STRATEGIES
    return next(strategy for strategy in strategies if strategy.applies(program))


def _state_input(source: DataFrame, program: Any, dead_letters: DeadLetterPolicy) -> tuple[DataFrame, Optional[DataFrame]]:
    """What a stateful program is run on, and the output rows that do not go through it: the task's
    records in processing order, or, when Column expressions stand in front of its state
    (spark/column_hand_off.py), the records they hand over and their own output (sinks, dead
    letters; None: none). The program learns the hand-offs here, before Spark ships it."""
    ordered = in_processing_order(source, program)
    if program.column_plan is None:
        return ordered, None
    handed, columns_output, hand_offs = program.column_plan.hand_over(ordered, dead_letters)
    program.hand_offs = hand_offs
    # A union of the plan's branches: with the task's state in one partition (configure_session), saying
    # the rows sit in one spares the shuffle before the state, as on_state_partitions does for a source.
    state_partitions = int(source.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    return on_state_partitions(handed, program, state_partitions), columns_output


def _after_state(output: DataFrame, program: Any) -> DataFrame:
    """The state's output rows, the records it handed back run through the Columns after it
    (spark/column_hand_back.py: row-wise, so each partition's rows keep their order)."""
    after = program.columns_after_state
    return output if after is None else after.project(output)


def _store_node(program: Any, slot: int) -> Any:
    return next(program.nodes[i] for i in program.stateful_nodes if program.nodes[i].state_slot == slot)


def _add_entries(table: dict, node: Any, key: Any, value: Any) -> None:
    """One key's stored value as ``read_store`` returns it: a windowed store's row holds the key's
    windows (sessions), one entry each."""
    if node.kind in WINDOW_KINDS:
        table.update(window_store.store_entries(node, key, value))
    elif node.kind == sessions.KIND:
        table.update(session_store.store_entries(key, value))
    else:
        table[key] = value


def _one_frame(frames) -> pd.DataFrame:
    frames = list(frames)
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def _row_key(row: Any, key_serde: Any) -> Any:
    return key_serde.deserialize(bytes(row.key[0]) if row.key[0] is not None else None)


def _state_columns(value) -> tuple:
    """The store columns of an ``applyInPandasWithState`` state row as the state reader returns it
    (the user's state struct, possibly wrapped in ``groupState``)."""
    if value is not None and "groupState" in value.__fields__:
        value = value["groupState"]
    return tuple(value) if value is not None else ()
