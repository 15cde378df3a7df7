"""Versioned tables, pure logic: the history of a key (dagster_kstreams.processors.version_history)
against a small model of Kafka Streams 4.3.1's ``RocksDBVersionedStore`` that never forgets a
version, and a versioned table with a stream-table join through the compiled program, against a
model of ``KTableSource`` and ``KStreamKTableJoinProcessor`` over that store, whatever the
micro-batches. The same rules are compared with Kafka Streams itself in
tests/test_equivalence_versioned.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors import version_history
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import Joined, Materialized, Stores, StreamsBuilder, Suppressed, TopologyException
from dagster_kstreams.topology.serdes import Serdes
from dagster_kstreams.topology.windows import TimeWindows

from versioned_model import RETENTION, ModelStore, java_string, run_batches, table_and_stream_records


# -- one key's history -----------------------------------------------------------------------
_operations = st.lists(st.tuples(st.sampled_from(["put", "get"]), st.integers(0, 600),
                                 st.sampled_from(["a", "b", None])), max_size=60)


@settings(max_examples=300, deadline=None)
@given(_operations)
def test_a_pruned_history_answers_as_the_store_that_keeps_every_version(operations):
    model = ModelStore(RETENTION)
    versions: list = []
    store_time = version_history.NO_TIME
    for operation, timestamp, value in operations:
        if operation == "get":
            assert version_history.as_of(versions, timestamp, store_time, RETENTION) == model.as_of("k", timestamp)
            continue
        outcome = model.put("k", value, timestamp)
        if version_history.expired(timestamp, store_time, RETENTION):
            assert outcome == "expired"
            continue
        store_time = max(store_time, timestamp)
        latest = version_history.put(versions, timestamp, value)
        version_history.prune(versions, store_time, RETENTION)
        assert outcome == ("latest" if latest else "history")
        assert versions[-1][1] == model.latest("k")
        # pruned: nothing kept whose validity ended at or before the history's horizon
        assert all(later[0] > store_time - RETENTION for later in versions[1:])


def test_history_examples():
    versions: list = []
    assert version_history.put(versions, 10, "v10")
    assert version_history.put(versions, 20, "v20")
    assert not version_history.put(versions, 15, "v15")  # out of order: history only
    assert version_history.put(versions, 20, "v20b")  # same timestamp: replaced, still the latest
    assert [version_history.as_of(versions, t, 20, RETENTION) for t in (5, 10, 14, 15, 19, 20, 99)] == \
        [None, "v10", "v10", "v15", "v15", "v20b", "v20b"]
    assert version_history.put(versions, 30, None)  # a tombstone is a version too
    assert version_history.as_of(versions, 31, 30, RETENTION) is None
    # past the history: only a latest version valid at that time is seen
    assert version_history.as_of([[10, "a"]], 5, 300, RETENTION) is None
    assert version_history.as_of([[10, "a"]], 150, 300, RETENTION) == "a"
    assert version_history.as_of([[10, "a"], [250, "b"]], 150, 300, RETENTION) is None
    versions = [[10, "a"], [20, "b"], [200, "c"], [260, "d"]]
    version_history.prune(versions, 300, RETENTION)
    assert versions == [[200, "c"], [260, "d"]]  # a and b: valid until 20 and 200, at or before 300 - 100


# -- a versioned table and a stream-table join through the program ---------------------------


def _program():
    builder = StreamsBuilder()
    table = builder.table("t", Materialized.as_(Stores.persistent_versioned_key_value_store("vs", RETENTION)))
    table.to_stream().to("changes")
    stream = builder.stream("s")
    stream.join(table, lambda value, table_value: f"{value}@{java_string(table_value)}").to("inner")
    stream.left_join(table, lambda value, table_value: f"{value}@{java_string(table_value)}").to("left")
    return compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _expected(records) -> list[tuple]:
    """Kafka Streams: every table record not expired (null key: skipped) goes to ``changes``, out of
    order or not; a stream record (null value: skipped) joins the version valid at its timestamp."""
    store = ModelStore(RETENTION)
    out = []
    for topic, key, value, timestamp in records:
        if topic == "t":
            if key is not None and store.put(key, value, timestamp) != "expired":
                out.append(("changes", key, value, timestamp))
        elif value is not None and key is not None:
            table_value = store.as_of(key, timestamp)
            if table_value is not None:
                out.append(("inner", key, f"{value}@{table_value}", timestamp))
            out.append(("left", key, f"{value}@{java_string(table_value)}", timestamp))
    return out


def _run(records, cuts, program=None) -> list[tuple]:
    return run_batches(program or _program(), records, cuts)


@settings(max_examples=150, deadline=None)
@given(table_and_stream_records, st.lists(st.integers(0, 40), max_size=3))
def test_the_table_and_its_joins_forward_what_kafka_streams_forwards_whatever_the_batches(records, cuts):
    records = [(topic, key, None if value is None else f"{value}{i}", timestamp)
               for i, (topic, key, value, timestamp) in enumerate(records)]
    assert _run(records, [cut for cut in cuts if cut < len(records)]) == _expected(records)


def test_out_of_order_and_expired_updates():
    records = [("t", "a", "v10", 10), ("t", "a", "v300", 300), ("t", "a", "v250", 250), ("t", "a", "v150", 150),
               ("s", "a", "o1", 260), ("s", "a", "o2", 249), ("s", "a", "o3", 199), ("s", "a", "o4", 301)]
    assert _run(records, [3]) == [
        ("changes", "a", "v10", 10), ("changes", "a", "v300", 300),
        ("changes", "a", "v250", 250),  # out of order: forwarded (Kafka Streams marks it not latest)
        # v150 is older than 300 - 100: neither stored nor forwarded
        ("inner", "a", "o1@v250", 260), ("left", "a", "o1@v250", 260),
        ("inner", "a", "o2@v10", 249), ("left", "a", "o2@v10", 249),
        ("left", "a", "o3@null", 199),  # past the history, and the latest is newer
        ("inner", "a", "o4@v300", 301), ("left", "a", "o4@v300", 301),
    ]


# -- the DSL ---------------------------------------------------------------------------------
def _versioned(name="vs"):
    return Materialized.as_(Stores.persistent_versioned_key_value_store(name, timedelta(seconds=5)))


def test_a_versioned_store_is_never_cached_and_keeps_its_history_retention():
    builder = StreamsBuilder()
    builder.table("t", _versioned().with_caching_enabled())
    builder.stream("s").to_table(_versioned("vs2"))
    stores = builder.build().state_stores
    assert [(stores[name].caching, stores[name].history_retention_ms) for name in ("vs", "vs2")] == \
        [(False, 5000), (False, 5000)]


def test_a_versioned_store_materializes_tables_their_steps_joins_and_aggregations_but_not_windowed_ones():
    builder = StreamsBuilder()
    table = builder.table("t")
    table.filter(lambda k, v: True, _versioned("f"))
    table.map_values(lambda v: v, _versioned("m"))
    builder.stream("s").group_by_key().count(_versioned("c"))
    table.join(builder.table("u"), lambda a, b: a, _versioned("j"))
    table.group_by(lambda k, v: (v, v)).count(_versioned("g"))
    with pytest.raises(TopologyException, match="count: a versioned store"):
        builder.stream("s").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=1))) \
            .count(_versioned("w"))


# -- a filter into a versioned store -----------------------------------------------------------
def _versioned_filter_program():
    builder = StreamsBuilder()
    table = builder.table("t", Materialized.as_("plain").with_caching_disabled())
    filtered = table.filter(lambda k, v: not v.startswith("x"), _versioned("vf"))
    filtered.to_stream().to("changes")
    builder.stream("s").join(filtered, lambda value, table_value: f"{value}@{table_value}").to("joined")
    return compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _expected_of_versioned_filter(records) -> list[tuple]:
    """``KTableFilter`` over a plain table (which sends old values: it has a store) into a versioned
    store: an update whose new value and old value (the store's latest) are both null is dropped;
    any other is put at its timestamp, and forwarded unless the put is expired. A stream-table join
    reads the version valid at the stream record's timestamp."""
    store, out = ModelStore(5_000), []
    for topic, key, value, timestamp in records:
        if key is None:
            continue
        if topic == "t":
            new = value if value is not None and not value.startswith("x") else None
            if new is None and store.latest(key) is None:
                continue
            if store.put(key, new, timestamp) != "expired":
                out.append(("changes", key, new))
        elif value is not None:
            table_value = store.as_of(key, timestamp)
            if table_value is not None:
                out.append(("joined", key, f"{value}@{table_value}"))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(st.just("t"), st.sampled_from(["a", "b", None]), st.sampled_from(["x", "y", None]),
              st.integers(0, 20_000)),
    st.tuples(st.just("s"), st.sampled_from(["a", "b"]), st.sampled_from(["o", None]), st.integers(0, 20_000)),
), max_size=40), st.lists(st.integers(0, 40), max_size=3))
def test_a_filter_into_a_versioned_store_forwards_what_kafka_streams_forwards_whatever_the_batches(records, cuts):
    records = [(topic, key, None if value is None else f"{value}{i}", timestamp)
               for i, (topic, key, value, timestamp) in enumerate(records)]
    out = _run(records, [cut for cut in cuts if cut < len(records)], _versioned_filter_program())
    assert [row[:3] for row in out] == _expected_of_versioned_filter(records)


