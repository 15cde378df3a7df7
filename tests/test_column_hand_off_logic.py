"""Column expressions in front of a sub-topology's state, without a broker (spark/column_hand_off.py;
compared with Kafka Streams itself in tests/test_equivalence_headers.py).

What is planned (the prefix of Column operations, the strategy that runs the state) and what is still
refused, each naming its processor; and, with no Spark at all, a handed record's path through a
program: it enters where its hand-off says, read with the hand-off's serdes, a source record's rows
in their hand-offs' order whatever order Spark grouped them in.
"""

from __future__ import annotations

from datetime import timedelta


import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from header_topology import HeaderEditor
from test_own_stream_time_logic import (
    HOPPING, ROWS, SECONDS, SESSIONS, SLIDING, assert_hopping_count_is_the_model, run_batches,
)
from dagster_kstreams.kafka.dead_letter import DeadLetterPolicy
from dagster_kstreams.processors.base import column_expressions_in
from dagster_kstreams.processors.hand_offs import HandOff, path_step
from dagster_kstreams.processors.own_stream_time import (
    OwnSessionWindowAggregate,
    OwnSlidingWindowAggregate,
    OwnTimeWindowAggregate,
)
from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.processors.sessions import SessionWindowAggregate
from dagster_kstreams.spark.column_hand_off import ColumnsBeforeState
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.spark.frames import HAND_OFF_COLUMN, HAND_OFF_PATH_COLUMN
from dagster_kstreams.spark.strategies import KeyedState, TaskGroupedState, strategy_for
from dagster_kstreams.topology import Branched, Consumed, Grouped, Materialized, Named, Produced, Serdes, StreamsBuilder
from dagster_kstreams.topology import BufferConfig, Suppressed
from dagster_kstreams.topology.functions import FunctionForm, UserFunction
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.processor_api import Processor, PunctuationType, Record
from dagster_kstreams.topology.serdes import WindowedSerde
from dagster_kstreams.topology.view import ProcessorNode
from dagster_kstreams.topology.windows import JoinWindows, TimeWindows



def _long(number: int) -> bytes:
    return number.to_bytes(8, "big", signed=True)


def _refused(builder: StreamsBuilder, *patterns: str) -> None:
    with pytest.raises(UnsupportedTopologyError) as refusal:
        compile_topology(builder, "app").check()
    for pattern in patterns:
        assert pattern in str(refusal.value), (pattern, str(refusal.value))


@pytest.mark.integration
def test_columns_in_front_of_state_are_planned(spark):  # spark: a Column needs a SparkContext
    builder = StreamsBuilder()
    table = builder.stream("events").to_table(Materialized.as_("last"))
    amounts = builder.stream("amounts", Consumed.with_(Serdes.String(), Serdes.Long()))
    big = amounts.filter(F.col("value") > 10)
    big.map_values(F.col("value") * 2).map_values(lambda v: v + 1) \
        .group_by_key(Grouped.with_(Serdes.String(), Serdes.Long())).count().to_stream().to("sums")
    big.join(table, lambda a, e: f"{a}{e}").to("joined")
    big.select_key(F.col("value").cast("string")).to("rekeyed")  # a key change on the way to a sink only
    program = compile_topology(builder, "app").program(0)
    assert isinstance(program.column_plan, ColumnsBeforeState)
    assert isinstance(strategy_for(program), KeyedState)
    names = {program.nodes[index].name for index in program.column_plan.prefix}
    assert names == {"KSTREAM-FILTER-0000000003", "KSTREAM-MAPVALUES-0000000004", "KSTREAM-KEY-SELECT-0000000012",
                     "KSTREAM-SINK-0000000013"}
    # Beside a user processor: task-grouped.
    builder = StreamsBuilder()
    events = builder.stream("events")
    events.process(HeaderEditor).to("out")
    events.filter(F.col("value").isNotNull()).group_by_key().count()
    events.select_key(F.upper(F.col("value"))).map((F.col("value"), F.col("key"))).process(HeaderEditor)
    program = compile_topology(builder, "app").program(0)
    assert isinstance(strategy_for(program), TaskGroupedState)
    assert {program.nodes[index].kind for index in program.column_plan.prefix} == {"filter", "select_key", "map"}


