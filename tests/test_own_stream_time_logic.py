"""Windowed aggregations with their own stream time (dagster_kstreams.processors.own_stream_time)
without Spark: which aggregations keep their own clocks (the task's stream time is not theirs), and
their output through a sub-topology program against plain models of Kafka Streams' processors fed
only the records that reach them (a filter before a hopping-windowed count, a filter before a
session count), in any number of micro-batches with the task's state pickled in between."""

from __future__ import annotations

import struct
from datetime import timedelta

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import session_reference
from dagster_kstreams.processors.own_stream_time import (
    OwnSessionWindowAggregate,
    OwnSlidingWindowAggregate,
    OwnTimeWindowAggregate,
)
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.processors.sessions import SessionWindowAggregate
from dagster_kstreams.processors.windows import SlidingWindowAggregate, TimeWindowAggregate
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows, TimeWindows

SECONDS = timedelta(seconds=1)
HOPPING = TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS).advance_by(5 * SECONDS)
SLIDING = SlidingWindows.of_time_difference_and_grace(5 * SECONDS, SECONDS)
SESSIONS = SessionWindows.of_inactivity_gap_and_grace(3 * SECONDS, 2 * SECONDS)


def _program(build, sub=0):
    builder = StreamsBuilder()
    build(builder)
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(sub)


def _aggregations(program) -> dict:
    return {node.name: type(node) for node in program.nodes if node.stateful}


def _filtered_count(builder, windows=HOPPING, window_size=10_000):
    builder.stream("in").filter(lambda key, value: value != "x").group_by_key().windowed_by(windows) \
        .count(Materialized.as_("counts").with_caching_disabled()).to_stream() \
        .to("out", Produced.with_(WindowedSerde(Serdes.String(), window_size), Serdes.Long()))


