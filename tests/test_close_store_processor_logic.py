"""A user processor on the store of a time-windowed, sliding-window or session aggregation that emits on
window close, without Spark: what the processor writes is what the window-close emit fetches (a put
changes the value and timestamp emitted, a delete takes the window out, a new window goes out, a write
into an emitted window never does), the time-ordered window store's reads (start, then key; a window
starting at the store's time minus its retention still returned; a sliding store's key ranges through
its key index), what a sliding aggregation's next records make of the processor's writes, sessions the
key's reads no longer find still emitted, batches with the task state pickled in between; a store kept in
memory, which neither keeps nor emits the window at its retention's edge; a session store kept in memory,
whose remove leaves its time where a put of None moves it. The
broker-backed comparison with Kafka Streams is in test_equivalence_suppress.py."""

from __future__ import annotations

import struct
from datetime import timedelta

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import (
    EmitStrategy, Materialized, SessionWindows, SlidingWindows, StreamsBuilder, StreamsConfig, TimeWindows, Window,
    Windowed,
)
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.processor_api import Processor, Record, ValueAndTimestamp
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde

SECOND = timedelta(seconds=1)


class _Writer(Processor):
    """Runs after the aggregation on each record (defined after it): writes the store as the record's
    value says; ``read`` forwards every window the store returns, in its order."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("closed")

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        if value == "put":
            self.store.put(key, ValueAndTimestamp.make("P", 77), 0)
        elif value == "del":
            self.store.put(key, None, 0)
        elif value == "new":
            self.store.put("z", ValueAndTimestamp.make("Z", 5), 0)
        elif value == "old":
            self.store.put(key, ValueAndTimestamp.make("late", 1), 0)
        elif value == "ahead":  # the store's time moves to 40 s: it returns starts from 40 s - 12 s on
            for start, text, timestamp in ((40_000, "far", 1), (28_000, "edge", 2), (27_999, "gone", 3)):
                self.store.put("z", ValueAndTimestamp.make(text, timestamp), start)
        elif value == "read":
            listed = ";".join(f"{entry.key.key}@{entry.key.window.start}={entry.value.value()}@"
                              f"{entry.value.timestamp()}" for entry in self.store.all())
            backward = [entry.key for entry in self.store.backward_all()]
            assert backward == [entry.key for entry in self.store.all()][::-1]
            one = self.store.fetch(key, 0)
            self.context.forward(Record("reads", f"{listed}|{None if one is None else one.value()}", record.timestamp))


class _Stamp(Processor):
    """Writes each emitted window with its record timestamp."""

    def init(self, context) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(f"{record.value}|t{record.timestamp}"))


def _program():
    return _closing_program(TimeWindows.of_size_and_grace(10 * SECOND, 2 * SECOND), 10_000, _Writer)


def _closing_program(windows, window_size_ms: int, writer, store_type: str = StreamsConfig.ROCKS_DB):
    """An aggregation in ``windows`` emitting on window close, its store (of ``store_type``) written by ``writer``."""
    builder = StreamsBuilder()
    events = builder.stream("in")
    events.group_by_key().windowed_by(windows) \
        .emit_strategy(EmitStrategy.on_window_close()) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "," + value,
                   Materialized.as_("closed").with_store_type(store_type).with_caching_disabled()) \
        .to_stream().process(_Stamp).to("out", Produced.with_(WindowedSerde(Serdes.String(), window_size_ms),
                                                              Serdes.String()))
    events.process(writer, "closed").to("out")
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _run(program, rows, batches=1, windowed_serde=None):
    """Rows ``(key, value, timestamp)`` of one partition in ``batches`` micro-batches, the task state
    pickled in between; the records written, ``[(key, value)]`` (windowed keys as ``key@start``, or
    ``key@start-end`` read with ``windowed_serde``)."""
    stream, stream_times = -1, []
    for key, _, timestamp in rows:
        stream = max(stream, timestamp) if key is not None else stream
        stream_times.append(stream)
    outputs, stored = [], None
    size = -(-len(rows) // batches)
    for first in range(0, len(rows), size):
        chunk = range(first, min(first + size, len(rows)))
        frame = pd.DataFrame({
            "key": [None if rows[i][0] is None else rows[i][0].encode() for i in chunk],
            "value": [rows[i][1].encode() for i in chunk],
            "topic": ["in"] * len(chunk), "partition": [0] * len(chunk), "offset": list(chunk),
            "timestamp": [None] * len(chunk), "event_time": [rows[i][2] for i in chunk],
            "merge_time": [rows[i][2] for i in chunk], "seq": list(chunk),
            "stream_time": [stream_times[i] for i in chunk],
        })
        out, stored = program.process_task_batch(frame, stored)
        if out is not None:
            out = out.sort_values("emit_order", kind="stable")
            for key, value in zip(out["key"], out["value"]):
                if key == b"reads":
                    key = "reads"
                elif windowed_serde is None:
                    key = f"{key[:-8].decode()}@{struct.unpack('>q', key[-8:])[0]}"
                else:
                    windowed = windowed_serde.deserialize(key)
                    key = f"{windowed.key}@{windowed.window.start}-{windowed.window.end}"
                outputs.append((key, value.decode()))
    return outputs


def _in_memory_program():
    return _closing_program(TimeWindows.of_size_and_grace(10 * SECOND, 2 * SECOND), 10_000, _Writer,
                            StreamsConfig.IN_MEMORY)


# tumbling 10 s windows, grace 2 s (retention 12 s)
ROWS = [("a", "1", 1_000), ("a", "put", 2_000), ("b", "2", 3_000), ("a", "3", 4_000), ("b", "del", 5_000),
        ("c", "new", 6_000), ("a", "4", 13_000), ("a", "old", 14_000), ("a", "read", 14_500),
        ("b", "ahead", 15_000), ("a", "read", 15_500), ("a", "5", 45_000), ("a", "6", 56_000)]


@pytest.mark.parametrize("batches", [1, 4, 13])
def test_the_window_close_emit_sends_what_the_processor_wrote(batches):
    """a@0 aggregates onto the processor's "P" and goes out stamped with the larger time; b@0, deleted,
    never goes out; z@0, put by the processor, does (windows of one start by key). a@0 written again
    once emitted is never forwarded. The put 40 s ahead moves the store's time: the windows starting
    before 28 s (a@10 s, b@10 s) are never emitted, z@28 s is (start = time - retention: still
    returned by the time-ordered store), z@27.999 s was never kept."""
    outputs = _run(_program(), ROWS, batches)
    assert [record for record in outputs if record[0] != "reads"] == [
        ("a@0", "P,3|t4000"), ("c@0", ",new|t6000"), ("z@0", "Z|t5"),
        ("z@28000", "edge|t2"), ("a@40000", ",5|t45000"), ("z@40000", "far|t1")]
    reads = [value for key, value in outputs if key == "reads"]
    assert reads == ["a@0=late@1;c@0=,new@6000;z@0=Z@5;a@10000=,4,old,read@14500|late",
                     "z@28000=edge@2;z@40000=far@1|None"]


class _SlidingWriter(Processor):
    """As :class:`_Writer`, on the sliding windows; the record's value ``<command>@<start>`` names the
    window: ``put`` writes the key's window "P" stamped 1.2 s, ``del`` deletes it, ``new``/``ahead`` put
    one of key z; ``read`` forwards the key range a..z (the key index's order) and ``fetch_all`` (by start)."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("closed")

    def process(self, record: Record) -> None:
        key, timestamp = record.key, record.timestamp
        command, _, start = record.value.partition("@")
        if command == "put":
            self.store.put(key, ValueAndTimestamp.make("P", 1_200), int(start))
        elif command == "del":
            self.store.put(key, None, int(start))
        elif command in ("new", "ahead"):
            self.store.put("z", ValueAndTimestamp.make("Z" if command == "new" else "far", timestamp), int(start))
        elif command == "read":
            by_key = ",".join(f"{entry.key.key}@{entry.key.window.start}"
                              for entry in self.store.fetch("a", "z", 0, timestamp + 1))
            by_start = ",".join(f"{entry.key.key}@{entry.key.window.start}"
                                for entry in self.store.fetch_all(0, timestamp + 1))
            self.context.forward(Record("reads", f"{by_key}|{by_start}", timestamp))


def _sliding_program():
    return _closing_program(SlidingWindows.of_time_difference_and_grace(SECOND, 2 * SECOND), 1_000, _SlidingWriter)


# time difference 1 s, grace 2 s (retention 4 s; a window [s, s + 1 s] closes once stream time passes s + 3 s)
SLIDING_ROWS = [("a", "1", 1_000), ("a", "put@1001", 1_500), ("a", "2", 1_800), ("b", "3", 1_200),
                ("b", "del@200", 2_100), ("c", "new@1500", 2_300), ("a", "read", 4_000), ("a", "ahead@9000", 5_000),
                ("a", "6", 6_000), ("a", "7", 7_500), ("a", "9", 12_500)]


@pytest.mark.parametrize("batches", [1, 4, 11])
def test_the_sliding_window_close_emit_sends_what_the_processor_wrote(batches):
    """The processor overwrites a@1001 (record 1000's right window, made by record 1500) with "P" stamped
    1.2 s: record 1800 aggregates onto it ("P,2", stamped 1.8 s) and makes no right window of its own
    (the window's time, 1.2 s, is not after the record's). b@200, deleted, never goes out; z@1500, put,
    does, in start order. The key range reads by key (the key index), fetch_all by start. The put at 9 s
    moves the store's time: a@3000 to a@5000 start before 9 s - 4 s or before 7.5 s (record 12.5 s's left
    window moves it to 11.5 s), so they are never emitted; z@9000 is."""
    outputs = _run(_sliding_program(), SLIDING_ROWS, batches)
    assert [record for record in outputs if record[0] != "reads"] == [
        ("a@0", ",1|t1000"), ("a@500", ",1,put@1001|t1500"), ("a@800", ",1,put@1001,2|t1800"),
        ("a@1001", "P,2|t1800"), ("b@1100", ",3,del@200|t2100"), ("b@1201", ",del@200|t2100"),
        ("c@1300", ",new@1500|t2300"), ("z@1500", "Z|t2300"), ("a@1501", ",2|t1800"), ("z@9000", "far|t5000")]
    assert [value for key, value in outputs if key == "reads"] == [
        "a@0,a@500,a@800,a@1001,a@1501,a@3000,b@1100,b@1201,c@1300,z@1500|"
        "a@0,a@500,a@800,a@1001,b@1100,b@1201,c@1300,z@1500,a@1501,a@3000"]


class _CommandWriter(Processor):
    """On records with a null key (which the aggregation skips): ``put <key> <start>`` puts a window,
    ``read <key from> <key to>`` forwards the key range's windows, then ``|``, then ``fetch_all``'s."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("closed")

    def process(self, record: Record) -> None:
        command, *args = record.value.split(" ")
        if command == "put":
            self.store.put(args[0], ValueAndTimestamp.make("v", 1), int(args[1]))
            return
        listed = [",".join(f"{entry.key.key}@{entry.key.window.start}" for entry in entries) for entries in
                  (self.store.fetch(args[0], args[1], 0, 10 ** 9), self.store.fetch_all(0, 10 ** 9))]
        self.context.forward(Record("reads", "|".join(listed), record.timestamp))


def _command_program():
    """A sliding aggregate emitting on window close kept 5 minutes (segments of 150 s), written by commands."""
    builder = StreamsBuilder()
    events = builder.stream("in")
    events.group_by_key().windowed_by(SlidingWindows.of_time_difference_and_grace(SECOND, 2 * SECOND)) \
        .emit_strategy(EmitStrategy.on_window_close()) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "," + value,
                   Materialized.as_("closed").with_caching_disabled().with_retention(timedelta(minutes=5))) \
        .to_stream().to("out", Produced.with_(WindowedSerde(Serdes.String(), 1_000), Serdes.String()))
    events.process(_CommandWriter, "closed").to("out")
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


_KEYS = ("a", "ab", "b", "b9", "aa")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_KEYS), st.integers(0, 700_000)), min_size=1, max_size=25),
       st.sampled_from(_KEYS), st.sampled_from(_KEYS))
def test_a_sliding_close_stores_key_range_reads_its_key_index_and_fetch_all_its_time_first_keys(puts, low, high):
    """Kafka Streams' indexed time-ordered store: a key range iterates the index (KeyFirstWindowKeySchema:
    key bytes, then the start, in segments of 150 s), fetch_all the base keys (TimeFirstWindowKeySchema: the
    start, then key bytes); both return the windows starting at the store's time (its largest start put)
    minus 5 minutes or later, a put older than that when made being skipped."""
    rows = [(None, f"put {key} {start}", 1_000) for key, start in puts] + [(None, f"read {low} {high}", 1_000)]
    (reads,) = [value for key, value in _run(_command_program(), rows) if key == "reads"]
    windows, time = {}, -1
    for key, start in puts:
        time = max(time, start)
        if start >= time - 300_000:
            windows[(key, start)] = True
    live = [(key, start) for key, start in windows if start >= time - 300_000]
    seqnum = bytes(4)
    index = sorted((start // 150_000, key.encode() + struct.pack(">q", start) + seqnum, f"{key}@{start}")
                   for key, start in live if low.encode() <= key.encode() <= high.encode())
    base = sorted((struct.pack(">q", start) + key.encode() + seqnum, f"{key}@{start}") for key, start in live)
    assert reads == ",".join(entry[-1] for entry in index) + "|" + ",".join(entry[-1] for entry in base)


class _SessionWriter(Processor):
    """As :class:`_Writer`, on the sessions: ``put``/``del`` overwrite/remove the key's latest session."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("closed")

    def process(self, record: Record) -> None:
        key, value, timestamp = record.key, record.value, record.timestamp
        if value in ("put", "del"):
            latest = list(self.store.fetch(key))[-1].key
            if value == "put":
                self.store.put(latest, "P")
            else:
                self.store.remove(latest)
        elif value == "new":
            self.store.put(Windowed("z", Window(timestamp, timestamp)), "Z")
        elif value == "old":  # a session emitted already
            self.store.put(Windowed(key, Window(1_000, 4_500)), "late")
        elif value == "ahead":  # the store's time moves to 34 s: it returns ends after 34 s - 4 s
            self.store.put(Windowed("z", Window(timestamp + 20_000, timestamp + 20_000)), "far")
        elif value == "read":
            listed = ";".join(f"{entry.key.key}@{entry.key.window.start}-{entry.key.window.end}={entry.value}"
                              for entry in self.store.fetch("a", "z"))
            self.context.forward(Record("reads", listed, timestamp))


