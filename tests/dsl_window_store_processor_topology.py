"""User processors on a windowed count's, a session count's and a sliding count's stores, the Python twin of
kstreams.oracle.DslWindowStoreProcessorExamples (Java): keep the two in step.

``WindowCorrector`` (``process`` on ``windowed_by(hopping 10 s windows advancing by 5 s, grace 4 s)
.count(Materialized.as_("window-counts"))``'s stream, uncached): per window update it forwards, under
the key ``key@start``, the count, its timestamp, what the store holds for that window (``fetch(key,
start)``, a ``ValueAndTimestamp``), the key's windows from 10 s before to 10 s after it (``fetch(key,
from, to)``) and every key's windows from 5 s before to 5 s after it (``fetch_all``, the store's order:
the store is in memory, ``Stores.in_memory_window_store``, so by start, then key). A
count of 3 is corrected to 10 (stamped 7 ms after the record), a count of 13 or more is deleted, so the
next records of the window count on from what the processor wrote.

``SessionCorrector`` (``process`` on ``windowed_by(sessions of a 400 ms gap, grace 3 s)
.count(Materialized.as_("session-counts"))``'s stream of the same events, uncached): per session
update (a merged-away session's tombstone included) it forwards, under ``key@start-end``, the count,
its timestamp, what the store holds for that session (``fetch_session``), the key's sessions within
a gap of it (``find_sessions``) and every key's sessions (``backward_fetch(key_from, key_to)``, the
store's order reversed). A count of 3 is corrected to 10, a count of 2 of a key ending in 1 puts a session of
100 a half gap after it (which the key's next record may merge with), a count of 13 or more removes
the session.

``SlidingCorrector`` (``process`` on ``windowed_by(sliding windows of a 1 s time difference, grace 2 s)
.count(Materialized.as_("sliding-counts"))``'s stream of the same events, uncached: retention 4 s): per
window update it forwards, under ``key@start``, the count, its timestamp, what the store holds for that
window, the key's windows from 1 s before to 1 s after it backward (``backward_fetch(key, from, to)``),
the keys' windows from the retention before it to 1 s before it (``fetch(key_from, key_to, from,
to)``, reaching past what the store still returns) and every key's windows around it backward
(``backward_fetch_all``); on a count of 2 of a key ending in 1 every window (``all()``), on a count of
1 of a key ending in 3 every window backward (``backward_all()``). A count of 3 is corrected to 10 (stamped 7 ms after the record), a count
of 11 or more is deleted, and on a count of 2 a key ending in 2 gets a window of 100 put 3 s after it
(ahead of stream time: the store's time moves, and what it hides is gone for the aggregation too); the
key's next records aggregate onto what it wrote, and the windows they create copy it.

The session and sliding counts run twice: over the DSL's RocksDB stores and over stores kept in memory
(``with_store_type("in_memory")``; ``Stores.in_memory_window_store``), whose reads go by session end, then
key, then start descending (the in-memory ``SessionCorrector`` also lists every key's sessions ending
around it: ``find_sessions(earliest_end, latest_end)``, which only that store has), and by window start,
then key.

``ClosedInMemoryWriter`` (``process`` on the events, beside a hopping count and a sliding count emitting on
window close from stores kept in memory: ``Stores.in_memory_window_store`` kept 15 s, and ``with_store_type(
"in_memory")``) writes and reads their stores between the emits; ``ClosedStamp`` writes each emitted window
with its timestamp. The same processor does the same beside two more such counts emitting from timestamped RocksDB
suppliers' stores (``Stores.persistent_timestamped_window_store``: the segmented store, read by segment, then key,
then start). ``ClosedInMemorySessionWriter`` does the same beside a session count emitting on window close
from a store kept in memory 4 s (``with_store_type("in_memory").with_retention``: ``InMemorySessionStore``), whose
``remove`` leaves the store's time where a ``put`` (of None too) moves it; ``ClosedSessionStamp`` writes each
emitted session with its timestamp.

Every value starts with ``p<partition>|``: the task that produced it. Its classes are self-contained:
Spark's Python workers cannot import modules of tests/, and the test ships this module by value.
"""

