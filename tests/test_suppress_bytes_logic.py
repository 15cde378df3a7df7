"""Suppression buffers bounded in bytes and buffers that shut down when full: the size Kafka Streams
4.3.1 counts per buffered record (``InMemoryTimeOrderedKeyValueChangeBuffer.computeRecordSize``,
``BufferValue.residentMemorySizeEstimate``, ``ProcessorRecordContext.residentMemorySizeEstimate``),
the buffer's running total, and what the processor does when the buffer is over its bounds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_suppress_logic import COUNTS, _long, _program, _run, _windowed
from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.processors.suppress import SuppressionBuffer
from dagster_kstreams.processors.suppress_size import buffered_record_size, java_char_length, record_context_size
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed
from dagster_kstreams.topology.windows import TimeWindows

# From the sources: 8 (buffer time) + key bytes, values, and the record context's 8 (timestamp)
# + 8 (offset) + 4 (partition) + topic chars + per header: name chars + value bytes.
FIXED = 8 + 8 + 8 + 4


def test_record_size_counts_what_kafka_streams_counts():
    assert buffered_record_size(b"k1", None, None, b"abc", "in", None) == FIXED + 2 + 3 + 2
    # a tombstone with an old value: the old value only
    assert buffered_record_size(b"k1", b"abc", b"abc", None, "in", None) == FIXED + 2 + 3 + 2
    # BufferValue shares the prior and old arrays when they are equal: counted once
    assert buffered_record_size(b"k", b"vv", b"vv", b"w", "t", []) == FIXED + 1 + 2 + 1 + 1
    assert buffered_record_size(b"k", b"vv", b"uuu", b"w", "t", []) == FIXED + 1 + 2 + 3 + 1 + 1
    assert buffered_record_size(b"k", None, b"uuu", None, "t", []) == FIXED + 1 + 3 + 1
    # headers: the name in Java chars (UTF-16 units) plus the value's bytes; a null value counts 0
    headers = [{"key": "h", "value": b"xy"}, {"key": "\u00e9", "value": None}, {"key": "\U0001d11e", "value": b""}]
    assert record_context_size("topic", headers) == 20 + 5 + (1 + 2) + 1 + 2
    assert record_context_size(None, [("h", b"x")]) == 20 + 2


@given(st.text(max_size=20))
def test_java_char_length_is_utf16_code_units(text):
    assert java_char_length(text) == len(text.encode("utf-16-le")) // 2


_PUTS = st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c"]), st.integers(0, 10), st.integers(0, 50),
                           st.booleans()), max_size=40)


@settings(max_examples=200)
@given(_PUTS)
def test_buffer_size_is_the_sum_of_each_buffered_keys_latest_size(operations):
    """Kafka Streams adds a new key's size, replaces an updated key's, subtracts an evicted one's."""
    buffer, model = SuppressionBuffer(), {}
    for key, time, size, evict in operations:
        if evict and len(buffer):
            evicted_key = next(iter(buffer.over(len(buffer) - 1)))[0]
            del model[evicted_key]
        buffer.put(time, key, key, None, time, None, size, None)
        model[key] = size
        assert buffer.size_bytes == sum(model.values())
        assert buffer.over_capacity(None, sum(model.values()) - 1) == bool(model)
        assert not buffer.over_capacity(None, sum(model.values()))


def test_prior_value_is_the_old_value_of_the_update_that_first_buffered_the_key():
    buffer = SuppressionBuffer()
    assert buffer.prior_value(b"k", b"old") == b"old"
    buffer.put(0, b"k", "k", "v", 0, None, 10, None)
    assert buffer.prior_value(b"k", b"newer old") is None  # first buffered with no old value
    list(buffer.over(0))
    assert buffer.prior_value(b"k", b"o") == b"o" and buffer.size_bytes == 0


def _limited(config):
    def build(builder):
        builder.table("in", Materialized.as_("t").with_caching_disabled()) \
            .suppress(Suppressed.until_time_limit(timedelta(seconds=10), config)).to_stream().to("out")
    return _program(build)