def test_a_join_grace_period_needs_a_versioned_table_with_enough_history():
    builder = StreamsBuilder()
    grace = Joined.as_("j").with_grace_period(timedelta(seconds=1))
    with pytest.raises(TopologyException, match="KTable must be versioned to use a grace period in a stream table join.$"):
        builder.stream("s").join(builder.table("plain"), lambda v, t: v, grace)
    with pytest.raises(TopologyException, match="History retention must be at least grace period."):
        builder.stream("s").join(builder.table("t", _versioned()), lambda v, t: v,
                                 grace.with_grace_period(timedelta(seconds=6)))


def test_the_runner_refuses_what_would_treat_an_out_of_order_update_as_the_latest():
    builder = StreamsBuilder()
    table = builder.table("t", _versioned())
    table.filter(lambda k, v: v != "x").map_values(lambda v: v + "!").to_stream().to("out")  # runs
    table.group_by(lambda k, v: (v, k)).count()
    table.join(builder.table("u"), lambda a, b: a)
    table.filter(lambda k, v: True, Materialized.as_("filtered")).group_by(lambda k, v: (v, k)).count()
    compile_topology(builder.build(), "app").program(0)
    builder = StreamsBuilder()
    table = builder.table("t", _versioned())
    table.join(builder.table("u"), lambda value: value, lambda a, b: a)  # a foreign-key join: skips them
    compile_topology(builder.build(), "app").program(0)
    builder = StreamsBuilder()
    table = builder.table("t", _versioned())
    table.suppress(Suppressed.until_time_limit(timedelta(seconds=1), Suppressed.BufferConfig.unbounded()))
    with pytest.raises(UnsupportedTopologyError, match="versioned table KTABLE-SOURCE-0000000001"):
        compile_topology(builder.build(), "app").program(0)


