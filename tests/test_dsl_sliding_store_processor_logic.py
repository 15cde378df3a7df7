"""A user processor on a sliding-window aggregation's store, without Spark: the aggregation reading
the windows a processor wrote (segment by segment, as Kafka Streams' segmented store iterates them),
retention by the store's observed time rather than the aggregation's stream time, a cached store
forwarding a processor's write at the flush, and what stays refused (a sliding store emitting on
window close is admitted). The broker-backed comparison
with Kafka Streams is test_equivalence_dsl_window_store_processor.py (its sliding count)."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_dsl_window_store_processor_logic import _program, _run  # noqa: E402

from dagster_kstreams.spark.compile import UnsupportedTopologyError  # noqa: E402
from dagster_kstreams.topology import (  # noqa: E402
    EmitStrategy, Materialized, Serdes, SlidingWindows, StreamsBuilder, ValueAndTimestamp, WindowedSerde,
)
from dagster_kstreams.topology.processor_api import Processor, Record  # noqa: E402

SECOND = timedelta(seconds=1)


class _Rewrite(Processor):
    """Forwards each update as ``key@start=count``; on the update to 2 of a window starting at 101 ms
    past a whole second, puts 50 into the key's window 1_001 ms before it (stamped 1 ms before that
    window), one the record's iteration has yet to read."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("w")

    def process(self, record: Record) -> None:
        key, start = record.key.key, record.key.window.start
        self.context.forward(Record(key, f"{start}={record.value}", record.timestamp))
        if start % 1000 == 101 and record.value == 2:
            self.store.put(key, ValueAndTimestamp.make(50, start - 1), start - 1001)


def _sliding_program(processor, grace=10 * SECOND, cached=False):
    builder = StreamsBuilder()
    materialized = Materialized.as_("w")
    if not cached:
        materialized = materialized.with_caching_disabled()
    builder.stream("in").group_by_key().windowed_by(SlidingWindows.of_time_difference_and_grace(SECOND, grace)) \
        .count(materialized).to_stream().process(processor, "w").to("out")
    return _program(builder)


def _updates(outputs, key):
    return [value for output_key, value in outputs if output_key == key]


def test_the_aggregation_reads_a_segment_as_it_was_when_its_iteration_reached_it():
    """Retention 12 s: segments of 60 s. Record 60_400 of y comes after 60_700: it updates y's window
    60_101 (segment 1) first, and the processor then puts 50 into window 59_100 (segment 0, not opened
    yet): Kafka Streams' reverse iteration opens segment 0 after that and takes 50 as the record's left
    aggregate, so its left window 59_400 counts 51. The same records 10 s earlier (x, one segment):
    the iterator opened before the write still holds 2 there, and window 49_400 counts 3."""
    rows = [(key, "v", offset + timestamp) for key, offset in (("x", -10_000), ("y", 0))
            for timestamp in (59_800, 60_100, 60_700, 60_400)]
    outputs, _ = _run(_sliding_program(_Rewrite), rows)
    assert _updates(outputs, "y")[-5:] == ["60101=2", "59801=3", "59700=4", "59400=51", "60401=1"]
    assert _updates(outputs, "x")[-5:] == ["50101=2", "49801=3", "49700=4", "49400=3", "50401=1"]


