"""``suppress`` and emit-on-window-close without Spark: the suppression buffer against a model of
Kafka Streams' ``TreeMap`` buffer, the emit range of closed windows, programs run batch by batch
(their task state pickled in between, as a checkpoint would), and the topologies the runner
refuses. The broker-backed comparison with Kafka Streams is test_equivalence_suppress.py."""

from __future__ import annotations

import struct
from datetime import timedelta

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.suppress import SuppressionBuffer
from dagster_kstreams.processors.state import load_state
from dagster_kstreams.processors.window_close import ClosedWindows
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.emit_strategy import EmitStrategy
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes, Window, Windowed, WindowedSerde
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows, TimeWindows

SECONDS = timedelta(seconds=1)
COUNTS = Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.Long())
STRINGS = Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String())


# -- the buffer --------------------------------------------------------------------------------
_OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just("put"), st.integers(0, 30), st.sampled_from([b"a", b"b", b"ab", b"\x00", b"\xff", b"c"])),
    st.tuples(st.just("expire"), st.integers(0, 30), st.none()),
    st.tuples(st.just("limit"), st.integers(0, 4), st.none()),
), max_size=60)


@settings(max_examples=300)
@given(_OPERATIONS)
def test_buffer_evicts_as_kafka_streams_tree_map_does(operations):
    """Model: a key keeps the buffer time of its first put until evicted; eviction goes by
    (buffer time, key bytes); the value is the latest put's."""
    buffer, model = SuppressionBuffer(), {}
    for number, (operation, argument, key) in enumerate(operations):
        if operation == "put":
            time = model[key][0] if key in model else argument
            model[key] = (time, number)
            buffer.put(argument, key, key, number, argument)
            continue
        if operation == "expire":
            expected = sorted((t, k) for k, (t, _) in model.items() if t <= argument)
            evicted = list(buffer.expired(argument))
        else:
            count = max(0, len(model) - argument)
            expected = sorted((t, k) for k, (t, _) in model.items())[:count]
            evicted = list(buffer.over(argument))
        assert [(key, value) for key, value, *_ in evicted] == [(k, model[k][1]) for _, k in expected]
        for _, k in expected:
            del model[k]
        assert len(buffer) == len(model)
        assert buffer.min_time() == (min(t for t, _ in model.values()) if model else None)


@settings(max_examples=200)
@given(_OPERATIONS)
def test_buffer_keeps_each_keys_prior_value_as_kafka_streams_does(operations):
    """Model of ``priorValueForBuffered``: a buffered key's prior value is the old value of its first
    put since it was last evicted (later puts keep it); an evicted key is not buffered."""
    buffer, priors = SuppressionBuffer(), {}
    for number, (operation, argument, key) in enumerate(operations):
        if operation == "put":
            old = None if number % 3 == 0 else f"old{number}"  # an update of a key the table did not hold too
            priors.setdefault(key, old)
            buffer.put(argument, key, key, number, argument, old=old)
        else:
            evicted = buffer.expired(argument) if operation == "expire" else buffer.over(argument)
            for evicted_key, *_ in list(evicted):
                del priors[evicted_key]
        for probe in (b"a", b"b", b"ab", b"\x00", b"\xff", b"c"):
            assert buffer.prior_for(probe) == ((True, priors[probe]) if probe in priors else (False, None))


# -- emit-on-window-close's range ----------------------------------------------------------------
def test_closed_windows_emit_once_in_start_then_key_order_and_only_when_a_window_closed():
    tumbling = TimeWindows(10, 10, 0)
    closed = ClosedWindows()
    for start, key in ((0, b"b"), (0, b"a"), (10, b"a"), (20, b"a")):
        closed.put(start, key, key, key.decode(), deleted=False)
    assert closed.due(tumbling, 9, 30) == []  # upper bound -1: nothing closed yet
    assert closed.due(tumbling, 15, 30) == [(0, b"a", "a"), (0, b"b", "b")]
    assert closed.due(tumbling, 19, 30) == [] and closed.last_emit == 15  # no new window: last_emit stays
    assert closed.due(tumbling, 30, 30) == [(10, b"a", "a"), (20, b"a", "a")]
    assert closed.pending == {}


def test_closed_windows_jumped_over_by_more_than_the_retention_are_never_emitted():
    hopping = TimeWindows(10, 5, 2)  # retention 12
    closed = ClosedWindows()
    closed.put(0, b"k", b"k", "k", deleted=False)
    closed.put(5, b"k", b"k", "k", deleted=False)
    assert closed.due(hopping, 10, 12) == [(0, b"k", "k")]
    for start in (45, 50):  # a record at 54 writes windows 45 and 50: the store's time is 50
        closed.put(start, b"k", b"k", "k", deleted=False)
    # close 52: windows starting up to 42 closed; the store returns starts from 50 - 12 = 38 only.
    assert closed.due(hopping, 52, 12) == []
    assert set(closed.pending) == {45, 50}
    closed.put(45, b"k", b"k", "k", deleted=True)  # a null aggregate deletes the window
    assert set(closed.pending) == {50}


