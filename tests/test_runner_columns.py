"""PySpark Column expressions in the DSL, run in the JVM by the Spark runner (real broker, real Spark).

A sub-topology made only of Column operations over JVM-parsable serdes (here JSON with a Spark
schema) runs without any Python pass; its results equal the same topology written with Python
lambdas; malformed JSON follows the deserialization exception handler.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dagster_kstreams.kafka.dead_letter import (
    HEADER_OFFSET,
    HEADER_PARTITION,
    HEADER_TOPIC,
    DeadLetterPolicy,
)
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.records import produce, read_topic
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.spark.event_time import source_columns
from dagster_kstreams.spark.errors import TaskFailedError
from dagster_kstreams.spark.python_segments import ENCODED, EXIT, PYTHON_KINDS, cut, segment_batch
from dagster_kstreams.spark.strategies import ColumnPlan, strategy_for
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology.consumed_produced import Consumed, Produced
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes

pytestmark = pytest.mark.integration

SCHEMA = "user string, country string, amount long, tags array<string>"
PYTHON_NODES = ("PythonMapInArrow", "MapInArrow", "ArrowEvalPython", "BatchEvalPython", "FlatMapGroupsInPandas",
                "PythonUDF")


def _orders(count: int) -> list[tuple[bytes, bytes]]:
    countries = ["fr", "fr", "de", "it", None]
    rows = []
    for i in range(count):
        order = {"user": f"user{i % 7}", "country": countries[i % len(countries)], "amount": i * 7 % 23,
                 "tags": [f"t{i % 3}", f"u{i % 2}"]}
        rows.append((f"user{i % 7}".encode(), json.dumps(order).encode()))
    return rows


def _column_topology(source, big, tags, json_out):
    builder = StreamsBuilder()
    orders = builder.stream(source, Consumed.with_(Serdes.String(), Serdes.Json(schema=SCHEMA)))
    orders.filter(F.col("value.amount") > 5) \
        .select_key(F.coalesce(F.col("value.country"), F.lit("??"))) \
        .map_values(F.col("value.amount") * 2) \
        .to(big, Produced.with_(Serdes.String(), Serdes.Long()))
    orders.filter_not(F.col("value.country") == "fr") \
        .flat_map_values(F.col("value.tags")) \
        .map((F.concat(F.col("key"), F.lit(":"), F.col("value")), F.upper(F.col("value")))) \
        .to(tags)
    orders.map_values(F.struct(F.col("value.user").alias("who"), (F.col("value.amount") + 1).alias("next"))) \
        .to(json_out, Produced.with_(Serdes.String(), Serdes.Json()))
    return builder


def _lambda_topology(source, big, tags, json_out):
    builder = StreamsBuilder()
    orders = builder.stream(source, Consumed.with_(Serdes.String(), Serdes.Json()))
    orders.filter(lambda key, value: value["amount"] > 5) \
        .select_key(lambda key, value: value["country"] or "??") \
        .map_values(lambda value: value["amount"] * 2) \
        .to(big, Produced.with_(Serdes.String(), Serdes.Long()))
    # filter_not with a null comparison: SQL's null is false, as Python's `None == "fr"` is.
    orders.filter_not(lambda key, value: value["country"] == "fr") \
        .flat_map_values(lambda value: value["tags"]) \
        .map(lambda key, value: (f"{key}:{value}", value.upper())) \
        .to(tags)
    orders.map_values(lambda value: {"who": value["user"], "next": value["amount"] + 1}) \
        .to(json_out, Produced.with_(Serdes.String(), Serdes.Json()))
    return builder


def _outputs(bootstrap, topics):
    big, tags, json_out = (read_topic(bootstrap, topic) for topic in topics)
    return {
        "big": sorted((r.key.decode(), int.from_bytes(r.value, "big", signed=True), r.partition) for r in big),
        "tags": sorted((r.key.decode(), r.value.decode(), r.partition) for r in tags),
        "json": sorted((r.key.decode(), json.dumps(json.loads(r.value), sort_keys=True), r.partition)
                       for r in json_out),
        # order per output key follows the input order
        "big_order": [(r.key, r.value) for r in sorted(big, key=lambda r: (r.partition, r.offset))],
    }


def _executed_plan(df: DataFrame) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def test_column_topology_runs_in_the_jvm_and_equals_the_lambda_topology(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, monkeypatch
):
    source = unique_topic("orders")
    col_topics = [unique_topic("big"), unique_topic("tags"), unique_topic("json")]
    py_topics = [unique_topic("big"), unique_topic("tags"), unique_topic("json")]
    kafka_admin.create_topics({source: 1, **{t: 3 for t in col_topics + py_topics}})
    rows = _orders(80)
    produce(kafka_bootstrap, source, rows)

    # The task query of the Column topology has no Python evaluation node at all.
    compiled = compile_topology(_column_topology(source, *col_topics), unique_topic("app"))
    plan = compiled.program(0).column_plan
    assert plan is not None
    # (Planned over an empty frame shaped as Spark's Kafka source, so no broker round trip.)
    static = source_columns(spark.createDataFrame(
        [], "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"))
    executed = _executed_plan(plan.build(static, DeadLetterPolicy()))
    assert "from_json" in executed and "Exchange" not in executed
    assert not [node for node in PYTHON_NODES if node in executed], executed
    # (Control: the same check sees the Python pass of the lambda topology.)
    lambda_program = compile_topology(_lambda_topology(source, *py_topics), unique_topic("app")).program(0)
    assert getattr(lambda_program, "column_plan", None) is None
    control = static.mapInArrow(lambda batches: batches, static.schema)
    assert any(node in _executed_plan(control) for node in PYTHON_NODES)

    lambda_runner = TaskRunner(_lambda_topology(source, *py_topics), unique_topic("app"), kafka_bootstrap,
                               state_location=str(tmp_path / "py"), spark=spark)
    lambda_results = lambda_runner.run_all()

    # The runner itself takes the JVM path: any Python pass would call mapInArrow.
    def no_python(*args, **kwargs):
        raise AssertionError("a Column-only sub-topology must not run a Python pass")

    monkeypatch.setattr(DataFrame, "mapInArrow", no_python)
    monkeypatch.setattr(DataFrame, "mapInPandas", no_python)
    column_runner = TaskRunner(_column_topology(source, *col_topics), unique_topic("app"), kafka_bootstrap,
                               state_location=str(tmp_path / "col"), spark=spark)
    column_results = column_runner.run_all()
    monkeypatch.undo()

    assert sum(r.records_in for r in column_results) == sum(r.records_in for r in lambda_results) == len(rows)
    by_topic = {}
    for result in column_results:
        for topic, count in result.records_out.items():
            by_topic[topic] = by_topic.get(topic, 0) + count
    col, py = _outputs(kafka_bootstrap, col_topics), _outputs(kafka_bootstrap, py_topics)
    assert col == py
    assert col["big"] and col["tags"] and len(col["json"]) == len(rows)
    assert by_topic.get(col_topics[0]) == len(col["big"])
    for key, _, partition in col["big"] + col["tags"]:
        assert partition == default_partition(key.encode(), 3)
    # Spot checks against plain Python.
    orders = [json.loads(value) for _, value in rows]
    assert sorted((o["country"] or "??", o["amount"] * 2) for o in orders if o["amount"] > 5) == \
        sorted((k, v) for k, v, _ in col["big"])
    assert ("??:t1", "T1") in [(k, v) for k, v, _ in col["tags"]] or any(o["country"] is None for o in orders)


def _malformed_topology(source, out):
    builder = StreamsBuilder()
    builder.stream(source, Consumed.with_(Serdes.String(), Serdes.Json(schema="country string, amount long"))) \
        .map_values(F.col("value.amount")) \
        .to(out, Produced.with_(Serdes.String(), Serdes.Long()))
    return builder


_RECORDS = [(b"a", b'{"country":"fr","amount":1}'), (b"b", b'{"country":"de","amount":2}'),
            (b"c", b"null"), (b"a", b'{"country": "fr", "amo'), (b"b", b'{"amount":5}'), (b"c", None)]


def test_malformed_json_fails_the_task_with_its_coordinates(kafka_bootstrap, kafka_admin, unique_topic, spark,
                                                            tmp_path):
    source, out = unique_topic("json"), unique_topic("amounts")
    kafka_admin.create_topics({source: 1, out: 1})
    produce(kafka_bootstrap, source, _RECORDS)
    app_id = unique_topic("app")
    runner = TaskRunner(_malformed_topology(source, out), app_id, kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    with pytest.raises(TaskFailedError) as failure:
        runner.run_task("0_0")
    message = str(failure.value)
    assert f"topic '{source}' partition 0 offset 3" in message, message
    assert "DeserializationError" in message and "value" in message and "Json" in message
    # Nothing of the failed batch is committed: the group is where the task started.
    assert kafka_admin.committed_offsets(app_id, source) == {TopicPartition(source, 0): 0}


def test_malformed_json_goes_to_the_dead_letter_topic(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path):
    source, out, dead = unique_topic("json"), unique_topic("amounts"), unique_topic("dlq")
    kafka_admin.create_topics({source: 1, out: 1, dead: 1})
    produce(kafka_bootstrap, source, _RECORDS)
    runner = TaskRunner(_malformed_topology(source, out), unique_topic("app"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark,
                        deserialization_exception_handler="log_and_continue", dead_letter_topic=dead)
    result = runner.run_task("0_0")
    assert result.records_in == 6
    assert result.records_out.get(dead) == 1
    values = [(r.key, None if r.value is None else int.from_bytes(r.value, "big", signed=True))
              for r in read_topic(kafka_bootstrap, out)]
    # JSON null and a Kafka null are null values (as json.loads in Python); a missing field is null.
    assert values == [(b"a", 1), (b"b", 2), (b"c", None), (b"b", 5), (b"c", None)]
    (letter,) = read_topic(kafka_bootstrap, dead)
    assert (letter.key, letter.value) == (b"a", b'{"country": "fr", "amo')
    headers = dict(letter.headers)
    assert headers[HEADER_TOPIC] == source.encode()
    assert headers[HEADER_PARTITION] == b"0"
    assert headers[HEADER_OFFSET] == b"3"


def test_columns_outside_the_jvm_path_are_named(spark):
    # A Column expression needs a SparkContext to be built (``spark``: run alone, this test has one).
    # A value a Python function made, read by a Column through a default serde only Python parses.
    builder = StreamsBuilder()
    builder.stream("in", Consumed.with_(Serdes.String(), Serdes.Json(schema=SCHEMA))) \
        .map_values(lambda value: value) \
        .filter(F.col("value").isNotNull()) \
        .to("out", Produced.with_(Serdes.String(), Serdes.String()))
    with pytest.raises(UnsupportedTopologyError, match=r"KSTREAM-FILTER-\d+ \(filter\) reads in the JVM a value a "
                                                       r"Python function made, through the default value serde Serdes\.Json\(\)"):
        compile_topology(builder, "app", default_value_serde=Serdes.Json()).program(0)
    # A Column after a Python function, in front of state (Columns before them run: column_hand_off.py).
    builder = StreamsBuilder()
    builder.stream("in").map_values(lambda v: v + "!").map_values(F.upper(F.col("value"))).group_by_key().count()
    with pytest.raises(UnsupportedTopologyError, match=r"KSTREAM-MAPVALUES-\d+ \(map_values\) is a Column after "):
        compile_topology(builder, "app").program(0)
    # JSON without a schema can only be parsed in Python.
    builder = StreamsBuilder()
    builder.stream("in", Consumed.with_(Serdes.String(), Serdes.Json())).filter(F.col("value").isNotNull()).to("out")
    with pytest.raises(UnsupportedTopologyError, match=r"Json\(\), one of which only Python parses, and its child "
                                                       r"KSTREAM-FILTER-\d+ is no Python function"):
        compile_topology(builder, "app").program(0)
    # An operation with no Column form here (a KTable filter).
    builder = StreamsBuilder()
    builder.table("t").filter(F.col("value").isNotNull()).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match=r"KTABLE-FILTER-\d+ \(table_filter\)"):
        compile_topology(builder, "app").program(0)


_MALFORMED = [
    (b"a", b'{"country":"fr","amount":1}'),  # fine
    (b"b", b""),  # empty: not JSON
    (b"c", b"   "),  # blank: not JSON
    (b"d", b'{"amount": 4'),  # cut short
    (b"\xff\xfe", b'{"amount":5}'),  # the key is not UTF-8
    (b"f", b'{"amount":\xff6}'),  # the value is not UTF-8
    (b"g", b"null"),  # JSON null: a null value, not malformed
    (b"h", b'{"amount":8}'),  # fine
]


def _amounts(source, out, path: str):
    """The amounts, by Python functions, by Columns, or read by a Python function in a segment of a
    Column plan (``Json()`` without a schema: only Python parses it) and cast by a Column."""
    builder = StreamsBuilder()
    if path == "segment":
        builder.stream(source, Consumed.with_(Serdes.String(), Serdes.Json())) \
            .map_values(lambda value: None if value is None else str(value.get("amount"))) \
            .map_values(F.col("value").cast("long")) \
            .to(out, Produced.with_(Serdes.String(), Serdes.Long()))
        return builder
    stream = builder.stream(source, Consumed.with_(Serdes.String(), Serdes.Json(schema="country string, amount long")))
    amounts = stream.map_values(lambda value: None if value is None else value.get("amount")) if path == "python" \
        else stream.map_values(F.col("value.amount"))
    amounts.to(out, Produced.with_(Serdes.String(), Serdes.Long()))
    return builder


def test_both_paths_treat_malformed_records_alike(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path):
    """The same bad records through Python functions, through Column expressions (JVM), and read in a
    Column plan's Python segment: the same records dead-lettered, with the same coordinates, and the
    same output; nothing dropped silently."""
    source = unique_topic("json")
    kafka_admin.create_topics({source: 1})
    produce(kafka_bootstrap, source, _MALFORMED)
    seen = {}
    for path in ("python", "columns", "segment"):
        out, dead = unique_topic("amounts"), unique_topic("dlq")
        kafka_admin.create_topics({out: 1, dead: 1})
        runner = TaskRunner(_amounts(source, out, path), unique_topic("app"), kafka_bootstrap,
                            state_location=str(tmp_path / f"state-{path}"), spark=spark,
                            deserialization_exception_handler="log_and_continue", dead_letter_topic=dead)
        assert strategy_for(runner.compiled.program(0)).__class__.__name__ == ("Stateless" if path == "python"
                                                                               else "ColumnPlan")
        result = runner.run_task("0_0")
        written = [(r.key, None if r.value is None else int.from_bytes(r.value, "big", signed=True))
                   for r in read_topic(kafka_bootstrap, out)]
        letters = [(r.key, r.value, dict(r.headers)[HEADER_OFFSET]) for r in read_topic(kafka_bootstrap, dead)]
        seen[path] = (result.records_in, written, letters)
    assert seen["python"] == seen["columns"] == seen["segment"]
    records_in, written, letters = seen["python"]
    assert records_in == len(_MALFORMED)
    assert written == [(b"a", 1), (b"g", None), (b"h", 8)]
    assert letters == [(key, value, str(offset).encode()) for offset, (key, value) in enumerate(_MALFORMED)
                       if offset in (1, 2, 3, 4, 5)]


def _mixed_topology():
    builder = StreamsBuilder()
    stream = builder.stream("in")
    # 1-3: Columns, then a Python map and a sink
    stream.filter(F.col("value").isNotNull()).map(lambda k, v: (k, v.upper())).to("out")
    # 5-: a Python flat_map and a filter, Columns, and a stream read by a Python map_values and a sink
    flat = stream.flat_map(lambda k, v: [(k, v), (k + "!", v)]).filter(lambda k, v: v != "x") \
        .map_values(F.upper(F.col("value")))
    flat.map_values(lambda v: v + "?").select_key(F.col("value")).to("out")
    flat.to("out")
    return builder


def test_a_mixed_sub_topology_is_cut_into_segments(spark):
    program = compile_topology(_mixed_topology(), "app").program(0)
    names = [node.name for node in program.nodes]
    segments = {names[start]: (tuple(names[i] for i in segment.steps),
                               tuple((names[parent], names[child]) for parent, child in segment.exits),
                               tuple(sorted(changes) for changes in segment.changes))
                for start, segment in program.column_plan.segments.items()}
    assert segments == {
        "KSTREAM-MAP-0000000002": (("KSTREAM-MAP-0000000002",), (("KSTREAM-MAP-0000000002", "KSTREAM-SINK-0000000003"),),
                                   (["key", "value"],)),
        "KSTREAM-FLATMAP-0000000004": (("KSTREAM-FLATMAP-0000000004", "KSTREAM-FILTER-0000000005"),
                                       (("KSTREAM-FILTER-0000000005", "KSTREAM-MAPVALUES-0000000006"),),
                                       (["key", "value"],)),
        "KSTREAM-MAPVALUES-0000000007": (("KSTREAM-MAPVALUES-0000000007",),
                                         (("KSTREAM-MAPVALUES-0000000007", "KSTREAM-KEY-SELECT-0000000008"),),
                                         (["value"],)),
    }
    assert isinstance(strategy_for(program), ColumnPlan)
    # Three branches write "out": their rows are sorted back into processing order; one branch is not.
    assert program.column_plan.interleaves_branches and ColumnPlan().orders_output(program)
    builder = StreamsBuilder()
    builder.stream("in").map_values(F.upper(F.col("value"))).flat_map_values(lambda v: [v, v]).to("out")
    single = compile_topology(builder, "app").program(0)
    assert not single.column_plan.interleaves_branches and not ColumnPlan().orders_output(single)


def test_a_segment_runs_records_depth_first_in_partition_order():
    """segment_batch on an Arrow batch, without Spark: each record's output in Kafka Streams' order
    (a flat_map's records one after the other, each to the exits in the topology's order), the
    record's coordinates and headers kept, the changed parts written by each exit's serde."""
    builder = StreamsBuilder()
    fanned = builder.stream("in").flat_map(lambda k, v: [(k + "1", v), (k + "2", v + v)]).filter(lambda k, v: v != "bb")
    fanned.to("out-a")
    fanned.map_values(lambda v: len(v)).to("out-b", Produced.with_(Serdes.String(), Serdes.Long()))
    program = compile_topology(builder, "app").program(0)
    segments = cut(program.nodes, lambda node: node.kind in PYTHON_KINDS)
    (segment,) = segments.values()
    exit_serdes = [{part: getattr(program.nodes[child], f"{part}_serde") for part in changes}
                   for (_, child), changes in zip(segment.exits, segment.changes)]
    headers = [[{"key": "h", "value": b"1"}], None, None]
    batch = pa.RecordBatch.from_pydict({
        "key": ["a", "b", "c"], "value": ["a", "b", "c"], "topic": ["in"] * 3, "partition": [0] * 3,
        "offset": [5, 6, 7], "event_time": [10, 30, 20], "_headers": headers})
    out = segment_batch(batch, program.nodes, segment, exit_serdes).to_pydict()
    topics = [program.nodes[segment.exits[position][1]].topic for position in out[EXIT]]
    written = list(zip(out["offset"], topics, out[ENCODED["key"]], out[ENCODED["value"]]))
    long = Serdes.Long().serialize
    assert written == [
        (5, "out-a", b"a1", b"a"), (5, "out-b", b"a1", long(1)), (5, "out-a", b"a2", b"aa"), (5, "out-b", b"a2", long(2)),
        (6, "out-a", b"b1", b"b"), (6, "out-b", b"b1", long(1)),  # b2 -> "bb": filtered out
        (7, "out-a", b"c1", b"c"), (7, "out-b", b"c1", long(1)), (7, "out-a", b"c2", b"cc"), (7, "out-b", b"c2", long(2)),
    ]
    assert out["_headers"][:4] == [headers[0]] * 4 and out["event_time"][4:6] == [30, 30]



def test_a_value_a_python_function_made_that_the_jvm_cannot_read_fails_naming_the_column(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    # A Python function's value goes on to the Column through the default serde: Python's Json
    # writes any value, the JVM reads it with the schema. One that does not fit must not reach the
    # Column as null (the Python function's next processor would see the value): the task fails,
    # naming the Column, and commits nothing.
    source, out = unique_topic("segment-in"), unique_topic("segment-out")
    kafka_admin.create_topics({source: 1, out: 1})
    builder = StreamsBuilder()
    builder.stream(source, Consumed.with_(Serdes.String(), Serdes.String())) \
        .map_values(lambda value: {"n": int(value) if value.isdigit() else value}) \
        .map_values(F.col("value.n").cast("string")) \
        .to(out, Produced.with_(Serdes.String(), Serdes.String()))
    produce(kafka_bootstrap, source, [(b"a", b"7"), (b"b", b"x")])
    app_id = unique_topic("segment-app")
    runner = TaskRunner(builder, app_id, kafka_bootstrap, state_location=str(tmp_path / "state"), spark=spark,
                        default_value_serde=Serdes.Json(schema="n long"))
    with pytest.raises(TaskFailedError) as failure:
        runner.run_task("0_0")
    message = str(failure.value)
    assert "ProcessingError: processor KSTREAM-MAPVALUES-0000000002 cannot read" in message, message
    assert "its value with" in message and "Json" in message, message
    assert kafka_admin.committed_offsets(app_id, source) == {TopicPartition(source, 0): 0}
