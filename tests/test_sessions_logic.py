"""Session-window logic without Spark: the per-key store against a plain reference, the emitted
records of a key group (cached and not), compile-time refusals, and the session windowed-key bytes."""

from __future__ import annotations

import pickle
import struct
from datetime import timedelta

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import session_reference
from dagster_kstreams.processors import session_store
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes, Window, Windowed, WindowedSerde
from dagster_kstreams.topology.windows import SessionWindows


def _drive(records, gap, grace, retention, functions):
    """Our SessionStore over a task's records (one store per key, one task stream time)."""
    stores: dict = {}
    stream_time = -1
    dropped = 0
    emitted: dict = {}
    for key, value, timestamp in records:
        if key is None:
            continue
        before, stream_time = stream_time, max(stream_time, timestamp)
        store = stores.setdefault(key, session_store.SessionStore(gap, grace, retention))
        result = store.apply(key, value, timestamp, before, stream_time, *functions)
        if result is None:
            dropped += 1
            continue
        removed, (start, end, agg) = result
        for s_start, s_end, _ in removed:
            emitted.pop((key, s_start, s_end), None)
        if agg is not None:
            emitted[(key, start, end)] = agg
    return emitted, dropped, stores


records_strategy = st.lists(
    st.tuples(st.sampled_from(["a", "b", None]), st.text("xyz", min_size=1, max_size=2), st.integers(0, 120)),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(records_strategy, st.integers(1, 20), st.integers(0, 30), st.integers(0, 15))
def test_session_store_matches_reference(records, gap, grace, extra_retention):
    retention = gap + grace + extra_retention
    functions = session_store.session_functions("aggregate", lambda: "", lambda k, v, a: a + "+" + v,
                                           merger=lambda k, a, b: a + "|" + b)
    expected, expected_dropped, _ = session_reference.run(records, gap, grace, *functions, retention=retention)
    emitted, dropped, stores = _drive(records, gap, grace, retention, functions)
    assert emitted == expected
    assert dropped == expected_dropped
    # State stays bounded: nothing the store can no longer return is kept.
    stream_time = max([t for k, _, t in records if k is not None], default=-1)
    for store in stores.values():
        store.expire(stream_time)
        assert all(end > stream_time - retention for _, end, _ in store.sessions)
        spans = sorted((s, e) for s, e, _ in store.sessions)
        assert all(e1 < s2 for (_, e1), (s2, _) in zip(spans, spans[1:])), "sessions of a key overlap"


@settings(max_examples=200, deadline=None)
@given(records_strategy, st.integers(1, 20), st.integers(0, 30))
def test_count_and_reduce_are_kafka_streams_functions(records, gap, grace):
    count = session_store.session_functions("count")
    expected, dropped, _ = session_reference.count(records, gap, grace)
    emitted, ours_dropped, _ = _drive(records, gap, grace, gap + grace, count)
    assert (emitted, ours_dropped) == (expected, dropped)
    # reduce = the values of the session combined in store order; with max, the session's max.
    reduce = session_store.session_functions("reduce", reducer=max)
    emitted, _, _ = _drive(records, gap, grace, gap + grace, reduce)
    values, _, _ = session_reference.run(records, gap, grace, lambda: (), lambda k, v, a: a + (v,),
                                         lambda k, a, b: a + b)
    assert emitted == {window: max(session) for window, session in values.items()}


def test_merge_late_and_expiry_by_hand():
    store = session_store.SessionStore(gap=10, grace=20, retention=30)
    count = session_store.session_functions("count")
    assert store.apply("k", "v", 100, -1, 100, *count) == ([], (100, 100, 1))
    assert store.apply("k", "v", 120, 100, 120, *count) == ([], (120, 120, 1))
    # 110 bridges the two sessions (close time 120 - 20 - 10 = 90, merged end 120).
    removed, new = store.apply("k", "v", 110, 120, 120, *count)
    assert removed == [(100, 100, 1), (120, 120, 1)] and new == (100, 120, 3)
    # 85 at stream time 135: its own session [85, 85] (it does not reach 100 - 10) ends before 105: late.
    assert store.apply("k", "v", 85, 120, 135, *count) is None
    # The store drops [100, 120] once its end is <= stream time - retention.
    store.expire(149)
    assert store.sessions == [(100, 120, 3)]
    store.expire(150)
    assert store.sessions == []
    # Grace 0: a session that ended a gap before the stream time is gone for a record between the two.
    store = session_store.SessionStore(gap=10, grace=0, retention=10)
    store.apply("k", "v", 100, -1, 100, *count)
    store.apply("k", "v", 120, 100, 120, *count)
    assert store.apply("k", "v", 110, 120, 120, *count) == ([(120, 120, 1)], (110, 120, 2))


def _topology(between=None, regroup=False, materialized=None):
    builder = StreamsBuilder()
    stream = builder.stream("in")
    if between == "filter":
        stream = stream.filter(lambda k, v: v is not None)
    elif between == "map_values":
        stream = stream.map_values(lambda v: v)
    grouped = stream.group_by(lambda k, v: v) if regroup else stream.group_by_key()
    windowed = grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(seconds=5)))
    table = windowed.count(materialized) if materialized is not None else windowed.count()
    table.to_stream().to("out", Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.Long()))
    return builder