from __future__ import annotations

import re
from datetime import timedelta

from dagster_kstreams.topology import (
    EmitStrategy, Materialized, SessionWindows, SlidingWindows, Stores, StreamsBuilder, TimeWindows, Window, Windowed,
)
from dagster_kstreams.topology.processor_api import Processor, Record, ValueAndTimestamp

SIZE_MS, ADVANCE_MS, GRACE_MS = 10_000, 5_000, 4_000
GAP_MS, SESSION_GRACE_MS = 400, 3_000
CLOSED_SESSION_RETENTION_MS = 4_000  # longer than gap + grace: closed sessions still held
DIFF_MS, SLIDING_GRACE_MS = 1_000, 2_000
SLIDING_RETENTION_MS = 2 * DIFF_MS + SLIDING_GRACE_MS  # Kafka Streams' default for sliding windows


def stored_text(stored) -> str:
    """A ValueAndTimestamp as both twins write it (``value@timestamp``, or ``null``)."""
    return "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"


class WindowCorrector(Processor):
    def init(self, context) -> None:
        self.context = context
        self.counts = context.get_state_store("window-counts")

    def process(self, record: Record) -> None:
        tag = f"p{self.context.record_metadata().partition}|"
        key, start = record.key.key, record.key.window.start
        stored = self.counts.fetch(key, start)
        around = ",".join(f"{entry.key}={stored_text(entry.value)}"
                          for entry in self.counts.fetch(key, start - SIZE_MS, start + SIZE_MS))
        same_start = ",".join(f"{entry.key.key}@{entry.key.window.start}={stored_text(entry.value)}"
                              for entry in self.counts.fetch_all(start - ADVANCE_MS, start + ADVANCE_MS))
        self.context.forward(Record(f"{key}@{start}", f"{tag}count|{record.value}|t{record.timestamp}|"
                                    f"{stored_text(stored)}|{around}|{same_start}", record.timestamp))
        if record.value == 3:
            self.counts.put(key, ValueAndTimestamp.make(10, record.timestamp + 7), start)
        elif record.value >= 13:
            self.counts.put(key, None, start)


def window_text(entry) -> str:
    """A window store entry of a key range as both twins write it (``key@start=value@timestamp``)."""
    return f"{entry.key.key}@{entry.key.window.start}={stored_text(entry.value)}"