def test_a_split_on_columns_in_front_of_state_is_in_the_prefix_with_its_branches(spark):
    builder = StreamsBuilder()
    parts = builder.stream("lines").flat_map_values(F.split(F.col("value"), " ")).split(Named.as_("w-")) \
        .branch(F.col("value") == "", Branched.as_("empty")) \
        .branch(F.length(F.col("value")) > 3, Branched.as_("long")).default_branch(Branched.as_("rest"))
    parts["w-long"].group_by_key().count().to_stream().to("long-counts")
    parts["w-rest"].to("short-words")
    program = compile_topology(builder, "app").program(0)
    assert isinstance(strategy_for(program), KeyedState)
    names = {program.nodes[index].name for index in program.column_plan.prefix}
    assert names == {"KSTREAM-FLATMAPVALUES-0000000001", "w-", "w-empty", "w-long", "w-rest", "KSTREAM-SINK-0000000010"}
    # The same split with a Python predicate among its Columns stays refused, naming it.
    builder = StreamsBuilder()
    builder.stream("lines").split(Named.as_("w-")).branch(F.col("value") == "", Branched.as_("empty")) \
        .branch(lambda k, v: len(v) > 3, Branched.as_("long")).default_branch()["w-long"].group_by_key().count()
    with pytest.raises(UnsupportedTopologyError, match=r"w- \(branch\) is a split on Columns that is not in front"):
        compile_topology(builder, "app").program(0)


@pytest.mark.integration
def test_windowed_aggregations_behind_columns_keep_their_own_clocks(spark):
    """Behind a Column filter, or a Column map_values alone (a record the JVM skips as malformed never
    reaches the aggregation), time, sliding and session windows count only the records handed to
    them; a suppression after them keeps its own stream time; a cogroup's inputs each keep theirs. Behind Python functions only, a
    map_values leaves a session count the task's stream time."""
    builder = StreamsBuilder()
    events = builder.stream("in")
    events.filter(F.col("value") != "bot").group_by_key().windowed_by(HOPPING).count() \
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to("final")
    events.map_values(F.upper(F.col("value"))).group_by_key().windowed_by(SESSIONS).count()
    events.filter_not(F.col("value") == "bot").group_by_key().windowed_by(SLIDING).count()
    program = compile_topology(builder, "app").program(0)
    assert isinstance(program.column_plan, ColumnsBeforeState)
    assert isinstance(strategy_for(program), TaskGroupedState) and not program.uses_stream_time
    assert [type(node) for node in program.nodes if node.stateful and node.kind != "suppress"] == [
        OwnTimeWindowAggregate, OwnSessionWindowAggregate, OwnSlidingWindowAggregate]
    # A cogroup's inputs behind Columns, and one no Column stands before: each input its own clocks.
    for windows, own_type in ((HOPPING, OwnTimeWindowAggregate), (SESSIONS, OwnSessionWindowAggregate)):
        builder = StreamsBuilder()
        events = builder.stream("in")
        filtered = events.filter(F.col("value") != "bot").group_by_key()
        marked = events.map_values(F.concat(F.col("value"), F.lit("!"))).group_by_key()
        cogrouped = filtered.cogroup(lambda key, value, agg: agg + value) \
            .cogroup(marked, lambda key, value, agg: agg + value) \
            .cogroup(builder.stream("other").group_by_key(), lambda key, value, agg: agg + value) \
            .windowed_by(windows)
        if windows is SESSIONS:
            cogrouped.aggregate(lambda: "", lambda key, left, right: left + right)
        else:
            cogrouped.aggregate(lambda: "")
        program = compile_topology(builder, "app").program(0)
        assert isinstance(program.column_plan, ColumnsBeforeState)
        assert isinstance(strategy_for(program), TaskGroupedState) and not program.uses_stream_time
        assert [type(node) for node in program.nodes if node.stateful] == [own_type] * 3
    builder = StreamsBuilder()
    builder.stream("in").map_values(lambda value: value.upper()).group_by_key().windowed_by(SESSIONS).count()
    assert [type(node) for node in compile_topology(builder, "app").program(0).nodes if node.stateful] == [
        SessionWindowAggregate]


class _View:
    """A sub-topology of the topology's view, by its nodes (what definition-time checks walk)."""

    def __init__(self, *nodes: ProcessorNode):
        self.nodes = list(nodes)


def _node(name: str, parents: tuple = (), column: bool = False) -> ProcessorNode:
    function = UserFunction(lambda value: value, FunctionForm.COLUMN if column else FunctionForm.VALUE)
    return ProcessorNode(name, NodeKind.MAP_VALUES, parents, (), params={"mapper": function})


