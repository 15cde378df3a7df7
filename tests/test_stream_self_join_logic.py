"""The single-store self-join (topology.optimization) on the Spark runner: the pairing and order of
``KStreamKStreamSelfJoin.process`` against a brute-force model of it and against Kafka Streams' own
``testSelfJoin`` sequence, the same joins as the two-store join while nothing expires, and what the
compile step still refuses. The broker-backed comparison with Kafka Streams is
test_equivalence_kstreams_join_scenarios.py."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors import join_buffers
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.stream_self_join import emits_self, self_join_pairs
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder, StreamsConfig
from dagster_kstreams.topology.windows import JoinWindows
from stream_join_model import run_task

OPTIMIZED = {StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: StreamsConfig.SINGLE_STORE_SELF_JOIN}


def _program(windows: JoinWindows, props=OPTIMIZED, join="join"):
    builder = StreamsBuilder()
    stream = builder.stream("t1")
    getattr(stream, join)(stream, lambda x, y: f"{x}-{y}", windows).to("out")
    return compile_topology(builder.build(props), "app").program(0)


def _values(outputs):
    return [None if v is None else v.decode() for topic, _, v in outputs if topic == "out"]


def _model(records, before, after, grace):
    """``KStreamKStreamSelfJoin.process`` of one key, brute force over everything stored so far:
    ``[(left, right, timestamp)]`` per record, in emission order."""
    retention = before + after + grace
    stored, store_time, stream_time, joined = [], -1, -1, []
    for value, timestamp in records:
        if value is None:
            continue  # skipped; the window before it forwards first and stores nothing either
        stream_time = max(stream_time, timestamp)
        in_store = sorted((entry for entry in stored if entry[0] >= store_time - retention + 1),
                          key=lambda entry: (entry[0], entry[1]))

        def fetch(low, high):
            return [(t, v) for t, _, v in in_store if max(0, timestamp - low) <= t <= max(0, timestamp + high)]

        emit_self = timestamp > stream_time - retention + 1
        joined += [(value, v, max(timestamp, t)) for t, v in fetch(before, after)]
        self_done = False
        for t, v in fetch(after, before):
            if t > timestamp and emit_self and not self_done:
                joined.append((value, value, timestamp))
                self_done = True
            joined.append((v, value, max(timestamp, t)))
        if emit_self and not self_done:
            joined.append((value, value, timestamp))
        store_time = max(store_time, timestamp)
        if join_buffers.segment_live(timestamp, store_time, retention):
            stored.append((timestamp, len(stored), value))
    return joined


_records = st.lists(st.tuples(st.one_of(st.none(), st.sampled_from("xyz")), st.integers(100_000, 140_000)),
                    max_size=20).map(lambda rows: [(None if v is None else f"{v}{i}", t)
                                                   for i, (v, t) in enumerate(rows)])


@settings(max_examples=80, deadline=None)
@given(_records, st.integers(0, 20_000), st.integers(0, 20_000), st.integers(0, 20_000))
def test_pairs_follow_kafka_streams_self_join_process(records, before, after, grace):
    retention = before + after + grace
    buffer, store_time, stream_time, pairs = [], -1, -1, []
    for value, timestamp in records:
        if value is None:
            continue
        stream_time = max(stream_time, timestamp)
        pairs += self_join_pairs(buffer, timestamp, value, before, after, store_time, retention,
                                 emits_self(timestamp, stream_time, retention))
        store_time = max(store_time, timestamp)
        if join_buffers.segment_live(timestamp, store_time, retention):
            buffer = join_buffers.insert(buffer, timestamp, value)
    assert pairs == _model(records, before, after, grace)


@settings(max_examples=40, deadline=None)
@given(_records, st.integers(0, 20_000), st.integers(0, 20_000), st.integers(1, 3))
def test_compiled_self_join_runs_the_model_in_order_over_batches(records, before, after, batches):
    grace = 5_000
    outputs, _ = run_task(_program(JoinWindows(before, after, grace)), [("k", "t1", v, t) for v, t in records],
                          batches)
    assert _values(outputs) == [f"{left}-{right}" for left, right, _ in _model(records, before, after, grace)]


@settings(max_examples=40, deadline=None)
@given(_records, st.integers(0, 20_000), st.integers(0, 20_000))
def test_same_joins_as_the_two_store_join_while_nothing_expires(records, before, after):
    windows = JoinWindows(before, after, 10_000_000)
    rows = [("k", "t1", v, t) for v, t in records]
    optimized, _ = run_task(_program(windows), rows)
    two_stores, _ = run_task(_program(windows, props=None), rows)
    assert Counter(_values(optimized)) == Counter(_values(two_stores))


def test_kafka_streams_self_join_sequence():
    # StreamStreamJoinIntegrationTest.testSelfJoin's input and expected records, in its order
    records = [(None, 1), ("A", 2), ("B", 3), (None, 4), ("C", 5), (None, 6), ("D", 7)]
    outputs, _ = run_task(_program(JoinWindows.of_time_difference_and_grace(timedelta(seconds=10),
                                                                            timedelta(hours=24))),
                          [("k", "t1", v, t) for v, t in records])
    assert _values(outputs) == ["A-A", "B-A", "A-B", "B-B", "C-A", "C-B", "A-C", "B-C", "C-C",
                                "D-A", "D-B", "D-C", "A-D", "B-D", "C-D", "D-D"]


def test_record_joins_itself_before_later_partners_and_not_once_expired():
    # after 10 ms, before 0: the first lookup sees later records, the second earlier ones
    pairs = self_join_pairs([(95, "p"), (105, "q")], 100, "r", 0, 10, 105, 1_000, True)
    assert pairs == [("r", "q", 105), ("p", "r", 100), ("r", "r", 100)]
    pairs = self_join_pairs([(95, "p"), (105, "q")], 100, "r", 10, 10, 105, 1_000, True)
    assert pairs == [("r", "p", 100), ("r", "q", 105), ("p", "r", 100), ("r", "r", 100), ("q", "r", 105)]
    assert not emits_self(101, 1_100, 1_000) and emits_self(102, 1_100, 1_000)  # t > T - retention + 1


def test_left_self_join_is_rewritten_into_the_inner_one():
    # Kafka Streams 4.3.1 rewrites any join with one parent: a record late beyond the retention joins
    # nothing, where the two-store left join joins it with null
    rows = [("k", "t1", "a", 100_000), ("k", "t1", "b", 300_000), ("k", "t1", "c", 100_050)]
    outputs, _ = run_task(_program(JoinWindows(100, 100, 0), join="left_join"), rows)
    assert _values(outputs) == ["a-a", "b-b"]
    outputs, _ = run_task(_program(JoinWindows(100, 100, 0), props=None, join="left_join"), rows)
    assert _values(outputs) == ["a-a", "b-b", "c-None"]


def test_a_join_after_the_self_join_compiles():
    builder = StreamsBuilder()
    windows = JoinWindows(100, 100, 0)
    builder.stream("t1").join(builder.stream("t1"), lambda x, y: x + y, windows) \
        .join(builder.stream("t3"), lambda x, y: x + y, windows).to("out")
    kinds = [node.kind for node in compile_topology(builder.build(OPTIMIZED), "app").program(0).nodes]
    assert kinds.count("stream_stream_self_join") == 1 and kinds.count("stream_stream_join") == 2


def test_self_join_after_a_step_of_unknown_keys_is_still_refused_naming_it():
    builder = StreamsBuilder()
    table = builder.table("t1").transform_values(_Upper)
    stream = table.to_stream()
    stream.join(stream, lambda x, y: x + y, JoinWindows(100, 100, 0)).to("out")
    with pytest.raises(UnsupportedTopologyError, match=r"KTABLE-TRANSFORMVALUES-\d+ .*stream-stream join"):
        compile_topology(builder.build(OPTIMIZED), "app").program(0)


class _Upper:
    def init(self, context):
        pass

    def transform(self, key, value):
        return value.upper()

    def close(self):
        pass