def run_batches(program, rows, batches=1, offsets=None, columns=None):
    """Rows ``(key, value, timestamp)`` of one partition through the task-grouped ``program`` in
    ``batches`` micro-batches, the task's state pickled in between. ``offsets``: each row's offset
    (default: its index); ``columns``: more columns, one value for every row. Returns the rows written
    (``(topic, key, value)``, dropped-late rows included) in the order they are written."""
    offsets = list(range(len(rows))) if offsets is None else offsets
    written, stored = [], None
    size = max(1, -(-len(rows) // batches))
    for first in range(0, len(rows), size):
        batch = rows[first:first + size]
        frame = pd.DataFrame({
            "key": [None if key is None else key.encode() for key, _, _ in batch],
            "value": [None if value is None else value.encode() for _, value, _ in batch],
            "topic": ["in"] * len(batch), "partition": [0] * len(batch), "offset": offsets[first:first + size],
            "timestamp": [None] * len(batch), "event_time": [timestamp for *_, timestamp in batch],
            **{name: [value] * len(batch) for name, value in (columns or {}).items()},
        })
        out, stored = program.process_task_batch(frame, stored)
        if out is not None:
            out = out.sort_values("emit_order", kind="stable")
            written += list(zip(out["topic"], out["key"], out["value"]))
    return written


def assert_hopping_count_is_the_model(written, rows):
    """``written`` (of :func:`run_batches`) is what Kafka Streams' hopping count (:data:`HOPPING`)
    forwards and drops, fed ``rows``: :func:`hopping_model`."""
    forwarded, dropped = hopping_model(rows)
    serde = WindowedSerde(Serdes.String(), 10_000)
    ours = [(w.key, w.window.start, struct.unpack(">q", value)[0])
            for w, value in ((serde.deserialize(key), value) for topic, key, value in written if topic == "out")]
    assert ours == forwarded
    assert sum(topic == DROPPED_LATE_TOPIC for topic, _, _ in written) == dropped


def test_an_aggregation_the_tasks_every_record_reaches_reads_the_tasks_stream_time():
    def direct(builder):
        builder.stream("in").map_values(lambda value: value).group_by_key().windowed_by(HOPPING).count()
    program = _program(direct)
    assert _aggregations(program) == {"KSTREAM-AGGREGATE-0000000003": TimeWindowAggregate}
    assert program.uses_stream_time and not program.task_grouped


def test_a_filter_branch_flat_map_values_or_another_source_gives_the_aggregation_its_own_clocks():
    program = _program(_filtered_count)
    assert list(_aggregations(program).values()) == [OwnTimeWindowAggregate]
    assert program.task_grouped and not program.uses_stream_time and program.drops_late_records

    def branched(builder):
        branches = builder.stream("in").split().branch(lambda key, value: key < "m").default_branch()
        for stream in branches.values():
            stream.group_by_key().windowed_by(SESSIONS).count()
    assert set(_aggregations(_program(branched)).values()) == {OwnSessionWindowAggregate}

    def mapped(builder):  # map_values may give a null value, which sliding windows skip
        builder.stream("in").map_values(lambda value: value).group_by_key().windowed_by(SLIDING).count()
    assert list(_aggregations(_program(mapped)).values()) == [OwnSlidingWindowAggregate]

    def doubled(builder):
        builder.stream("in").flat_map_values(lambda value: [value, value]).group_by_key() \
            .windowed_by(SLIDING).count()
    assert list(_aggregations(_program(doubled)).values()) == [OwnSlidingWindowAggregate]

    def two_sources(builder):
        events = builder.stream("in")
        events.merge(builder.stream("other")).to("merged")
        events.group_by_key().windowed_by(HOPPING).count()
    assert list(_aggregations(_program(two_sources)).values()) == [OwnTimeWindowAggregate]


def test_sliding_windows_beside_time_windows_keep_their_own_clocks_and_leave_the_task_its_own():
    def mixed(builder):
        grouped = builder.stream("in").group_by_key()
        grouped.windowed_by(HOPPING).count(Materialized.as_("hopping"))
        grouped.windowed_by(SLIDING).count(Materialized.as_("sliding"))
    program = _program(mixed)
    assert set(_aggregations(program).values()) == {TimeWindowAggregate, OwnSlidingWindowAggregate}
    # The task's stream time is the time windows': it counts null values, which sliding windows skip.
    assert program.uses_stream_time and not program.stream_time_skips_null_values and program.task_grouped

    def sliding_alone(builder):
        builder.stream("in").group_by_key().windowed_by(SLIDING).count()
    program = _program(sliding_alone)
    assert list(_aggregations(program).values()) == [SlidingWindowAggregate]
    assert program.stream_time_skips_null_values and not program.task_grouped


def test_one_session_aggregation_fed_twice_by_a_merge_keeps_its_own_clocks():
    def twice(builder):
        events = builder.stream("in")
        events.merge(events.map_values(lambda value: value)).group_by_key().windowed_by(SESSIONS).count()
    assert list(_aggregations(_program(twice)).values()) == [OwnSessionWindowAggregate]

    def once(builder):
        builder.stream("in").map_values(lambda value: value).group_by_key().windowed_by(SESSIONS).count()
    assert list(_aggregations(_program(once)).values()) == [SessionWindowAggregate]


def _window(key: str, start: int) -> bytes:
    return key.encode() + struct.pack(">q", start)


def test_a_record_the_filter_drops_does_not_close_the_aggregations_windows():
    program = _program(_filtered_count)
    # "x" at 30 s would close [0, 10 s) by the task's stream time; the aggregation never sees it.
    rows = [("k", "a", 1_000), ("j", "x", 30_000), ("k", "b", 2_000), ("k", "c", 20_000), ("k", "d", 3_000)]
    written = run_batches(program, rows)
    assert [(key, struct.unpack(">q", value)[0]) for topic, key, value in written if topic == "out"] == [
        (_window("k", 0), 1), (_window("k", 0), 2), (_window("k", 15_000), 1), (_window("k", 20_000), 1)]
    assert sum(topic == DROPPED_LATE_TOPIC for topic, _, _ in written) == 1  # d: [0, 10 s) closed at 20 s


def hopping_model(rows, size=10_000, advance=5_000, grace=2_000):
    """Kafka Streams' KStreamWindowAggregate (count, no record cache) fed the records that pass the
    filter: ``([(key, window start, count)] forwarded, dropped (record, window) pairs)``."""
    counts, forwarded, dropped, observed = {}, [], 0, None
    for key, value, timestamp in rows:
        if value == "x" or key is None:
            continue
        observed = timestamp if observed is None else max(observed, timestamp)
        start = max(0, timestamp - size + advance) // advance * advance
        while start <= timestamp:
            if start + size > observed - grace:
                counts[key, start] = counts.get((key, start), 0) + 1
                forwarded.append((key, start, counts[key, start]))
            else:
                dropped += 1
            start += advance
    return forwarded, dropped


ROWS = st.lists(
    st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from(["v", "x", None]),
              st.integers(min_value=0, max_value=60_000)),
    max_size=40)


@settings(max_examples=200, deadline=None)
@given(rows=ROWS, batches=st.integers(min_value=1, max_value=5))
def test_a_filtered_hopping_count_is_kafka_streams_processor_fed_what_passes_the_filter(rows, batches):
    assert_hopping_count_is_the_model(run_batches(_program(_filtered_count), rows, batches), rows)


def _filtered_sessions(builder):
    builder.stream("in").filter(lambda key, value: value != "x").group_by_key().windowed_by(SESSIONS) \
        .count(Materialized.as_("sessions").with_caching_disabled()).to_stream() \
        .to("out", Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.Long()))