# -- programs, batch by batch ---------------------------------------------------------------------
def _program(build, sub=0):
    builder = StreamsBuilder()
    build(builder)
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(sub)


def _run(program, rows, batches=1, with_state=False):
    """Rows ``(key, value, timestamp)`` of one partition, in order, in ``batches`` micro-batches,
    the task state pickled in between. Returns the records written to "out", ``[(topic, key, value)]``
    (and every key's stored slots, ``with_state``)."""
    stream, contexts = -1, []
    for key, _, timestamp in rows:
        before = stream
        if key is not None:
            stream = max(stream, timestamp)
        contexts.append((stream, before))
    outputs, stored = [], None
    size = -(-len(rows) // batches)
    for first in range(0, len(rows), size):
        chunk = range(first, min(first + size, len(rows)))
        frame = pd.DataFrame({
            "key": [None if rows[i][0] is None else rows[i][0].encode() for i in chunk],
            "value": [None if rows[i][1] is None else rows[i][1].encode() for i in chunk],
            "topic": ["in"] * len(chunk), "partition": [0] * len(chunk), "offset": list(chunk),
            "timestamp": [None] * len(chunk), "event_time": [rows[i][2] for i in chunk],
            "merge_time": [rows[i][2] for i in chunk], "seq": list(chunk),
            "stream_time": [contexts[i][0] for i in chunk], "stream_time_before": [contexts[i][1] for i in chunk],
        })
        out, stored = program.process_task_batch(frame, stored)
        if out is not None:
            out = out[out["topic"] == "out"].sort_values("emit_order", kind="stable")
            outputs += list(zip(out["topic"], out["key"], out["value"]))
    return (outputs, load_state(stored)["keys"]) if with_state else outputs


def _windowed(key, start):
    return key.encode() + struct.pack(">q", start)


def _long(value):
    return struct.pack(">q", value)


def _tumbling_count_suppressed(builder, aggregate=None):
    windowed = builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS))
    table = windowed.count(Materialized.as_("counts").with_caching_disabled()) if aggregate is None else \
        windowed.aggregate(lambda: "", aggregate, Materialized.as_("counts").with_caching_disabled())
    table.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream() \
        .to("out", COUNTS if aggregate is None else STRINGS)


ROWS = [("b", "1", 1_000), ("a", "2", 3_000), ("a", "3", 11_000), (None, "x", 50_000), ("b", "4", 9_000),
        ("a", "5", 12_500), ("b", "6", 21_000), ("a", "7", 4_000), ("c", "8", 33_000), ("a", "9", 31_000)]


def test_until_window_closes_forwards_each_windows_final_count_once_by_window_end_then_key():
    program = _program(_tumbling_count_suppressed)
    assert program.task_grouped
    expected = [  # stream time 21 s closes [0,10s); 33 s closes [10,20s) and [20,30s)
        ("out", _windowed("a", 0), _long(1)), ("out", _windowed("b", 0), _long(2)),
        ("out", _windowed("a", 10_000), _long(2)), ("out", _windowed("b", 20_000), _long(1)),
    ]
    assert _run(program, ROWS) == expected
    for batches in (2, 3, len(ROWS)):  # the buffer and its stream time survive every checkpoint
        assert _run(program, ROWS, batches) == expected


def test_the_task_state_forgets_every_keys_expired_windows_and_sessions():
    def build(builder):
        _tumbling_count_suppressed(builder)
        grouped = builder.stream("in").group_by_key()
        grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(SECONDS)).count() \
            .suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream() \
            .to("sessions", Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.Long()))
        grouped.windowed_by(TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS)) \
            .emit_strategy(EmitStrategy.on_window_close()).count().to_stream().to("closed", COUNTS)
    program = _program(build)
    rows = [("old", "1", 1_000)] + [("new", str(t), t) for t in range(5_000, 100_000, 5_000)]
    _, stored = _run(program, rows, batches=3, with_state=True)
    assert set(stored) == {b"new"}
    windows, sessions, closed = (stored[b"new"][slot] for slot in range(3))
    # retention 12 s, cut at the store's time (the last window start put, 90 s) minus it, as Kafka Streams'
    # store returns windows: both keep 80 s and 90 s
    assert sorted(windows) == [80_000, 90_000] and sorted(closed) == [80_000, 90_000]
    assert len(sessions) == 1


