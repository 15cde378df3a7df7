"""Custom stream partitioners without a broker: what a sink does with each answer (Kafka Streams'
``RecordCollectorImpl.send``: None, an empty set, several partitions, out of range), the
foreign-key join's wrapped partitioners (``KTableImpl``), the ``partition`` column only where a
partitioner is, and ``describe()`` unchanged; a topic a function picks, whose partition count is
read from the real broker when a record goes there. The broker-backed comparison with Kafka Streams
itself is in tests/test_equivalence_order.py (a sink, a repartition feeding a count) and
tests/test_equivalence_fk_join.py (``TableJoined`` partitioners)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark import cloudpickle
from pyspark.sql import functions as F

from dagster_kstreams import Topology
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.spark.column_placement import place_batch
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.spark.strategies import ColumnPlan, strategy_for
from dagster_kstreams.topology import Materialized, StreamsBuilder, TableJoined
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.grouped_repartitioned import Repartitioned
from dagster_kstreams.topology.serdes import Serdes, Window, Windowed, WindowedSerde

from test_fk_join_logic import Tasks


class ByLength:
    """KIP-837 ``partitions``: "drop..." to none, "all..." to every partition, a length that is a
    multiple of 4 to Kafka's default, else the length modulo the partition count."""

    def __init__(self):
        self.seen = []

    def partitions(self, topic, key, value, num_partitions):
        self.seen.append((topic, key, value, num_partitions))
        if value.startswith("drop"):
            return set()
        if value.startswith("all"):
            return {num_partitions - 1 - p for p in range(num_partitions)}
        return None if len(value) % 4 == 0 else {len(value) % num_partitions}


def _stateless(partitioner, counts=None):
    builder = StreamBuilderWith(partitioner)
    program = compile_topology(builder.builder, "app").program(0)
    program.sink_partition_counts = counts or {"out": 3}
    return program


class StreamBuilderWith:
    def __init__(self, partitioner):
        self.builder = StreamsBuilder()
        self.builder.stream("in").map_values(lambda v: v).to("out", Produced.stream_partitioner(partitioner))


def _run(program, values):
    batch = pa.RecordBatch.from_pydict({
        "key": [b"k"] * len(values), "value": [v.encode() for v in values], "topic": ["in"] * len(values),
        "partition": [0] * len(values), "offset": list(range(len(values))), "event_time": [1] * len(values)})
    out = program.process_arrow_batch(batch).to_pydict()
    return [(v.decode(), p) for v, p in zip(out["value"], out["partition"])]


def test_a_sink_places_copies_drops_and_leaves_records_to_the_default_as_its_partitioner_says():
    partitioner = ByLength()
    program = _stateless(partitioner)
    assert program.placed_topics == ["out"]
    assert _run(program, ["abcde", "dropped", "all", "abcd", "ab"]) == [
        ("abcde", 2), ("all", 0), ("all", 1), ("all", 2), ("abcd", None), ("ab", 2)]
    # It sees the objects, before serialization, and the topic's partition count.
    assert partitioner.seen[0] == ("out", "k", "abcde", 3)


def test_partition_and_a_plain_callable_are_one_partition_or_the_default():
    class One:
        def partition(self, topic, key, value, num_partitions):
            return None if value == "x" else 1

    assert _run(_stateless(One()), ["x", "yy"]) == [("x", None), ("yy", 1)]
    assert _run(_stateless(lambda topic, key, value, n: len(value) % n), ["x", "yy"]) == [("x", 1), ("yy", 2)]


def test_a_partition_out_of_range_stops_the_task_naming_sink_topic_and_partition():
    program = _stateless(lambda topic, key, value, n: 3)
    with pytest.raises(ProcessingError, match=r"^sink KSTREAM-SINK-0000000002: the stream partitioner chose partition "
                                              r"3 of topic 'out', which has 3 partitions \(record at topic 'in'"):
        _run(program, ["x"])
    with pytest.raises(ProcessingError, match="chose partition -1"):
        _run(_stateless(lambda topic, key, value, n: -1), ["x"])


