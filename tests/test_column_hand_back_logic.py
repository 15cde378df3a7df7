"""Columns after state (spark/column_hand_back.py) without a broker: the hand-back a program puts in a
Column's place, the lanes planned, what is still refused (naming the processor), and (hypothesis)
the state's output run through the Columns in the JVM against the same topology written with Python
functions: the same records, in the same order, with the same headers and timestamps."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.processors.hand_backs import HandBack, hand_back_topic
from dagster_kstreams.processors.records import Output, RecordContext
from dagster_kstreams.spark.column_hand_back import ColumnsAfterState
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.spark.frames import OUTPUT_COLUMNS, OUTPUT_SPARK_SCHEMA
from dagster_kstreams.topology import Consumed, Grouped, Materialized, Produced, Repartitioned, Serdes, StreamsBuilder


def test_a_hand_back_writes_the_record_where_it_stands_with_its_headers_and_timestamp():
    back = HandBack("KSTREAM-FILTER-0000000004", 1, Serdes.String(), Serdes.Long())
    out = Output()
    headers = [{"key": "n", "value": b"e1"}]
    back.process("k", 7, RecordContext("in", 0, 3, 1234, headers=headers), out, None)
    back.process("k", None, RecordContext("in", 0, 4, 1300), out, None)  # a tombstone stays one
    assert (out.topic, out.key, out.value, out.headers, out.timestamp_ms) == (
        [hand_back_topic(1)] * 2, [b"k", b"k"], [(7).to_bytes(8, "big"), None], [headers, None], [1234, 1300])
    with pytest.raises(ProcessingError, match="processor KSTREAM-FILTER-0000000004 cannot hand the record at "
                                              "topic 'in' partition 0 offset 5 to the JVM"):
        back.process("k", "not a long", RecordContext("in", 0, 5, 1400), out, None)


def _refused(builder: StreamsBuilder, *patterns: str) -> None:
    with pytest.raises(UnsupportedTopologyError) as refusal:
        compile_topology(builder, "app").check()
    for pattern in patterns:
        assert pattern in str(refusal.value), (pattern, str(refusal.value))


@pytest.mark.integration
def test_columns_after_state_are_planned_lane_by_lane(spark):  # spark: a Column needs a SparkContext
    builder = StreamsBuilder()
    counts = builder.stream("in").group_by_key().count().to_stream()
    evens = counts.filter(F.col("value") % 2 == 0)
    evens.map_values(F.col("value").cast("string")).to("evens")
    evens.select_key(F.lit("all")).to("all-evens")
    counts.flat_map_values(F.array(F.col("value"))).to("listed")
    program = compile_topology(builder, "app").program(0)
    after = program.columns_after_state
    assert isinstance(after, ColumnsAfterState) and program.column_plan is None
    names = [[after.nodes[index].name for index in lane.path] for lane in after.lanes]
    assert names == [  # depth first, in the children's order: Kafka Streams' forwarding order
        ["KSTREAM-FILTER-0000000004", "KSTREAM-MAPVALUES-0000000005", "KSTREAM-SINK-0000000006"],
        ["KSTREAM-FILTER-0000000004", "KSTREAM-KEY-SELECT-0000000007", "KSTREAM-SINK-0000000008"],
        ["KSTREAM-FLATMAPVALUES-0000000009", "KSTREAM-SINK-0000000010"]]
    assert [lane.entry for lane in after.lanes] == [0, 0, 1]
    assert [(lane.key_serde, lane.value_serde) for lane in after.lanes] == [(Serdes.String(), Serdes.Long())] * 3
    backs = [node for node in program.nodes if isinstance(node, HandBack)]
    assert [(node.name, node.topic) for node in backs] == [
        ("KSTREAM-FILTER-0000000004", hand_back_topic(0)), ("KSTREAM-FLATMAPVALUES-0000000009", hand_back_topic(1))]


@pytest.mark.integration
def test_what_is_still_refused_after_state_names_its_processor(spark):
    builder = StreamsBuilder()  # state after the Column
    builder.stream("in").group_by_key().count().to_stream().filter(F.col("value") > 1).group_by_key().count()
    _refused(builder, "processor KSTREAM-AGGREGATE-0000000006 (aggregate) follows a Column after state")
    builder = StreamsBuilder()  # a key change first
    builder.stream("in").group_by_key().count().to_stream().select_key(F.lit("k")).to("out")
    _refused(builder, "processor KSTREAM-KEY-SELECT-0000000004 (select_key) is a Column after processors that "
                      "run in Python: after state a Column filter/filter_not, map_values or flat_map_values comes first")
    builder = StreamsBuilder()  # a value serde only Python parses
    builder.stream("in").group_by_key(Grouped.with_(Serdes.String(), Serdes.Json())) \
        .reduce(lambda a, b: b).to_stream().map_values(F.col("value.x")).to("out")
    _refused(builder, "processor KSTREAM-MAPVALUES-0000000004 (map_values) reads after state a value written with "
                      "Serdes.Json()")
    builder = StreamsBuilder()  # a sink whose topic a function picks
    builder.stream("in").group_by_key().count().to_stream().filter(F.col("value") > 1).to(lambda k, v: "out")
    _refused(builder, "sink KSTREAM-SINK-0000000005 after a Column after state places its records itself")
    builder = StreamsBuilder()  # a topic written after the Column and by a Python sink
    counts = builder.stream("in").group_by_key().count().to_stream()
    counts.filter(F.col("value") > 1).to("out")
    counts.to("out", Produced.with_(Serdes.String(), Serdes.Long()))
    _refused(builder, "sink KSTREAM-SINK-0000000005 after a Column after state writes topic 'out', which another "
                      "sink of the sub-topology writes too")
    builder = StreamsBuilder()  # a merge after the Column
    counts = builder.stream("in").group_by_key().count().to_stream()
    counts.filter(F.col("value") > 1).merge(counts).to("out")
    _refused(builder, "(merge) follows a Column after state")


def _counts(columns: bool) -> StreamsBuilder:
    """An uncached count whose stream goes to four sinks: through a filter and a ``map_values``, a
    ``flat_map_values`` and a ``select_key``, a ``map_values`` to a repartition topic (which keeps the timestamps), and
    straight on, as Columns (``columns``) or as Python functions doing the same."""
    builder = StreamsBuilder()
    counts = builder.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).group_by_key() \
        .count(Materialized.as_("n").with_caching_disabled()).to_stream()
    if columns:
        counts.filter(F.col("value") % 2 == 0).map_values(F.concat(F.lit("even|"), F.col("value").cast("string"))) \
            .to("evens")
        counts.flat_map_values(F.array(F.col("value").cast("string"), F.col("key"))) \
            .select_key(F.concat(F.col("key"), F.lit("!"))).to("pairs")
        counts.map_values(F.concat(F.col("key"), F.lit("@"), F.col("event_time").cast("string"))) \
            .repartition(Repartitioned.as_("stamped"))
    else:
        counts.filter(lambda key, n: n % 2 == 0).map_values(lambda n: f"even|{n}").to("evens")
        counts.flat_map_values(lambda key, n: [str(n), key]).select_key(lambda key, value: key + "!").to("pairs")
        counts.map_values(lambda n: None).repartition(Repartitioned.as_("stamped"))  # the time: set below
    counts.to("plain", Produced.with_(Serdes.String(), Serdes.Long()))
    return builder


def _frame(records: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame({
        "key": [key for key, *_ in records], "value": [b"v"] * len(records), "topic": ["in"] * len(records),
        "partition": [0] * len(records), "offset": list(range(len(records))), "timestamp": [None] * len(records),
        "event_time": [timestamp for _, timestamp, _ in records],
        "headers": [None if name is None else [{"key": "n", "value": name}] for *_, name in records]})


@pytest.mark.integration
@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([b"a", b"b"]), st.integers(0, 10**6), st.sampled_from([None, b"x", b"y"])),
                min_size=1, max_size=8))
def test_the_state_output_through_columns_is_the_python_path(spark, records):
    by_columns = compile_topology(_counts(True), "app").program(0)
    by_python = compile_topology(_counts(False), "app").program(0)
    for key in (b"a", b"b"):
        group = [record for record in records if record[0] == key]
        if not group:
            continue
        handed, _ = by_columns.process_key_group(_frame(group), None)
        expected, _ = by_python.process_key_group(_frame(group), None)
        rows = by_columns.columns_after_state.project(
            spark.createDataFrame(handed, OUTPUT_SPARK_SCHEMA).coalesce(1)).collect()
        ours = [_normal(tuple(row[name] for name in OUTPUT_COLUMNS)) for row in rows]
        theirs = [_normal(row) for row in expected[list(OUTPUT_COLUMNS)].itertuples(index=False)]
        # The Python twin's repartitioned value is the Column's: its key, "@" and its timestamp.
        theirs = [(topic, k, f"{k.decode()}@{time}".encode() if topic.endswith("-repartition") else v, h, time, order)
                  for topic, k, v, h, time, order in theirs]
        assert ours == theirs


def _normal(row) -> tuple:
    """An output row with bytes as bytes, missing numbers as None and headers as pairs."""
    topic, key, value, headers, time, order = row
    return (topic, _bytes(key), _bytes(value),
            [] if headers is None else [(header["key"], _bytes(header["value"])) for header in headers],
            None if time is None or pd.isna(time) else int(time), None if order is None or pd.isna(order) else int(order))


def _bytes(data):
    return None if data is None else bytes(data)


@pytest.mark.integration
def test_a_handed_back_record_the_jvm_cannot_parse_fails_naming_the_column_not_a_null_value(spark):
    # Python's Json serde writes any value; the JVM reads it with the stream's schema. A value that
    # does not fit it must not reach the Column as null (a Python function would see the value):
    # the batch fails, naming the processor, as a Python processor's ProcessingError does.
    builder = StreamsBuilder()
    builder.stream("in").group_by_key(Grouped.with_(Serdes.String(), Serdes.Json(schema="n long"))) \
        .reduce(lambda seen, value: value).to_stream() \
        .map_values(F.col("value.n").cast("string")).to("out", Produced.with_(Serdes.String(), Serdes.String()))
    after = compile_topology(builder, "app").program(0).columns_after_state
    fits = [(hand_back_topic(0), b"k", b'{"n":7}', None, 5, 0)]
    rows = after.project(spark.createDataFrame(fits, OUTPUT_SPARK_SCHEMA)).collect()
    assert [(row["topic"], bytes(row["value"])) for row in rows] == [("out", b"7")]
    for value in (b'{"n":"x"}', b"[1]", b"7"):
        wrong = [(hand_back_topic(0), b"k", value, None, 5, 0)]
        with pytest.raises(Exception, match="ProcessingError: processor KSTREAM-MAPVALUES-0000000004 cannot read "
                                            "the record handed back to the JVM"):
            after.project(spark.createDataFrame(wrong, OUTPUT_SPARK_SCHEMA)).collect()


@pytest.mark.integration
def test_a_handed_back_record_the_jvm_cannot_parse_is_not_dropped_by_a_filter(spark):
    builder = StreamsBuilder()  # a filter on the null the JVM would read would drop the record silently
    builder.stream("in").group_by_key(Grouped.with_(Serdes.String(), Serdes.Json(schema="n long"))) \
        .reduce(lambda seen, value: value).to_stream() \
        .filter(F.col("value.n") > 0).to("out", Produced.with_(Serdes.String(), Serdes.Json()))
    after = compile_topology(builder, "app").program(0).columns_after_state
    wrong = [(hand_back_topic(0), b"k", b'{"n":"x"}', None, 5, 0)]
    with pytest.raises(Exception, match="ProcessingError: processor KSTREAM-FILTER-0000000004 cannot read "
                                        "the record handed back to the JVM after state: its value with "):
        after.project(spark.createDataFrame(wrong, OUTPUT_SPARK_SCHEMA)).collect()
