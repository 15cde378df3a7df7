"""Stream-stream joins on the Spark runner: the pure logic (window bounds, store expiry, the
per-key pass) against a brute-force model of Kafka Streams' inner join, and what the compile
step refuses. The broker-backed comparison with Kafka Streams is test_equivalence_stream_joins.py."""

from __future__ import annotations

import pickle
from datetime import timedelta

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors import join_buffers as stream_joins
from dagster_kstreams.processors.join_buffers import JoinTracker
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.processors.task_state import TaskState
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology.consumed_produced import Consumed
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.windows import JoinWindows
from stream_join_model import LONG_MAX, KsJoin, java_long as _java, run_task as _run


def test_segment_live_follows_kafka_streams_segments():
    # retention 20 s -> 60 s segments; live: segment(ts) >= segment(stream_time - retention)
    assert stream_joins.segment_interval(20_000) == 60_000
    assert stream_joins.segment_interval(300_000) == 150_000
    assert stream_joins.segment_live(120_000, 130_000, 20_000)  # both in segment 1..2
    assert stream_joins.segment_live(60_000, 130_000, 20_000)  # segment 1 == segment(110 s)
    assert not stream_joins.segment_live(59_999, 130_000, 20_000)
    assert stream_joins.segment_live(59_999, 79_999, 20_000)
    assert not stream_joins.segment_live(59_999, 140_000, 20_000)


def test_visible_clips_the_window_and_the_retention():
    buffer = [(0, "a"), (5, "b"), (10, "c"), (15, "d")]
    assert stream_joins.visible(buffer, 10, 5, 0, 15, 100) == [(5, "b"), (10, "c")]
    assert stream_joins.visible(buffer, 10, 0, 5, 15, 100) == [(10, "c"), (15, "d")]
    # stream time 20, retention 11: nothing older than 10
    assert stream_joins.visible(buffer, 10, 5, 5, 20, 11) == [(10, "c"), (15, "d")]
    assert stream_joins.expire(buffer, 20, 11) == [(10, "c"), (15, "d")]


@given(st.lists(st.integers(0, 20), max_size=30))
def test_insert_keeps_timestamp_then_arrival_order(timestamps):
    buffer: list = []
    for arrival, timestamp in enumerate(timestamps):
        buffer = stream_joins.insert(buffer, timestamp, arrival)
    assert buffer == sorted(((t, a) for a, t in enumerate(timestamps)))


def _program(before=5_000, after=5_000, grace=0, join="join", joiner=None, fuse_chains=True):
    builder = StreamsBuilder()
    windows = JoinWindows(before, after, grace)
    joiner = joiner or (lambda x, y: f"{x}+{y}")
    getattr(builder.stream("left"), join)(builder.stream("right"), joiner, windows).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    if fuse_chains:
        return program
    # processor by processor (no compiled chains): what a test that watches each forward needs
    return type(program)(program.subtopology_id, program.nodes, program.dead_letters, fuse_chains=False)


def _values(outputs, topic="out"):
    return [None if v is None else v.decode() for t, _, v in outputs if t == topic]


def _slots(stored, key=b"k"):
    slots = pickle.loads(stored)["keys"].get(key, {})
    return [slots.get(0), slots.get(1)]


def _model(records, before, after, grace):
    """Kafka Streams' inner join of one key, one store time per side (the largest timestamp
    stored there), brute force."""
    retention = before + after + grace
    stores = {"left": [], "right": []}
    times = {"left": -1, "right": -1}
    joined, dropped = [], 0
    for side, value, timestamp in records:
        other = "right" if side == "left" else "left"
        low_b, high_a = (before, after) if side == "left" else (after, before)
        if value is not None:
            for other_time, other_value in sorted(stores[other], key=lambda e: e[0]):
                if (max(0, timestamp - low_b) <= other_time <= max(0, timestamp + high_a)
                        and other_time >= times[other] - retention + 1):
                    joined.append(f"{value}+{other_value}" if side == "left" else f"{other_value}+{value}")
            times[side] = max(times[side], timestamp)
            if stream_joins.segment_live(timestamp, times[side], retention):
                stores[side].append((timestamp, value))
            else:
                dropped += 1
    return sorted(joined), dropped


_records = st.lists(
    st.tuples(st.sampled_from(["left", "right"]), st.one_of(st.none(), st.text("xyz", min_size=1, max_size=2)),
              st.integers(100_000, 260_000)),
    max_size=25,
).map(lambda rows: [(side, None if v is None else f"{v}{i}", t) for i, (side, v, t) in enumerate(rows)])