def test_no_partitioner_no_partition_column():
    builder = StreamsBuilder()
    builder.stream("in").to("out")
    program = compile_topology(builder, "app").program(0)
    assert program.placed_topics == []
    assert "partition" not in program.process_arrow_batch(pa.RecordBatch.from_pydict({
        "key": [b"k"], "value": [b"v"], "topic": ["in"], "partition": [0], "offset": [0],
        "event_time": [1]})).schema.names


def test_a_repartition_topic_is_placed_by_its_partitioner():
    builder = StreamsBuilder()
    builder.stream("in").repartition(Repartitioned.stream_partitioner_(lambda t, k, v, n: 0).with_name("placed")) \
        .group_by_key().count().to_stream().to("out", Produced.with_(None, None))
    program = compile_topology(builder, "app").program(0)
    assert program.placed_topics == ["app-placed-repartition"]


def test_a_partitioner_does_not_show_in_describe():
    def topology(produced, repartitioned):
        builder = StreamsBuilder()
        builder.stream("in").repartition(repartitioned).to("out", produced)
        return str(builder.build().describe())

    assert topology(Produced.stream_partitioner(ByLength()), Repartitioned.stream_partitioner_(ByLength())) == \
        topology(Produced(), Repartitioned())


# -- a topic a function picks: its partition count read from the broker (the real one) ------------
def _picking(topology, kafka_bootstrap):
    program = compile_topology(topology, "app", kafka_config={"bootstrap.servers": kafka_bootstrap}).program(0)
    program.sink_partition_counts = {}  # as the engine gives it: no topic known before the run
    return program


def _batch(keys, values):
    return pa.RecordBatch.from_pydict({
        "key": [k.encode() for k in keys], "value": [v.encode() for v in values], "topic": ["in"] * len(keys),
        "partition": [0] * len(keys), "offset": list(range(len(keys))), "event_time": [1] * len(keys)})


def test_a_partitioner_on_a_picked_topic_gets_that_topics_partition_count(kafka_bootstrap, kafka_admin,
                                                                           unique_topic):
    three, two = unique_topic("picked-3"), unique_topic("picked-2")
    kafka_admin.create_topics({three: 3, two: 2})
    partitioner = ByLength()
    builder = StreamsBuilder()
    builder.stream("in").to(lambda key, value: three if key == "a" else two, Produced.stream_partitioner(partitioner))
    program = _picking(builder, kafka_bootstrap)
    assert program.placed_topics == [None]
    out = program.process_arrow_batch(_batch(["a", "b", "a", "b"], ["all", "all", "xxxxx", "xxxxx"])).to_pydict()
    assert list(zip(out["topic"], out["partition"])) == [
        (three, 0), (three, 1), (three, 2), (two, 0), (two, 1), (three, 2), (two, 1)]
    assert [seen[3] for seen in partitioner.seen] == [3, 2, 3, 2]
    (sink,) = [node for node in program.nodes if node.kind == "sink"]
    assert sink.placement.picked._counts == {three: 3, two: 2}  # asked once per topic in the batch
    shipped = cloudpickle.loads(cloudpickle.dumps(program))  # the next batch's copy asks again
    assert [node for node in shipped.nodes if node.kind == "sink"][0].placement.picked._counts == {}


def test_a_low_level_sink_with_an_extractor_and_a_partitioner(kafka_bootstrap, kafka_admin, unique_topic):
    topic = unique_topic("picked-low-level")
    kafka_admin.create_topics({topic: 3})
    topology = Topology().add_source("src", "in").add_sink("snk", lambda key, value: topic, "src",
                                                           partitioner=ByValueLength())
    program = _picking(topology, kafka_bootstrap)
    out = program.process_arrow_batch(_batch(["k", "k"], ["ab", "abcd"])).to_pydict()
    assert list(zip(out["topic"], out["partition"])) == [(topic, 2), (topic, 1)]


