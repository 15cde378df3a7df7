"""A session-windowed aggregation whose store's supplier keeps less than its sessions stay open (gap plus
grace): the runner's reads (the key's sessions cut by the task's stream time before the record) and the puts it
counts as dropped (:func:`dagster_kstreams.processors.supplier_shape.expired_session_put`) against a model of
Kafka Streams' processor over the supplier's store (its observed time: the largest session end put), on any input
of two keys (hypothesis); and what stays refused, by name. Compared with Kafka Streams in
tests/test_equivalence_kstreams_window_scenarios.py (out-short-session-*)."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from supplier_topologies import STILL_REFUSED_SHORT, runnable, windowed_count
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.session_store import SessionStore
from dagster_kstreams.processors.supplier_shape import expired_session_put
from dagster_kstreams.processors.window_store import dsl_segment_interval
from dagster_kstreams.topology import SessionWindows, Stores

MS = timedelta(milliseconds=1)


def _kafka_streams(gap: int, grace: int, retention: int, in_memory: bool, rows) -> tuple[list, int]:
    """``KStreamSessionWindowAggregate`` over the supplier's session store (``rows``: (key, timestamp)): what it
    forwards ((key, start, end, aggregate or None)) and drops (late records, puts the store drops). The store's
    ``findSessions`` returns no session ending at or before its observed time minus the retention; its ``put``
    takes the session's end as that time if larger, then drops the session if it ends at or before the cut (in
    memory) or in a segment before the cut's (RocksDB, segments of ``max(retention / 2, 60 s)``)."""
    observed, store, forwarded, dropped, stream_time = -1, {}, [], 0, None
    for key, timestamp in rows:
        stream_time = timestamp if stream_time is None else max(stream_time, timestamp)
        first_end = max(timestamp - gap, observed - retention + 1)
        found = sorted(((start, end) for owner, start, end in store
                        if owner == key and end >= first_end and start <= timestamp + gap), key=lambda s: (s[1], s[0]))
        aggregate, start, end = "", timestamp, timestamp
        for found_start, found_end in found:
            aggregate = f"{aggregate}|{store[key, found_start, found_end]}"
            start, end = min(start, found_start), max(end, found_end)
        if end < stream_time - grace - gap:
            dropped += 1
            continue
        if (start, end) != (timestamp, timestamp):
            for found_start, found_end in found:
                del store[key, found_start, found_end]
                forwarded.append((key, found_start, found_end, None))
        aggregate = f"{aggregate}+{timestamp}"
        observed = max(observed, end)
        cut, interval = observed - retention, dsl_segment_interval(retention)
        if end <= cut if in_memory else end // interval < max(cut, 0) // interval:
            dropped += 1
        else:
            store[key, start, end] = aggregate
        forwarded.append((key, start, end, aggregate))
    return forwarded, dropped


def _runner(gap: int, grace: int, retention: int, in_memory: bool, rows) -> tuple[list, int]:
    """The runner's: each key's sessions (:class:`SessionStore`), cut by the task's stream time before the record
    (-1 before the first, Kafka Streams' no time), its dropped puts counted by :func:`expired_session_put`."""
    aggregate = SimpleNamespace(emit_on_close=False, observes_store_time=False, cached=False,
                                store_in_memory=in_memory, retention=retention)
    stores, forwarded, dropped, stream_time = {}, [], 0, None
    for key, timestamp in rows:
        before = -1 if stream_time is None else stream_time
        stream_time = timestamp if stream_time is None else max(stream_time, timestamp)
        store = stores.setdefault(key, SessionStore(gap, grace, retention, ()))
        result = store.apply(key, str(timestamp), timestamp, before, stream_time, lambda: "",
                             lambda k, value, agg: f"{agg}+{value}", lambda k, one, two: f"{one}|{two}")
        if result is None:
            dropped += 1
            continue
        removed, (start, end, new) = result
        forwarded += [(key, s_start, s_end, None) for s_start, s_end, _ in removed] + [(key, start, end, new)]
        dropped += expired_session_put(aggregate, end, before)
    return forwarded, dropped


@given(gap=st.integers(1, 10), grace=st.integers(0, 40), shorter=st.integers(1, 50), in_memory=st.booleans(),
       rows=st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 90)), min_size=1, max_size=40))
@example(gap=5, grace=90, shorter=50, in_memory=True,  # the window scenarios' partition 0, kept 45 ms
         rows=[("a", t) for t in (10, 11, 60, 12, 13, 61, 14, 63, 33, 36, 36)])
def test_a_short_kept_session_aggregation_reads_what_the_suppliers_store_returns(gap, grace, shorter, in_memory, rows):
    retention = max(1, gap + grace - shorter)
    assert _runner(gap, grace, retention, in_memory, rows) == _kafka_streams(gap, grace, retention, in_memory, rows)


def test_the_cut_drops_a_late_records_session_and_its_put():
    """Kept 45 ms: at 2512 the store's time is 2560, so the session [2510, 2511] is gone, and the record's new
    session [2512, 2512] is put at or below the cut: dropped in memory (counted), never read back either way."""
    rows = [("a", t) for t in (2510, 2511, 2560, 2512, 2513)]
    forwarded, dropped = _kafka_streams(5, 90, 45, True, rows)
    assert forwarded[-2:] == [("a", 2512, 2512, "+2512"), ("a", 2513, 2513, "+2513")] and dropped == 2
    assert _runner(5, 90, 45, True, rows) == (forwarded, dropped)
    assert _runner(5, 90, 45, False, rows) == _kafka_streams(5, 90, 45, False, rows) == (forwarded, 0)


# ---- what the runner takes and still refuses, when defined -----------------------------------------

SESSIONS = SessionWindows.of_inactivity_gap_and_grace(10 * MS, 90 * MS)
WHERE = "processor KSTREAM-AGGREGATE-0000000001: store counts's supplier keeps 32 ms, less than the 100 ms"


@pytest.mark.parametrize("supplier", [Stores.in_memory_session_store("counts", 32 * MS),
                                      Stores.persistent_session_store("counts", 32 * MS)])
def test_the_runner_takes_a_session_store_kept_less_than_its_sessions_uncached_on_update(supplier):
    runnable(windowed_count(SESSIONS, supplier))


@pytest.mark.parametrize("options, reason", STILL_REFUSED_SHORT)
def test_the_runner_still_refuses_a_short_kept_session_store_naming_processor_and_store(options, reason):
    with pytest.raises(UnsupportedTopologyError, match=f"{WHERE} .*, {reason}"):
        runnable(windowed_count(SESSIONS, Stores.in_memory_session_store("counts", 32 * MS), **options))
