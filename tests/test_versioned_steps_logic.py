"""A table-table join's or an aggregation's table filtered or mapped into a versioned store, pure logic:
the compiled program against a model of Kafka Streams 4.3.1's processors (``KTableKTable*Join`` stamping
with the larger of both rows' times, ``KStreamAggregate`` and ``KTableAggregate`` with the larger of the
record's and the previous aggregate's, then ``KTableFilter``/``KTableMapValues`` putting the update into
the versioned store at that stamp), whatever the micro-batches (a windowed table's steps:
test_versioned_windowed_steps_logic.py). The same rules are compared with Kafka Streams itself in
tests/test_equivalence_versioned_consumers.py."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from equivalence_io import StampValues, java_string
from dagster_kstreams.processors.changes import Change, ChangedSerde
from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import BufferConfig, Materialized, StreamsBuilder, Suppressed
from dagster_kstreams.topology.serdes import Serdes
from test_versioned_join_store_logic import RETENTION_MS, _compile, _expected_join, _run, _versioned
from test_versioned_tables_logic import ModelStore


def _plain(name: str) -> Materialized:
    return Materialized.as_(name).with_caching_disabled()


# -- a join's table mapped into a versioned store ------------------------------------------------
def _join_step_program():
    builder = StreamsBuilder()
    a, b = builder.table("a", _plain("a-store")), builder.table("b", _plain("b-store"))
    joined = a.left_join(b, lambda x, y: f"{x}&{java_string(y)}")
    steps = joined.map_values(lambda value: value.upper(), _versioned("mapped"))
    steps.to_stream().process_values(StampValues).to("changes")
    builder.stream("s").join(steps, lambda value, row: f"{value}@{row}").process_values(StampValues).to("read")
    return _compile(builder)


def _expected_join_step(records) -> list[tuple]:
    """Kafka Streams: the left join stamps its update with the larger of its own and the other row's time
    (``KTableKTableLeftJoin``); ``KTableMapValues`` puts the mapped value at that stamp into its versioned
    store and forwards it unless the put is expired (out of order too); a stream record reads the mapped
    table as of its own timestamp: the left join's model with the mapper after its joiner."""
    return _expected_join("left_join", records, joined=lambda left, right: f"{left}&{java_string(right)}".upper())


_records = st.lists(st.tuples(st.sampled_from(["a", "b", "s"]), st.sampled_from(["k", "m", None]),
                              st.sampled_from(["x", None]), st.integers(0, 400)), max_size=40)


@settings(max_examples=100, deadline=None)
@given(_records, st.lists(st.integers(0, 40), max_size=3))
def test_a_join_mapped_into_a_versioned_store_puts_at_kafka_streams_stamps_whatever_the_batches(records, cuts):
    records = [(topic, key, None if value is None else f"{topic}{i}", timestamp)
               for i, (topic, key, value, timestamp) in enumerate(records)]
    assert _run(_join_step_program(), records, cuts) == _expected_join_step(records)


# -- an aggregation's table filtered into a versioned store ----------------------------------------
def _aggregate_step_program():
    builder = StreamsBuilder()
    tails = builder.stream("s").group_by_key().reduce(lambda aggregate, value: value, _plain("tails"))
    kept = tails.filter(lambda key, value: not value.startswith("x"), _versioned("kept"))
    kept.to_stream().process_values(StampValues).to("changes")
    return _compile(builder)


def _expected_aggregate_step(records) -> list[tuple]:
    """``KStreamReduce``: the update stamped with the larger of the record's and the aggregate's time;
    ``KTableFilter`` sends old values (its table is materialized), its store's latest: an update whose
    new value and that are both null is dropped; any other is put at the stamp, and forwarded unless
    expired."""
    aggregates: dict = {}
    store, out = ModelStore(RETENTION_MS), []
    for _topic, key, value, timestamp in records:
        if key is None or value is None:
            continue
        stamp = max(timestamp, aggregates[key][1]) if key in aggregates else timestamp
        aggregates[key] = (value, stamp)
        kept = None if value.startswith("x") else value
        if kept is None and store.latest(key) is None:
            continue
        if store.put(key, kept, stamp) != "expired":
            out.append(("changes", key, f"{java_string(kept)}|t{stamp}"))
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.just("s"), st.sampled_from(["k", "m", None]), st.sampled_from(["x", "y", None]),
                          st.integers(0, 400)), max_size=40), st.lists(st.integers(0, 40), max_size=3))