def test_a_picked_topic_that_does_not_exist_stops_the_task_in_one_line(kafka_bootstrap, unique_topic):
    missing = unique_topic("picked-missing")
    topology = Topology().add_source("src", "in").add_sink("snk", lambda key, value: missing, "src",
                                                           partitioner=ByValueLength())
    program = _picking(topology, kafka_bootstrap)
    with pytest.raises(ProcessingError) as raised:
        program.process_arrow_batch(_batch(["k"], ["ab"]))
    message = str(raised.value)
    assert "\n" not in message and message.startswith("sink snk: cannot place the record at topic 'in' partition 0 "
                                                      f"offset 0 on topic {missing!r}") and "does not exist" in message
    nameless = Topology().add_source("src", "in").add_sink("snk", lambda key, value: None, "src",
                                                            partitioner=ByValueLength())
    with pytest.raises(ProcessingError, match=r"^sink snk: its topic extractor gave None for the record at topic "
                                              r"'in' partition 0 offset 0, not a topic name$"):
        _picking(nameless, kafka_bootstrap).process_arrow_batch(_batch(["k"], ["ab"]))


def test_a_windowed_key_on_a_picked_topic_goes_where_its_inner_key_would(kafka_bootstrap, kafka_admin, unique_topic):
    topic = unique_topic("picked-windowed")
    kafka_admin.create_topics({topic: 5})
    builder = StreamsBuilder()
    serde = WindowedSerde(Serdes.String(), 10)
    builder.stream("in").map(lambda key, value: (Windowed(key, Window(int(value), int(value) + 10)), value)) \
        .to(lambda key, value: topic, Produced.with_(serde, Serdes.String()))
    out = _picking(builder, kafka_bootstrap).process_arrow_batch(_batch(["user7"] * 3, ["0", "10", "20"])).to_pydict()
    assert out["partition"] == [default_partition(b"user7", 5)] * 3  # Kafka Streams' WindowedStreamPartitioner