# Sizes on topic "in" with no headers: 8 + key + values + 20 + 2.
_ROWS = [("k1", "a", 1_000),   # 33: no old value
         ("k2", "b", 2_000),   # 33: 66 buffered
         ("k1", "c", 3_000),   # 34: old "a" counts (the prior is null): 67 buffered, not over 67
         ("k1", "dd", 3_500),  # 35: 68 > 67, k1 (oldest) goes out early with its latest value
         ("k3", "e", 4_000)]   # 33: 66


def test_max_bytes_emits_early_as_kafka_streams_sizes_records():
    assert _run(_limited(BufferConfig.max_bytes(67).emit_early_when_full()), _ROWS) == [("out", b"k1", b"dd")]
    assert _run(_limited(BufferConfig.max_bytes(101)), _ROWS, 5) == []  # 101 at the end: not over
    assert _run(_limited(BufferConfig.max_bytes(100)), _ROWS, 5) == [("out", b"k1", b"dd")]
    # both bounds: whichever is passed first
    assert _run(_limited(BufferConfig.max_records(1).with_max_bytes(1_000)), _ROWS) == \
        [("out", b"k1", b"a"), ("out", b"k2", b"b"), ("out", b"k1", b"dd")]
    assert _run(_limited(BufferConfig.max_records(5).with_max_bytes(67)), _ROWS) == [("out", b"k1", b"dd")]


def test_shut_down_when_full_fails_at_the_record_that_overfills_the_buffer():
    with pytest.raises(ProcessingError, match=r"suppression KTABLE-SUPPRESS-0000000002 buffer exceeded its max "
                                              r"capacity \(shut_down_when_full\)\. Currently \[2/unbounded\] records "
                                              r"and \[68/67\] bytes, at the record at topic 'in' partition 0 offset 3;"):
        _run(_limited(BufferConfig.max_bytes(67).shut_down_when_full()), _ROWS)
    with pytest.raises(ProcessingError, match=r"Currently \[3/2\] records, at the record at topic 'in' partition 0 "
                                              r"offset 4;"):
        _run(_limited(BufferConfig.max_records(2).shut_down_when_full()), _ROWS, 2)
    assert _run(_limited(BufferConfig.max_records(3).shut_down_when_full()), _ROWS) == []


def test_a_time_windowed_table_bounded_in_bytes_counts_each_updates_old_value():
    """A new window's old value is the initializer's (count: 0), 8 bytes of the record's size, as
    Kafka Streams counts it: a bound of exactly that size holds the record, one byte less does not."""
    size = buffered_record_size(_windowed("a", 0), _long(0), _long(0), _long(1), "in", None)

    def build(bound):
        return lambda builder: builder.stream("in").group_by_key() \
            .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=10))) \
            .count(Materialized.as_("counts").with_caching_disabled()) \
            .suppress(Suppressed.until_window_closes(BufferConfig.max_bytes(bound).shut_down_when_full())) \
            .to_stream().to("out", COUNTS)

    assert _run(_program(build(size)), [("a", "1", 1_000)]) == []
    with pytest.raises(ProcessingError, match=rf"Currently \[1/unbounded\] records and \[{size}/{size - 1}\] bytes"):
        _run(_program(build(size - 1)), [("a", "1", 1_000)])


def test_a_windowed_suppression_bounded_in_records_shuts_down_when_a_window_too_many_is_buffered():
    def build(builder):
        builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=10))) \
            .count(Materialized.as_("counts").with_caching_disabled()) \
            .suppress(Suppressed.until_window_closes(BufferConfig.max_records(2).shut_down_when_full())) \
            .to_stream().to("out", COUNTS)
    rows = [("a", "1", 1_000), ("b", "1", 2_000), ("a", "1", 3_000), ("c", "1", 4_000)]
    with pytest.raises(ProcessingError, match=r"Currently \[3/2\] records, at the record at topic 'in' partition 0 "
                                              r"offset 3;"):
        _run(_program(build), rows)
    # windows that close first make room: the first two go out, the next two wait within the bound
    closing = [("a", "1", 1_000), ("b", "1", 2_000), ("a", "1", 12_000), ("c", "1", 13_000)]
    assert [key[:1] for _, key, _ in _run(_program(build), closing)] == [b"a", b"b"]