@settings(max_examples=60, deadline=None)
@given(_records, st.integers(0, 30_000), st.integers(0, 30_000), st.integers(0, 20_000), st.integers(1, 3))
def test_one_key_inner_joins_like_kafka_streams_with_a_store_time_per_side(records, before, after, grace, batches):
    program = _program(before, after, grace)
    outputs, _ = _run(program, records, batches)
    expected, dropped = _model(records, before, after, grace)
    assert sorted(_values(outputs)) == expected
    assert sum(topic == DROPPED_LATE_TOPIC for topic, _, _ in outputs) == dropped


def test_null_values_are_not_joined_nor_stored_and_state_expires():
    program = _program(5_000, 5_000, 0)
    outputs, stored = _run(program, [("left", "a", 100_000), ("right", None, 100_001), ("right", "b", 100_002),
                                     ("left", None, 100_003)])
    assert _values(outputs) == ["a+b"]
    outputs, stored = _run(program, [("left", "a", 100_000), ("right", "b", 100_002), ("left", "c", 200_000)])
    assert _values(outputs) == ["a+b"]
    # the left store's time is 200 s, retention 10 s: only the last record is kept; the right
    # store's time is still 100.002 s, so its record stays
    assert _slots(stored) == [[(200_000, "c")], [(100_002, "b")]]


def test_joined_record_gets_the_later_timestamp():
    program = _program(5_000, 5_000, 0, fuse_chains=False)
    seen = []
    sink = next(n for n in program.nodes if n.kind == "sink")
    sink.kind, sink.fn = "peek", None
    original = program._forward

    def spy(index, key, value, context, out, state):
        if program.nodes[index] is sink:
            seen.append((value, context.timestamp))
            return
        original(index, key, value, context, out, state)

    program._forward = spy
    _run(program, [("left", "a", 100_000), ("right", "b", 103_000), ("left", "c", 104_000)])
    assert sorted(seen) == [("a+b", 103_000), ("c+b", 104_000)]


# -- left and outer joins ------------------------------------------------------------------
def _ks_model(records, before, after, grace, join_type):
    """One join's output in order, as ``(key, "left+right")``. records: [(key, side, value,
    timestamp)] in processing order."""
    join = KsJoin(before, after, grace, join_type)
    return [(key, value) for record in records for key, value, _ in join.process(*record)]


_keyed_records = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", None]), st.sampled_from(["left", "right"]),
              st.one_of(st.none(), st.just("v")),
              # whole seconds half of the time: window bounds and stream time meet exactly
              st.one_of(st.integers(100_000, 140_000), st.integers(100, 140).map(lambda t: t * 1000))),
    max_size=30,
).map(lambda rows: [(k, side, None if v is None else f"{side[0]}{i}", t) for i, (k, side, v, t) in enumerate(rows)])


def _millis(seconds):
    return st.one_of(st.integers(0, seconds * 1000), st.integers(0, seconds).map(lambda s: s * 1000))


@settings(max_examples=150, deadline=None)
@given(_keyed_records, _millis(8), _millis(8), _millis(5), st.integers(1, 3),
       st.sampled_from(["join", "left_join", "outer_join"]))
def test_joins_emit_like_kafka_streams_across_keys(records, before, after, grace, batches, join):
    program = _program(before, after, grace, join)
    outputs, _ = _run(program, records, batches)
    ours = [(None if k is None else k.decode(), v.decode()) for t, k, v in outputs if t == "out"]
    assert ours == _ks_model(records, before, after, grace, join.replace("_join", ""))


_pending = st.lists(
    st.tuples(st.integers(0, 50), st.sampled_from([0, 1]), st.sampled_from([b"a", b"b", b"ab"]), st.integers(0, 9)),
    max_size=15,
)


@settings(max_examples=200, deadline=None)
@given(_pending, st.integers(0, 80), st.one_of(st.just(LONG_MAX), st.integers(0, 50)), st.integers(0, 10),
       st.integers(0, 10), st.integers(0, 10), st.integers(0, 10))
