"""User processors on a windowed count's store and on a session count's, the Python twin of
kstreams.oracle.DslWindowStoreProcessorExamples (Java): keep the two in step.

``WindowCorrector`` (``process`` on ``windowed_by(hopping 10 s windows advancing by 5 s, grace 4 s)
.count(Materialized.as_("window-counts"))``'s stream, uncached): per window update it forwards, under
the key ``key@start``, the count, its timestamp, what the store holds for that window (``fetch(key,
start)``, a ``ValueAndTimestamp``), the key's windows from 10 s before to 10 s after it (``fetch(key,
from, to)``) and every key's window of that start (``fetch_all(start, start)``, the store's order). A
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

Every value starts with ``p<partition>|``: the task that produced it. Its classes are self-contained:
Spark's Python workers cannot import modules of tests/, and the test ships this module by value.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams.topology import Materialized, SessionWindows, StreamsBuilder, TimeWindows, Window, Windowed
from dagster_kstreams.topology.processor_api import Processor, Record, ValueAndTimestamp

SIZE_MS, ADVANCE_MS, GRACE_MS = 10_000, 5_000, 4_000
GAP_MS, SESSION_GRACE_MS = 400, 3_000


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
        same_start = ",".join(f"{entry.key.key}={stored_text(entry.value)}"
                              for entry in self.counts.fetch_all(start, start))
        self.context.forward(Record(f"{key}@{start}", f"{tag}count|{record.value}|t{record.timestamp}|"
                                    f"{stored_text(stored)}|{around}|{same_start}", record.timestamp))
        if record.value == 3:
            self.counts.put(key, ValueAndTimestamp.make(10, record.timestamp + 7), start)
        elif record.value >= 13:
            self.counts.put(key, None, start)


def session_text(entry) -> str:
    """A session store entry as both twins write it (``key@start-end=value``)."""
    return f"{entry.key.key}@{entry.key.window.start}-{entry.key.window.end}={entry.value}"


class SessionCorrector(Processor):
    def init(self, context) -> None:
        self.context = context
        self.sessions = context.get_state_store("session-counts")

    def process(self, record: Record) -> None:
        tag = f"p{self.context.record_metadata().partition}|"
        key, start, end = record.key.key, record.key.window.start, record.key.window.end
        stored = self.sessions.fetch_session(key, start, end)
        around = ",".join(session_text(entry) for entry in self.sessions.find_sessions(key, start - GAP_MS,
                                                                                       end + GAP_MS))
        every_key = ",".join(session_text(entry) for entry in self.sessions.backward_fetch("a", "c"))
        value = "null" if record.value is None else record.value
        self.context.forward(Record(f"{key}@{start}-{end}", f"{tag}session|{value}|t{record.timestamp}|"
                                    f"{'null' if stored is None else stored}|{around}|{every_key}", record.timestamp))
        if record.value == 3:
            self.sessions.put(record.key, 10)
        elif record.value == 2 and key.endswith("1"):
            self.sessions.put(Windowed(key, Window(end + GAP_MS // 2, end + GAP_MS // 2 + 50)), 100)
        elif record.value is not None and record.value >= 13:
            self.sessions.remove(record.key)


def dsl_window_store_processor_examples(topics: dict[str, str]) -> StreamsBuilder:
    builder = StreamsBuilder()
    windows = TimeWindows.of_size_and_grace(timedelta(milliseconds=SIZE_MS), timedelta(milliseconds=GRACE_MS)) \
        .advance_by(timedelta(milliseconds=ADVANCE_MS))
    events = builder.stream(topics["events"])
    counts = events.group_by_key().windowed_by(windows).count(
        Materialized.as_("window-counts").with_caching_disabled())
    counts.to_stream().process(WindowCorrector, "window-counts").to(topics["out"])
    sessions = SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=GAP_MS),
                                                          timedelta(milliseconds=SESSION_GRACE_MS))
    session_counts = events.group_by_key().windowed_by(sessions).count(
        Materialized.as_("session-counts").with_caching_disabled())
    session_counts.to_stream().process(SessionCorrector, "session-counts").to(topics["sessions-out"])
    return builder
