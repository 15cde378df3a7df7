"""A windowed table's filter/map_values into a versioned store keyed by windows, pure logic: the compiled
program against a model of Kafka Streams 4.3.1 (``KStreamWindowAggregate`` stamping a window's update
with the larger of its records' times, ``KTableFilter`` putting it at that stamp into its versioned
store, keyed by the window's key and start), whatever the micro-batches; time and session windows against
what Kafka Streams 4.3.1 itself printed for one input (TopologyTestDriver), suppressed and cogrouped too;
and what stays refused, naming the processor. The broker-backed comparison is
tests/test_equivalence_versioned_consumers.py."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_dsl_window_store_processor_logic import _program, _run  # noqa: E402
from test_versioned_tables_logic import ModelStore  # noqa: E402

from dagster_kstreams.processors.errors import UnsupportedTopologyError  # noqa: E402
from dagster_kstreams.topology import (  # noqa: E402
    BufferConfig, KeyValue, Materialized, SessionWindows, SlidingWindows, Stores, StreamsBuilder, Suppressed,
    TimeWindows, WindowedSerde,
)
from dagster_kstreams.topology.processor_api import Processor, Record  # noqa: E402
from dagster_kstreams.topology.serdes import Serdes  # noqa: E402

SIZE_MS, GRACE_MS, HISTORY_MS = 100, 50, 60  # a history shorter than size plus grace: puts expire
TIME_KEYS = WindowedSerde(Serdes.String(), SIZE_MS)
SESSION_KEYS = Serdes.SessionWindowed(Serdes.String())


def _versioned(store: str, history_ms: int = HISTORY_MS, key_serde=TIME_KEYS) -> Materialized:
    return Materialized.as_(Stores.persistent_versioned_key_value_store(store, timedelta(milliseconds=history_ms))) \
        .with_key_serde(key_serde).with_value_serde(Serdes.Long())


def _uncached(store: str) -> Materialized:
    return Materialized.as_(store).with_caching_disabled()


def _version_text(record) -> str:
    """As the Java harness printed a VersionedRecord (its validTo is empty through the metered store)."""
    return "null" if record is None else f"<{record.value()},{record.timestamp()},Optional.empty>"


class _Reads(Processor):
    """Per update of the step: its window, value and time, and the step's store read for the window:
    latest and as of 1 ms before the update (twin of the harness's scratch processor)."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("steps")

    def process(self, record: Record) -> None:
        key, t = record.key, record.timestamp
        value = "null" if record.value is None else record.value
        self.context.forward(Record(f"{key.key}@{key.window.start}-{key.window.end}",
                                    f"{value}|t{t}|{_version_text(self.store.get(key))}|"
                                    f"{_version_text(self.store.get(key, t - 1))}", t))


def _step_program(windows, key_serde, history_ms: int = HISTORY_MS):
    builder = StreamsBuilder()
    counts = builder.stream("in").group_by_key().windowed_by(windows).count(_uncached("counts"))
    counts.filter(lambda window, count: count % 3 != 0, _versioned("steps", history_ms, key_serde)) \
        .to_stream().process(_Reads, "steps").to("out")
    return _program(builder)


# -- time windows against a model of Kafka Streams -----------------------------------------------
def _model_read(store: ModelStore, key, as_of=None) -> str:
    history = store.versions.get(key, {})
    if as_of is None:
        found = max(history) if history else None
    elif as_of < store.observed - store.retention:
        found = max(history) if history and max(history) <= as_of else None
    else:
        found = max((t for t in history if t <= as_of), default=None)
    if found is None or history[found] is None:
        return "null"
    return f"<{history[found]},{found},Optional.empty>"


def _expected(rows) -> list[tuple]:
    """Kafka Streams: a tumbling window's count dropped once the window's end is at or below stream time
    minus the grace; else stamped with the larger of the record's time and the window's; the filter puts
    the count (a tombstone when it fails) at that stamp, and forwards it unless the put is expired. The
    filter sends old values (its parent, an aggregation, does), and its table is not a versioned one's,
    so a tombstone where the store's latest is none is neither put nor forwarded (KTableFilter)."""
    stream_time, windows, store, out = -1, {}, ModelStore(HISTORY_MS), []
    for key, _, timestamp in rows:
        if key is None:
            continue
        stream_time = max(stream_time, timestamp)
        start = timestamp // SIZE_MS * SIZE_MS
        if start + SIZE_MS <= stream_time - GRACE_MS:
            continue
        count, stamp = windows.get((key, start), (0, timestamp))
        count, stamp = count + 1, max(stamp, timestamp)
        windows[(key, start)] = (count, stamp)
        value = count if count % 3 else None
        history = store.versions.get((key, start), {})
        if value is None and (not history or history[max(history)] is None):
            continue  # KTableFilter sends old values here: a tombstone over none (the latest) is not put
        if store.put((key, start), value, stamp) == "expired":
            continue
        read = f"{_model_read(store, (key, start))}|{_model_read(store, (key, start), stamp - 1)}"
        out.append((f"{key}@{start}-{start + SIZE_MS}", f"{'null' if value is None else value}|t{stamp}|{read}"))
    return out


_rows = st.lists(st.tuples(st.sampled_from(["a", "b", None]), st.just("v"), st.integers(0, 600)),
                 min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(_rows, st.integers(1, 4))
def test_a_time_windowed_count_filtered_into_a_versioned_store_puts_at_kafka_streams_stamps_whatever_the_batches(
        rows, batches):
    program = _step_program(TimeWindows.of_size_and_grace(timedelta(milliseconds=SIZE_MS),
                                                          timedelta(milliseconds=GRACE_MS)), TIME_KEYS)
    assert _run(program, rows, min(batches, len(rows)))[0] == _expected(rows)


# -- what Kafka Streams 4.3.1 printed ----------------------------------------------------------
# One key's records at these times, counted in 1 s windows (grace 500 ms) or sessions (gap 300 ms, grace
# 500 ms), filtered (count % 3 != 0) into a versioned store of 800 ms, read by the processor.
TIMES = [1000, 1200, 1100, 2500, 1300, 900, 3400, 2600, 1800, 4000, 2700, 3500, 3450]
KAFKA_STREAMS_TIME_WINDOWS = [
    ("a@1000-2000", "1|t1000|<1,1000,Optional.empty>|null"),
    ("a@1000-2000", "2|t1200|<2,1200,Optional.empty>|<1,1000,Optional.empty>"),
    ("a@1000-2000", "null|t1200|null|<1,1000,Optional.empty>"),  # count 3 (its record 1100) at the window's 1200
    ("a@2000-3000", "1|t2500|<1,2500,Optional.empty>|null"),  # then 1300: its window closed (2000 <= 2500 - 500)
    ("a@3000-4000", "1|t3400|<1,3400,Optional.empty>|null"),
    ("a@2000-3000", "2|t2600|<2,2600,Optional.empty>|null"),  # 2500 is past the history: only the latest reads
    ("a@4000-5000", "1|t4000|<1,4000,Optional.empty>|null"),
    ("a@3000-4000", "2|t3500|<2,3500,Optional.empty>|<1,3400,Optional.empty>"),
    ("a@3000-4000", "null|t3500|null|<1,3400,Optional.empty>"),
]
KAFKA_STREAMS_SESSIONS = [
    ("a@1000-1000", "1|t1000|<1,1000,Optional.empty>|null"),
    ("a@1000-1000", "null|t1000|null|null"),  # merged away: its tombstone at its own end
    ("a@1000-1200", "2|t1200|<2,1200,Optional.empty>|null"),
    ("a@1000-1200", "null|t1200|null|null"),  # count 3
    ("a@2500-2500", "1|t2500|<1,2500,Optional.empty>|null"),
    ("a@3400-3400", "1|t3400|<1,3400,Optional.empty>|null"),
    ("a@2600-2600", "1|t2600|<1,2600,Optional.empty>|null"),
    ("a@4000-4000", "1|t4000|<1,4000,Optional.empty>|null"),
    ("a@3400-3400", "null|t3400|null|null"),
    ("a@3400-3500", "2|t3500|<2,3500,Optional.empty>|null"),
    ("a@3400-3500", "null|t3500|null|null"),
]


@pytest.mark.parametrize("batches", [1, 3, len(TIMES)])
def test_time_windows_and_sessions_give_what_kafka_streams_gave(batches):
    rows = [("a", "v", t) for t in TIMES]
    time_windows = _step_program(TimeWindows.of_size_and_grace(timedelta(seconds=1), timedelta(milliseconds=500)),
                                 WindowedSerde(Serdes.String(), 1000), history_ms=800)
    assert _run(time_windows, rows, batches)[0] == KAFKA_STREAMS_TIME_WINDOWS
    sessions = _step_program(SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=300),
                                                                        timedelta(milliseconds=500)),
                             SESSION_KEYS, history_ms=800)
    assert _run(sessions, rows, batches)[0] == KAFKA_STREAMS_SESSIONS