def test_an_aggregate_filtered_into_a_versioned_store_puts_at_kafka_streams_stamps_whatever_the_batches(
        records, cuts):
    records = [(topic, key, None if value is None else f"{value}{i}", timestamp)
               for i, (topic, key, value, timestamp) in enumerate(records)]
    assert _run(_aggregate_step_program(), records, cuts) == _expected_aggregate_step(records)


def test_an_aggregate_s_update_is_stamped_with_its_later_time_and_dropped_when_older_than_the_history():
    records = [("s", "k", "y1", 300), ("s", "k", "y2", 100),  # stamped 300: replaces the version at 300
               ("s", "m", "y3", 420),  # the store's observed time: 420
               ("s", "k", "x4", 200)]  # stamped 300 < 420 - 100: dropped
    assert _run(_aggregate_step_program(), records, []) == [
        ("changes", "k", "y1|t300"), ("changes", "k", "y2|t300"), ("changes", "m", "y3|t420")]


def test_a_regrouped_aggregate_in_a_plain_store_mapped_into_a_versioned_one_puts_at_kafka_streams_stamps():
    """``KTableAggregate`` over a plain store stamps with the larger of the record's and the aggregate's
    time (whenever the group has one); ``KTableMapValues`` puts the mapped update at that stamp."""
    builder = StreamsBuilder()
    sums = builder.table("t").group_by(lambda key, value: (value[0], value)).aggregate(
        lambda: "", lambda key, value, agg: f"{agg}+{value}", lambda key, value, agg: f"{agg}-{value}",
        _plain("sums"))
    sums.map_values(lambda agg: agg[-6:], _versioned("tails")).to_stream().process_values(StampValues).to("tails")
    program = compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(1)
    changes = [("x", "x1", None, 200), ("x", "x2", None, 50), ("y", "y1", None, 400), ("z", "z1", None, 120),
               ("x", None, "x2", 310), ("z", "z2", None, 330)]
    serde = ChangedSerde(Serdes.String())
    contexts = [(RecordContext("app-sums-repartition", 0, offset,
                               timestamp=timestamp, position=offset, raw_key=group.encode()),
                 group.encode(), serde.serialize(Change(new, old)))
                for offset, (group, new, old, timestamp) in enumerate(changes)]
    out, _ = program.run_task_batch(contexts, None)
    assert [(key.decode(), value.decode()) for key, value in zip(out.key, out.value)] == [
        ("x", "+x1|t200"), ("x", "+x1+x2|t200"),  # stamped with the aggregate's later time
        ("y", "+y1|t400"),
        # z1 at 120 < 400 - 100: its aggregate stored, its put into the step's store dropped
        ("x", "+x2-x2|t310"),
        ("z", "+z1+z2|t330"),  # the aggregate counted z1
    ]


# -- a cogroup's table mapped into a versioned store -----------------------------------------------
def _cogroup_step_program():
    builder = StreamsBuilder()
    cogrouped = builder.stream("s").group_by_key().cogroup(lambda key, value, agg: f"{agg}+{value}") \
        .cogroup(builder.stream("r").group_by_key(), lambda key, value, agg: f"{agg}-{value}")
    logs = cogrouped.aggregate(lambda: "", _plain("logs"))
    logs.map_values(lambda agg: agg[-6:], _versioned("tails")).to_stream().process_values(StampValues).to("tails")
    return _compile(builder)


def _expected_cogroup_step(records) -> list[tuple]:
    """Kafka Streams' cogroup: one ``KStreamAggregate`` per cogrouped stream on one store, each stamping
    its update with the larger of the record's and the aggregate's time; ``KTableMapValues`` puts the
    mapped update at that stamp into its versioned store, forwarded unless expired."""
    aggregates: dict = {}
    store, out = ModelStore(RETENTION_MS), []
    for topic, key, value, timestamp in records:
        if key is None or value is None:
            continue
        agg, stamp = aggregates.get(key, ("", timestamp))
        agg, stamp = f"{agg}{'+' if topic == 's' else '-'}{value}", max(stamp, timestamp)
        aggregates[key] = (agg, stamp)
        if store.put(key, agg[-6:], stamp) != "expired":
            out.append(("tails", key, f"{agg[-6:]}|t{stamp}"))
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["s", "r"]), st.sampled_from(["k", "m", None]), st.sampled_from(["x", None]),
                          st.integers(0, 400)), max_size=40), st.lists(st.integers(0, 40), max_size=3))