class _AheadRemover(Processor):
    """``rm-ahead`` removes, ``null-ahead`` puts None for, the key's session 20 s ahead (not stored)."""

    def init(self, context) -> None:
        self.store = context.get_state_store("closed")

    def process(self, record: Record) -> None:
        ahead = Windowed(record.key, Window(record.timestamp + 20_000, record.timestamp + 20_000))
        if record.value == "rm-ahead":
            self.store.remove(ahead)
        elif record.value == "null-ahead":
            self.store.put(ahead, None)


def _session_program(materialized=None, writer=_SessionWriter):
    builder = StreamsBuilder()
    events = builder.stream("in")
    events.group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(3 * SECOND, SECOND)) \
        .emit_strategy(EmitStrategy.on_window_close()) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "," + value, lambda key, one, two: one + "|" + two,
                   materialized or Materialized.as_("closed").with_caching_disabled()) \
        .to_stream().process(_Stamp).to("out", Produced.with_(WindowedSerde(Serdes.String(), session=True),
                                                              Serdes.String()))
    events.process(writer, "closed").to("out")
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


# sessions of a 3 s gap, grace 1 s (retention 4 s; close = stream time - 4 s)
SESSION_ROWS = [("a", "1", 1_000), ("a", "put", 2_000), ("b", "2", 3_000), ("b", "del", 4_000), ("c", "new", 5_000),
                ("a", "3", 4_500), ("a", "4", 12_000), ("a", "old", 12_500), ("a", "read", 13_000),
                ("b", "ahead", 14_000), ("a", "read", 14_500), ("a", "5", 40_000), ("a", "6", 41_000)]


