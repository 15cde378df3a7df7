"""The suppression example (``suppress`` until a window closes and until a time limit, and
``emit_strategy(EmitStrategy.on_window_close())`` on hopping, session and sliding windows, and on hopping,
session and sliding windows whose stores processors write, and on hopping and session windows from
suppliers' in-memory stores), the Python twin of kstreams.oracle.SuppressExamples (Java):
keep the two in step.

Its lambdas are self-contained (no module-level helpers): Spark's Python workers cannot import
modules of tests/, and the test modules ship their own functions by value.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.emit_strategy import EmitStrategy
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.processor_api import FixedKeyProcessor, Processor, Record, ValueAndTimestamp
from dagster_kstreams.topology.serdes import Serdes, Window, Windowed, WindowedSerde
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows, TimeWindows

from suppress_context_topology import CONTEXT_OUTPUTS, suppressed_contexts
from suppress_memory_topology import MEMORY_OUTPUTS, ROCKSDB_OUTPUTS, closed_from_memory, closed_from_rocksdb_supplier
from suppressed_readers_topology import READER_OUTPUTS, other_suppressed_readers

INPUTS = ("events", "prices", "slides")
OUTPUTS = ("out-final", "out-closed", "out-sessions", "out-limited", "out-debounced", "out-closed-sliding",
           "out-closed-sessions", "out-bytes", "out-both-bounds", "out-raised", "out-final-filtered",
           "out-windowed-bytes", "out-sessions-filtered", "out-session-bytes", "out-sliding-filtered",
           "out-sliding-bytes", "out-held", "out-closed-written", "out-closed-reads", "out-closed-sessions-written",
           "out-closed-session-reads", "out-closed-sliding-written", "out-closed-sliding-reads", "out-held-regrouped",
           "out-held-joined", *READER_OUTPUTS, *CONTEXT_OUTPUTS, *MEMORY_OUTPUTS, *ROCKSDB_OUTPUTS)
SHUT_DOWN_OUTPUT = "out-shut-down"  # of the shut-down application (shut_down_example)
SHUT_DOWN_BYTES, RAISED_BYTES, WINDOWED_BYTES, SESSION_BYTES, SLIDING_BYTES = 480, 2_000, 300, 300, 300
# How each output's keys are read: a time window of that size, a session window, or a plain string.
OUTPUT_KEYS = {"out-final": 10_000, "out-closed": 10_000, "out-sessions": "session", "out-limited": None,
               "out-debounced": None, "out-closed-sliding": 5_000, "out-closed-sessions": "session", "out-bytes": None,
               "out-both-bounds": None, "out-raised": None, "out-final-filtered": 10_000,
               "out-windowed-bytes": 10_000, "out-sessions-filtered": "session", "out-session-bytes": "session",
               "out-sliding-filtered": 5_000, "out-sliding-bytes": 5_000, "out-held": None,
               "out-closed-written": 10_000, "out-closed-reads": None, "out-closed-sessions-written": "session",
               "out-closed-session-reads": None, "out-closed-sliding-written": 5_000, "out-closed-sliding-reads": None,
               "out-held-regrouped": None, "out-held-joined": None, "out-closed-memory": 10_000,
               "out-closed-memory-sessions": "session", "out-closed-rocksdb": 10_000,
               **dict.fromkeys((*READER_OUTPUTS, *CONTEXT_OUTPUTS)), SHUT_DOWN_OUTPUT: None}


class ClosedWindowWriter(Processor):
    """ClosedWindowWriter.java: on each event with a key (after the aggregations: it is
    the stream's last child), writes the store of the hopping aggregate emitting on window close
    ("closed-written": 10 s windows advancing by 5 s, grace 2 s, retention 12 s), then forwards what
    the store returns. Event ``e<i>`` at ``t``, whose latest window starts at ``s``: i % 5 == 1
    overwrites window ``s`` with ``w<i>`` stamped ``t + 3``; i % 9 == 4 deletes window ``s - 5 s``;
    i % 23 == 5 puts a window ``s`` of key ``<family>9``; i % 31 == 7 writes window ``s - 20 s``
    (emitted already, or gone); i % 97 == 50 puts a window of ``<family>9`` 15 s ahead (the store's
    time moves: what starts 12 s before it is gone, emitted or not). Forwarded under the key:
    ``i|fetch(key, s)|fetch(key, s - 10 s, s)|fetch(<family>1, <family>9, s - 5 s, s)|all() keys|
    backward_fetch_all(s - 15 s, s) keys``."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("closed-written")

    @staticmethod
    def stored(value_and_timestamp) -> str:
        return "null" if value_and_timestamp is None else f"{value_and_timestamp.value()}@{value_and_timestamp.timestamp()}"

    def process(self, record: Record) -> None:
        key, timestamp = record.key, record.timestamp
        if key is None:
            return
        i = -1 if record.value is None else int(record.value[1:])
        latest, family = timestamp // 5_000 * 5_000, key[0]
        if i % 5 == 1:
            self.store.put(key, ValueAndTimestamp.make(f"w{i}", timestamp + 3), latest)
        if i % 9 == 4:
            self.store.put(key, None, latest - 5_000)
        if i % 23 == 5:
            self.store.put(family + "9", ValueAndTimestamp.make(f"n{i}", timestamp), latest)
        if i % 31 == 7:
            self.store.put(key, ValueAndTimestamp.make(f"old{i}", timestamp), latest - 20_000)
        if i % 97 == 50:
            self.store.put(family + "9", ValueAndTimestamp.make(f"ahead{i}", timestamp), latest + 15_000)
        stored = self.stored
        one = stored(self.store.fetch(key, latest))
        mine = ",".join(f"{entry.key}={stored(entry.value)}" for entry in self.store.fetch(key, latest - 10_000, latest))
        family_windows = ",".join(f"{entry.key.key}@{entry.key.window.start}={stored(entry.value)}" for entry in
                                  self.store.fetch(family + "1", family + "9", latest - 5_000, latest))
        everything = ",".join(f"{entry.key.key}@{entry.key.window.start}" for entry in self.store.all())
        backward = ",".join(f"{entry.key.key}@{entry.key.window.start}"
                            for entry in self.store.backward_fetch_all(latest - 15_000, latest))
        self.context.forward(Record(key, f"{i}|{one}|{mine}|{family_windows}|{everything}|{backward}", timestamp))


class ClosedSessionWriter(Processor):
    """ClosedSessionWriter.java: as :class:`ClosedWindowWriter`, on the store of the session
    aggregate emitting on window close ("closed-sessions-written": gap 3 s, grace 1 s, retention 4 s).
    Event ``e<i>`` at ``t``: i % 5 == 2 overwrites the key's latest session with ``w<i>``; i % 9 == 5
    removes it; i % 23 == 6 puts a session ``[t, t]`` of key ``<family>9``; i % 31 == 8 puts the key's
    session ``[t - 30 s, t - 29 s]`` (emitted already, or gone); i % 97 == 51 puts a session of
    ``<family>9`` 20 s ahead (the store's time moves). Forwarded under the key: ``i|fetch_session(key,
    t, t)|find_sessions(key, t - 3 s, t + 3 s)|backward_find_sessions(<family>1, <family>9, t - 10 s,
    t + 10 s)|fetch(<family>1, <family>9) keys``."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("closed-sessions-written")

    def process(self, record: Record) -> None:
        key, timestamp = record.key, record.timestamp
        if key is None:
            return
        i = -1 if record.value is None else int(record.value[1:])
        family = key[0]
        if i % 5 == 2 or i % 9 == 5:
            sessions = list(self.store.fetch(key))
            if sessions and i % 5 == 2:
                self.store.put(sessions[-1].key, f"w{i}")
            if sessions and i % 9 == 5:
                self.store.remove(sessions[-1].key)
        if i % 23 == 6:
            self.store.put(Windowed(family + "9", Window(timestamp, timestamp)), f"n{i}")
        if i % 31 == 8:
            self.store.put(Windowed(key, Window(timestamp - 30_000, timestamp - 29_000)), f"old{i}")
        if i % 97 == 51:
            self.store.put(Windowed(family + "9", Window(timestamp + 20_000, timestamp + 20_000)), f"ahead{i}")
        one = self.store.fetch_session(key, timestamp, timestamp)
        mine = ",".join(f"{entry.key.window.start}-{entry.key.window.end}={entry.value}"
                        for entry in self.store.find_sessions(key, timestamp - 3_000, timestamp + 3_000))
        family_sessions = ",".join(
            f"{entry.key.key}@{entry.key.window.start}-{entry.key.window.end}={entry.value}" for entry in
            self.store.backward_find_sessions(family + "1", family + "9", timestamp - 10_000, timestamp + 10_000))
        everything = ",".join(f"{entry.key.key}@{entry.key.window.start}-{entry.key.window.end}"
                              for entry in self.store.fetch(family + "1", family + "9"))
        self.context.forward(Record(key, f"{i}|{'null' if one is None else one}|{mine}|{family_sessions}|{everything}",
                                    timestamp))


class ClosedSlidingWriter(Processor):
    """ClosedSlidingWriter.java: on each slide with a key (after the sliding aggregations: it is the
    stream's last child), writes the store of the sliding aggregate emitting on window close
    ("closed-sliding-written": time difference 5 s, grace 2 s, retention 12 s, a time-ordered store with
    a key index), then forwards what the store returns. Slide ``e<i>`` at ``t``, whose left window starts
    at ``l = t - 5 s``: i % 5 == 1 overwrites window ``l`` with ``w<i>`` stamped ``t + 3``; i % 9 == 4
    deletes the key's latest window starting in ``[t - 10 s, l - 1]`` (``backward_fetch``); i % 23 == 5
    puts a window ``l`` of key ``<family>9``; i % 31 == 7 writes window ``t - 20 s`` (emitted already, or
    gone); i % 97 == 50 puts a window of ``<family>9`` 15 s ahead (the store's time moves). Forwarded
    under the key: ``i|fetch(key, l)|fetch(key, t - 10 s, t)|fetch(<family>1, <family>9, l, t) (the key
    index's order)|backward_fetch(<family>1, <family>9, l, t) keys|fetch_all(l, t) keys (by start)|
    backward_fetch_all(t - 10 s, t) keys``."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("closed-sliding-written")

    def process(self, record: Record) -> None:
        key, t = record.key, record.timestamp
        if key is None:
            return
        i = -1 if record.value is None else int(record.value[1:])
        left, family = t - 5_000, key[0]
        if i % 5 == 1:
            self.store.put(key, ValueAndTimestamp.make(f"w{i}", t + 3), left)
        if i % 9 == 4:
            before = next(self.store.backward_fetch(key, t - 10_000, left - 1), None)
            if before is not None:
                self.store.put(key, None, before.key)
        if i % 23 == 5:
            self.store.put(family + "9", ValueAndTimestamp.make(f"n{i}", t), left)
        if i % 31 == 7:
            self.store.put(key, ValueAndTimestamp.make(f"old{i}", t), t - 20_000)
        if i % 97 == 50:
            self.store.put(family + "9", ValueAndTimestamp.make(f"ahead{i}", t), t + 15_000)

        def stored(value_and_timestamp) -> str:
            if value_and_timestamp is None:
                return "null"
            return f"{value_and_timestamp.value()}@{value_and_timestamp.timestamp()}"

        def keys(entries) -> str:
            return ",".join(f"{entry.key.key}@{entry.key.window.start}" for entry in entries)

        mine = ",".join(f"{entry.key}={stored(entry.value)}" for entry in self.store.fetch(key, t - 10_000, t))
        family_windows = ",".join(f"{entry.key.key}@{entry.key.window.start}={stored(entry.value)}"
                                  for entry in self.store.fetch(family + "1", family + "9", left, t))
        backward = keys(self.store.backward_fetch(family + "1", family + "9", left, t))
        by_time = keys(self.store.fetch_all(left, t))
        by_time_backward = keys(self.store.backward_fetch_all(t - 10_000, t))
        self.context.forward(Record(key, f"{i}|{stored(self.store.fetch(key, left))}|{mine}|{family_windows}|"
                                         f"{backward}|{by_time}|{by_time_backward}", t))


class StampWindowValues(FixedKeyProcessor):
    """SuppressExamples.StampWindowValues: the value, "|t" and the record's timestamp."""

    def init(self, context) -> None:
        self.context = context

    def process(self, record) -> None:
        self.context.forward(record.with_value(f"{record.value}|t{record.timestamp}"))


def suppress_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of SuppressExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    # The suppression buffer serializes the windowed keys: the grouping names the key serde.
    events = builder.stream(topics["events"])
    grouped = events.group_by_key(Grouped.with_(Serdes.String(), Serdes.String()))
    counts = grouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=5))) \
        .count(Materialized.as_("suppressed-counts").with_caching_disabled())
    counts.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())) \
        .to_stream() \
        .to(topics["out-final"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.Long()))
    # A filter of the windowed table before the suppression (old values: 1 -> 2 never reaches it; a new
    # window's first update, old 0 and new 1, reaches it as a tombstone).
    counts.filter(lambda window, count: count % 4 not in (1, 2)) \
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()).with_name("final-filtered")) \
        .to_stream() \
        .to(topics["out-final-filtered"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.Long()))
    # The same filter, then until a time limit (tombstones go out: a new window's first update is one)
    # in a buffer bounded in bytes, whose records' sizes count their updates' old counts (a new window's:
    # the initializer's 0); the oldest go out early.
    counts.filter(lambda window, count: count % 4 not in (1, 2)) \
        .suppress(Suppressed.until_time_limit(timedelta(milliseconds=500),
                                              BufferConfig.max_bytes(WINDOWED_BYTES).emit_early_when_full())
                  .with_name("windowed-bytes")) \
        .to_stream() \
        .to(topics["out-windowed-bytes"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.Long()))
    grouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))
                        .advance_by(timedelta(seconds=5))) \
        .emit_strategy(EmitStrategy.on_window_close()) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "," + ("null" if value is None else value),
                   Materialized.as_("closed-hopping").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-closed"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String()))
    session_counts = grouped \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=3), timedelta(seconds=2))) \
        .count(Materialized.as_("session-counts").with_caching_disabled())
    session_counts.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()).with_name("final-sessions")) \
        .to_stream() \
        .to(topics["out-sessions"], Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.Long()))
    # A filter of the session table before the suppression: a new session's update has no old value
    # (count 1 fails: dropped), a merged-away session's removal carries its old count (1 and 4 fail:
    # dropped; 2 and 3 pass: a tombstone).
    session_counts.filter(lambda window, count: count % 3 != 1) \
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()).with_name("final-sessions-filtered")) \
        .to_stream() \
        .to(topics["out-sessions-filtered"], Produced.with_(WindowedSerde(Serdes.String(), session=True),
                                                            Serdes.Long()))
    # Until a time limit in a buffer bounded in bytes: removals go out as tombstones, and each record's
    # size counts its update's old count; the oldest go out early.
    session_counts.suppress(Suppressed.until_time_limit(timedelta(seconds=30),
                                                        BufferConfig.max_bytes(SESSION_BYTES).emit_early_when_full())
                            .with_name("session-bytes")) \
        .to_stream() \
        .to(topics["out-session-bytes"], Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.Long()))
    grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=3), timedelta(seconds=1))) \
        .emit_strategy(EmitStrategy.on_window_close()) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "," + ("null" if value is None else value),
                   lambda key, one, two: one + "|" + two,
                   Materialized.as_("closed-sessions").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-closed-sessions"], Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.String()))

    prices = builder.table(topics["prices"], Materialized.as_("prices-store").with_caching_disabled())
    # At most 3 keys held: the oldest goes out early when a fourth arrives.
    prices.suppress(Suppressed.until_time_limit(timedelta(seconds=4),
                                                BufferConfig.max_records(3).emit_early_when_full())) \
        .to_stream() \
        .to(topics["out-limited"])
    prices.filter(lambda key, value: not value.startswith("x")) \
        .suppress(Suppressed.until_time_limit(timedelta(seconds=2), BufferConfig.unbounded()).with_name("debounce")) \
        .to_stream() \
        .to(topics["out-debounced"])
    # Bounded in bytes as Kafka Streams sizes a buffered record (key, prior/old/new values, the
    # record context's topic and headers): the oldest go out early.
    prices.suppress(Suppressed.until_time_limit(timedelta(seconds=4), BufferConfig.max_bytes(200).emit_early_when_full())
                    .with_name("bytes-limited")) \
        .to_stream() \
        .to(topics["out-bytes"])
    prices.map_values(lambda key, value: value.upper()) \
        .suppress(Suppressed.until_time_limit(timedelta(seconds=3),
                                              BufferConfig.max_records(3).with_max_bytes(230).emit_early_when_full())
                  .with_name("both-bounds")) \
        .to_stream() \
        .to(topics["out-both-bounds"])
    # The shut-down application's suppression with its bound raised: never full.
    prices.suppress(Suppressed.until_time_limit(timedelta(seconds=4),
                                                BufferConfig.max_bytes(RAISED_BYTES).shut_down_when_full())
                    .with_name("bounded")) \
        .to_stream() \
        .to(topics["out-raised"])

    # Sliding windows skip null values (their stream time too): a sub-topology of their own.
    slide_stream = builder.stream(topics["slides"])
    slides = slide_stream.group_by_key(Grouped.with_(Serdes.String(), Serdes.String()))
    slides.windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(seconds=5), timedelta(seconds=2))) \
        .emit_strategy(EmitStrategy.on_window_close()) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "," + value,
                   Materialized.as_("closed-sliding").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-closed-sliding"], Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.String()))
    # A sliding count emitting on update, kept a minute (so that a record later than grace finds the
    # windows it reads in both), then the filter and the byte bound: an update's old count is the one
    # it was computed from (a new window's: the initializer's 0, or its neighbour's; none for the
    # record's right window).
    sliding_counts = slides \
        .windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(seconds=5), timedelta(seconds=2))) \
        .count(Materialized.as_("sliding-counts").with_caching_disabled().with_retention(timedelta(minutes=1)))
    sliding_counts.filter(lambda window, count: count % 4 not in (1, 2)) \
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()).with_name("final-sliding-filtered")) \
        .to_stream() \
        .to(topics["out-sliding-filtered"], Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.Long()))
    sliding_counts.suppress(Suppressed.until_time_limit(timedelta(seconds=30),
                                                        BufferConfig.max_bytes(SLIDING_BYTES).emit_early_when_full())
                            .with_name("sliding-bytes")) \
        .to_stream() \
        .to(topics["out-sliding-bytes"], Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.Long()))
    # A filter after a suppression sends old values (the suppression's parent does): an update the
    # suppression emits whose new value and old value (its latest update's) both fail goes nowhere.
    prices.suppress(Suppressed.until_time_limit(timedelta(seconds=2), BufferConfig.unbounded()).with_name("held")) \
        .filter(lambda key, value: not value.startswith("x")) \
        .to_stream() \
        .to(topics["out-held"])
    # A suppressed table re-grouped by key family (each update it emits subtracts the old value it sends:
    # its latest buffered update's) and left-joined by the table itself (whose updates read it through
    # the buffer: a buffered key's prior value, else the table's).
    held_read = prices.suppress(Suppressed.until_time_limit(timedelta(seconds=2), BufferConfig.unbounded())
                                .with_name("held-read"))
    held_read.group_by(lambda key, value: (key[0], value), Grouped.as_("held-by-family")) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "+" + value, lambda key, value, agg: agg + "-" + value,
                   Materialized.as_("held-families").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-held-regrouped"])
    held_joined = prices.left_join(held_read, lambda mine, held: mine + "|" + ("null" if held is None else held))
    held_joined.to_stream().to(topics["out-held-joined"])
    other_suppressed_readers(prices, held_read, held_joined, topics)  # tests/suppressed_readers_topology.py
    suppressed_contexts(prices, topics)  # tests/suppress_context_topology.py
    # A processor writes and reads the store of an aggregate emitting on window close: what it writes
    # is what the emit sends (each window with its timestamp).
    grouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))
                        .advance_by(timedelta(seconds=5))) \
        .emit_strategy(EmitStrategy.on_window_close()) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "," + ("null" if value is None else value),
                   Materialized.as_("closed-written").with_caching_disabled()) \
        .to_stream() \
        .process_values(StampWindowValues) \
        .to(topics["out-closed-written"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String()))
    events.process(ClosedWindowWriter, "closed-written").to(topics["out-closed-reads"])
    grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=3), timedelta(seconds=1))) \
        .emit_strategy(EmitStrategy.on_window_close()) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "," + ("null" if value is None else value),
                   lambda key, one, two: one + "|" + two,
                   Materialized.as_("closed-sessions-written").with_caching_disabled()) \
        .to_stream() \
        .process_values(StampWindowValues) \
        .to(topics["out-closed-sessions-written"], Produced.with_(WindowedSerde(Serdes.String(), session=True),
                                                                  Serdes.String()))
    events.process(ClosedSessionWriter, "closed-sessions-written").to(topics["out-closed-session-reads"])
    # The same on sliding windows: a processor on the slides writes and reads the time-ordered store
    # (with its key index) of a sliding aggregate emitting on window close.
    slides.windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(seconds=5), timedelta(seconds=2))) \
        .emit_strategy(EmitStrategy.on_window_close()) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "," + value,
                   Materialized.as_("closed-sliding-written").with_caching_disabled()) \
        .to_stream() \
        .process_values(StampWindowValues) \
        .to(topics["out-closed-sliding-written"],
            Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.String()))
    slide_stream.process(ClosedSlidingWriter, "closed-sliding-written").to(topics["out-closed-sliding-reads"])
    closed_from_memory(grouped, topics)  # tests/suppress_memory_topology.py
    closed_from_rocksdb_supplier(grouped, topics)
    return builder


def shut_down_example(topics: dict[str, str], max_bytes: int = SHUT_DOWN_BYTES) -> StreamsBuilder:
    """SuppressExamples.shutDownExample: the prices table suppressed in a buffer of ``max_bytes``
    bytes that shuts down when full (raise ``max_bytes`` to run it past where it stopped)."""
    builder = StreamsBuilder()
    builder.table(topics["prices"], Materialized.as_("prices-store").with_caching_disabled()) \
        .suppress(Suppressed.until_time_limit(timedelta(seconds=4),
                                              BufferConfig.max_bytes(max_bytes).shut_down_when_full())
                  .with_name("bounded")) \
        .to_stream() \
        .to(topics[SHUT_DOWN_OUTPUT])
    return builder