def test_column_expressions_in_looks_at_every_processor_of_the_sub_topology():
    python_only = [_node("source"), _node("python", ("source",)), _node("after-python", ("python",))]
    assert not column_expressions_in(_View(*python_only))
    assert column_expressions_in(_View(*python_only, _node("column", ("source",), column=True)))  # beside: enough
    assert column_expressions_in(_View(_node("column", column=True), *python_only))


@pytest.mark.integration
def test_a_windowed_aggregation_no_column_stands_before_keeps_its_own_clocks_beside_columns(spark):
    """Straight from the source or behind a Python function, beside a Column filter in front of a
    count: the records reaching it are handed over without the task's stream time, and Kafka Streams'
    processor counts only those (not a null key's), so it keeps its own clocks."""
    builder = StreamsBuilder()
    events = builder.stream("in")
    events.filter(F.col("value").isNotNull()).group_by_key().count()
    events.group_by_key().windowed_by(HOPPING).count()
    events.map_values(lambda value: value).group_by_key().windowed_by(SESSIONS).count()
    program = compile_topology(builder, "app").program(0)
    assert isinstance(program.column_plan, ColumnsBeforeState) and not program.uses_stream_time
    assert [type(node) for node in program.nodes if node.kind in ("time_window_aggregate", "session_aggregate")] \
        == [OwnTimeWindowAggregate, OwnSessionWindowAggregate]


@pytest.mark.integration
def test_what_is_still_refused_names_its_processor(spark):
    builder = StreamsBuilder()  # a Column after a Python function, in front of state
    builder.stream("in").map_values(lambda v: v + "!").map_values(F.upper(F.col("value"))).group_by_key().count()
    _refused(builder, "processor KSTREAM-MAPVALUES-0000000002 (map_values) is a Column after processors that run "
                      "in Python")
    builder = StreamsBuilder()  # a Column after state with a Python function after it (column_hand_back.py)
    builder.stream("in").group_by_key().count().to_stream().filter(F.col("value") > 1) \
        .map_values(lambda n: n).to("out")
    _refused(builder, "processor KSTREAM-MAPVALUES-0000000005 (map_values) follows a Column after state",
             "processor KSTREAM-FILTER-0000000004 (filter) is a Column after")
    builder = StreamsBuilder()  # a key change in front of a Python function, in a sub-topology grouped by key
    source = builder.stream("in")
    source.map((F.col("value"), F.col("key"))).flat_map_values(F.array(F.col("value"))) \
        .map_values(lambda v: v + "!").to("out")
    source.filter(F.col("value").isNotNull()).group_by_key().count()
    _refused(builder, "KSTREAM-MAP-0000000001 (map) changes the key in front of KSTREAM-MAPVALUES-0000000003 "
                      "(map_values), which runs in Python")
    builder = StreamsBuilder()  # a stream-stream join beside Columns, no Column in front of it
    source = builder.stream("in")
    source.filter(F.col("value").isNotNull()).group_by_key().count()
    source.join(builder.stream("other"), lambda a, b: a + b, JoinWindows.of_time_difference_with_no_grace(SECONDS))
    _refused(builder, "KSTREAM-JOINTHIS-0000000007", "KSTREAM-JOINOTHER-0000000008", "read the task's stream time")
    builder = StreamsBuilder()  # a stream-stream join behind Columns
    builder.stream("in").filter(F.col("value").isNotNull()) \
        .join(builder.stream("other"), lambda a, b: a + b, JoinWindows.of_time_difference_with_no_grace(SECONDS))
    _refused(builder, "KSTREAM-JOINTHIS-0000000005", "KSTREAM-JOINOTHER-0000000006", "read the task's stream time")
    builder = StreamsBuilder()  # a stream-stream join beside a windowed cogroup behind Columns: the join alone
    events = builder.stream("in")
    grouped = events.filter(F.col("value").isNotNull()).group_by_key()
    grouped.cogroup(lambda key, value, agg: agg + value) \
        .cogroup(builder.stream("other").group_by_key(), lambda key, value, agg: agg + value) \
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=1))).aggregate(lambda: "")
    events.join(builder.stream("third"), lambda a, b: a + b, JoinWindows.of_time_difference_with_no_grace(SECONDS))
    with pytest.raises(UnsupportedTopologyError) as refusal:
        compile_topology(builder, "app").check()
    assert "KSTREAM-JOINTHIS" in str(refusal.value) and "COGROUPKSTREAM-AGGREGATE" not in str(refusal.value)
    builder = StreamsBuilder()  # one topic written from the Columns and from the state
    big = builder.stream("in").filter(F.col("value").isNotNull())
    big.to("out")
    big.group_by_key().count().to_stream().to("out")
    _refused(builder, "topic(s) 'out' are written both after the Column operations and after the state")
    builder = StreamsBuilder()  # a prefix sink that places its records
    big = builder.stream("in").filter(F.col("value").isNotNull())
    big.to(lambda key, value: "out")
    big.group_by_key().count()
    _refused(builder, "places its records itself")
    builder = StreamsBuilder()  # a serde only Python parses, then a Column
    builder.stream("in", Consumed.with_(Serdes.String(), Serdes.Json())).filter(F.col("value").isNotNull()) \
        .group_by_key().count()
    _refused(builder, "source KSTREAM-SOURCE-0000000000 reads its records with", "a Column operation follows it")