@pytest.mark.parametrize("between, own", [(None, False), ("map_values", False), ("filter", True)])
def test_compile_gives_own_clocks_where_the_task_stream_time_is_not_the_aggregations(between, own):
    program = compile_topology(_topology(between), "app").program(0)
    (node,) = [n for n in program.nodes if n.kind == "session_aggregate"]
    assert node.options["gap"] == 5000 and node.options["retention"] == 5000
    # With its own clocks (own_stream_time.py) it runs task-grouped and the task's stream time goes unused.
    assert program.task_grouped is own and program.uses_stream_time is not own


def test_compile_after_group_by_reads_the_repartition_topic():
    compiled = compile_topology(_topology("filter", regroup=True), "app")
    assert not compiled.program(0).uses_stream_time
    assert compiled.program(1).uses_stream_time


def test_key_group_emits_final_state_per_windowed_key_and_counts_late_records():
    compiled = compile_topology(_topology(), "app")
    program = compiled.program(0)

    def frame(timestamps, stream_times):
        n = len(timestamps)
        return pd.DataFrame({
            "key": [b"k"] * n, "value": [b"v"] * n, "topic": ["in"] * n, "partition": [0] * n,
            "offset": list(range(n)), "timestamp": [None] * n, "event_time": timestamps,
            "merge_time": timestamps, "stream_time": stream_times, "seq": list(range(n)),
        })

    serde = WindowedSerde(Serdes.String(), session=True)

    def rows(out):
        return [(t, None if k is None else serde.deserialize(k), None if v is None else struct.unpack(">q", v)[0])
                for t, k, v in zip(out.topic, out.key, out.value)]

    out, state = program.process_key_group(frame([10000, 20000], [10000, 20000]), None, None)
    assert sorted(rows(out), key=str) == sorted([("out", Windowed("k", Window(10000, 10000)), 1),
                                                 ("out", Windowed("k", Window(20000, 20000)), 1)], key=str)
    # Next batch: 15000 merges with [20000] (close time 20000 - 5000 - 0 = 15000 <= merged end); [10000] has
    # left the store (end <= stream time 20000 - retention 5000) and is forgotten; 1000 is late.
    out, state = program.process_key_group(frame([15000, 1000], [20000, 20000]), state, 20000)
    got = rows(out)
    assert sorted(got, key=str) == sorted([
        ("out", Windowed("k", Window(15000, 20000)), 2),
        ("out", Windowed("k", Window(20000, 20000)), None),
        (DROPPED_LATE_TOPIC, None, None),
    ], key=str)
    (stored,) = [pickle.loads(blob) for blob in state]
    assert stored == ((15000, 20000, 2),)


def test_session_windowed_key_bytes_are_kafka_streams():
    # SessionKeySchema.toBinary: key bytes, then end, then start (8-byte big-endian each).
    serde = WindowedSerde(Serdes.String(), session=True)
    data = serde.serialize(Windowed("ab", Window(5, 9)))
    assert data == b"ab" + struct.pack(">qq", 9, 5)
    assert serde.deserialize(data) == Windowed("ab", Window(5, 9))


def test_without_record_cache_every_update_is_forwarded_in_order():
    program = compile_topology(_topology(materialized=Materialized.as_("s").with_caching_disabled()), "app").program(0)
    (node,) = [n for n in program.nodes if n.kind == "session_aggregate"]
    assert not node.cached
    timestamps = [10000, 20000, 15000, 16000]
    n = len(timestamps)
    records = pd.DataFrame({
        "key": [b"k"] * n, "value": [b"v"] * n, "topic": ["in"] * n, "partition": [0] * n,
        "offset": list(range(n)), "timestamp": [None] * n, "event_time": timestamps, "merge_time": timestamps,
        "stream_time": [10000, 20000, 20000, 20000], "seq": list(range(n)),
    })
    out, _ = program.process_key_group(records, None, None)
    serde = WindowedSerde(Serdes.String(), session=True)
    got = [(serde.deserialize(k).window, None if v is None else struct.unpack(">q", v)[0])
           for k, v in zip(out.key, out.value)]
    assert got == [
        (Window(10000, 10000), 1), (Window(20000, 20000), 1),
        (Window(20000, 20000), None), (Window(15000, 20000), 2),
        (Window(15000, 20000), None), (Window(15000, 20000), 3),
    ]


@pytest.mark.parametrize("before, cached, merged", [(20000, False, False), (19999, False, True), (20000, True, True)])
def test_stream_time_before_the_record_decides_what_the_store_still_holds(before, cached, merged):
    """Grace 0, gap 5 s: a session ending at t - gap is in the store for a record at t = stream time
    only if no earlier record of the task (any key) already had timestamp t; with the record cache on it
    is returned anyway (CachingSessionStore: the cache holds it until the commit, the batch's end)."""
    materialized = Materialized.as_("counts") if cached else Materialized.as_("counts").with_caching_disabled()
    program = compile_topology(_topology(materialized=materialized), "app").program(0)
    records = pd.DataFrame({
        "key": [b"k", b"k"], "value": [b"v", b"v"], "topic": ["in", "in"], "partition": [0, 0], "offset": [0, 1],
        "timestamp": [None, None], "event_time": [15000, 20000], "merge_time": [15000, 20000],
        "stream_time": [15000, 20000], "stream_time_before": [-1, before], "seq": [0, 1],
    })
    out, state = program.process_key_group(records, None, None)
    (stored,) = [pickle.loads(blob) for blob in state]
    assert stored == (((15000, 20000, 2),) if merged else ((20000, 20000, 1),))