def test_until_window_closes_drops_tombstones_and_never_forwards_a_deleted_window():
    program = _program(lambda b: _tumbling_count_suppressed(
        b, lambda key, value, agg: None if value == "del" else agg + value))
    rows = [("a", "x", 1_000), ("a", "del", 2_000), ("b", "y", 3_000), ("a", "z", 20_000)]
    assert _run(program, rows) == [("out", _windowed("b", 0), b"y")]


def test_until_window_closes_on_sliding_windows_forwards_each_windows_final_value():
    def build(builder):
        builder.stream("in").group_by_key() \
            .windowed_by(SlidingWindows.of_time_difference_and_grace(5 * SECONDS, SECONDS)) \
            .reduce(lambda agg, value: agg + value, Materialized.as_("r").with_caching_disabled()) \
            .suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream() \
            .to("out", Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.String()))
    program = _program(build)
    rows = [("k", "a", 10_000), ("k", "b", 12_000), ("k", "c", 30_000)]
    # Windows [5 s, 10 s] {a}, [7 s, 12 s] {a, b}, [10.001 s, 15.001 s] {b}: all closed by 30 s - 1 s.
    expected = [("out", b"k" + struct.pack(">q", start), value) for start, value in
                ((5_000, b"a"), (7_000, b"ab"), (10_001, b"b"))]
    assert _run(program, rows) == expected
    assert _run(program, rows, 3) == expected


def test_until_time_limit_emits_after_the_wait_and_early_when_full():
    def build(builder):
        table = builder.table("in", Materialized.as_("t").with_caching_disabled())
        table.suppress(Suppressed.until_time_limit(4 * SECONDS, BufferConfig.max_records(2).emit_early_when_full())) \
            .to_stream().to("out")
    program = _program(build)
    rows = [("k1", "a", 1_000), ("k2", "b", 2_000), ("k1", "c", 3_000), ("k3", "d", 3_500), ("k2", None, 8_000)]
    # k1 keeps its buffer time (1 s) with its latest value; a third key evicts the oldest (k1); at
    # 8 s everything buffered at 4 s or before goes, the tombstone of k2 (2 s) first.
    expected = [("out", b"k1", b"c"), ("out", b"k2", None), ("out", b"k3", b"d")]
    assert _run(program, rows) == expected
    assert _run(program, rows, 5) == expected


def test_a_filter_before_the_suppression_drops_updates_failing_it_before_and_after():
    def build(builder):
        builder.table("in", Materialized.as_("t").with_caching_disabled()) \
            .filter(lambda key, value: value != "no") \
            .suppress(Suppressed.until_time_limit(timedelta(0), BufferConfig.unbounded())).to_stream().to("out")
    program = _program(build)
    rows = [("k", "no", 1_000), ("k", "yes", 2_000), ("k", "no", 3_000), ("k", None, 4_000), ("j", None, 9_000)]
    assert _run(program, rows) == [("out", b"k", b"yes"), ("out", b"k", None)]


def test_emit_on_window_close_forwards_each_window_once_when_it_closes():
    def build(builder):
        builder.stream("in").group_by_key() \
            .windowed_by(TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS)) \
            .emit_strategy(EmitStrategy.on_window_close()) \
            .count(Materialized.as_("counts")).to_stream().to("out", COUNTS)
    program = _program(build)
    assert program.task_grouped
    # At 12.5 s [0, 10 s) closes for a and b; at 33 s [20 s, 30 s) of b closes, but the store (its
    # time 30 s, the start of c's window; retention 12 s) no longer returns [10 s, 20 s) of a.
    expected = [("out", _windowed("a", 0), _long(1)), ("out", _windowed("b", 0), _long(2)),
                ("out", _windowed("b", 20_000), _long(1))]
    assert _run(program, ROWS) == expected
    assert _run(program, ROWS, 4) == expected


def test_sliding_emit_on_window_close_forwards_windows_by_start_after_aggregated_records_only():
    def build(builder):
        builder.stream("in").group_by_key() \
            .windowed_by(SlidingWindows.of_time_difference_and_grace(5 * SECONDS, SECONDS)) \
            .emit_strategy(EmitStrategy.on_window_close()) \
            .count(Materialized.as_("counts")).to_stream() \
            .to("out", Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.Long()))
    program = _program(build)
    assert program.task_grouped
    rows = [("a", "1", 10_000), ("a", "2", 12_000), ("b", "3", 13_000), ("a", "4", 20_000),
            ("b", "5", 13_500), ("c", "6", 30_000)]
    # b at 13 s: close 12 s, starts [0, 6.999 s]: a's [5, 10 s]. a at 20 s: close 19 s, starts
    # [7 s, 13.999 s]: a [7, 12 s] (2 records), b [8, 13 s], a's right window [10.001, 15.001 s].
    # b at 13.5 s is late (13.5 + 5 < 19): no check. c at 30 s: starts [14 s, 23.999 s]: a [15, 20 s].
    expected = [("out", _windowed(key, start), _long(count)) for key, start, count in
                (("a", 5_000, 1), ("a", 7_000, 2), ("b", 8_000, 1), ("a", 10_001, 1), ("a", 15_000, 1))]
    assert _run(program, rows) == expected
    assert _run(program, rows, 3) == expected