def test_closed_outer_records_follow_kafka_streams_scan(pending, stream_time, min_time, this_after, before, after,
                                                        grace):
    tracker = stream_joins.JoinTracker(stream_time=stream_time, min_time=min_time)
    for timestamp, side, raw_key, value in pending:
        tracker.outer.setdefault((timestamp, side, raw_key), []).append((raw_key.decode(), value))
    emitted = stream_joins.closed_outer_records(tracker, this_after, before, after, grace)
    # plain reference: entries in (timestamp, side, key bytes, arrival) order
    entries = sorted(((t, side, k, i, v) for i, (t, side, k, v) in enumerate(pending)), key=lambda e: e[:4])
    if _java(min_time + this_after + grace) >= stream_time:
        expected, expected_min = [], min_time
    else:
        expected, open_sides, expected_min = [], set(), LONG_MAX
        for t, side, k, _, v in entries:
            expected_min = t
            if len(open_sides) == 2:
                break
            if t + (after if side == 1 else before) + grace >= stream_time:
                open_sides.add(side)
            else:
                expected.append((t, side, k, k.decode(), v))
    assert emitted == expected
    assert tracker.min_time == expected_min
    left = sorted((t, side, k, v) for (t, side, k), values in tracker.outer.items() for _, v in values)
    gone = {(t, side, k) for t, side, k, _, _ in expected}
    assert left == sorted((t, side, k, v) for t, side, k, v in pending if (t, side, k) not in gone)


def test_a_pending_record_is_emitted_when_another_key_advances_stream_time():
    program = _program(2_000, 2_000, 1_000, "left_join")
    outputs, stored = _run(program, [("a", "left", "x", 100_000), ("b", "right", "y", 102_500),
                                     ("b", "left", "z", 103_001)])
    # a's x waits (window closes after 100 s + 2 s + 1 s grace); b's z at 103.001 s closes it,
    # before z itself is joined
    assert [(k, v) for _, k, v in outputs] == [(b"a", b"x+None"), (b"b", b"z+y")]
    tracker = pickle.loads(stored)["values"]
    assert all(not t.outer for name, t in tracker.items() if name.startswith("stream_joins.tracker"))


def test_null_keys_on_outer_sides_are_joined_with_null_at_once():
    outer = _program(2_000, 2_000, 0, "outer_join", joiner=lambda k, x, y: f"{k}:{x}+{y}")
    outputs, _ = _run(outer, [(None, "left", "x", 100_000), (None, "right", "y", 100_001),
                              (None, "left", None, 100_002)])
    assert [(k, v) for _, k, v in outputs] == [(None, b"None:x+None"), (None, b"None:None+y")]
    left = _program(2_000, 2_000, 0, "left_join")
    outputs, _ = _run(left, [(None, "left", "x", 100_000), (None, "right", "y", 100_001)])
    assert [(k, v) for _, k, v in outputs] == [(None, b"x+None")]


def test_an_unmatched_record_waits_unless_its_window_end_is_behind_the_stream_time():
    program = _program(1_000, 2_000, 0, "left_join")
    outputs, _ = _run(program, [("b", "left", "s", 102_000),
                                ("a", "left", "x", 100_000),  # 100 s + 2 s is not behind 102 s: pending
                                ("a", "left", "y", 99_999)])  # 101.999 s is: joined with null at once
    assert [(k, v) for _, k, v in outputs] == [(b"a", b"y+None")]


def test_non_joined_records_keep_their_own_timestamp():
    program = _program(1_000, 1_000, 0, "outer_join", fuse_chains=False)
    seen = []
    sink = next(n for n in program.nodes if n.kind == "sink")
    original = program._forward

    def spy(index, key, value, context, out, state):
        if program.nodes[index] is sink:
            seen.append((value, context.timestamp))
        original(index, key, value, context, out, state)

    program._forward = spy
    _run(program, [("a", "left", "x", 100_000), ("a", "right", "late", 90_000), ("b", "right", "y", 105_000)])
    # "late" is behind the stream time already (joined with null at once); x waits for b's y
    assert seen == [("None+late", 90_000), ("x+None", 100_000)]


# -- refused at compile time --------------------------------------------------------------
def _compile(build):
    builder = StreamsBuilder()
    build(builder)
    topology = compile_topology(builder.build(), "app")
    for sub in topology.application.subtopology_ids:
        topology.program(sub)


WINDOWS = JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=5))


@pytest.mark.parametrize("join", ["join", "left_join", "outer_join"])
def test_stream_stream_joins_compile_task_grouped(join):
    builder = StreamsBuilder()
    getattr(builder.stream("l"), join)(builder.stream("r"), lambda x, y: x, WINDOWS).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    assert program.task_grouped


@settings(max_examples=40, deadline=None)
@given(_keyed_records, st.integers(0, 8_000), st.integers(0, 8_000), st.integers(0, 5_000),
       st.sampled_from(["join", "left_join", "outer_join"]))
