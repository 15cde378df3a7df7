"""Records forwarded under other keys reach the stores after them with their own key's state
(dagster_kstreams/processors/own_groups.py), without Spark: a user processor's punctuator, a
suppression's evictions and a windowed table's windows, each into a count in the same sub-topology,
run batch by batch with the task state pickled in between (as a checkpoint would). The
broker-backed comparison with Kafka Streams is test_equivalence_own_groups.py."""

from __future__ import annotations

import pickle
import struct
from datetime import timedelta

import pandas as pd
import pytest

from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.processors.state import load_state
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import Consumed, StreamsBuilder
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.processor_api import FixedKeyProcessor, PunctuationType, Record, Stores
from dagster_kstreams.topology.serdes import Serdes, Window, Windowed, WindowedSerde
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed
from dagster_kstreams.topology.windows import TimeWindows

UNCACHED = Materialized.as_("counts").with_caching_disabled()


def _program(build):
    builder = StreamsBuilder()
    build(builder)
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _run(program, rows, batches, between_batches=lambda stored: stored):
    """Rows ``(key, value, timestamp)`` of one partition in ``batches`` micro-batches; the records
    written to "out" as ``[(key bytes, value bytes)]``. ``between_batches`` changes the task's stored
    state before each next batch."""
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
        out, stored = program.process_task_batch(frame, None if stored is None else between_batches(stored))
        if out is not None:
            out = out[out["topic"] == "out"].sort_values("emit_order", kind="stable")
            outputs += list(zip(out["key"], out["value"]))
    return outputs


def _long(data: bytes) -> int:
    return struct.unpack(">q", data)[0]


ROWS = [("a", "1", 100), ("b", "2", 400), ("a", None, 250), ("c", "3", 1_300), ("b", "4", 900),
        ("a", "5", 2_600), (None, "6", 2_700), ("c", "7", 3_900), ("b", "8", 5_200), ("a", "9", 5_300)]


class _HoldUntilPunctuation(FixedKeyProcessor):
    """Keeps each key's last value; every second of stream time forwards and forgets them all, in key order."""

    def init(self, context) -> None:
        self.context = context
        self.held = context.get_state_store("held")
        context.schedule(1_000, PunctuationType.STREAM_TIME, self.release)

    def process(self, record) -> None:
        if record.key is not None and record.value is not None:
            self.held.put(record.key, record.value)

    def release(self, now: int) -> None:
        for entry in list(self.held.all()):
            self.context.forward(Record(entry.key, entry.value, now))
            self.held.delete(entry.key)


def _punctuated_counts(builder):
    builder.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("held"),
                                                           Serdes.String(), Serdes.String()))
    builder.stream("in").process_values(_HoldUntilPunctuation, "held").group_by_key().count(UNCACHED) \
        .to_stream().map_values(str).to("out")


def _releases(rows, interval=1_000):
    """The keys _HoldUntilPunctuation releases, in order: after each record, when stream time (every
    record's) reached the schedule's next multiple of the interval (the first at 0)."""
    held, due, stream_time, released = {}, 0, -1, []
    for key, value, timestamp in rows:
        stream_time = max(stream_time, timestamp)
        if key is not None and value is not None:
            held[key] = value
        if stream_time >= due:
            released += sorted(held)
            held = {}
            due = (stream_time // interval + 1) * interval
    return released


@pytest.mark.parametrize("batches", [1, 3, 10])
def test_a_punctuators_records_of_other_keys_are_counted_under_their_own_keys(batches):
    released = [(key.decode(), value.decode()) for key, value in _run(_program(_punctuated_counts), ROWS, batches)]
    expected, counts = [], {}
    for key in _releases(ROWS):
        counts[key] = counts.get(key, 0) + 1
        expected.append((key, str(counts[key])))
    assert released == expected and max(counts.values()) > 1


def _suppressed_counts(builder):
    builder.table("in", Materialized.as_("t").with_caching_disabled()) \
        .suppress(Suppressed.until_time_limit(timedelta(milliseconds=1_000), BufferConfig.unbounded())) \
        .to_stream().group_by_key().count(UNCACHED).to_stream().map_values(str).to("out")


@pytest.mark.parametrize("batches", [1, 4, 10])
def test_a_suppressions_evictions_are_counted_under_their_own_keys(batches):
    released = [(key.decode(), value.decode()) for key, value in _run(_program(_suppressed_counts), ROWS, batches)]
    per_key: dict[str, list[str]] = {}
    for key, value in released:
        per_key.setdefault(key, []).append(value)
    # every key's evictions counted 1, 2, ... by itself: never another key's count
    assert per_key and all(values == [str(n) for n in range(1, len(values) + 1)] for values in per_key.values())
    assert sum(map(len, per_key.values())) == len(released) > len(per_key)


def _windowed_counts(builder):
    windowed = WindowedSerde(Serdes.String(), 2_000)
    builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=2))) \
        .count(Materialized.as_("window-counts").with_caching_disabled()).to_stream() \
        .group_by_key(Grouped.with_(windowed, Serdes.Long())).count(UNCACHED).to_stream() \
        .to("out", None)


