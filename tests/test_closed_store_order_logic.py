"""The order and the cut of what an aggregation emitting on window close fetches from a store that is not
Kafka Streams' time-ordered one (:class:`~dagster_kstreams.processors.window_close.ClosedWindows`,
:class:`~dagster_kstreams.processors.session_close.ClosedSessions`): an ``InMemoryWindowStore``, a RocksDB
supplier's segmented store, an ``InMemorySessionStore``; without Spark. What the runner takes and refuses of
those stores is in ``test_store_suppliers_logic.py``."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from dagster_kstreams.processors.session_close import ClosedSessions
from dagster_kstreams.processors.window_close import ClosedWindows
from dagster_kstreams.topology import TimeWindows

MS = timedelta(milliseconds=1)
HOPPING = TimeWindows.of_size_and_grace(10 * MS, 5 * MS).advance_by(5 * MS)


@given(st.lists(st.tuples(st.integers(0, 60), st.sampled_from([b"a", b"b", b"ab"])), max_size=12),
       st.integers(0, 80), st.integers(15, 30))
def test_an_in_memory_store_emits_the_time_ordered_ones_windows_but_the_one_at_its_retention(puts, close, retention):
    """InMemoryWindowStore.fetchAll starts one later than the time-ordered store: the same windows in the
    same order, but for those starting exactly at the store's time minus the retention."""
    results = {}
    for in_memory in (False, True):
        closed = ClosedWindows(in_memory)
        for start, key in puts:
            closed.put(start, key, key, key.decode(), deleted=False)
        results[in_memory] = closed.due(HOPPING, close, retention)
    edge = max((start for start, _ in puts), default=-1) - retention
    assert results[True] == [window for window in results[False] if window[0] != edge]


@given(st.lists(st.tuples(st.integers(0, 400_000), st.sampled_from([b"a", b"b", b"ab", b"b\x00"])), max_size=12),
       st.integers(0, 500_000), st.integers(15, 300_000))
def test_a_rocksdb_supplier_emits_the_in_memory_ones_windows_by_segment_then_key_then_start(puts, close, retention):
    """The segmented store's fetchAll returns what InMemoryWindowStore's does (both start one after the
    time-ordered store), ordered by segment, then by its key bytes (serialized key, then big-endian start)."""
    interval = max(retention // 2, 60_000)
    in_memory, segmented = ClosedWindows(in_memory=True), ClosedWindows(segment_interval=interval)
    for start, key in puts:
        for closed in (in_memory, segmented):
            closed.put(start, key, key, key.decode(), deleted=False)
    expected = in_memory.due(HOPPING, close, retention)
    emitted = segmented.due(HOPPING, close, retention)
    assert sorted(emitted) == sorted(expected)
    order = [(start // interval, key + start.to_bytes(8, "big")) for start, key, _ in emitted]
    assert order == sorted(order)


def test_a_rocksdb_supplier_emits_a_segment_by_key_before_the_next_segment():
    """Two keys whose byte order is not their windows' start order, windows in two segments of 60 s."""
    closed = ClosedWindows(segment_interval=60_000)
    for start, key in ((45_000, b"b"), (50_000, b"b"), (50_000, b"a"), (55_000, b"a"), (60_000, b"b"),
                       (65_000, b"a"), (60_000, b"a")):
        closed.put(start, key, key, key.decode(), deleted=False)
    windows = TimeWindows.of_size_and_grace(10_000 * MS, 5_000 * MS).advance_by(5_000 * MS)
    emitted = [(key, start) for start, key, _ in closed.due(windows, 85_000, 60_000)]
    assert emitted == [(b"a", 50_000), (b"a", 55_000), (b"b", 45_000), (b"b", 50_000),
                       (b"a", 60_000), (b"a", 65_000), (b"b", 60_000)]


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 6), st.sampled_from([b"a", b"b", b"ab"])), max_size=12),
       st.integers(0, 30), st.integers(10, 20))
def test_an_in_memory_store_emits_the_time_ordered_ones_sessions_in_its_own_order_but_those_past_retention(
        puts, close, retention):
    """InMemorySessionStore.findSessions(earliest_end, latest_end) returns the time-ordered store's sessions
    (whose segments outlive these times) by end, then key, then start descending, but for those ending
    before the store's time (the largest end put) minus the retention plus 1."""
    results = {}
    for in_memory in (False, True):
        closed = ClosedSessions(in_memory)
        for end, length, key in puts:
            closed.put(max(0, end - length), end, key, key.decode(), f"{key.decode()}@{end}")
        results[in_memory] = closed.due(close, retention)
    kept_from = max((end for end, _, _ in puts), default=-1) - retention + 1
    assert results[True] == sorted((session for session in results[False] if session[1] >= kept_from),
                                   key=lambda session: (session[1], session[2], -session[0]))


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 6), st.sampled_from([b"a", b"b"])), max_size=10),
       st.lists(st.tuples(st.integers(0, 60), st.sampled_from([b"a", b"b", b"c"])), max_size=6),
       st.integers(0, 30), st.integers(10, 20))
def test_an_in_memory_session_stores_remove_leaves_its_time_where_a_null_put_moves_it(puts, removes, close, retention):
    """A processor's ``remove`` of a session the in-memory store does not hold (any end, ahead of its time
    too) changes nothing the emit fetches; a ``put`` of None of the same sessions moves the store's time,
    so the emit no longer returns the sessions ending before it minus the retention plus 1."""
    def emitted(null_puts_observe):
        closed = ClosedSessions(in_memory=True)
        for end, length, key in puts:
            closed.put(max(0, end - length), end, key, key.decode(), f"{key.decode()}@{end}")
        for end, key in removes:
            if key == b"c" or end > 20:  # a session not stored
                closed.put(end, end, key, key.decode(), None, observes=null_puts_observe)
        return closed.due(close, retention), closed.store_time

    untouched = ClosedSessions(in_memory=True)
    for end, length, key in puts:
        untouched.put(max(0, end - length), end, key, key.decode(), f"{key.decode()}@{end}")
    expected = untouched.due(close, retention)
    assert emitted(False) == (expected, untouched.store_time)
    after_null_puts, store_time = emitted(True)
    assert after_null_puts == [session for session in expected if session[1] >= store_time - retention + 1]