def test_a_cogroup_s_table_mapped_into_a_versioned_store_puts_at_kafka_streams_stamps_whatever_the_batches(
        records, cuts):
    records = [(topic, key, None if value is None else f"{topic}{i}", timestamp)
               for i, (topic, key, value, timestamp) in enumerate(records)]
    assert _run(_cogroup_step_program(), records, cuts) == _expected_cogroup_step(records)


# -- a suppressed table filtered into a versioned store --------------------------------------------
SUPPRESS_MS = 50


def _suppressed_step_program():
    builder = StreamsBuilder()
    builder.table("t", _plain("t-store")) \
        .suppress(Suppressed.until_time_limit(timedelta(milliseconds=SUPPRESS_MS), BufferConfig.unbounded())) \
        .filter(lambda key, value: not value.endswith("0"), _versioned("kept")) \
        .to_stream().process_values(StampValues).to("kept")
    return _compile(builder)


def _expected_suppressed_step(records) -> list[tuple]:
    """``KTableSuppressProcessorSupplier``: its own stream time (of the updates reaching it); a key
    buffered at its first update's time keeps that place and its latest update; evicted, in buffer time
    then key order, once that time is at or before stream time minus the limit, with the latest update's
    timestamp. ``KTableFilter`` puts it at that timestamp into its versioned store (a tombstone over none
    dropped), forwarded unless expired."""
    buffer: dict = {}  # key -> (buffer time, value, timestamp)
    stream_time = -1
    store, out = ModelStore(RETENTION_MS), []
    for _topic, key, value, timestamp in records:
        if key is None:
            continue
        stream_time = max(stream_time, timestamp)
        buffer[key] = (buffer[key][0] if key in buffer else timestamp, value, timestamp)
        for evicted in sorted(buffer, key=lambda k: (buffer[k][0], k.encode())):
            buffered_at, new, stamp = buffer[evicted]
            if buffered_at > stream_time - SUPPRESS_MS:
                break
            del buffer[evicted]
            kept = None if new is None or new.endswith("0") else new
            if kept is None and store.latest(evicted) is None:
                continue
            if store.put(evicted, kept, stamp) != "expired":
                out.append(("kept", evicted, f"{java_string(kept)}|t{stamp}"))
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.just("t"), st.sampled_from(["k", "m", "n", None]), st.sampled_from(["x", None]),
                          st.integers(0, 400)), max_size=40), st.lists(st.integers(0, 40), max_size=3))
def test_a_suppressed_table_filtered_into_a_versioned_store_puts_at_kafka_streams_stamps_whatever_the_batches(
        records, cuts):
    records = [(topic, key, None if value is None else f"{topic}{i}", timestamp)
               for i, (topic, key, value, timestamp) in enumerate(records)]
    assert _run(_suppressed_step_program(), records, cuts) == _expected_suppressed_step(records)


def test_a_suppressed_update_is_put_at_its_latest_time_out_of_order_or_dropped():
    records = [("t", "k", "a1", 300), ("t", "k", "a2", 200),  # buffered at 300, its latest a2 at 200
               ("t", "m", "b3", 360),  # evicts k: a2 put at 200
               ("t", "k", "a4", 330), ("t", "m", "b5", 150),  # m buffered at 360, its latest b5 at 150
               ("t", "n", "c6", 420),  # evicts k (a4 at 330, the latest), then m: b5 at 150 < 330 - 100, dropped
               ("t", "k", "a7", 290),  # evicted at once: at 290, older than a4, history (not latest)
               ("t", "n", "c8", 480)]  # evicts n: c8 at 480
    assert _run(_suppressed_step_program(), records, []) == _expected_suppressed_step(records) == [
        ("kept", "k", "a2|t200"), ("kept", "k", "a4|t330"), ("kept", "k", "a7|t290"), ("kept", "n", "c8|t480")]


# -- what runs ----------------------------------------------------------------------------------
# A windowed table's steps (a windowed cogroup's, suppressed or not) run with a windowed key serde; they,
# and what stays refused about them, are tested in tests/test_versioned_windowed_steps_logic.py.


def test_a_foreign_key_join_s_result_into_a_versioned_store_runs():
    """(its answers' stamps are compared with Kafka Streams in tests/test_equivalence_versioned_consumers.py)"""
    builder = StreamsBuilder()
    left, right = builder.table("l"), builder.table("r")
    joined = left.join(right, lambda value: value, lambda value, other: value + other)
    joined.filter(lambda key, value: True, _versioned("f"))
    compile_topology(builder.build(), "app").program(0)