# The same count behind a suppression until the window closes: only window 2000 closes within the input
# (window 1000's count 3, filtered to a tombstone for a window the store never had, is not forwarded);
# and a windowed cogroup's count (one cogrouped stream), the same updates as the count's.
KAFKA_STREAMS_SUPPRESSED = [("a@2000-3000", "2|t2600|<2,2600,Optional.empty>|null")]


def _suppressed_or_cogrouped_program(cogrouped: bool):
    builder = StreamsBuilder()
    grouped = builder.stream("in").group_by_key()
    windows = TimeWindows.of_size_and_grace(timedelta(seconds=1), timedelta(milliseconds=500))
    if cogrouped:
        counts = grouped.cogroup(lambda key, value, count: count + 1).windowed_by(windows) \
            .aggregate(lambda: 0, _uncached("counts").with_value_serde(Serdes.Long()))
    else:
        counts = grouped.windowed_by(windows).count(_uncached("counts")) \
            .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    counts.filter(lambda window, count: count % 3 != 0,
                  _versioned("steps", 800, WindowedSerde(Serdes.String(), 1000))) \
        .to_stream().process(_Reads, "steps").to("out")
    return _program(builder)


@pytest.mark.parametrize("batches", [1, 3, len(TIMES)])
def test_a_suppressed_and_a_cogrouped_windowed_table_give_what_kafka_streams_gave(batches):
    rows = [("a", "v", t) for t in TIMES]
    assert _run(_suppressed_or_cogrouped_program(False), rows, batches)[0] == KAFKA_STREAMS_SUPPRESSED
    assert _run(_suppressed_or_cogrouped_program(True), rows, batches)[0] == KAFKA_STREAMS_TIME_WINDOWS