@settings(max_examples=200, deadline=None)
@given(rows=ROWS, batches=st.integers(min_value=1, max_value=5))
def test_a_filtered_session_count_ends_as_kafka_streams_processor_fed_what_passes_the_filter(rows, batches):
    written = run_batches(_program(_filtered_sessions), rows, batches)
    passed = [row for row in rows if row[1] != "x"]
    final, dropped, _ = session_reference.count(passed, 3_000, 2_000)
    assert _last_session_counts(written) == final
    assert sum(topic == DROPPED_LATE_TOPIC for topic, _, _ in written) == dropped


def _last_session_counts(written) -> dict:
    """Each session's last count written to "out" (sessions whose last record is a tombstone left out)."""
    serde = WindowedSerde(Serdes.String(), session=True)
    last: dict = {}
    for topic, key, value in written:
        if topic == "out":
            window = serde.deserialize(key)
            last[window.key, window.window.start, window.window.end] = (
                None if value is None else struct.unpack(">q", value)[0])
    return {session: count for session, count in last.items() if count is not None}


def _filtered_cached_sessions(builder):
    builder.stream("in").filter(lambda key, value: value != "x").group_by_key().windowed_by(SESSIONS) \
        .count(Materialized.as_("sessions")).to_stream() \
        .to("out", Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.Long()))


CACHED_ROWS = st.lists(st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from(["v", None]),
                                 st.integers(min_value=0, max_value=20_000)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(rows=CACHED_ROWS, batches=st.integers(min_value=1, max_value=5))
def test_a_cached_session_count_with_its_own_clocks_merges_what_its_cache_holds(rows, batches):
    # Kafka Streams' caching store returns the sessions put since the last commit (a micro-batch's end
    # here) whatever the store's time: a record merges one the store below it would no longer return.
    written = run_batches(_program(_filtered_cached_sessions), rows, batches)
    final, dropped, _ = session_reference.count(rows, 3_000, 2_000, commit_every=max(1, -(-len(rows) // batches)))
    assert _last_session_counts(written) == final
    assert sum(topic == DROPPED_LATE_TOPIC for topic, _, _ in written) == dropped
