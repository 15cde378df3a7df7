"""Windowed aggregations (dagster_kstreams.processors.windows) without Spark: which windows a record
updates, lateness, the sliding-window algorithm against a plain reference, emission through a
sub-topology program, and the topologies the Spark runner refuses (those where an aggregation
keeps its own stream time: tests/test_own_stream_time_logic.py)."""

from __future__ import annotations

import struct
from datetime import timedelta

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors import window_store as W
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.topology.consumed_produced import Consumed, Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes, Window, Windowed, WindowedSerde
from dagster_kstreams.topology.windows import SlidingWindows, TimeWindows

COUNT = W.aggregation_functions("count")
COLLECT = ((lambda: ()), (lambda key, value, aggregate: tuple(sorted(aggregate + (value,)))))
FAR = 10**9  # a grace no record outlives


def _run(process, spec, records, functions=COUNT, retention=None):
    """Records ``(timestamp, value)`` in arrival order through one key's store; stream time is
    the running maximum. Returns the store and the number of dropped (record, window) pairs."""
    store, dropped, stream = {}, 0, -1
    for timestamp, value in records:
        stream = max(stream, timestamp)
        if retention is not None:
            W.expire(store, stream, retention)
        _, lost = process(spec, store, "k", value, timestamp, stream, *functions)
        dropped += lost
    return store, dropped


@given(st.integers(1, 50), st.integers(1, 50), st.integers(0, 500))
def test_windows_for_is_every_window_that_contains_the_timestamp(size, advance, timestamp):
    advance = min(advance, size)
    spec = TimeWindows(size, advance, 0)
    brute = [(start, start + size) for start in range(0, timestamp + 1, advance) if start <= timestamp < start + size]
    assert spec.windows_for(timestamp) == brute


@settings(max_examples=200)
@given(st.lists(st.integers(0, 300), min_size=1, max_size=40), st.integers(1, 40), st.integers(1, 40))
def test_time_windows_in_any_order_within_grace_count_every_record(timestamps, size, advance):
    spec = TimeWindows(size, min(advance, size), FAR)
    store, dropped = _run(W.process_time_windows, spec, [(t, f"v{i}") for i, t in enumerate(timestamps)])
    expected = {}
    for t in timestamps:
        for start, _ in spec.windows_for(t):
            count, latest = expected.get(start, (0, -1))
            expected[start] = (count + 1, max(latest, t))
    assert dropped == 0
    assert store == expected


def test_time_windows_drop_records_whose_windows_closed_once_per_window():
    hopping = TimeWindows(10, 5, 2)
    # stream time 30: close time 28; windows of 20 are [15,25) and [20,30): only [20,30) is open.
    store, dropped = _run(W.process_time_windows, hopping, [(30, "a"), (20, "b"), (12, "c")])
    assert dropped == 1 + 2
    assert store == {20: (1, 20), 25: (1, 30), 30: (1, 30)}
    tumbling = TimeWindows(10, 10, 0)
    store, dropped = _run(W.process_time_windows, tumbling, [(19, "a"), (10, "b"), (20, "c"), (19, "d")])
    assert (store, dropped) == ({10: (2, 19), 20: (1, 20)}, 1)  # end 20 <= close 20: closed


def test_time_windows_aggregate_null_values_and_reduce_deletes_on_null():
    reduce = W.aggregation_functions("reduce", reducer=lambda a, v: None if v is None else a + v)
    store, _ = _run(W.process_time_windows, TimeWindows(10, 10, 100), [(1, "a"), (2, "b")], reduce)
    assert store == {0: ("ab", 2)}
    store, _ = _run(W.process_time_windows, TimeWindows(10, 10, 100), [(1, "a"), (2, None), (3, "c")], reduce)
    assert store == {0: ("c", 3)}  # the null deleted the window; "c" started it again
    store, _ = _run(W.process_time_windows, TimeWindows(10, 10, 100), [(1, None), (2, None)])
    assert store == {0: (2, 2)}  # count counts null values


def _sliding_reference(timestamps, diff, values=None):
    """Kafka Streams' sliding windows, defined: a left window [t - d, t] for every record, and a
    right window [t + 1, t + 1 + d] for every record with a later record within d; each holds
    the records inside it (timestamps >= d: no early records)."""
    values = values or [None] * len(timestamps)
    starts = {t - diff for t in timestamps}
    starts |= {t + 1 for t in timestamps if any(t < u <= t + diff for u in timestamps)}
    result = {}
    for start in starts:
        inside = [(t, v) for t, v in zip(timestamps, values) if start <= t <= start + diff]
        if inside:
            result[start] = inside
    return result


