"""The old values a windowed aggregation sends to a suppression (a filter on the way, a buffer
bounded in bytes), without Spark: what ``KStreamWindowAggregate``, ``KStreamSlidingWindowAggregate``
and ``KStreamSessionWindowAggregate`` (4.3.1) send as ``Change.oldValue`` once asked, and what a
filter and the buffer then do with it. The broker-backed comparison with Kafka Streams is
test_equivalence_suppress.py."""

from __future__ import annotations

from datetime import timedelta

import pytest

from test_suppress_logic import COUNTS, SECONDS, STRINGS, _long, _program, _run, _windowed
from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.processors.suppress_size import buffered_record_size
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes, Window, Windowed, WindowedSerde
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows, TimeWindows

SESSION_KEYS = WindowedSerde(Serdes.String(), session=True)
SESSION_COUNTS = Produced.with_(SESSION_KEYS, Serdes.Long())


def _session(key: str, start: int, end: int) -> bytes:
    return SESSION_KEYS.serialize(Windowed(key, Window(start, end)))


def test_a_new_windows_initializer_is_called_once_when_old_values_are_sent():
    """KStreamWindowAggregate calls the initializer once per new window and sends that very value as
    the old one: sending old values (a filter before the suppression) calls it no more often."""
    calls = []

    def initializer():
        calls.append(1)
        return ""

    def build(builder):
        builder.stream("in").group_by_key() \
            .windowed_by(TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS).advance_by(5 * SECONDS)) \
            .aggregate(initializer, lambda key, value, agg: agg + value,
                       Materialized.as_("strings").with_caching_disabled()) \
            .filter(lambda window, agg: len(agg) != 1) \
            .suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to("out", STRINGS)
    # hopping (windows start at 0 or later): a@1 s opens [0,10); a@2 s none; b@13 s opens [5,15), [10,20)
    _run(_program(build), [("a", "1", 1_000), ("a", "2", 2_000), ("b", "3", 13_000)])
    assert len(calls) == 3


def _filtered_sessions(predicate, cached=False):
    def build(builder):
        sessions = Materialized.as_("sessions") if cached else Materialized.as_("sessions").with_caching_disabled()
        builder.stream("in").group_by_key() \
            .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(3 * SECONDS)) \
            .count(sessions).filter(predicate) \
            .suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to("out", SESSION_COUNTS)
    return _program(build)


def test_a_new_sessions_update_has_no_old_value_so_failing_the_filter_it_never_reaches_the_suppression():
    """count != 1: b's new session (old: none, new 1) is dropped by the filter, so the suppression's
    stream time stays at 2 s; the session's merge at 10.5 s (its removal: old 1, new none, dropped too;
    then [10, 10.5 s] at 2) advances it and closes a's session (10.5 s - 3 s gap >= 2 s)."""
    rows = [("a", "1", 1_000), ("a", "2", 2_000), ("b", "3", 10_000)]
    program = _filtered_sessions(lambda window, count: count != 1)
    assert _run(program, rows) == []
    assert _run(program, [*rows, ("b", "4", 10_500)]) == [("out", _session("a", 1_000, 2_000), _long(2))]


def test_a_merged_sessions_removal_carries_its_old_aggregate_through_the_filter():
    """count < 3: a at 1.5 s falls in [1, 2 s] (count 2): Kafka Streams removes that session (old 2,
    which passes: a tombstone reaches the suppression) and writes it again at 3 (which fails, with no
    old value: dropped); the buffered tombstone is never emitted, only b's session is."""
    rows = [("a", "1", 1_000), ("a", "2", 2_000), ("a", "3", 1_500), ("b", "4", 10_000), ("c", "5", 20_000)]
    program = _filtered_sessions(lambda window, count: count < 3)
    assert _run(program, rows) == [("out", _session("b", 10_000, 10_000), _long(1))]
    assert _run(program, rows, len(rows)) == [("out", _session("b", 10_000, 10_000), _long(1))]


