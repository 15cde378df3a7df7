"""Stream-stream joins on the Spark runner: the pure logic (window bounds, store expiry, the
per-key pass) against a brute-force model of Kafka Streams' inner join, and what the compile
step refuses. The broker-backed comparison with Kafka Streams is test_equivalence_stream_joins.py."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.spark import stream_joins
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.spark.program import DROPPED_LATE_TOPIC
from dagster_kstreams.topology.config import Consumed
from dagster_kstreams.topology.dsl import StreamsBuilder
from dagster_kstreams.topology.windows import JoinWindows


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


def _program(before=5_000, after=5_000, grace=0):
    builder = StreamsBuilder()
    windows = JoinWindows(before, after, grace)
    builder.stream("left").join(builder.stream("right"), lambda x, y: f"{x}+{y}", windows).to("out")
    return compile_topology(builder.build(), "app").program(0)


def _run(program, records, batches=1):
    """records: [(side, value, timestamp)] of one key, in processing order, split in batches."""
    stored, outputs, stream_time = None, [], -1
    size = -(-len(records) // batches) if records else 1
    for start in range(0, len(records), size):
        chunk = records[start:start + size]
        watermark = stream_time
        rows = []
        for seq, (side, value, timestamp) in enumerate(chunk):
            stream_time = max(stream_time, timestamp)
            rows.append({"key": b"k", "value": None if value is None else value.encode(), "topic": side,
                         "partition": 0, "offset": start + seq, "timestamp": None, "event_time": timestamp,
                         "merge_time": timestamp, "stream_time": stream_time, "seq": seq})
        frame, stored = program.process_key_group(pd.DataFrame(rows), stored, watermark if watermark >= 0 else None)
        if frame is not None:
            outputs += list(zip(frame["topic"], frame["value"]))
    return outputs, stored


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
def test_one_key_joins_like_kafka_streams_when_both_sides_keep_pace(records, before, after, grace, batches):
    # Each side's store time equals the task's stream time when both sides always hold the
    # latest timestamp: give every record a twin on the other side right after it.
    paced = []
    for side, value, timestamp in records:
        paced.append((side, value or "v", timestamp))
        paced.append(("right" if side == "left" else "left", "t", timestamp))
    program = _program(before, after, grace)
    outputs, _ = _run(program, paced, batches)
    expected, dropped = _model(paced, before, after, grace)
    assert sorted(v.decode() for topic, v in outputs if topic == "out") == expected
    assert sum(topic == DROPPED_LATE_TOPIC for topic, _ in outputs) == dropped


def test_null_values_are_not_joined_nor_stored_and_state_expires():
    program = _program(5_000, 5_000, 0)
    outputs, stored = _run(program, [("left", "a", 100_000), ("right", None, 100_001), ("right", "b", 100_002),
                                     ("left", None, 100_003)])
    assert [v for _, v in outputs] == [b"a+b"]
    outputs, stored = _run(program, [("left", "a", 100_000), ("right", "b", 100_002), ("left", "c", 200_000)])
    assert [v for _, v in outputs] == [b"a+b"]
    # stream time 200 s, retention 10 s: only the last record is kept
    import pickle
    assert [pickle.loads(blob) if blob else None for blob in stored] == [[(200_000, "c")], None]


def test_joined_record_gets_the_later_timestamp():
    program = _program(5_000, 5_000, 0)
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


# -- refused at compile time --------------------------------------------------------------
def _compile(build):
    builder = StreamsBuilder()
    build(builder)
    topology = compile_topology(builder.build(), "app")
    for sub in topology.subtopologies:
        topology.program(sub)


WINDOWS = JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=5))


@pytest.mark.parametrize("join", ["left_join", "outer_join"])
def test_left_and_outer_joins_are_refused(join):
    def build(builder):
        getattr(builder.stream("l"), join)(builder.stream("r"), lambda x, y: x, WINDOWS).to("out")

    with pytest.raises(UnsupportedTopologyError, match=r"KSTREAM-(OUTER|JOIN)THIS-\d+ \(stream_stream_join\) is a "
                                                      r"(left|outer) stream-stream join"):
        _compile(build)


def test_a_filter_before_the_join_window_is_refused():
    def build(builder):
        builder.stream("l").filter(lambda k, v: True).join(builder.stream("r"), lambda x, y: x, WINDOWS).to("out")

    with pytest.raises(UnsupportedTopologyError, match=r"KSTREAM-WINDOWED-\d+ \(join_window\) buffers the records "
                                                      r"of KSTREAM-FILTER-\d+"):
        _compile(build)


def test_a_source_feeding_more_than_the_join_is_refused():
    def build(builder):
        left = builder.stream("l")
        left.join(builder.stream("r"), lambda x, y: x, WINDOWS).to("out")
        left.to("copy")

    with pytest.raises(UnsupportedTopologyError, match=r"source KSTREAM-SOURCE-\d+ of sub-topology 0 feeds"):
        _compile(build)


def test_a_custom_timestamp_extractor_is_refused():
    def build(builder):
        left = builder.stream("l", Consumed.with_(None, None).with_timestamp_extractor(lambda r, p: 0))
        left.join(builder.stream("r"), lambda x, y: x, WINDOWS).to("out")

    with pytest.raises(UnsupportedTopologyError, match="custom timestamp extractor"):
        _compile(build)


def test_a_self_join_compiles():
    def build(builder):
        stream = builder.stream("l")
        stream.join(stream, lambda x, y: x + y, WINDOWS).to("out")

    _compile(build)


def test_a_record_put_into_an_expired_segment_is_counted_with_its_key():
    program = _program(5_000, 5_000, 0)  # retention 10 s, 60 s segments
    # stream time 130 s: segment(130 s - 10 s) = 2 is the oldest live one
    rows = [("left", "a", 130_000), ("right", "late", 119_999), ("right", "kept", 120_000)]
    stored, outputs = None, []
    frame = pd.DataFrame([
        {"key": b"k", "value": v.encode(), "topic": side, "partition": 0, "offset": i, "timestamp": None,
         "event_time": t, "merge_time": 130_000, "stream_time": 130_000, "seq": i}
        for i, (side, v, t) in enumerate(rows)])
    frame, stored = program.process_key_group(frame, None)
    assert list(zip(frame["topic"], frame["key"], frame["value"])) == [(DROPPED_LATE_TOPIC, b"k", None)]
    # "kept" went into a live segment (not counted), but no lookup can return it: pruned at once
    assert stored[1] is None


def test_a_join_feeding_an_aggregation_of_the_same_key_shares_the_state_row():
    builder = StreamsBuilder()
    joined = builder.stream("left").join(builder.stream("right"), lambda x, y: f"{x}+{y}", WINDOWS)
    joined.group_by_key().count().to_stream().to("counts")
    program = compile_topology(builder.build(), "app").program(0)
    assert sorted(n.kind for n in program.nodes if n.stateful) == ["aggregate", "join_window", "join_window"]
    outputs, _ = _run(program, [("left", "a", 100_000), ("right", "b", 101_000), ("right", "c", 102_000)])
    assert [v for topic, v in outputs if topic == "counts"] == [(2).to_bytes(8, "big")]
