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
from hypothesis import given, strategies as st
from pyspark.sql import functions as F

from header_topology import HeaderEditor
from dagster_kstreams.kafka.dead_letter import DeadLetterPolicy
from dagster_kstreams.processors.hand_offs import HandOff, path_step
from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.spark.column_hand_off import ColumnsBeforeState
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.spark.frames import HAND_OFF_COLUMN, HAND_OFF_PATH_COLUMN
from dagster_kstreams.spark.strategies import KeyedState, TaskGroupedState, strategy_for
from dagster_kstreams.topology import Consumed, Grouped, Materialized, Serdes, StreamsBuilder
from dagster_kstreams.topology.windows import TimeWindows


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
    # Beside a user processor: task-grouped, where a key change may stand in front of the processor
    # (Kafka Streams does not repartition before process()).
    builder = StreamsBuilder()
    events = builder.stream("events")
    events.process(HeaderEditor).to("out")
    events.filter(F.col("value").isNotNull()).group_by_key().count()
    events.select_key(F.upper(F.col("value"))).map((F.col("value"), F.col("key"))).process(HeaderEditor)
    program = compile_topology(builder, "app").program(0)
    assert isinstance(strategy_for(program), TaskGroupedState)
    assert {program.nodes[index].kind for index in program.column_plan.prefix} == {"filter", "select_key", "map"}


@pytest.mark.integration
def test_what_is_still_refused_names_its_processor(spark):
    builder = StreamsBuilder()  # a Column after a Python function, in front of state
    builder.stream("in").map_values(lambda v: v + "!").map_values(F.upper(F.col("value"))).group_by_key().count()
    _refused(builder, "processor KSTREAM-MAPVALUES-0000000002 (map_values) is a Column after processors that run "
                      "in Python")
    builder = StreamsBuilder()  # a Column after state
    builder.stream("in").group_by_key().count().to_stream().filter(F.col("value") > 1).to("out")
    _refused(builder, "processor KSTREAM-FILTER-0000000004 (filter) is a Column after")
    builder = StreamsBuilder()  # a key change in front of a Python function, in a sub-topology grouped by key
    source = builder.stream("in")
    source.map((F.col("value"), F.col("key"))).flat_map_values(F.array(F.col("value"))) \
        .map_values(lambda v: v + "!").to("out")
    source.filter(F.col("value").isNotNull()).group_by_key().count()
    _refused(builder, "KSTREAM-MAP-0000000001 (map) changes the key in front of KSTREAM-MAPVALUES-0000000003 "
                      "(map_values), which runs in Python")
    builder = StreamsBuilder()  # stream time
    builder.stream("in").filter(F.col("value").isNotNull()).group_by_key() \
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=1))).count()
    _refused(builder, "processor(s) KSTREAM-AGGREGATE-0000000003 keep stream time")
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


def _word_program():
    """``lines -> flat_map_values(split) -> [filter(not empty) -> count, reduce(concatenate)]``: each
    word goes to the count through a Column filter and to the reduce straight from the explosion."""
    builder = StreamsBuilder()
    words = builder.stream("lines").flat_map_values(F.split(F.col("value"), " "))
    words.filter(F.col("value") != "").group_by_key() \
        .count(Materialized.as_("word-counts").with_caching_disabled()).to_stream() \
        .map_values(lambda n: f"wc|{n}").to("out")
    words.group_by_key().reduce(lambda seen, word: f"{seen},{word}", Materialized.as_("seen").with_caching_disabled()) \
        .to_stream().map_values(lambda seen: f"ws|{seen}").to("out")
    return compile_topology(builder, "app").program(0)


@pytest.mark.integration
def test_exploded_words_reach_the_state_in_kafka_streams_order_whatever_spark_gave(spark):
    """Kafka Streams forwards each word of a line down both children before the next word; the
    handed rows, shuffled as Spark's grouping may leave them, go into the state in that order, each
    with its line's offset and timestamp."""
    program = _word_program()
    assert isinstance(strategy_for(program), KeyedState)
    rows = spark.createDataFrame(
        [(b"k", b"a b", "lines", 0, 3, None, 30, None), (b"k", None, "lines", 0, 4, None, 10, None),
         (b"k", b"c  d", "lines", 0, 5, None, 20, None)],
        "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, event_time long, "
        "headers array<struct<key: string, value: binary>>")
    handed, output, hand_offs = program.column_plan.hand_over(rows, DeadLetterPolicy("fail"))
    assert output is None
    assert [[program.nodes[index].name for index in hand_off.children] for hand_off in hand_offs] \
        == [["KSTREAM-AGGREGATE-0000000003"], ["KSTREAM-REDUCE-0000000007"]]
    program.hand_offs = hand_offs  # as the stateful strategy sets them
    frame = handed.toPandas().sample(frac=1, random_state=3)  # any order: the program sorts them
    out, _ = program.process_key_group(frame, None)
    assert list(zip(out["value"], out["emit_order"])) == [
        (b"wc|1", 3), (b"ws|a", 3), (b"wc|2", 3), (b"ws|a,b", 3),  # a line's words one after another
        (b"wc|3", 5), (b"ws|a,b,c", 5), (b"ws|a,b,c,", 5), (b"wc|4", 5), (b"ws|a,b,c,,d", 5)]  # "" not counted


@given(st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=5), min_size=2, max_size=8))
def test_paths_sort_as_their_steps(paths):
    """A path's string sorts as its list of steps (a prefix first): Kafka Streams' depth-first order."""
    written = ["".join(map(path_step, path)) for path in paths]
    assert sorted(range(len(paths)), key=written.__getitem__) == sorted(range(len(paths)), key=paths.__getitem__)


def test_a_path_step_is_an_index_of_four_bytes():
    assert path_step(0) == "00000000" and path_step(2**32 - 1) == "ffffffff"
    for wrong in (-1, 2**32):
        with pytest.raises(ValueError, match="a path step is an index"):
            path_step(wrong)


@pytest.mark.integration
def test_a_key_a_column_changed_reaches_a_user_processor_written_by_its_types_serde(spark):
    """``select_key`` then ``map_values`` by Columns in front of a processor (task-grouped): the
    handed key is the new one, written as its Spark type's serde writes it, read back by it."""
    builder = StreamsBuilder()
    amounts = builder.stream("amounts", Consumed.with_(Serdes.String(), Serdes.Long()))
    amounts.select_key(F.concat(F.lit("r"), F.col("value").cast("string"))) \
        .map_values(F.col("value").cast("string")).process(HeaderEditor).to("out")
    program = compile_topology(builder, "app").program(0)
    assert isinstance(strategy_for(program), TaskGroupedState)
    rows = spark.createDataFrame(
        [(b"k", _long(12), "amounts", 0, 3, None, 30, [("src", b"p0")])],
        "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, event_time long, "
        "headers array<struct<key: string, value: binary>>")
    handed, _, hand_offs = program.column_plan.hand_over(rows, DeadLetterPolicy("fail"))
    assert [(hand_off.key_serde.name, hand_off.value_serde.name) for hand_off in hand_offs] == [("String", "String")]
    program.hand_offs = hand_offs
    out, _ = program.process_task_batch(handed.toPandas(), None)
    assert list(zip(out["key"], out["value"])) == [(b"r12", b"proc|1|none|12"), (b"r12", b"fresh|12")]