class SlidingCorrector(Processor):
    def __init__(self, store: str = "sliding-counts"):
        self.store = store

    def init(self, context) -> None:
        self.context = context
        self.counts = context.get_state_store(self.store)

    def process(self, record: Record) -> None:
        tag = f"p{self.context.record_metadata().partition}|"
        key, start = record.key.key, record.key.window.start
        stored = self.counts.fetch(key, start)
        around = ",".join(f"{entry.key}={stored_text(entry.value)}"
                          for entry in self.counts.backward_fetch(key, start - DIFF_MS, start + DIFF_MS))
        keys = ",".join(window_text(entry) for entry in self.counts.fetch("a", "c", start - SLIDING_RETENTION_MS,
                                                                          start - DIFF_MS))
        every_key = ",".join(window_text(entry) for entry in self.counts.backward_fetch_all(start - DIFF_MS // 2,
                                                                                            start + DIFF_MS // 2))
        listed = ""
        if record.value == 2 and key.endswith("1"):
            listed = ",".join(window_text(entry) for entry in self.counts.all())
        elif record.value == 1 and key.endswith("3"):
            listed = ",".join(window_text(entry) for entry in self.counts.backward_all())
        self.context.forward(Record(f"{key}@{start}", f"{tag}sliding|{record.value}|t{record.timestamp}|"
                                    f"{stored_text(stored)}|{around}|{keys}|{every_key}|{listed}", record.timestamp))
        if record.value == 3:
            self.counts.put(key, ValueAndTimestamp.make(10, record.timestamp + 7), start)
        elif record.value >= 11:
            self.counts.put(key, None, start)
        elif record.value == 2 and key.endswith("2"):
            self.counts.put(key, ValueAndTimestamp.make(100, record.timestamp), start + 3 * DIFF_MS)


def session_text(entry) -> str:
    """A session store entry as both twins write it (``key@start-end=value``)."""
    return f"{entry.key.key}@{entry.key.window.start}-{entry.key.window.end}={entry.value}"


class SessionCorrector(Processor):
    def __init__(self, store: str = "session-counts", in_memory: bool = False):
        self.store, self.in_memory = store, in_memory

    def init(self, context) -> None:
        self.context = context
        self.sessions = context.get_state_store(self.store)

    def process(self, record: Record) -> None:
        tag = f"p{self.context.record_metadata().partition}|"
        key, start, end = record.key.key, record.key.window.start, record.key.window.end
        stored = self.sessions.fetch_session(key, start, end)
        around = ",".join(session_text(entry) for entry in self.sessions.find_sessions(key, start - GAP_MS,
                                                                                       end + GAP_MS))
        every_key = ",".join(session_text(entry) for entry in self.sessions.backward_fetch("a", "c"))
        ending_near = ""
        if self.in_memory:  # in memory only: every key's sessions ending around it, by end, key, start descending
            ending_near = "|" + ",".join(session_text(entry) for entry in self.sessions.find_sessions(
                start - 5 * GAP_MS, end + GAP_MS))
        value = "null" if record.value is None else record.value
        self.context.forward(Record(f"{key}@{start}-{end}", f"{tag}session|{value}|t{record.timestamp}|"
                                    f"{'null' if stored is None else stored}|{around}|{every_key}{ending_near}",
                                    record.timestamp))
        if record.value == 3:
            self.sessions.put(record.key, 10)
        elif record.value == 2 and key.endswith("1"):
            self.sessions.put(Windowed(key, Window(end + GAP_MS // 2, end + GAP_MS // 2 + 50)), 100)
        elif record.value is not None and record.value >= 13:
            self.sessions.remove(record.key)


class ClosedInMemoryWriter(Processor):
    """ClosedInMemoryWriter.java: on each event with a key (the stream's child defined after the count, so
    between the count's window-close emits), writes and reads the in-memory store of a count emitting on
    window close. The event ``v<i>`` at ``t`` names a window start ``s`` (hopping: ``t`` rounded down to the
    advance; sliding: ``t`` minus the time difference) and a span (hopping: the window size; sliding: twice
    the difference): i % 5 == 1 overwrites window ``s`` with ``1000 + i`` stamped ``t + 3`` (the count goes
    on from it); i % 9 == 4 deletes the key's window ``s - span / 2``; i % 23 == 5 puts window ``s`` of key
    ``<family>9``; i % 31 == 7 writes window ``s - 2 span`` (emitted already, or gone); i % 331 == 100 puts a
    window of ``<family>9`` ``1.5 span`` ahead (the store's time moves: what its retention hides is gone,
    emitted or not). Forwarded under the key: ``p<partition>|i|fetch(key, s)|fetch(key, s - span, s)|
    fetch(<family>1, <family>9, s - span / 2, s)|all() keys|backward_fetch_all(s - 1.5 span, s) keys``."""

    def __init__(self, store: str, span: int, sliding: bool):
        self.store, self.span, self.sliding = store, span, sliding

    def init(self, context) -> None:
        self.context, self.counts = context, context.get_state_store(self.store)

    def process(self, record: Record) -> None:
        key, timestamp = record.key, record.timestamp
        if key is None:
            return
        i = int(record.value[1:]) if record.value and re.fullmatch(r"v\d+", record.value) else -1  # v<i>; else no action
        span, family, counts = self.span, key[0], self.counts
        start = timestamp - DIFF_MS if self.sliding else timestamp // ADVANCE_MS * ADVANCE_MS
        if i % 5 == 1:
            counts.put(key, ValueAndTimestamp.make(1000 + i, timestamp + 3), start)
        if i % 9 == 4:
            counts.put(key, None, start - span // 2)
        if i % 23 == 5:
            counts.put(family + "9", ValueAndTimestamp.make(500 + i, timestamp), start)
        if i % 31 == 7:
            counts.put(key, ValueAndTimestamp.make(2000 + i, timestamp), start - 2 * span)
        if i % 331 == 100:
            counts.put(family + "9", ValueAndTimestamp.make(3000 + i, timestamp), start + 3 * span // 2)
        one = stored_text(counts.fetch(key, start))
        mine = ",".join(f"{entry.key}={stored_text(entry.value)}" for entry in counts.fetch(key, start - span, start))
        family_windows = ",".join(window_text(entry) for entry in counts.fetch(family + "1", family + "9",
                                                                               start - span // 2, start))
        everything = ",".join(f"{entry.key.key}@{entry.key.window.start}" for entry in counts.all())
        backward = ",".join(f"{entry.key.key}@{entry.key.window.start}"
                            for entry in counts.backward_fetch_all(start - 3 * span // 2, start))
        tag = f"p{self.context.record_metadata().partition}|"
        self.context.forward(Record(key, f"{tag}{i}|{one}|{mine}|{family_windows}|{everything}|{backward}",
                                    timestamp))


class ClosedStamp(Processor):
    """An emitted window as both twins write it: ``key@start`` and ``p<partition>|count|t<timestamp>`` (the
    runner's sink writes no record timestamps: the window's is compared in the value)."""

    def init(self, context) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        tag = f"p{self.context.record_metadata().partition}|"
        self.context.forward(Record(f"{record.key.key}@{record.key.window.start}",
                                    f"{tag}{record.value}|t{record.timestamp}", record.timestamp))


class ClosedInMemorySessionWriter(Processor):
    """ClosedInMemorySessionWriter.java: on each event with a key (defined after the session count, so between
    its window-close emits), writes and reads its in-memory store (``InMemorySessionStore``). The event ``v<i>``
    at ``t``: i % 5 == 1 overwrites the key's first session ending at or after ``t`` and starting by it with
    ``1000 + i`` (the count goes on from it); i % 9 == 4 removes the key's first session ending within 2 s to a
    gap before ``t``; i % 17 == 3 removes a session 2.5 s ahead that is not stored (the store's time stays);
    i % 23 == 5 puts ``<family>9``'s session ``[t, t + 1]``; i % 31 == 7 puts a session ending 4 s back (closed,
    or gone); i % 41 == 20 puts None for a session 1.5 s ahead (a delete, which moves the store's time);
    i % 331 == 100 puts a session of ``<family>9`` 2 s ahead. Forwarded under the key: ``p<partition>|i|
    fetch_session(key, t, t)|find_sessions(key, t - 1 s, t + 1 s)|find_sessions(t - 2 s, t)|fetch(<family>1,
    <family>9)``."""

    def __init__(self, store: str):
        self.store = store

    def init(self, context) -> None:
        self.context, self.sessions = context, context.get_state_store(self.store)

    def process(self, record: Record) -> None:
        key, t = record.key, record.timestamp
        if key is None:
            return
        i = int(record.value[1:]) if record.value and re.fullmatch(r"v\d+", record.value) else -1  # v<i>; else no action
        family, sessions = key[0], self.sessions
        if i % 5 == 1:
            current = next(iter(sessions.find_sessions(key, t, t)), None)
            if current is not None:
                sessions.put(current.key, 1000 + i)
        if i % 9 == 4:
            earlier = next(iter(sessions.find_sessions(key, t - 2000, t - GAP_MS)), None)
            if earlier is not None:
                sessions.remove(earlier.key)
        if i % 17 == 3:
            sessions.remove(Windowed(key, Window(t + 2500, t + 2600)))  # not stored, ahead: the store's time stays
        if i % 23 == 5:
            sessions.put(Windowed(family + "9", Window(t, t + 1)), 500 + i)
        if i % 31 == 7:
            sessions.put(Windowed(key, Window(t - 4100, t - 4000)), 2000 + i)  # closed already, or gone
        if i % 41 == 20:
            sessions.put(Windowed(family + "9", Window(t + 1500, t + 1500)), None)  # a delete ahead: the time moves
        if i % 331 == 100:
            sessions.put(Windowed(family + "9", Window(t + 2000, t + 2000)), 3000 + i)
        one = sessions.fetch_session(key, t, t)
        mine = ",".join(session_text(entry) for entry in sessions.find_sessions(key, t - 1000, t + 1000))
        ending = ",".join(session_text(entry) for entry in sessions.find_sessions(t - 2000, t))
        family_sessions = ",".join(session_text(entry) for entry in sessions.fetch(family + "1", family + "9"))
        tag = f"p{self.context.record_metadata().partition}|"
        self.context.forward(Record(key, f"{tag}{i}|{'null' if one is None else one}|{mine}|{ending}|"
                                    f"{family_sessions}", t))


class ClosedSessionStamp(Processor):
    """An emitted session as both twins write it: ``key@start-end`` and ``p<partition>|count|t<timestamp>``."""

    def init(self, context) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        tag = f"p{self.context.record_metadata().partition}|"
        window = record.key.window
        self.context.forward(Record(f"{record.key.key}@{window.start}-{window.end}",
                                    f"{tag}{record.value}|t{record.timestamp}", record.timestamp))


def dsl_window_store_processor_examples(topics: dict[str, str]) -> StreamsBuilder:
    builder = StreamsBuilder()
    windows = TimeWindows.of_size_and_grace(timedelta(milliseconds=SIZE_MS), timedelta(milliseconds=GRACE_MS)) \
        .advance_by(timedelta(milliseconds=ADVANCE_MS))
    events = builder.stream(topics["events"])
    counts = events.group_by_key().windowed_by(windows).count(Materialized.as_(Stores.in_memory_window_store(
        "window-counts", timedelta(milliseconds=SIZE_MS + GRACE_MS), timedelta(milliseconds=SIZE_MS), False))
        .with_caching_disabled())
    counts.to_stream().process(WindowCorrector, "window-counts").to(topics["out"])
    sessions = SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=GAP_MS),
                                                          timedelta(milliseconds=SESSION_GRACE_MS))
    session_counts = events.group_by_key().windowed_by(sessions).count(
        Materialized.as_("session-counts").with_caching_disabled())
    session_counts.to_stream().process(SessionCorrector, "session-counts").to(topics["sessions-out"])
    sliding = SlidingWindows.of_time_difference_and_grace(timedelta(milliseconds=DIFF_MS),
                                                          timedelta(milliseconds=SLIDING_GRACE_MS))
    sliding_counts = events.group_by_key().windowed_by(sliding).count(
        Materialized.as_("sliding-counts").with_caching_disabled())
    sliding_counts.to_stream().process(SlidingCorrector, "sliding-counts").to(topics["sliding-out"])
    # the same two kept in memory: Materialized.with_store_type, and a supplier's in-memory window store
    session_counts = events.group_by_key().windowed_by(sessions).count(
        Materialized.as_("session-counts-in-memory").with_store_type("in_memory").with_caching_disabled())
    session_counts.to_stream().process(lambda: SessionCorrector("session-counts-in-memory", in_memory=True),
                                       "session-counts-in-memory").to(topics["sessions-in-memory-out"])
    sliding_counts = events.group_by_key().windowed_by(sliding).count(Materialized.as_(Stores.in_memory_window_store(
        "sliding-counts-in-memory", timedelta(milliseconds=SLIDING_RETENTION_MS), timedelta(milliseconds=DIFF_MS),
        False)).with_caching_disabled())
    sliding_counts.to_stream().process(lambda: SlidingCorrector("sliding-counts-in-memory"),
                                       "sliding-counts-in-memory").to(topics["sliding-in-memory-out"])
    # counts emitting on window close from stores kept in memory that a processor beside them writes and reads;
    # the hopping one keeps 15 s (a multiple of the advance: a window can start at the retention's edge, which
    # an InMemoryWindowStore no longer returns where the time-ordered store still does)
    closing = events.group_by_key().windowed_by(windows).emit_strategy(EmitStrategy.on_window_close())
    closing.count(Materialized.as_(Stores.in_memory_window_store(
        "closed-counts-in-memory", timedelta(milliseconds=SIZE_MS + ADVANCE_MS), timedelta(milliseconds=SIZE_MS),
        False)).with_caching_disabled()).to_stream().process(ClosedStamp).to(topics["closed-in-memory-out"])
    events.process(lambda: ClosedInMemoryWriter("closed-counts-in-memory", SIZE_MS, False),
                   "closed-counts-in-memory").to(topics["closed-in-memory-reads"])
    events.group_by_key().windowed_by(sliding).emit_strategy(EmitStrategy.on_window_close()).count(
        Materialized.as_("closed-sliding-in-memory").with_store_type("in_memory").with_caching_disabled()) \
        .to_stream().process(ClosedStamp).to(topics["closed-sliding-in-memory-out"])
    events.process(lambda: ClosedInMemoryWriter("closed-sliding-in-memory", 2 * DIFF_MS, True),
                   "closed-sliding-in-memory").to(topics["closed-sliding-in-memory-reads"])
    # the same two emitting from timestamped RocksDB suppliers' segmented stores (segments of 60 s: by segment,
    # then key, then start), written and read by the same processor
    closing.count(Materialized.as_(Stores.persistent_timestamped_window_store(
        "closed-counts-rocksdb", timedelta(milliseconds=SIZE_MS + ADVANCE_MS), timedelta(milliseconds=SIZE_MS),
        False)).with_caching_disabled()).to_stream().process(ClosedStamp).to(topics["closed-rocksdb-out"])
    events.process(lambda: ClosedInMemoryWriter("closed-counts-rocksdb", SIZE_MS, False),
                   "closed-counts-rocksdb").to(topics["closed-rocksdb-reads"])
    events.group_by_key().windowed_by(sliding).emit_strategy(EmitStrategy.on_window_close()).count(
        Materialized.as_(Stores.persistent_timestamped_window_store("closed-sliding-rocksdb", timedelta(
            milliseconds=SLIDING_RETENTION_MS), timedelta(milliseconds=DIFF_MS), False)).with_caching_disabled()) \
        .to_stream().process(ClosedStamp).to(topics["closed-sliding-rocksdb-out"])
    events.process(lambda: ClosedInMemoryWriter("closed-sliding-rocksdb", 2 * DIFF_MS, True),
                   "closed-sliding-rocksdb").to(topics["closed-sliding-rocksdb-reads"])
    events.group_by_key().windowed_by(sessions).emit_strategy(EmitStrategy.on_window_close()).count(
        Materialized.as_("closed-sessions-in-memory").with_store_type("in_memory").with_retention(
            timedelta(milliseconds=CLOSED_SESSION_RETENTION_MS)).with_caching_disabled()) \
        .to_stream().process(ClosedSessionStamp).to(topics["closed-sessions-in-memory-out"])
    events.process(lambda: ClosedInMemorySessionWriter("closed-sessions-in-memory"),
                   "closed-sessions-in-memory").to(topics["closed-sessions-in-memory-reads"])
    return builder
