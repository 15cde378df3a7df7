"""A windowed aggregation emitting on update over a plain RocksDB supplier's store, which keeps no
timestamps (:mod:`dagster_kstreams.processors.plain_window_store`): the runner's updates against a model of
``KStreamWindowAggregate`` over ``WindowToTimestampedWindowByteStoreAdapter`` on any input (hypothesis), the
sliding algorithm reading the stamps back as -1, and what the runner takes and still refuses, by name.
Compared with Kafka Streams in tests/test_equivalence_kstreams_window_scenarios.py (out-plain-rocksdb*)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from supplier_topologies import cogroup_count, runnable, windowed_count
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.plain_window_store import NO_TIMESTAMP, ForgetsTimestamps
from dagster_kstreams.processors.window_store import process_sliding_windows, process_time_windows
from dagster_kstreams.topology import SlidingWindows, Stores, TimeWindows

MS = timedelta(milliseconds=1)
HOPPING = TimeWindows.of_size_and_grace(10 * MS, 90 * MS).advance_by(5 * MS)
SLIDING = SlidingWindows.of_time_difference_and_grace(10 * MS, 90 * MS)
PLAIN = Stores.persistent_window_store("counts", 100 * MS, 10 * MS, False)
PLAIN_SLIDING = Stores.persistent_window_store("counts", 110 * MS, 10 * MS, False)


def _concatenate(key, value, aggregate):
    return f"{aggregate}+{value}"


def _kafka_streams_time_windows(records) -> list:
    """``KStreamWindowAggregate`` over the adapter (one key; ``records``: timestamps, in order): each
    forwarded (start, aggregate, timestamp). The adapter's fetch returns a stored aggregate stamped -1, so
    ``newTimestamp = max(record timestamp, -1)``."""
    stream_time, kept, out = None, {}, []
    for timestamp in records:
        stream_time = timestamp if stream_time is None else max(stream_time, timestamp)
        for start, end in HOPPING.windows_for(timestamp):
            if end <= stream_time - HOPPING.grace_ms:
                continue
            old = kept.get(start)
            new_timestamp = timestamp if old is None else max(timestamp, NO_TIMESTAMP)
            kept[start] = f"{'' if old is None else old}+{timestamp}"
            out.append((start, kept[start], new_timestamp))
    return out


def _runner_time_windows(records) -> list:
    stream_time, store, out = None, {}, []
    algorithm = ForgetsTimestamps(process_time_windows)
    for timestamp in records:
        stream_time = timestamp if stream_time is None else max(stream_time, timestamp)
        updates, _ = algorithm(HOPPING, store, "k", timestamp, timestamp, stream_time, lambda: "", _concatenate)
        out += [(start, new, new_timestamp) for start, _end, new, new_timestamp, _old in updates]
    return out


@given(st.lists(st.integers(min_value=0, max_value=150), max_size=25))
def test_time_windows_over_a_plain_store_stamp_each_update_with_its_record(records):
    assert _runner_time_windows(records) == _kafka_streams_time_windows(records)


@given(st.lists(st.integers(min_value=0, max_value=150), min_size=1, max_size=25))
def test_the_store_keeps_every_window_stamped_minus_one(records):
    store, stream_time = {}, 0
    for timestamp in records:
        stream_time = max(stream_time, timestamp)
        ForgetsTimestamps(process_sliding_windows)(SLIDING, store, "k", timestamp, timestamp, stream_time,
                                                   lambda: "", _concatenate)
    assert store and all(timestamp == NO_TIMESTAMP for _aggregate, timestamp in store.values())


def test_an_out_of_order_record_stamps_its_windows_update_with_its_own_timestamp():
    """A timestamped store would stamp the window [0, 10) with 8, the largest of its records."""
    assert _runner_time_windows([8, 3]) == [(0, "+8", 8), (5, "+8", 8), (0, "+8+3", 3)]


def test_a_sliding_record_before_another_copies_no_right_window_from_a_plain_store():
    """``rightWindowIsNotEmpty``: the window after the record holds records later than it only by the
    window's timestamp, which the plain store returns as -1: Kafka Streams creates no right window."""
    plain, timestamped = {}, {}
    for timestamp in (20, 15):
        ForgetsTimestamps(process_sliding_windows)(SLIDING, plain, "k", timestamp, timestamp, 20, lambda: "",
                                                   _concatenate)
        process_sliding_windows(SLIDING, timestamped, "k", timestamp, timestamp, 20, lambda: "", _concatenate)
    assert 16 in timestamped and 16 not in plain


def test_a_sliding_records_new_left_window_starts_from_the_initializer_over_a_plain_store():
    """The window before the record (ending at 10) reads as holding records at -1, outside the record's
    left window [5, 15]: Kafka Streams starts it from the initializer, and makes no right window at 11."""
    plain, timestamped = {}, {}
    for timestamp in (10, 15):
        ForgetsTimestamps(process_sliding_windows)(SLIDING, plain, "k", timestamp, timestamp, 15, lambda: "",
                                                   _concatenate)
        process_sliding_windows(SLIDING, timestamped, "k", timestamp, timestamp, 15, lambda: "", _concatenate)
    assert (plain[5], timestamped[5][0]) == (("+15", NO_TIMESTAMP), "+10+15")
    assert 11 in timestamped and 11 not in plain


# ---- what the runner takes and refuses ------------------------------------------------------

@pytest.mark.parametrize("windows, supplier", [(HOPPING, PLAIN), (SLIDING, PLAIN_SLIDING)])
def test_the_runner_takes_a_plain_rocksdb_store_uncached_on_update(windows, supplier):
    runnable(windowed_count(windows, supplier))


WHERE = "processor KSTREAM-AGGREGATE-0000000001: store counts's supplier is a plain RocksDB window store"


@pytest.mark.parametrize("topology, reason", [
    (lambda: windowed_count(HOPPING, PLAIN, cached=True), "with the record cache on: Kafka Streams' caching store returns"),
    (lambda: windowed_count(SLIDING, PLAIN_SLIDING, cached=True), "with the record cache on"),
    (lambda: windowed_count(HOPPING, PLAIN, read_by_processor=True), "read by a user processor"),
    (lambda: windowed_count(HOPPING, PLAIN, joined=True), "beside a processor that may read its table through its value"),
])
def test_the_runner_still_refuses_a_plain_rocksdb_store_naming_processor_and_store(topology, reason):
    with pytest.raises(UnsupportedTopologyError, match=f"{WHERE}, which keeps no timestamps .*, {reason}"):
        runnable(topology())


def test_the_runner_still_refuses_a_cogroups_plain_rocksdb_store():
    with pytest.raises(UnsupportedTopologyError, match=r"processor COGROUPKSTREAM-AGGREGATE-\d+: store counts's "
                                                       r"supplier is a plain RocksDB window store, .*, as a cogroup's"):
        runnable(cogroup_count(HOPPING, PLAIN))
