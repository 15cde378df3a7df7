"""Several stream-stream joins in one sub-topology (a chain, and one stream joined with two
others) against a brute-force model of Kafka Streams' joins, one model per join: each join keeps
its own stores, store times and tracker (``KStreamImplJoin``). The broker-backed comparison is
test_equivalence_stream_joins.py (its chain output)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.windows import JoinWindows
from stream_join_model import KsJoin, run_task


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
