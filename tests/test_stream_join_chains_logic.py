"""Several stream-stream joins in one sub-topology (a chain, and one stream joined with two
others), and joins fed by a table's to_stream, a table-table join's and by a stream-table join, against a brute-force
model of Kafka Streams' joins, one model per join: each join keeps its own stores, store times and
tracker (``KStreamImplJoin``). The broker-backed comparison is test_equivalence_stream_joins.py (its
chain output, and its joins fed by tables)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import Materialized, StreamsBuilder
from dagster_kstreams.topology.windows import JoinWindows
from stream_join_model import KsJoin, run_task, table_rows_and_clicks, table_table_update


def _millis(seconds):
    return st.one_of(st.integers(0, seconds * 1000), st.integers(0, seconds).map(lambda s: s * 1000))


_three_streams = st.lists(
    st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from(["x", "y", "z"]),
              st.one_of(st.none(), st.just("v")),
              st.one_of(st.integers(100_000, 130_000), st.integers(100, 130).map(lambda t: t * 1000))),
    max_size=30,
).map(lambda rows: [(k, topic, None if v is None else f"{topic}{i}", t) for i, (k, topic, v, t) in enumerate(rows)])
_JOINS = st.sampled_from(["join", "left_join", "outer_join"])


def _chain_outputs(program, records):
    ours, _ = run_task(program, records)
    return [(topic, None if k is None else k.decode(), v.decode()) for topic, k, v in ours if topic != DROPPED_LATE_TOPIC]


@settings(max_examples=100, deadline=None)
@given(_three_streams, _millis(6), _millis(6), _millis(4), _JOINS, _millis(6), _millis(6), _millis(4), _JOINS)
def test_two_chained_joins_in_one_subtopology_emit_like_kafka_streams(records, before1, after1, grace1, join1,
                                                                      before2, after2, grace2, join2):
    # x.join1(y).join2(z): the first join's output is the second one's left side; each join keeps
    # its own stores, store times and tracker (KStreamImplJoin: stores and TimeTracker per join).
    builder = StreamsBuilder()
    first = getattr(builder.stream("x"), join1)(builder.stream("y"), lambda l, r: f"{l}+{r}",
                                               JoinWindows(before1, after1, grace1))
    getattr(first, join2)(builder.stream("z"), lambda l, r: f"({l})*{r}", JoinWindows(before2, after2, grace2)).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    assert program.task_grouped
    model1 = KsJoin(before1, after1, grace1, join1.replace("_join", ""))
    model2 = KsJoin(before2, after2, grace2, join2.replace("_join", ""), lambda l, r: f"({l})*{r}")
    expected = []
    for key, topic, value, ts in records:
        if topic == "z":
            expected += model2.process(key, "right", value, ts)
        else:  # depth first: each result of the first join goes through the second one at once
            for joined_key, joined, joined_ts in model1.process(key, "left" if topic == "x" else "right", value, ts):
                expected += model2.process(joined_key, "left", joined, joined_ts)
    assert _chain_outputs(program, records) == [("out", key, value) for key, value, _ in expected]


@settings(max_examples=60, deadline=None)
@given(_three_streams, _millis(6), _millis(6), _millis(4), _JOINS, _JOINS)
def test_one_stream_joined_with_two_others_emits_like_kafka_streams(records, before, after, grace, join1, join2):
    # x.join1(y) -> out1 and x.join2(z) -> out2: x's record reaches the first join, then the second.
    builder = StreamsBuilder()
    x = builder.stream("x")
    windows = JoinWindows(before, after, grace)
    getattr(x, join1)(builder.stream("y"), lambda l, r: f"{l}+{r}", windows).to("out1")
    getattr(x, join2)(builder.stream("z"), lambda l, r: f"{l}+{r}", JoinWindows(after, before, grace)).to("out2")
    program = compile_topology(builder.build(), "app").program(0)
    model1 = KsJoin(before, after, grace, join1.replace("_join", ""))
    model2 = KsJoin(after, before, grace, join2.replace("_join", ""))
    expected = []
    for key, topic, value, ts in records:
        if topic in ("x", "y"):
            expected += [("out1", k, v) for k, v, _ in model1.process(key, "left" if topic == "x" else "right", value, ts)]
        if topic in ("x", "z"):
            expected += [("out2", k, v) for k, v, _ in model2.process(key, "left" if topic == "x" else "right", value, ts)]
    assert _chain_outputs(program, records) == expected


_three_inputs = st.lists(
    st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from(["t", "s", "p"]),
              st.one_of(st.none(), st.just("v"), st.just("v0")),
              st.one_of(st.integers(100_000, 130_000), st.integers(100, 130).map(lambda t: t * 1000))),
    max_size=30,
).map(lambda rows: [(k, topic, None if v is None else f"{topic}{i}{v}", t) for i, (k, topic, v, t) in enumerate(rows)])


@settings(max_examples=100, deadline=None)
@given(_three_inputs, _millis(6), _millis(6), _millis(4), _JOINS, st.booleans(), st.integers(1, 3))
def test_joins_fed_by_a_table_and_a_stream_table_join_emit_like_kafka_streams(records, before, after, grace, join,
                                                                              to_table, batches):
    # p (a table, or a stream made a table) filtered, mapped and turned back into a stream, joined
    # with s left-joined with the table t: both sides forward under the source key, so the join's
    # state stays in the source key's group (KTableSource drops null keys, materialized or not).
    builder = StreamsBuilder()
    table = builder.table("t", Materialized.as_("t-store").with_caching_disabled())
    enriched = builder.stream("s").left_join(table, lambda x, y: f"{x}<{y}>")
    profiles = builder.stream("p").to_table() if to_table else builder.table("p")
    fed = profiles.filter(lambda k, v: not v.endswith("0")).map_values(lambda v: v.upper()).to_stream()
    getattr(fed, join)(enriched, lambda l, r: f"{l}+{r}", JoinWindows(before, after, grace)).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    assert program.task_grouped
    model = KsJoin(before, after, grace, join.replace("_join", ""))
    rows, expected = {}, []
    for key, topic, value, ts in records:
        if topic == "t" and key is not None:
            rows[key] = value
        elif topic == "s" and value is not None:  # a left join: a null key is joined with null
            expected += model.process(key, "right", f"{value}<{None if key is None else rows.get(key)}>", ts)
        elif topic == "p" and key is not None:  # a failing value is a tombstone, skipped by the join
            kept = None if value is None or value.endswith("0") else value.upper()
            expected += model.process(key, "left", kept, ts)
    # in 1 to 3 micro-batches: the table's rows and the join's buffers carried in the task's state
    ours, _ = run_task(program, records, batches)
    assert [(topic, None if k is None else k.decode(), v.decode()) for topic, k, v in ours
            if topic != DROPPED_LATE_TOPIC] == [("out", key, value) for key, value, _ in expected]


@settings(max_examples=150, deadline=None)
@given(table_rows_and_clicks, _millis(6), _millis(6), _millis(4), st.sampled_from(["inner", "left", "outer"]),
       _JOINS, st.integers(1, 3))
def test_a_join_fed_by_a_table_table_join_pairs_its_updates_by_both_rows_timestamps(records, before, after, grace,
                                                                                   table_join, join, batches):
    # t1 joined with t2 (uncached tables), the joined table's updates joined with c. Kafka Streams
    # stamps a table-table join's update with the larger of the update's and the other row's
    # timestamps, and the stream-stream join pairs it by that stamp.
    builder = StreamsBuilder()
    t1 = builder.table("t1", Materialized.as_("t1-store").with_caching_disabled())
    t2 = builder.table("t2", Materialized.as_("t2-store").with_caching_disabled())
    joined = getattr(t1, "join" if table_join == "inner" else f"{table_join}_join")(t2, lambda x, y: f"{x}&{y}")
    getattr(joined.to_stream(), join)(builder.stream("c"), lambda l, r: f"{l}+{r}",
                                      JoinWindows(before, after, grace)).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    assert program.task_grouped
    model = KsJoin(before, after, grace, join.replace("_join", ""))
    rows, expected = {"t1": {}, "t2": {}}, []
    for key, topic, value, ts in records:
        if topic == "c":
            expected += model.process(key, "right", value, ts)
            continue
        if key is None:
            continue
        result = table_table_update(rows, table_join, key, topic, value, ts)
        if result is not None:
            expected += model.process(key, "left", *result)
    ours, _ = run_task(program, records, batches)
    assert [(topic, None if k is None else k.decode(), v.decode()) for topic, k, v in ours
            if topic != DROPPED_LATE_TOPIC] == [("out", key, value) for key, value, _ in expected]


_events_and_clicks = st.lists(
    st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from(["e", "c"]), st.one_of(st.none(), st.just("v")),
              st.one_of(st.integers(100_000, 130_000), st.integers(100, 130).map(lambda t: t * 1000))),
    max_size=30,
).map(lambda rows: [(k, topic, None if v is None else f"{topic}{i}", t) for i, (k, topic, v, t) in enumerate(rows)])


@settings(max_examples=100, deadline=None)
@given(_events_and_clicks, _millis(6), _millis(6), _millis(4), _JOINS, st.sampled_from(["count", "reduce", "cogroup"]),
       st.integers(1, 3))
def test_a_join_fed_by_an_aggregation_pairs_its_updates_by_kafka_streams_timestamps(records, before, after, grace,
                                                                                   join, aggregation, batches):
    # e grouped by key and aggregated (a cogroup: with c too), the updates joined with c. Kafka
    # Streams stamps an update with the larger of the record's and the aggregate's previous
    # timestamps (KStreamAggregate, also a cogroup's), and the join pairs it by that stamp.
    builder = StreamsBuilder()
    events, clicks = builder.stream("e"), builder.stream("c")
    uncached = Materialized.as_("agg").with_caching_disabled()
    if aggregation == "count":
        table = events.group_by_key().count(uncached).map_values(lambda n: f"n{n}")
    elif aggregation == "reduce":
        table = events.group_by_key().reduce(lambda last, value: value, uncached)
    else:
        table = events.group_by_key().cogroup(lambda key, value, last: value) \
            .cogroup(clicks.group_by_key(), lambda key, value, last: value).aggregate(lambda: "", uncached)
    getattr(table.to_stream(), join)(clicks, lambda l, r: f"{l}+{r}", JoinWindows(before, after, grace)).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    assert program.task_grouped
    model = KsJoin(before, after, grace, join.replace("_join", ""))
    aggregates, expected = {}, []
    for key, topic, value, ts in records:
        aggregated = key is not None and value is not None and (topic == "e" or aggregation == "cogroup")
        if aggregated:
            count, stamp = aggregates.get(key, (0, ts))
            aggregates[key] = (count + 1, max(stamp, ts))
            update = f"n{count + 1}" if aggregation == "count" else value
            expected += model.process(key, "left", update, aggregates[key][1])
        if topic == "c":
            expected += model.process(key, "right", value, ts)
    ours, _ = run_task(program, records, batches)
    assert [(topic, None if k is None else k.decode(), v.decode()) for topic, k, v in ours
            if topic != DROPPED_LATE_TOPIC] == [("out", key, value) for key, value, _ in expected]


def test_a_join_fed_by_a_foreign_key_joins_result_compiles():
    # Its answers carry Kafka Streams' timestamps (fk_joins.SubscriptionJoin); a cached result forwards
    # each key's last answer at the batch's end, as Kafka Streams' at a commit
    # (test_cached_join_feeds_logic.py).
    for materialized in (None, Materialized.as_("joined").with_caching_disabled(), Materialized.as_("joined")):
        builder = StreamsBuilder()
        users = builder.table("users", Materialized.as_("users-store").with_caching_disabled())
        orders = builder.table("orders", Materialized.as_("orders-store").with_caching_disabled())
        extra = () if materialized is None else (materialized,)
        joined = orders.join(users, lambda value: value.split(":")[0], lambda order, user: f"{order}@{user}", *extra)
        joined.to_stream().join(builder.stream("s"), lambda l, r: f"{l}+{r}", JoinWindows(1000, 1000, 0)).to("out")
        compiled = compile_topology(builder.build(), "app")
        left = next(sub.id for sub in compiled.topology.subtopologies
                    if any(node.kind.value == "join_window" for node in sub.nodes))
        assert compiled.program(left).task_grouped