@settings(max_examples=300)
@given(st.lists(st.integers(20, 120), min_size=1, max_size=25), st.integers(1, 20))
def test_sliding_windows_in_any_order_within_grace_equal_the_reference(timestamps, diff):
    values = [f"v{i}" for i in range(len(timestamps))]
    store, dropped = _run(W.process_sliding_windows, SlidingWindows(diff, FAR), list(zip(timestamps, values)), COLLECT)
    reference = _sliding_reference(timestamps, diff, values)
    assert dropped == 0
    assert store == {start: (tuple(sorted(v for _, v in inside)), max(t for t, _ in inside))
                     for start, inside in reference.items()}


@settings(max_examples=200)
@given(st.lists(st.integers(0, 200), min_size=1, max_size=30), st.integers(1, 20), st.integers(0, 20))
def test_sliding_windows_with_lateness_keep_only_complete_open_windows(timestamps, diff, grace):
    """Late records: the windows still open hold what the reference says for the records that
    arrived in time for them; expiry (retention) never drops a window a record could update."""
    records = [(t + diff, f"v{i}") for i, t in enumerate(timestamps)]
    store, _ = _run(W.process_sliding_windows, SlidingWindows(diff, grace), records, COLLECT)
    expired, _ = _run(W.process_sliding_windows, SlidingWindows(diff, grace), records, COLLECT,
                      retention=3 * diff + grace + 1)
    stream = max(t for t, _ in records)
    assert {s: v for s, v in store.items() if s > stream - 3 * diff - grace - 1} == expired
    for start, (values, latest) in store.items():
        assert all(start <= int(t) <= start + diff for t in [records[int(v[1:])][0] for v in values])
        assert latest == max(records[int(v[1:])][0] for v in values)


@settings(max_examples=200)
@given(st.lists(st.integers(1_000, 1_300), min_size=1, max_size=25), st.integers(1, 40))
def test_an_in_memory_stores_live_iterator_with_nothing_cut_reads_what_a_snapshot_reads(timestamps, diff):
    """With no store operation cutting the map mid-record, the live reverse iteration of an in-memory store
    (``live_cut``) and the one-read snapshot give the same windows and updates."""
    records = [(t, f"v{i}") for i, t in enumerate(timestamps)]
    snapshot, _ = _run(W.process_sliding_windows, SlidingWindows(diff, FAR), records, COLLECT)
    live_store, stream = {}, -1
    for timestamp, value in records:
        stream = max(stream, timestamp)
        W.process_sliding_windows(SlidingWindows(diff, FAR), live_store, "k", value, timestamp, stream, *COLLECT,
                                  on_update=lambda update: None, live_cut=W.RemovalCut())
    assert live_store == snapshot


def _record_4913_after_a_put_ahead(live: bool) -> list:
    """Kafka Streams' in-memory store (retention 4 s) behind a sliding count (difference 1 s, grace 5 s) whose
    processor puts a window at 7_714 while the record 4_913's first window (4_714) is forwarded: the store's
    next operation (the put of 4_502) cuts the map below 3_715, so the record's iterator, which chose 4_025
    before that, never reaches 3_706 (count 10, last record 4_713): the record's new left window 3_913 counts
    from 0, not from 10."""
    retention, observed = 4_000, [7_502]
    store = {3_501: (2, 4_501), 3_706: (10, 4_713), 4_025: (10, 4_820), 4_502: (2, 4_815), 4_714: (1, 4_815)}
    cut = W.RemovalCut()
    cut.note(observed[0] - retention + 1)  # the record's fetch

    def put_then_processor(update):
        cut.note(observed[0] - retention + 1)  # the aggregation's put, before its start is observed
        observed[0] = max(observed[0], update[0])
        if update[0] == 4_714:  # the processor's put ahead
            cut.note(observed[0] - retention + 1)
            observed[0] = max(observed[0], 7_714)

    updates, _ = W.process_sliding_windows(SlidingWindows(1_000, 5_000), store, "k", "x", 4_913, 4_913, *COUNT,
                                           on_update=put_then_processor, live_cut=cut if live else None)
    return [(start, new) for start, _, new, _, _ in updates]


def test_an_in_memory_stores_live_iterator_misses_a_window_cut_while_the_record_is_forwarded():
    assert _record_4913_after_a_put_ahead(live=True) == [(4_714, 2), (4_502, 3), (4_025, 11), (3_913, 1)]
    assert _record_4913_after_a_put_ahead(live=False) == [(4_714, 2), (4_502, 3), (4_025, 11), (3_913, 11)]


def test_sliding_windows_early_records_share_the_first_window():
    store, dropped = _run(W.process_sliding_windows, SlidingWindows(10, 100), [(3, "a"), (1, "b"), (8, "c")], COLLECT)
    assert dropped == 0
    assert store[0] == (("a", "b", "c"), 8)
    assert store[2] == (("a", "c"), 8) and store[4] == (("c",), 8)