def _program():
    """``source(String, String) -> map_values(int) -> reduce(+) -> to_stream -> to("sums")`` and a second
    branch ``source -> map_values(upper) -> to("upper")``, with two hand-offs: one into the reduce with
    Long bytes, one into the branch's map_values with String bytes."""
    builder = StreamsBuilder()
    source = builder.stream("in")
    source.map_values(lambda v: int(v)) \
        .group_by_key(Grouped.with_(Serdes.String(), Serdes.Long())) \
        .reduce(lambda total, n: total + n, Materialized.as_("totals").with_caching_disabled()) \
        .to_stream().map_values(lambda total: f"sum={total}").to("sums")
    source.map_values(lambda v: v.upper()).to("upper")
    program = compile_topology(builder, "app").program(0)
    index = {node.name: i for i, node in enumerate(program.nodes)}
    program.hand_offs = (
        HandOff("KSTREAM-MAPVALUES-0000000001", Serdes.String(), Serdes.Long(), (index["KSTREAM-REDUCE-0000000002"],)),
        HandOff("KSTREAM-SOURCE-0000000000", Serdes.String(), Serdes.String(), (index["KSTREAM-MAPVALUES-0000000006"],)),
    )
    return program


def test_a_handed_record_enters_where_its_hand_off_says():
    program = _program()
    records = [  # the same key: a source record, then a long handed to the reduce, then a string to the branch
        (RecordContext("in", 0, 0, 10, position=0), b"k", b"5"),
        (RecordContext("in", 0, 1, 20, position=1), b"k", _long(7), 0),
        (RecordContext("in", 0, 1, 20, position=1), b"k", b"x", 1),
    ]
    out, state = program.run_key_group(records, None)
    assert list(zip(out.topic, out.value)) == [("sums", b"sum=5"), ("upper", b"5"), ("sums", b"sum=12"),
                                               ("upper", b"X")]
    assert state is not None


def test_a_source_records_rows_go_in_their_hand_offs_order_whatever_spark_gave():
    program = _program()
    rows = pd.DataFrame({
        "key": [b"k", b"k", b"k", b"k"], "value": [b"y", _long(3), b"x", _long(4)],
        "topic": ["in"] * 4, "partition": [0] * 4, "offset": [6, 5, 5, 6], "timestamp": [None] * 4,
        "event_time": [60, 50, 50, 60], HAND_OFF_COLUMN: [1, 0, 1, 0],
        HAND_OFF_PATH_COLUMN: [path_step(1), path_step(0), path_step(1), path_step(0)],
    })
    output, _ = program.process_key_group(rows, None)
    assert list(zip(output["topic"], output["value"])) == [("sums", b"sum=3"), ("upper", b"X"), ("sums", b"sum=7"),
                                                           ("upper", b"Y")]
    assert list(output["emit_order"]) == [5, 5, 6, 6]


class _Ticker(Processor):
    """Forwards each record, and ``tick`` with the stream time every 10 ms of it."""

    def init(self, context) -> None:
        super().init(context)
        context.schedule(10, PunctuationType.STREAM_TIME,
                         lambda now: context.forward(Record("tick", str(now), now)))

    def process(self, record: Record) -> None:
        self.context.forward(record)


