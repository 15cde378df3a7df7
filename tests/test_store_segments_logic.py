"""The segment of a time in a segmented store, as Kafka Streams 4.3.1's ``AbstractSegments.segmentId``
finds it (Java's long division, toward zero), and the order it gives a user processor's RocksDB window
store's range reads over negative window starts (``dagster_kstreams/processors/store_segments.py``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dagster_kstreams.processors.store_segments import segment_id
from dagster_kstreams.processors.user_window_store import WindowStore
from dagster_kstreams.topology.processor_api import Stores
from dagster_kstreams.topology.serdes import Serdes


def test_a_negative_time_lies_in_the_segment_java_division_gives():
    assert [segment_id(t, 60_000) for t in (-5, -59_999, -60_000, -60_001, -120_000, 0, 59_999, 60_000)] == \
        [0, 0, -1, -1, -2, 0, 0, 1]


@given(st.integers(-2**62, 2**62), st.integers(1, 2**40))
def test_the_segment_is_the_quotient_truncated_toward_zero(timestamp, interval):
    segment = segment_id(timestamp, interval)
    remainder = timestamp - segment * interval
    # Java's division: |remainder| < interval, and the remainder has the dividend's sign (or is 0)
    assert abs(remainder) < interval
    assert remainder == 0 or (remainder > 0) == (timestamp > 0)


def test_range_reads_of_a_rocksdb_window_store_go_by_java_segments_then_store_key_bytes():
    """Kafka Streams files -5 in segment 0 with 10, after it (the 8-byte start's bytes: -5 is 0xFF...),
    and -100 001 in segment -1 (100 000 ms segments: 200 000 ms of retention)."""
    store = WindowStore("w", Serdes.String(), Serdes.String(),
                        Stores.persistent_window_store("w", 200_000, 100, False), {})
    for value, start in (("near", -5), ("pos", 10), ("far", -100_001)):
        store.put("a", value, start)
    assert [entry.value for entry in store.fetch_all(-200_000, 100)] == ["far", "pos", "near"]
    assert [entry.value for entry in store.fetch("a", "a", -200_000, 100)] == ["far", "pos", "near"]
    assert [entry.value for entry in store.backward_fetch_all(-200_000, 100)] == ["near", "pos", "far"]
    assert [entry.value for entry in store.all()] == ["pos"]  # all() reads from time 0, as Kafka Streams'