def _window_counts(outputs) -> list[tuple]:
    """The counts written to "out" by windowed key (2 s windows' serde): ``[((key, start), count)]``."""
    windowed = WindowedSerde(Serdes.String(), 2_000)
    return [((window.key, window.window.start), _long(value))
            for window, value in ((windowed.deserialize(key), value) for key, value in outputs)]


def _expected_window_counts(sizes) -> list[tuple]:
    """A count by (key, window start) of ROWS' records, each counted once per window size in ``sizes``
    order, as a store keyed by the key and the window's start counts them."""
    updates: dict = {}
    expected = []
    for key, _, timestamp in ROWS:
        if key is None:
            continue
        for size in sizes:
            entry = (key, timestamp // size * size)
            updates[entry] = updates.get(entry, 0) + 1
            expected.append((entry, updates[entry]))
    return expected


@pytest.mark.parametrize("batches", [1, 4, 10])
def test_a_windowed_tables_windows_are_counted_each_under_its_own_window(batches):
    program = _program(_windowed_counts)
    assert program.task_grouped  # the windows' groups are the task state's
    assert _window_counts(_run(program, ROWS, batches)) == _expected_window_counts((2_000,))


def _counts_of_two_window_sizes(builder):
    """Windows of 2 s and of 1 s, each counted; both streams counted again by windowed key in 2 s windows'
    serde: Kafka Streams' count store is keyed by the key and the window's start (``TimeWindowedSerde``)."""
    windowed = WindowedSerde(Serdes.String(), 2_000)
    grouped = builder.stream("in").group_by_key()
    windows = [grouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=size), timedelta(seconds=10)))
               .count(Materialized.as_(f"per-{size}s").with_caching_disabled()) for size in (2, 1)]
    windows[0].to_stream().merge(windows[1].to_stream()) \
        .group_by_key(Grouped.with_(windowed, Serdes.Long())).count(UNCACHED).to_stream().to("out", None)


@pytest.mark.parametrize("batches", [1, 4, 10])
def test_windows_of_one_start_and_two_sizes_are_one_entry_of_a_store_after_them(batches):
    program = _program(_counts_of_two_window_sizes)
    assert program.task_grouped and program.window_keys.by_start
    expected = _expected_window_counts((2_000, 1_000))  # the 2 s windows' update first: defined first
    assert _window_counts(_run(program, ROWS, batches)) == expected
    assert any(count == 2 for _, count in expected[:2])  # a 2 s and a 1 s window of one start: one entry


def _windows_with_their_ends(stored: bytes) -> bytes:
    """A task state as the runner kept it before a window's group was its key and start: every
    window's group under ``(key bytes, start, end)`` (2 s windows)."""
    data = load_state(stored)
    data["keys"] = {(raw_key + (raw_key[1] + 2_000,) if isinstance(raw_key, tuple) else raw_key): slots
                    for raw_key, slots in data["keys"].items()}
    return pickle.dumps(data)


def test_a_checkpoint_keeping_windows_with_their_ends_goes_on_in_the_windows_groups():
    program = _program(_windowed_counts)
    assert program.window_keys.by_start
    assert _run(program, ROWS, 4, between_batches=_windows_with_their_ends) == _run(program, ROWS, 4)


class _PassOn(FixedKeyProcessor):
    def process(self, record) -> None:
        self.context.forward(record)


@pytest.mark.parametrize("serde", [WindowedSerde(Serdes.String(), window_size_ms=1_000),
                                   WindowedSerde(Serdes.String(), session=True)], ids=["time", "session"])
def test_windowed_keys_read_from_a_topic_are_counted_each_under_its_whole_key(serde):
    """Records whose keys a source reads as windows (a windowed table's output topic) are passed on
    by a processor into a count: each goes on with the group its whole key's bytes have, the source
    record's own (Kafka Streams' count store keys them by the windowed serde: a session's key, end
    and start, so two sessions of one start and different ends are two entries)."""
    def build(builder):
        builder.stream("in", Consumed.with_(serde, Serdes.String())).process_values(_PassOn) \
            .group_by_key(Grouped.with_(serde, Serdes.String())).count(UNCACHED).to_stream().map_values(str).to("out")

    program = _program(build)
    ends = (1_000, 1_000) if not serde.session else (100, 500)  # a second session of the same start
    windows = [Windowed("a", Window(0, ends[0])), Windowed("a", Window(0 if serde.session else 1_000, ends[1])),
               Windowed("a", Window(0, ends[0]))]
    records = [(RecordContext("in", 0, offset, 10 * offset, raw_key=serde.serialize(key), position=offset),
                serde.serialize(key), b"v") for offset, key in enumerate(windows)]
    out, _ = program.run_task_batch(records, None)
    assert [value for topic, value in zip(out.topic, out.value) if topic == "out"] == [b"1", b"1", b"2"]