# -- what runs, what stays refused ---------------------------------------------------------------
def _counts(builder, windows=TimeWindows.of_size_with_no_grace(timedelta(milliseconds=SIZE_MS)), topic="in",
            store="counts"):
    return builder.stream(topic).group_by_key().windowed_by(windows).count(_uncached(store))


def _refused(builder, processor: str, match: str) -> None:
    with pytest.raises(UnsupportedTopologyError, match=rf"processor {processor}\b.*{match}"):
        _program(builder)


def test_sliding_suppressed_and_cogrouped_windows_into_a_versioned_store_compile():
    builder = StreamsBuilder()
    _counts(builder, SlidingWindows.of_time_difference_and_grace(timedelta(milliseconds=SIZE_MS), timedelta(0))) \
        .map_values(lambda count: count, _versioned("sliding"))
    _counts(builder, store="tumbling").suppress(Suppressed.until_window_closes(BufferConfig.unbounded())) \
        .filter(lambda window, count: True, _versioned("suppressed"))
    builder.stream("other").group_by_key().cogroup(lambda key, value, aggregate: aggregate + 1) \
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(milliseconds=SIZE_MS))) \
        .aggregate(lambda: 0, _uncached("cogrouped")).filter(lambda window, count: True, _versioned("cogroup-steps"))
    _program(builder)


def test_a_versioned_store_of_windows_without_its_windowed_key_serde_is_refused_naming_the_step():
    builder = StreamsBuilder()
    _counts(builder).filter(lambda window, count: True, Materialized.as_(
        Stores.persistent_versioned_key_value_store("steps", timedelta(seconds=1))))
    _refused(builder, "KTABLE-FILTER-0000000002", "versioned store steps .*WindowedSerde")
    builder = StreamsBuilder()
    _counts(builder).filter(lambda window, count: True, _versioned("steps", key_serde=SESSION_KEYS))
    _refused(builder, "KTABLE-FILTER-0000000002", "versioned store steps .*WindowedSerde")
    builder = StreamsBuilder()
    _counts(builder, SessionWindows.of_inactivity_gap_with_no_grace(timedelta(milliseconds=SIZE_MS))) \
        .map_values(lambda count: count, _versioned("steps"))
    _refused(builder, "KTABLE-MAPVALUES-0000000002", "versioned store steps .*SessionWindowed")


def test_time_windows_into_a_versioned_store_beside_session_windows_are_refused_naming_the_step():
    builder = StreamsBuilder()
    grouped = builder.stream("in").group_by_key()
    grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(milliseconds=SIZE_MS))).count()
    grouped.windowed_by(TimeWindows.of_size_with_no_grace(timedelta(milliseconds=SIZE_MS))).count() \
        .filter(lambda window, count: True, _versioned("steps"))
    _refused(builder, "KTABLE-FILTER-0000000005", "versioned store steps .*session windows")


def test_a_join_of_windowed_tables_into_a_versioned_store_is_still_refused_naming_the_step():
    builder = StreamsBuilder()
    counts, others = _counts(builder), _counts(builder, topic="others", store="others")
    counts.join(others, lambda count, other: count + other).filter(lambda window, count: True, _versioned("steps"))
    _refused(builder, "KTABLE-FILTER-0000000007", "KTABLE-MERGE-0000000004 .*versioned store by their timestamps")


@pytest.mark.parametrize("reader", ["join", "session_group_by", "suppress", "kept_then_join"])
def test_what_reads_a_versioned_store_of_windows_but_to_stream_steps_and_regroupings_is_refused_naming_it(reader):
    builder = StreamsBuilder()
    steps = _counts(builder).filter(lambda window, count: True, _versioned("steps"))
    if reader == "join":
        steps.join(_counts(builder, topic="others", store="others"), lambda count, other: count + other)
    elif reader == "session_group_by":  # a re-grouping of time or sliding windows runs
        builder = StreamsBuilder()
        _counts(builder, SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=300), timedelta(0))) \
            .filter(lambda window, count: True, _versioned("steps", key_serde=SESSION_KEYS)) \
            .group_by(lambda window, count: KeyValue(window.key, count)).count()
    elif reader == "suppress":
        steps.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    else:
        steps.map_values(lambda count: count, Materialized.as_("kept").with_key_serde(TIME_KEYS)) \
            .join(_counts(builder, topic="others", store="others"), lambda count, other: count + other)
    with pytest.raises(UnsupportedTopologyError, match=r"processor KTABLE-\w+-\d+ \(\w+\) .*KTABLE-FILTER-0000000002"):
        _program(builder)
