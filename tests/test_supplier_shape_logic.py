"""A time-windowed aggregation whose store's supplier keeps less than its windows stay open
(:mod:`dagster_kstreams.processors.supplier_shape`): the runner's reads against a model of Kafka
Streams' store (its observed time, its fetch cut, its dropped puts) on any input (hypothesis), and what
the runner takes and still refuses, by name. Compared with Kafka Streams in
tests/test_equivalence_kstreams_window_scenarios.py (out-short-kept-*)."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from supplier_topologies import cogroup_count, runnable, windowed_count
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.supplier_shape import expired_puts, store_time
from dagster_kstreams.processors.window_store import expire, process_time_windows
from dagster_kstreams.topology import SlidingWindows, Stores, TimeWindows

MS = timedelta(milliseconds=1)
HOPPING = TimeWindows.of_size_and_grace(10 * MS, 90 * MS).advance_by(5 * MS)


def _kafka_streams_updates(windows: TimeWindows, retention: int, records) -> list:
    """``KStreamWindowAggregate`` over ``InMemoryWindowStore`` (one key; ``records``: timestamps): the
    forwarded (start, aggregate) of each record, the store answering by its observed time, and then the
    number of puts it dropped."""
    stream_time, observed, kept, out, dropped = None, None, {}, [], 0
    for timestamp in records:
        stream_time = timestamp if stream_time is None else max(stream_time, timestamp)
        for start, end in windows.windows_for(timestamp):
            if end <= stream_time - windows.grace_ms:
                continue  # late: dropped
            gone = observed is not None and start <= observed - retention
            aggregate = ("" if gone else kept.get(start, "")) + f"+{timestamp}"
            observed = start if observed is None else max(observed, start)
            if start > observed - retention:
                kept[start] = aggregate
            else:
                dropped += 1
            out.append((start, aggregate))
    return out + [dropped]


def _runner_updates(windows: TimeWindows, retention: int, records) -> list:
    """The runner's: one key's windows expired by :func:`store_time` of the stream time after each record."""
    stream_time, store, out, dropped = None, {}, [], 0
    aggregate = SimpleNamespace(windows=windows, retention=retention, store_in_memory=True, emit_on_close=False,
                                observes_store_time=False)
    for timestamp in records:
        stream_time = timestamp if stream_time is None else max(stream_time, timestamp)
        expire(store, store_time(windows, stream_time), retention)
        updates, _ = process_time_windows(windows, store, "k", timestamp, timestamp, stream_time,
                                          lambda: "", lambda key, value, aggregate: f"{aggregate}+{value}")
        out += [(start, new) for start, _end, new, _timestamp, _old in updates]
        dropped += expired_puts(aggregate, updates, store_time(windows, stream_time))
    return out + [dropped]


@given(size=st.integers(2, 12), advance=st.integers(2, 12), grace=st.integers(0, 40), extra=st.integers(0, 40),
       records=st.lists(st.integers(0, 80), min_size=1, max_size=60))
@example(size=10, advance=5, grace=40, extra=22, records=[60, 63, 33, 36])  # the cut between store and stream time
def test_the_runner_reads_what_the_suppliers_store_returns(size, advance, grace, extra, records):
    windows = TimeWindows.of_size_and_grace(size * MS, grace * MS).advance_by(min(advance, size) * MS)
    retention = size + min(extra, grace)  # from the size (Stores' floor) to the DSL's own size + grace
    assert _runner_updates(windows, retention, records) == _kafka_streams_updates(windows, retention, records)


@given(records=st.lists(st.integers(0, 10_000), min_size=1, max_size=30))
def test_the_store_time_is_the_last_window_start_put(records):
    """The largest window start put by the records (all but late windows) is the last one of the stream time."""
    starts = [start for seen, timestamp in enumerate(records, start=1) for start, end in HOPPING.windows_for(timestamp)
              if end > max(records[:seen]) - HOPPING.grace_ms]
    assert store_time(HOPPING, max(records)) == max(starts)


def test_a_rocksdb_store_drops_a_put_only_into_a_segment_before_the_cuts():
    """Segments of a minute (``max(retention / 2, 60 s)``), kept 11 s: at store time 62 s (cut 51 s) a put at
    50 s goes into the live segment 0 (not returned, but kept); at 72 s (cut 61 s, segment 1) the puts at 58 s
    and 59 s go into the expired segment 0 and are dropped, the one at 60 s is kept. In memory, 50 s is dropped."""
    aggregate = SimpleNamespace(windows=HOPPING, retention=11_000, store_in_memory=False, emit_on_close=False,
                                observes_store_time=False)
    assert expired_puts(aggregate, [(50_000,), (58_000,)], 62_000) == 0
    assert expired_puts(aggregate, [(58_000,), (59_000,), (60_000,)], 72_000) == 2
    assert expired_puts(SimpleNamespace(**{**vars(aggregate), "store_in_memory": True}), [(50_000,)], 62_000) == 1
    assert expired_puts(SimpleNamespace(**{**vars(aggregate), "emit_on_close": True}), [(58_000,)], 72_000) == 0


def test_the_stream_time_would_keep_a_window_the_store_no_longer_returns():
    """Kept 32 ms with windows every 5 ms: at stream time 63 the store's time is 60, and its cut (28) keeps
    the window at 30 that the stream time's (31) would drop; and Kafka Streams reads it."""
    records = [60, 63, 33, 36]
    assert store_time(HOPPING, 63) == 60
    assert (30, "+33+36") in _kafka_streams_updates(HOPPING, 32, records)
    assert _runner_updates(HOPPING, 32, records) == _kafka_streams_updates(HOPPING, 32, records)