def _placed_by_column_plan(builder, counts, rows, kafka_config=None):
    """``(topic, key, value, partition)`` of the Column plan's output rows ``(sink, key, value)``
    (``sink``: the name of the sink that wrote the row) once placed (column_placement.place_batch,
    the pass Spark runs after the JVM's plan; the broker-backed run is test_equivalence_order.py)."""
    program = compile_topology(builder, "app", kafka_config=kafka_config).check().program(0)
    assert isinstance(strategy_for(program), ColumnPlan)
    program.sink_partition_counts = counts
    index = {node.name: i for i, node in enumerate(program.nodes)}
    sinks = [program.nodes[index[sink]] for sink, _, _ in rows]
    batch = pa.RecordBatch.from_pydict({
        "topic": pa.array([sink.topic for sink in sinks], pa.string()),  # None: picked in the pass
        "key": [None if key is None else key.encode() for _, key, _ in rows],
        "value": [value.encode() for _, _, value in rows],
        "headers": pa.nulls(len(rows), pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        "timestamp_ms": pa.nulls(len(rows), pa.int64()), "emit_order": pa.nulls(len(rows), pa.int64()),
        "_placed_sink": pa.array([index[sink.name] if sink.placement or sink.topic is None else None
                                  for sink in sinks], pa.int32()),
        "_source_topic": ["in"] * len(rows), "_source_partition": pa.array([0] * len(rows), pa.int32()),
        "_source_offset": list(range(len(rows))), "_source_time": [1_000] * len(rows)})
    placed = place_batch(batch, program)
    assert placed.schema.names == ["topic", "key", "value", "headers", "timestamp_ms", "emit_order", "partition"]
    return [(topic, None if key is None else key.decode(), value.decode(), partition) for topic, key, value, partition
            in zip(*(placed.column(name).to_pylist() for name in ("topic", "key", "value", "partition")))]


def test_a_partitioner_after_column_expressions_places_what_the_jvm_wrote(spark):  # spark: F.col needs a session
    builder = StreamsBuilder()
    written = builder.stream("in").map_values(F.concat(F.col("value"), F.lit("!")))
    written.to("out", Produced.stream_partitioner(ByLength()))
    written.to("plain")  # no partitioner: the producer's default, a null partition
    placed, plain = "KSTREAM-SINK-0000000002", "KSTREAM-SINK-0000000003"
    rows = [(placed, "k1", "drop1!"), (plain, "k1", "drop1!"), (placed, "k2", "all2!"), (placed, "k3", "abc!"),
            (placed, None, "abcd!"), (plain, None, "abcd!")]
    assert _placed_by_column_plan(builder, {"out": 3}, rows) == [
        ("plain", "k1", "drop1!", None),                                                  # dropped from "out"
        ("out", "k2", "all2!", 0), ("out", "k2", "all2!", 1), ("out", "k2", "all2!", 2),  # ascending
        ("out", "k3", "abc!", None), ("out", None, "abcd!", 2), ("plain", None, "abcd!", None)]


def test_a_topic_picked_after_column_expressions_by_what_the_jvm_wrote(spark):
    builder = StreamsBuilder()
    written = builder.stream("in").map_values(F.upper(F.col("value")))
    written.to(lambda key, value: "vowels" if value[0] in "AEIOU" else "others")
    written.to("plain")
    picked, plain = "KSTREAM-SINK-0000000002", "KSTREAM-SINK-0000000003"
    rows = [(picked, "k1", "APPLE"), (plain, "k1", "APPLE"), (picked, None, "PEAR"), (picked, "k3", "ICE")]
    assert _placed_by_column_plan(builder, {}, rows) == [
        ("vowels", "k1", "APPLE", None), ("plain", "k1", "APPLE", None), ("others", None, "PEAR", None),
        ("vowels", "k3", "ICE", None)]


def test_a_topic_picked_after_column_expressions_is_placed_with_its_own_partition_count(spark, kafka_bootstrap,
                                                                                        kafka_admin, unique_topic):
    three, two = unique_topic("column-picked-3"), unique_topic("column-picked-2")
    kafka_admin.create_topics({three: 3, two: 2})
    builder = StreamsBuilder()
    builder.stream("in").map_values(F.concat(F.col("value"), F.lit("!"))) \
        .to(lambda key, value: three if key.endswith("3") else two, Produced.stream_partitioner(ByLength()))
    sink = "KSTREAM-SINK-0000000002"
    rows = [(sink, "k3", "all1!"), (sink, "k2", "all2!"), (sink, "k3", "drop!"), (sink, "k2", "abcd!")]
    assert _placed_by_column_plan(builder, {}, rows, {"bootstrap.servers": kafka_bootstrap}) == [
        (three, "k3", "all1!", 0), (three, "k3", "all1!", 1), (three, "k3", "all1!", 2),
        (two, "k2", "all2!", 0), (two, "k2", "all2!", 1), (two, "k2", "abcd!", 1)]


def test_a_picked_topic_that_does_not_exist_after_column_expressions_stops_the_task_naming_it(spark, kafka_bootstrap):
    builder = StreamsBuilder()
    builder.stream("in").map_values(F.upper(F.col("value"))) \
        .to(lambda key, value: "no-such-topic-here", Produced.stream_partitioner(ByLength()))
    with pytest.raises(ProcessingError, match=r"^sink KSTREAM-SINK-0000000002: cannot place the record at topic 'in' "
                                              r"partition 0 offset 0 on topic 'no-such-topic-here', which its topic "
                                              r"extractor picked: "):
        _placed_by_column_plan(builder, {}, [("KSTREAM-SINK-0000000002", "k", "V")],
                               {"bootstrap.servers": kafka_bootstrap})


def test_a_partition_outside_the_topic_after_column_expressions_stops_the_task_naming_the_sink(spark):
    builder = StreamsBuilder()
    builder.stream("in").map_values(F.upper(F.col("value"))) \
        .to("out", Produced.stream_partitioner(lambda topic, key, value, num_partitions: 7))
    with pytest.raises(ProcessingError, match=r"^sink KSTREAM-SINK-0000000002: the stream partitioner chose partition "
                                              r"7 of topic 'out', which has 2 partitions \(record at topic 'in' "
                                              r"partition 0 offset 0\)$"):
        _placed_by_column_plan(builder, {"out": 2}, [("KSTREAM-SINK-0000000002", "k", "V")])


# -- foreign-key joins ----------------------------------------------------------------------------
def _fk_tasks(table_joined):
    builder = StreamsBuilder()
    accounts = builder.table("accounts", Materialized.as_("accounts-store").with_caching_disabled())
    users = builder.table("users", Materialized.as_("users-store").with_caching_disabled())
    accounts.join(users, lambda value: value.split(":")[0], lambda account, country: f"{account}@{country}",
                  table_joined).to_stream().to("out")
    tasks = Tasks(builder)
    for program in tasks.programs:
        program.sink_partition_counts = dict.fromkeys(program.placed_topics, 4)
    return tasks


def test_fk_answers_go_back_to_the_subscribers_partition_unless_table_joined_says():
    tasks = _fk_tasks(None)
    left, right = tasks.programs
    assert left.placed_topics == [] and right.placed_topics == ["app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000012-topic"]
    _, users = right.run_key_group([(RecordContext("users", 1, 0, 1, position=0), b"u1", b"fr")], None)
    sent, _ = left.run_key_group([(RecordContext("accounts", 3, 0, 2, position=0), b"a1", b"u1:5")], None)
    (registration,) = [topic for topic in sent.topic if "REGISTRATION" in topic]
    assert sent.partition_column() == [None]  # subscriptions: Kafka's default partitioner (by foreign key)
    answered, _ = right.run_key_group([(RecordContext(registration, 0, 0, 2, position=0), sent.key[0],
                                        sent.value[0])], users)
    assert answered.key == [b"a1"] and answered.partition_column() == [3]  # the left record's partition


def test_table_joined_partitioners_see_the_key_object_and_a_null_value():
    seen = []

    def left(topic, key, value, n):
        seen.append(("left", key, value, n))
        return 2

    def other(topic, key, value, n):
        seen.append(("other", key, value, n))
        return {1}

    class Other:
        def partitions(self, topic, key, value, n):
            return other(topic, key, value, n)

    tasks = _fk_tasks(TableJoined.with_(left, Other()))
    tasks.put("users", "u1", "fr")
    tasks.put("accounts", "a1", "u1:5")
    tasks.settle()
    assert tasks.table("out") == {"a1": "u1:5@fr"}
    assert ("other", "u1", None, 4) in seen and ("left", "a1", None, 4) in seen


def test_a_table_joined_partitioner_with_several_partitions_stops_the_task():
    tasks = _fk_tasks(TableJoined.with_(None, lambda topic, key, value, n: None).with_other_partitioner(
        type("Two", (), {"partitions": lambda self, t, k, v, n: {0, 1}})()))
    tasks.put("accounts", "a1", "u1:5")
    with pytest.raises(ProcessingError, match=r"the partitioner of a foreign-key join must give one partition or "
                                              r"None, gave \[0, 1\]"):
        tasks.settle()


def test_a_windowed_key_with_no_partitioner_goes_where_its_inner_key_would():
    builder = StreamsBuilder()
    serde = WindowedSerde(Serdes.String(), 10)
    builder.stream("in").map(lambda key, value: (Windowed(key, Window(int(value), int(value) + 10)), value)) \
        .to("out", Produced.with_(serde, Serdes.String()))
    program = compile_topology(builder, "app").program(0)
    program.sink_partition_counts = {"out": 5}
    out = program.process_arrow_batch(pa.RecordBatch.from_pydict({
        "key": [b"user7"] * 3, "value": [b"0", b"10", b"20"], "topic": ["in"] * 3, "partition": [0] * 3,
        "offset": [0, 1, 2], "event_time": [1] * 3})).to_pydict()
    assert out["partition"] == [default_partition(b"user7", 5)] * 3  # one partition for all the key's windows


def test_a_low_level_sink_takes_a_partitioner():
    topology = Topology().add_source("src", "in").add_sink("snk", "out", "src", partitioner=ByValueLength())
    program = compile_topology(topology, "app").program(0)
    program.sink_partition_counts = {"out": 3}
    assert _run(program, ["ab", "abcd"]) == [("ab", 2), ("abcd", 1)]


class ByValueLength:
    def partition(self, topic, key, value, num_partitions):
        return len(value) % num_partitions