def test_a_filter_before_a_join_window_joins_what_passes(records, before, after, grace, join):
    # The join's stores and stream time only see what reaches them, as in Kafka Streams.
    builder = StreamsBuilder()
    left = builder.stream("left").filter(lambda k, v: v is None or int(v[1:]) % 3 != 0)
    getattr(left, join)(builder.stream("right"), lambda x, y: f"{x}+{y}", JoinWindows(before, after, grace)).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    outputs, _ = _run(program, records)
    passed = [r for r in records if r[1] == "right" or r[2] is None or int(r[2][1:]) % 3 != 0]
    ours = [(None if k is None else k.decode(), v.decode()) for t, k, v in outputs if t == "out"]
    assert ours == _ks_model(passed, before, after, grace, join.replace("_join", ""))


def test_a_source_feeding_more_than_the_join_compiles_and_runs():
    builder = StreamsBuilder()
    left = builder.stream("left")
    left.left_join(builder.stream("right"), lambda x, y: f"{x}+{y}", WINDOWS).to("out")
    left.to("copy")
    program = compile_topology(builder.build(), "app").program(0)
    outputs, _ = _run(program, [("a", "left", "x", 100_000), ("a", "right", "y", 101_000)])
    assert [(t, v) for t, _, v in outputs] == [("copy", b"x"), ("out", b"x+y")]


def test_a_custom_timestamp_extractor_compiles_and_reaches_its_source():
    def build(builder):
        left = builder.stream("l", Consumed.with_(None, None).with_timestamp_extractor(lambda r, p: 0))
        left.join(builder.stream("r"), lambda x, y: x, WINDOWS).to("out")

    _compile(build)  # the extracted timestamps drive the join (tests/test_timestamp_extractors.py)


def test_a_self_join_compiles():
    def build(builder):
        stream = builder.stream("l")
        stream.join(stream, lambda x, y: x + y, WINDOWS).to("out")

    _compile(build)


def test_a_record_put_into_an_expired_segment_is_counted_with_its_key():
    program = _program(5_000, 5_000, 0)  # retention 10 s, 60 s segments
    # the right store's time 130 s: segment(130 s - 10 s) = 2 is the oldest live one
    rows = [("right", "seed", 130_000), ("right", "late", 119_999), ("right", "kept", 120_000)]
    stored = None
    frame = pd.DataFrame([
        {"key": b"k", "value": v.encode(), "topic": side, "partition": 0, "offset": i, "timestamp": None,
         "event_time": t, "merge_time": 130_000, "stream_time": 130_000, "seq": i}
        for i, (side, v, t) in enumerate(rows)])
    frame, stored = program.process_task_batch(frame, None)
    assert list(zip(frame["topic"], frame["key"], frame["value"])) == [(DROPPED_LATE_TOPIC, b"k", None)]
    # "kept" went into a live segment (not counted), but no lookup can return it: pruned at once
    assert _slots(stored) == [None, [(130_000, "seed")]]


def test_a_join_feeding_an_aggregation_of_the_same_key_shares_the_state_row():
    builder = StreamsBuilder()
    joined = builder.stream("left").join(builder.stream("right"), lambda x, y: f"{x}+{y}", WINDOWS)
    joined.group_by_key().count().to_stream().to("counts")
    program = compile_topology(builder.build(), "app").program(0)
    assert sorted(n.kind for n in program.nodes if n.stateful) == ["aggregate", "join_window", "join_window"]
    outputs, _ = _run(program, [("left", "a", 100_000), ("right", "b", 101_000), ("right", "c", 102_000)])
    assert [v for topic, _, v in outputs if topic == "counts"] == [(2).to_bytes(8, "big")]


def test_task_state_written_before_the_processors_layer_still_loads():
    """A stream-join task's checkpoint pickles its JoinTracker; the class moved modules
    (spark.stream_joins -> processors.join_buffers) and old checkpoints must keep loading."""
    tracker = JoinTracker()
    tracker.stream_time = 42
    # Protocol 0 names classes as text, so the old module name can be put in place.
    blob = pickle.dumps({"format": 1, "keys": {b"k": {0: [(1, "v")]}}, "values": {"t": tracker}}, protocol=0)
    old = blob.replace(b"dagster_kstreams.processors.join_buffers", b"dagster_kstreams.spark.stream_joins")
    assert old != blob
    state = TaskState.load(old, 1)
    assert state.values["t"].stream_time == 42 and isinstance(state.values["t"], JoinTracker)
    assert TaskState.store_content(old, 0) == {b"k": [(1, "v")]}