def _consumers_program():
    builder = StreamsBuilder()
    table = builder.table("t", _versioned())
    limits = builder.table("l", Materialized.as_("limits").with_caching_disabled())
    table.outer_join(limits, lambda a, b: f"{a}&{b}").to_stream().to("joined")
    table.group_by(lambda k, v: (v[0], v)).aggregate(lambda: "", lambda k, v, agg: agg + "+" + v,
                                                    lambda k, v, agg: agg + "-" + v,
                                                    Materialized.as_("history").with_caching_disabled())
    kept = table.filter(lambda k, v: v != "x3", Materialized.as_("kept").with_caching_disabled())
    kept.to_stream().to("kept")
    limits.left_join(kept, lambda a, b: f"{a}<{b}").to_stream().to("read")
    return compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def test_out_of_order_updates_downstream_as_kafka_streams_marks_them_not_latest():
    """A join and a re-grouping skip an out-of-order update (``useVersionedSemantics`` and
    ``Change.isLatest``); a filter with a plain store takes it as the key's latest value, and so
    does what reads that store; an expired update reaches nobody."""
    records = [("t", "a", "x1", 10_000), ("l", "a", "l1", 11_000), ("t", "a", "x2", 20_000), ("t", "a", "y4", 15_000),
               ("t", "a", "x5", 2_000), ("t", "a", None, 16_000), ("l", "a", "l2", 21_000), ("t", "a", "x3", 22_000)]
    out = [row[:3] for row in _run(records, [], _consumers_program())]
    regrouped = "app-history-repartition"
    assert out == [
        ("joined", "a", "x1&None"), (regrouped, "x", "x1\x01"), ("kept", "a", "x1"),
        ("joined", "a", "x1&l1"), ("read", "a", "l1<x1"),
        ("joined", "a", "x2&l1"), (regrouped, "x", "\x04x2x1\x02"), ("kept", "a", "x2"), ("read", "a", "l1<x2"),
        ("kept", "a", "y4"), ("read", "a", "l1<y4"),  # out of order: the kept store's latest
        # x5: older than the history, dropped
        ("kept", "a", None), ("read", "a", "l1<None"),  # an out-of-order tombstone deletes it
        ("joined", "a", "x2&l2"), ("read", "a", "l2<None"),
        ("joined", "a", "x3&l2"), (regrouped, "x", "\x04x3x2\x02"), ("kept", "a", None), ("read", "a", "l2<None"),
    ]




def test_a_table_step_after_a_materialized_one_is_defined_whatever_its_store():
    # the step asks its parent's store whether it is versioned: a plain one answers no
    for store in (Materialized.as_("plain"), Materialized.as_(Stores.persistent_versioned_key_value_store(
            "versioned", timedelta(minutes=1)))):
        builder = StreamsBuilder()
        kept = builder.table("t").filter(lambda key, value: True, store)
        kept.filter(lambda key, value: True).map_values(lambda value: value).to_stream().to("o")
        assert "KTABLE-FILTER-0000000004" in str(builder.build().describe())