def test_session_emit_on_window_close_forwards_sessions_by_end_once_closed():
    sessions = WindowedSerde(Serdes.String(), session=True)

    def build(builder):
        builder.stream("in").group_by_key() \
            .windowed_by(SessionWindows.of_inactivity_gap_and_grace(3 * SECONDS, SECONDS)) \
            .emit_strategy(EmitStrategy.on_window_close()) \
            .count(Materialized.as_("counts")).to_stream() \
            .to("out", Produced.with_(sessions, Serdes.Long()))
    program = _program(build)
    assert program.task_grouped
    rows = [("a", "1", 1_000), ("a", "2", 2_000), ("b", "3", 5_000), ("a", "4", 9_000), ("b", "5", 7_000),
            ("c", "6", 12_000), ("a", "7", 3_000), ("a", "8", 20_000)]
    # close = stream time - 1 s - 3 s; ends [last close, close - 1] go out. b at 5 s: [0, 0.999 s]:
    # nothing. a at 9 s: [1, 4.999 s]: a [1, 2 s]. b at 7 s does not find b [5, 5 s] (a key's reads
    # skip ends <= store time 9 s - retention 4 s) and starts b [7, 7 s]. c at 12 s: [5, 7.999 s]:
    # both b sessions (the range fetch returns what its 60 s segment holds). a at 3 s: late.
    # a at 20 s: [8, 15.999 s]: a [9, 9 s], then c [12, 12 s].
    expected = [("out", sessions.serialize(Windowed(key, Window(start, end))), _long(count)) for key, start, end, count
                in (("a", 1_000, 2_000, 2), ("b", 5_000, 5_000, 1), ("b", 7_000, 7_000, 1), ("a", 9_000, 9_000, 1),
                    ("c", 12_000, 12_000, 1))]
    assert _run(program, rows) == expected
    assert _run(program, rows, 3) == expected


# -- definition time ------------------------------------------------------------------------------
def _refused(build, match):
    with pytest.raises(UnsupportedTopologyError, match=match):
        _program(build)


def _table(builder):
    return builder.table("in", Materialized.as_("t"))


def test_until_window_closes_takes_a_strict_buffer_config():
    with pytest.raises(TypeError, match="strict buffer config"):
        Suppressed.until_window_closes(BufferConfig.max_records(5))


# -- a filter of a time-windowed table before the suppression --------------------------------------
def _filtered_counts(predicate, cached=False):
    def build(builder):
        counts = Materialized.as_("counts") if cached else Materialized.as_("counts").with_caching_disabled()
        builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS)) \
            .count(counts).filter(predicate).map_values(lambda count: count * 10) \
            .suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to("out", COUNTS)
    return _program(build)


def test_a_filtered_window_update_whose_old_and_new_fail_never_reaches_the_suppression():
    """count >= 2: a window's first update (old 0, new 1) is dropped by the filter, so it does not
    advance the suppression's stream time; the third record's (a window of c at 2) does."""
    rows = [("a", "1", 1_000), ("a", "2", 2_000), ("b", "3", 13_000)]
    program = _filtered_counts(lambda key, count: count >= 2)
    assert _run(program, rows) == []
    assert _run(program, [*rows, ("c", "4", 14_000), ("c", "5", 14_500)]) == [("out", _windowed("a", 0), _long(20))]


def test_a_new_windows_old_value_is_the_initializers_as_kafka_streams_sends_it():
    """count != 1: a new window's update (old: the initializer's 0, which passes; new 1, which fails)
    reaches the suppression as a tombstone and advances its stream time; cached, the old value is the
    store's at the last flush (none for a new window), so the same update is dropped."""
    rows = [("a", "1", 1_000), ("a", "2", 2_000), ("b", "3", 13_000)]
    assert _run(_filtered_counts(lambda key, count: count != 1), rows) == [("out", _windowed("a", 0), _long(20))]
    assert _run(_filtered_counts(lambda key, count: count != 1, cached=True), rows) == []
    assert _run(_filtered_counts(lambda key, count: count != 1, cached=True), [*rows, ("b", "4", 13_500)], 2) == \
        [("out", _windowed("a", 0), _long(20))]