def test_punctuators_fire_after_all_of_a_records_hand_offs():
    """Kafka Streams punctuates between records, never while one record is still being forwarded to
    its processors: a source record handed over twice (to a user processor, then to a branch) has
    both hand-offs run before its punctuation."""
    builder = StreamsBuilder()
    source = builder.stream("in")
    source.process(_Ticker).to("out")
    source.map_values(lambda v: v.upper()).to("upper")
    program = compile_topology(builder, "app").program(0)
    index = {node.name: i for i, node in enumerate(program.nodes)}
    program.hand_offs = (
        HandOff("KSTREAM-SOURCE-0000000000", Serdes.String(), Serdes.String(), (index["KSTREAM-PROCESSOR-0000000001"],)),
        HandOff("KSTREAM-SOURCE-0000000000", Serdes.String(), Serdes.String(), (index["KSTREAM-MAPVALUES-0000000003"],)),
    )
    records = [(RecordContext("in", 0, offset, timestamp, raw_key=b"k", position=offset), b"k", value, hand_off)
               for offset, timestamp, value in ((0, 0, b"a"), (1, 10, b"b")) for hand_off in (0, 1)]
    out, _ = program.run_task_batch(records, None)
    assert list(zip(out.topic, out.value)) == [("out", b"a"), ("upper", b"A"), ("out", b"0"),
                                               ("out", b"b"), ("upper", b"B"), ("out", b"10")]


@pytest.mark.integration
def test_a_records_hand_offs_follow_kafka_streams_order_of_children(spark):
    """A source's children: a Python function, Columns into a count, another Python function. The
    plan hands a record over three times, numbered in that order, each part as the right serde wrote it."""
    builder = StreamsBuilder()
    source = builder.stream("in", Consumed.with_(Serdes.String(), Serdes.Long()))
    source.map_values(lambda v: v + 1).to("first")
    source.filter(F.col("value") > 1).map_values(F.col("value").cast("string")).group_by_key().count()
    source.map_values(lambda v: v - 1).to("last")
    program = compile_topology(builder, "app").program(0)
    rows = spark.createDataFrame(
        [(b"k", _long(5), "in", 0, 3, None, 30, None), (b"k", b"bad", "in", 0, 4, None, 40, None)],
        "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, event_time long, "
        "headers array<struct<key: string, value: binary>>")
    handed, output, hand_offs = program.column_plan.hand_over(rows, DeadLetterPolicy("log_and_continue"))
    names = [program.nodes[index].name for hand_off in hand_offs for index in hand_off.children]
    assert names == ["KSTREAM-MAPVALUES-0000000001", "KSTREAM-AGGREGATE-0000000006", "KSTREAM-MAPVALUES-0000000007"]
    assert [hand_off.value_serde.name for hand_off in hand_offs] == ["Long", "String", "Long"]
    got = sorted((row[HAND_OFF_COLUMN], row.offset, bytes(row.value)) for row in handed.collect())
    # The malformed record is judged once, at the source, as Kafka Streams does: skipped on every path.
    assert got == [(0, 3, _long(5)), (1, 3, b"5"), (2, 3, _long(5))]
    assert output is None  # skipped, with no dead-letter topic


def _handed_hopping_count():
    """A hopping count behind a filter, its records handed over past the filter (as from a Column
    filter run in the JVM): the program sees only the records that pass."""
    builder = StreamsBuilder()
    builder.stream("in").filter(lambda key, value: value != "x").group_by_key().windowed_by(HOPPING) \
        .count(Materialized.as_("counts").with_caching_disabled()).to_stream() \
        .to("out", Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.Long()))
    program = compile_topology(builder, "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    index = {node.name: i for i, node in enumerate(program.nodes)}
    program.hand_offs = (HandOff("KSTREAM-FILTER-0000000001", Serdes.String(), Serdes.String(),
                                 (index["KSTREAM-AGGREGATE-0000000002"],)),)
    return program


@settings(max_examples=150, deadline=None)
@given(rows=ROWS, batches=st.integers(min_value=1, max_value=5))
def test_a_hopping_count_handed_what_passes_a_column_filter_is_kafka_streams_processor(rows, batches):
    """Records a Column filter drops are never handed over, so those with the largest timestamps close
    no window: the count's own clock is Kafka Streams' (the model fed what passes the filter), in any
    number of micro-batches with the task's state pickled in between."""
    handed = [(offset, row) for offset, row in enumerate(rows) if row[1] != "x"]
    written = run_batches(_handed_hopping_count(), [row for _, row in handed], batches,
                          offsets=[offset for offset, _ in handed],
                          columns={HAND_OFF_COLUMN: 0, HAND_OFF_PATH_COLUMN: path_step(0)})
    assert_hopping_count_is_the_model(written, rows)