def test_a_cached_sessions_old_value_is_its_aggregate_at_the_last_flush():
    """count < 3, one micro-batch per two records: a's session [1, 2 s] is flushed at 2; in the next
    batch a at 1.5 s makes it 3, flushed with the old value 2 (which passes): a tombstone, so a's
    session is never emitted, d's and b's are."""
    rows = [("a", "1", 1_000), ("a", "2", 2_000), ("a", "3", 1_500), ("d", "4", 2_500), ("b", "5", 10_000),
            ("c", "6", 20_000)]
    assert _run(_filtered_sessions(lambda window, count: count < 3, cached=True), rows, 3) == [
        ("out", _session("d", 2_500, 2_500), _long(1)), ("out", _session("b", 10_000, 10_000), _long(1))]


def test_a_sliding_windows_old_value_is_the_aggregate_it_was_computed_from():
    """count != 1, difference 10 s, grace 2 s. a at 20 s: [10, 20 s] (old: the initializer's 0, new 1)
    reaches the suppression as a tombstone. a at 20.5 s: the previous record's right window [20.001,
    30.001 s] (old 0, new 1: a tombstone) and its left window [10.5, 20.5 s] (old: the neighbouring
    window's 1, new 2). b at 23 s: a new left window (old 0, new 1): its tombstone advances the
    suppression's stream time to 23 s, which closes [10.5, 20.5 s]."""
    def build(builder):
        builder.stream("in").group_by_key() \
            .windowed_by(SlidingWindows.of_time_difference_and_grace(10 * SECONDS, 2 * SECONDS)) \
            .count(Materialized.as_("sliding").with_caching_disabled()).filter(lambda window, count: count != 1) \
            .suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to("out", COUNTS)
    program = _program(build)
    rows = [("a", "1", 20_000), ("a", "2", 20_500)]
    assert _run(program, rows) == []
    assert _run(program, [*rows, ("b", "3", 23_000)]) == [("out", _windowed("a", 10_500), _long(2))]


def _sessions_in_bytes(bound: int):
    return lambda builder: builder.stream("in").group_by_key() \
        .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(3 * SECONDS)) \
        .count(Materialized.as_("sessions").with_caching_disabled()) \
        .suppress(Suppressed.until_time_limit(timedelta(seconds=60),
                                              BufferConfig.max_bytes(bound).shut_down_when_full())) \
        .to_stream().to("out", SESSION_COUNTS)


def test_a_session_table_bounded_in_bytes_counts_a_removed_sessions_old_aggregate():
    """a at 1 s, then 2 s: the session [1, 1 s] is buffered with no old value, then its removal (prior
    none, old 1, no new value) replaces it; [1, 2 s] is buffered with no old value and its count 2."""
    first = buffered_record_size(_session("a", 1_000, 1_000), None, None, _long(1), "in", None)
    assert _run(_program(_sessions_in_bytes(first)), [("a", "1", 1_000)]) == []
    with pytest.raises(ProcessingError, match=rf"\[1/unbounded\] records and \[{first}/{first - 1}\] bytes"):
        _run(_program(_sessions_in_bytes(first - 1)), [("a", "1", 1_000)])
    merged = buffered_record_size(_session("a", 1_000, 1_000), None, _long(1), None, "in", None) + \
        buffered_record_size(_session("a", 1_000, 2_000), None, None, _long(2), "in", None)
    rows = [("a", "1", 1_000), ("a", "2", 2_000)]
    assert _run(_program(_sessions_in_bytes(merged)), rows) == []
    with pytest.raises(ProcessingError, match=rf"\[2/unbounded\] records and \[{merged}/{merged - 1}\] bytes"):
        _run(_program(_sessions_in_bytes(merged - 1)), rows)


def _counted_twice(bound: int):
    """A tumbling count suppressed until a time limit of 0 (each update goes out at once, with its old
    count), then again in a buffer of ``bound`` bytes that shuts down when full."""
    def build(builder):
        builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS)) \
            .count(Materialized.as_("counts").with_caching_disabled()) \
            .suppress(Suppressed.until_time_limit(timedelta(0), BufferConfig.unbounded()).with_name("first")) \
            .suppress(Suppressed.until_time_limit(10 * SECONDS, BufferConfig.max_bytes(bound).shut_down_when_full())
                      .with_name("second")) \
            .to_stream().to("out", COUNTS)
    return _program(build)