# ---- what the runner takes and refuses, when defined ------------------------------------------

@pytest.mark.parametrize("supplier", [Stores.in_memory_window_store("counts", 32 * MS, 10 * MS, False),
                                      Stores.persistent_timestamped_window_store("counts", 10 * MS, 10 * MS, False)])
def test_the_runner_takes_a_time_windowed_store_kept_less_than_its_windows_uncached(supplier):
    runnable(windowed_count(HOPPING, supplier))


SHORT = Stores.in_memory_window_store("counts", 32 * MS, 10 * MS, False)
WHERE = "processor KSTREAM-AGGREGATE-0000000001: store counts's supplier keeps 32 ms, less than the 100 ms"


@pytest.mark.parametrize("topology, reason", [
    (lambda: windowed_count(HOPPING, SHORT, cached=True), "with the record cache on"),
    (lambda: windowed_count(HOPPING, SHORT, emit_on_close=True), "emitting on window close"),
    (lambda: windowed_count(HOPPING, SHORT, read_by_processor=True), "read by a user processor"),
])
def test_the_runner_still_refuses_a_short_kept_store_naming_processor_and_store(topology, reason):
    with pytest.raises(UnsupportedTopologyError, match=f"{WHERE} .*, {reason}"):
        runnable(topology())


def test_the_runner_still_refuses_a_short_kept_cogroup_store():
    with pytest.raises(UnsupportedTopologyError, match=r"processor COGROUPKSTREAM-AGGREGATE-\d+: store counts's "
                                                       r"supplier "
                                                       r"keeps 32 ms, .*, as a cogroup's store"):
        runnable(cogroup_count(HOPPING, SHORT))


OTHER_SIZE = Stores.in_memory_window_store("counts", 100 * MS, 20 * MS, False)


def test_the_runner_takes_a_time_windowed_store_of_another_window_size_uncached_on_update():
    runnable(windowed_count(HOPPING, OTHER_SIZE))


@pytest.mark.parametrize("topology, reason", [
    (lambda: windowed_count(HOPPING, OTHER_SIZE, cached=True), "with the record cache on"),
    (lambda: windowed_count(HOPPING, OTHER_SIZE, emit_on_close=True), "emitting on window close"),
    (lambda: windowed_count(HOPPING, OTHER_SIZE, read_by_processor=True), "read by a user processor"),
    (lambda: windowed_count(SlidingWindows.of_time_difference_and_grace(10 * MS, 80 * MS), OTHER_SIZE), "for sliding windows"),
])
def test_the_runner_still_refuses_a_store_of_another_window_size_naming_processor_and_store(topology, reason):
    with pytest.raises(UnsupportedTopologyError, match="processor KSTREAM-AGGREGATE-0000000001: store counts's "
                                                       f"supplier has a window size of 20 ms, not the windows' 10 ms, "
                                                       f"{reason}"):
        runnable(topology())


def test_the_runner_still_refuses_a_cogroups_store_of_another_window_size():
    with pytest.raises(UnsupportedTopologyError, match=r"processor COGROUPKSTREAM-AGGREGATE-\d+: store counts's "
                                                       r"supplier "
                                                       r"has a window size of 20 ms, .*, as a cogroup's store"):
        runnable(cogroup_count(HOPPING, OTHER_SIZE))


DUPLICATES = Stores.in_memory_window_store("counts", 100 * MS, 10 * MS, True)


def test_the_runner_takes_an_in_memory_store_retaining_duplicates_uncached_on_update():
    runnable(windowed_count(HOPPING, DUPLICATES))


@pytest.mark.parametrize("topology, reason", [
    (lambda: windowed_count(HOPPING, Stores.persistent_timestamped_window_store("counts", 100 * MS, 10 * MS, True)),
     "in RocksDB"),
    (lambda: windowed_count(HOPPING, DUPLICATES, cached=True), "with the record cache on"),
    (lambda: windowed_count(HOPPING, DUPLICATES, emit_on_close=True), "emitting on window close"),
    (lambda: windowed_count(HOPPING, DUPLICATES, read_by_processor=True), "read by a user processor"),
    (lambda: windowed_count(SlidingWindows.of_time_difference_and_grace(10 * MS, 80 * MS), DUPLICATES), "for sliding windows"),
    (lambda: cogroup_count(HOPPING, DUPLICATES), "as a cogroup's store"),
])
def test_the_runner_still_refuses_a_store_retaining_duplicates_naming_processor_and_store(topology, reason):
    with pytest.raises(UnsupportedTopologyError, match=r"processor (COGROUP)?KSTREAM-AGGREGATE-\d+: store counts's "
                                                       rf"supplier retains duplicates \(each update a new entry\), "
                                                       rf"{reason}"):
        runnable(topology())