class _PutAhead(Processor):
    """Lists the store on every update; puts a window of 7 at 30 s on the first update of window 9 s."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("w")

    def process(self, record: Record) -> None:
        start = record.key.window.start
        listed = " ".join(f"{entry.key.window.start}={entry.value.value()}" for entry in self.store.all())
        self.context.forward(Record(record.key.key, f"{start}={record.value}|{listed}", record.timestamp))
        if start == 9_000 and record.value == 1:
            self.store.put(record.key.key, ValueAndTimestamp.make(7, 1), 30_000)


def test_a_window_put_ahead_hides_what_the_stores_retention_drops_from_the_aggregation_too():
    """Retention 2 x 1 s + 10 s grace = 12 s. The processor's window at 30 s moves the store's time past
    the aggregation's stream time (10 s): windows starting at 18 s or before are gone. Record 10_500 is
    not late (grace 10 s), but its left window no longer finds window 9_000's count: it counts 1 (and
    is stored, but no read returns it), and no right window of record 10_000 is created: the
    aggregation no longer sees that record."""
    rows = [("k", "v", 10_000), ("k", "v", 10_500)]
    outputs, _ = _run(_sliding_program(_PutAhead), rows)
    assert _updates(outputs, "k") == ["9000=1|9000=1", "9500=1|30000=7"]


class _Fixer(Processor):
    """Puts the window ``start:count`` of its record's value, stamped 1 ms after the record."""

    def init(self, context) -> None:
        self.store = context.get_state_store("w")

    def process(self, record: Record) -> None:
        start, count = record.value.split(":")
        self.store.put(record.key, ValueAndTimestamp.make(int(count), record.timestamp + 1), int(start))


class _Stamp(Processor):
    def init(self, context) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(f"{record.value}|t{record.timestamp}"))


def test_a_cached_store_forwards_a_processor_write_at_the_flush_as_the_aggregations_update():
    """The record cache forwards each window once per flush with its last value, whoever wrote it, in the
    order of their last writes: the fix of window 0 (20, stamped 1_501) in the first batch; in the
    second, record 600's right window (a copy of window 0, which holds a later time), its update of
    window 0 (21) and the fix of window 2_000."""
    builder = StreamsBuilder()
    counts = builder.stream("in").group_by_key().windowed_by(
        SlidingWindows.of_time_difference_and_grace(SECOND, 10 * SECOND)).count(Materialized.as_("w"))
    counts.to_stream().map(lambda k, v: (f"{k.key}@{k.window.start}", f"{v}")).process(_Stamp).to("out")
    builder.stream("fix").process(_Fixer, "w")
    rows = [("k", "x", 500), ("k", "0:20", 1_500, "fix"), ("k", "x", 600), ("k", "2000:5", 1_700, "fix")]
    assert _run(_program(builder), rows, 2)[0] == [("k@0", "20|t1501"), ("k@601", "20|t1501"), ("k@0", "21|t1501"),
                                                   ("k@2000", "5|t1701")]


class _Nothing(Processor):
    def process(self, record: Record) -> None:
        pass


def _closing_sliding_count(builder):
    return builder.stream("in").group_by_key() \
        .windowed_by(SlidingWindows.of_time_difference_with_no_grace(SECOND)) \
        .emit_strategy(EmitStrategy.on_window_close()).count(Materialized.as_("wins"))


def test_a_sliding_store_emitting_on_window_close_and_its_filter_store_are_given_to_a_processor():
    """The time-ordered store of a sliding count emitting on window close is a processor's window store
    (its emit: test_close_store_processor_logic.py), and so is a filter's store over that windowed table,
    keyed by windows, given a time-windowed key serde (compared with Kafka Streams in
    test_equivalence_dsl_store_processor.py); without one it is refused, naming the processor and the serde."""
    builder = StreamsBuilder()
    _closing_sliding_count(builder).to_stream().process(_Nothing, "wins")
    assert _program(builder) is not None
    builder = StreamsBuilder()
    _closing_sliding_count(builder).filter(
        lambda window, count: True, Materialized.as_("kept").with_key_serde(WindowedSerde(Serdes.String(), 1000))) \
        .to_stream().process(_Nothing, "kept")
    assert _program(builder) is not None
    builder = StreamsBuilder()
    _closing_sliding_count(builder).filter(lambda window, count: True, Materialized.as_("kept")) \
        .to_stream().process(_Nothing, "kept")
    with pytest.raises(UnsupportedTopologyError,
                       match="processor KSTREAM-PROCESSOR-0000000004: store kept belongs to KTABLE-FILTER-.*"
                             "keyed by windows.*with_key_serde"):
        _program(builder)