@pytest.mark.parametrize("batches", [1, 5, 13])
def test_the_session_close_emit_sends_what_the_processor_wrote(batches):
    """a's first session, overwritten with "P", merges with the record at 4.5 s (the merger joins
    them); b's, removed, never goes out; z's, put, does (by end, then start, then key). The session
    written into a's emitted one never goes out. The put 20 s ahead moves the store's time to 34 s: a
    key's reads no longer find sessions ending at 30 s or before, so a's record at 14.5 s starts a
    session of its own, but the emit at 40 s still sends every session of the live 60 s segment."""
    outputs = _run(_session_program(), SESSION_ROWS, batches, WindowedSerde(Serdes.String(), session=True))
    assert [record for record in outputs if record[0] != "reads"] == [
        ("a@1000-4500", "|P,3|t4500"), ("c@5000-5000", ",new|t5000"), ("z@5000-5000", "Z|t5000"),
        ("a@12000-13000", "||,4,old,read|t13000"), ("b@14000-14000", ",ahead|t14000"),
        ("a@14500-14500", ",read|t14500"), ("z@34000-34000", "far|t34000")]
    assert [value for key, value in outputs if key == "reads"] == [
        "a@12000-13000=||,4,old,read", "z@34000-34000=far"]


@pytest.mark.parametrize("batches", [1, 4, 13])
def test_an_in_memory_store_neither_keeps_nor_emits_the_window_at_its_retention_edge(batches):
    """Kafka Streams' in-memory DSL store (InMemoryWindowStore, whatever the emit strategy) skips a put at or
    below its time minus the retention, where the time-ordered store keeps one at it: z@28 s is neither read
    nor emitted; all the rest goes as from the time-ordered store."""
    time_ordered = _run(_program(), ROWS, batches)
    in_memory = _run(_in_memory_program(), ROWS, batches)
    assert ("z@28000", "edge|t2") in time_ordered
    assert any("z@28000=edge@2" in value for key, value in time_ordered if key == "reads")
    assert in_memory == [(key, value.replace("z@28000=edge@2;", "")) for key, value in time_ordered
                         if key != "z@28000"]


@pytest.mark.parametrize("batches", [1, 2, 4])
def test_an_in_memory_session_stores_remove_ahead_leaves_the_emit_where_a_null_put_ahead_cuts_it(batches):
    """InMemorySessionStore (kept 10 s): a processor's remove of a session 20 s ahead that is not stored
    leaves the store's time, so the record at 9 s closes a's and b's sessions, emitted (by end); a put of
    None for it moves the time to 23 s: nothing the emit fetches ends after 13 s, so nothing goes out."""
    materialized = Materialized.as_("closed").with_store_type(StreamsConfig.IN_MEMORY) \
        .with_retention(10 * SECOND).with_caching_disabled()
    emitted = {}
    for operation in ("rm-ahead", "null-ahead"):
        rows = [("a", "1", 1_000), ("b", "1", 2_000), ("a", operation, 3_000), ("c", "1", 9_000)]
        emitted[operation] = _run(_session_program(materialized, _AheadRemover), rows, batches,
                                  WindowedSerde(Serdes.String(), session=True))
    assert emitted == {"rm-ahead": [("b@2000-2000", ",1|t2000"), ("a@1000-3000", "|,1,rm-ahead|t3000")],
                       "null-ahead": []}