def test_a_buffer_bounded_in_bytes_after_a_suppression_counts_the_old_value_that_suppression_emits():
    """The first suppression emits each update with its old count (the window's first: the
    initializer's 0, then 1); the second counts it as Kafka Streams' buffer does: its prior value (the
    old value of the update that buffered the key first, 0) and, once it differs, the old value (1)."""
    key = _windowed("a", 0)
    first = buffered_record_size(key, _long(0), _long(0), _long(1), "in", None)
    second = buffered_record_size(key, _long(0), _long(1), _long(2), "in", None)
    assert second == first + 8  # the old count, once it is not the prior one
    rows = [("a", "1", 1_000), ("a", "2", 2_000)]
    assert _run(_counted_twice(second), rows) == []
    with pytest.raises(ProcessingError, match=rf"second buffer exceeded .* \[{second}/{second - 1}\] bytes"):
        _run(_counted_twice(second - 1), rows)


def test_a_materialized_filter_of_a_windowed_table_reads_its_old_value_from_its_own_store():
    """count % 2 == 0 in a store: Kafka Streams' KTableFilter then reads the old value from that store
    (what it last forwarded), not the old count the aggregation sends (the initializer's 0 for a
    window's first update, which passes): count 1 of a new window is dropped, not a tombstone; 3 after
    2 is a tombstone; 1 of b's window after its store was emptied... is dropped again."""
    def build(builder):
        builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS)) \
            .count(Materialized.as_("counts").with_caching_disabled()) \
            .filter(lambda window, count: count % 2 == 0, Materialized.as_("even").with_caching_disabled()) \
            .to_stream().to("out", COUNTS)
    rows = [("a", "1", 1_000), ("a", "2", 2_000), ("a", "3", 3_000), ("b", "4", 4_000), ("a", "5", 5_000)]
    assert _run(_program(build), rows, batches=2) == [
        ("out", _windowed("a", 0), _long(2)), ("out", _windowed("a", 0), None), ("out", _windowed("a", 0), _long(4))]


def test_a_buffer_bounded_in_bytes_after_a_materialized_map_values_of_a_windowed_table_counts_its_stored_old_value():
    """map_values in a store between the windowed count and the buffer: the buffered update's old value
    is that store's (none for a window's first update, where the aggregation sends the initializer's 0),
    so the first record counts no prior and no old value."""
    def build(bound):
        def topology(builder):
            builder.stream("in").group_by_key() \
                .windowed_by(TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS)) \
                .count(Materialized.as_("counts").with_caching_disabled()) \
                .map_values(lambda count: count * 10,
                            Materialized.as_("tens").with_value_serde(Serdes.Long()).with_caching_disabled()) \
                .suppress(Suppressed.until_time_limit(10 * SECONDS, BufferConfig.max_bytes(bound)
                                                      .shut_down_when_full()).with_name("tens-bytes")) \
                .to_stream().to("out", COUNTS)
        return _program(topology)
    key = _windowed("a", 0)
    first = buffered_record_size(key, None, None, _long(10), "in", None)
    second = buffered_record_size(key, None, _long(10), _long(20), "in", None)
    rows = [("a", "1", 1_000), ("a", "2", 2_000)]
    assert _run(build(second), rows) == []
    with pytest.raises(ProcessingError, match=rf"\[{first}/{first - 1}\] bytes"):
        _run(build(first - 1), rows[:1])


def test_every_input_of_a_windowed_cogroup_sends_its_old_aggregate():
    """agg != 1 after a cogroup of two inputs (records of the first only here): b's new window (old:
    the initializer's 0, which passes; new 1) reaches the suppression as a tombstone and closes a's."""
    def build(builder):
        builder.stream("in").group_by_key().cogroup(lambda key, value, agg: agg + 1) \
            .cogroup(builder.stream("in2").group_by_key(), lambda key, value, agg: agg + 100) \
            .windowed_by(TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS)) \
            .aggregate(lambda: 0, Materialized.as_("activity").with_caching_disabled()) \
            .filter(lambda window, agg: agg != 1) \
            .suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to("out", COUNTS)
    rows = [("a", "1", 1_000), ("a", "2", 2_000)]
    assert _run(_program(build), rows) == []
    assert _run(_program(build), [*rows, ("b", "3", 13_000)]) == [("out", _windowed("a", 0), _long(2))]