def test_expire_forgets_windows_at_or_before_stream_time_minus_retention():
    store = {0: (1, 5), 10: (1, 15), 20: (1, 25)}
    W.expire(store, 30, 20)
    assert store == {20: (1, 25)}


# -- through a sub-topology program (no Spark) ------------------------------------------------
def _group(program, rows, stored=None, watermark=None):
    """One key group: rows ``(key, value, timestamp)`` in processing order (stream time: running max)."""
    stream, stream_times = -1, []
    for key, _value, timestamp in rows:
        if key is not None:
            stream = max(stream, timestamp)
        stream_times.append(stream)
    frame = pd.DataFrame({
        "key": [None if k is None else k.encode() for k, _, _ in rows],
        "value": [None if v is None else v.encode() for _, v, _ in rows],
        "topic": ["in"] * len(rows), "partition": [0] * len(rows), "offset": list(range(len(rows))),
        "timestamp": [None] * len(rows), "event_time": [t for _, _, t in rows],
        "merge_time": [t for _, _, t in rows], "stream_time": stream_times, "seq": list(range(len(rows))),
    })
    return program.process_key_group(frame, stored, watermark)


def _tumbling_count_program(cached=True):
    builder = StreamsBuilder()
    materialized = Materialized.as_("counts")
    if not cached:
        materialized = materialized.with_caching_disabled()
    builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10),
                                                                                  timedelta(seconds=1))) \
        .count(materialized).to_stream() \
        .to("out", Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.Long()))
    program = compile_topology(builder, "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    assert next(node.cached for node in program.nodes if node.kind == "time_window_aggregate") is cached
    return program


def test_program_emits_windowed_keys_once_per_window_per_batch_and_counts_late_records():
    program = _tumbling_count_program()
    assert program.uses_stream_time and not program.stream_time_skips_null_values
    rows = [("k", "a", 1_000), ("k", "b", 12_000), ("k", "c", 2_000), ("k", None, 25_000), ("k", "late", 9_000)]
    frame, state = _group(program, rows)
    out = {row.topic: [] for row in frame.itertuples()}
    for row in frame.itertuples():
        out[row.topic].append((row.key, row.value))
    # [0,10s) closes at stream time 11s (grace 1s): the records at 2s and 9s come too late.
    assert len(out[DROPPED_LATE_TOPIC]) == 2
    key = lambda start: b"k" + struct.pack(">q", start)  # noqa: E731 - Kafka's TimeWindowedSerializer
    assert out["out"] == [(key(0), struct.pack(">q", 1)), (key(10_000), struct.pack(">q", 1)),
                          (key(20_000), struct.pack(">q", 1))]
    serde = WindowedSerde(Serdes.String(), 10_000)
    assert serde.deserialize(key(10_000)) == Windowed("k", Window(10_000, 20_000))
    # The next batch: only the window that changed is forwarded.
    frame, _ = _group(program, [("k", "d", 21_000)], state, watermark=25_000)
    assert list(frame["key"]) == [key(20_000)] and list(frame["value"]) == [struct.pack(">q", 2)]


def test_program_without_cache_forwards_every_update_and_skips_null_keys():
    program = _tumbling_count_program(cached=False)
    frame, _ = _group(program, [("k", "a", 1_000), ("k", "b", 2_000)])
    assert list(frame["value"]) == [struct.pack(">q", 1), struct.pack(">q", 2)]
    frame, state = _group(program, [(None, "a", 1_000)])
    assert frame is None and state is None


def _refused(build, match):
    builder = StreamsBuilder()
    build(builder)
    compiled = compile_topology(builder, "app", default_key_serde=Serdes.String(), default_value_serde=Serdes.String())
    with pytest.raises(UnsupportedTopologyError, match=match):
        for sub in compiled.topology.subtopologies:
            compiled.program(sub.id)


TUMBLING = TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=1))


def test_custom_timestamp_extractors_compile():
    builder = StreamsBuilder()
    builder.stream("in", Consumed.with_(timestamp_extractor=lambda record, previous: 0)) \
        .group_by_key().windowed_by(TUMBLING).count()
    compiled = compile_topology(builder, "app")
    source = compiled.program(0).nodes[0]
    assert source.kind == "source" and source.timestamp_extractor(None, -1) == 0


def test_read_store_entries_are_windowed_keys():
    program = _tumbling_count_program()
    node = next(node for node in program.nodes if node.kind == "time_window_aggregate")
    assert list(W.store_entries(node, "k", {10_000: (3, 12_000), 0: (1, 5)})) == [
        (Windowed("k", Window(0, 10_000)), 1), (Windowed("k", Window(10_000, 20_000)), 3)]
