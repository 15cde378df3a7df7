"""Stream-stream joins fed, in their sub-topology, by a windowed aggregation with its record cache on,
against a model of Kafka Streams committing where the micro-batches end (no Spark needed): the cache
(``CachingWindowStore``, ``CachingSessionStore``) is keyed by window, so at a commit it forwards each
window's (session's) last update, windows of all keys in the order of their last updates, each with
its aggregate's timestamp (a session's: its end); the join buffers and pairs those under each window's
own key. With one commit after the input, Kafka Streams' result is the runner's with the input in one
micro-batch (the broker-backed comparison: test_equivalence_aggregation_joins.py)."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import example, given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import Materialized, StreamsBuilder
from dagster_kstreams.topology.joined import StreamJoined
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import JoinWindows, SessionWindows, TimeWindows
from stream_join_model import KsJoin, run_task

_JOINS = st.sampled_from(["join", "left_join", "outer_join"])
# e feeds the cached windowed count, c an uncached one of the same windows, forwarding as it counts.
_records = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", None]), st.sampled_from(["e", "c"]), st.booleans(),
              st.one_of(st.integers(100_000, 112_000), st.integers(100, 112).map(lambda t: t * 1000))),
    max_size=40,
).map(lambda rows: [(k, topic, None if null else f"{topic}{i}", t) for i, (k, topic, null, t) in enumerate(rows)])
_millis = st.one_of(st.integers(0, 3000), st.integers(0, 3).map(lambda s: s * 1000))


def _window_key(key: str, start: int) -> str:
    """A window as the model's join key, ordered as the join's key serde writes it (key, then start)."""
    return f"{key}@{start:07d}"


class _HoppingCounts:
    """Kafka Streams' ``KStreamWindowAggregate`` counting into ``size`` windows every ``advance`` with
    ``grace``: its own stream time (the records it counts: keyed ones, null values too), each window
    (``start``, ascending) of the record updated unless it closed, stamped with its largest timestamp."""

    def __init__(self, size: int, advance: int, grace: int):
        self.size, self.advance, self.grace = size, advance, grace
        self.clock = -1
        self.counts: dict = {}  # (key, start) -> (count, timestamp)

    def update(self, key, timestamp: int) -> list[tuple]:
        if key is None:
            return []
        self.clock = max(self.clock, timestamp)
        updates = []
        for start in range(max(0, timestamp - self.size + self.advance) // self.advance * self.advance,
                           timestamp + 1, self.advance):
            if start + self.size <= self.clock - self.grace:
                continue  # closed: dropped
            count, stamp = self.counts.get((key, start), (0, timestamp))
            self.counts[(key, start)] = (count + 1, max(stamp, timestamp))
            updates.append((_window_key(key, start), count + 1, max(stamp, timestamp)))
        return updates


# Windows of two keys updated in turns: flushed a@100000, b@100000, a@102000 (not by key).
_TURNS = [("a", "c", "c0", 100_000), ("b", "c", "c1", 100_100), ("a", "c", "c2", 102_000),
          ("a", "e", "e3", 100_200), ("b", "e", "e4", 100_300), ("a", "e", "e5", 102_100)]


@settings(max_examples=150, deadline=None)
@given(_records, _millis, _millis, _millis, _JOINS, st.sampled_from([1000, 2000]), st.integers(1, 3))
@example(_TURNS, 3000, 3000, 0, "join", 2000, 1)
def test_a_join_fed_by_a_cached_window_store_pairs_its_windows_as_kafka_streams_flushes_them(
        records, before, after, grace, join, advance, batches):
    windows = TimeWindows.of_size_and_grace(timedelta(seconds=2), timedelta(seconds=1)) \
        .advance_by(timedelta(milliseconds=advance))
    builder = StreamsBuilder()
    cached = builder.stream("e").group_by_key().windowed_by(windows).count(Materialized.as_("cached")).to_stream()
    uncached = builder.stream("c").group_by_key().windowed_by(windows) \
        .count(Materialized.as_("uncached").with_caching_disabled()).to_stream()
    getattr(cached, join)(uncached, lambda l, r: f"{l}+{r}", JoinWindows(before, after, grace)) \
        .map(lambda key, value: (_window_key(key.key, key.window.start), value)).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    assert program.task_grouped
    model, expected = KsJoin(before, after, grace, join.replace("_join", "")), []
    counts = {"e": _HoppingCounts(2000, advance, 1000), "c": _HoppingCounts(2000, advance, 1000)}
    dirty: dict = {}  # the cache's dirty windows, in last-update order
    size = -(-len(records) // batches) if records else 1  # run_task's micro-batches; Kafka Streams commits there
    for index, (key, topic, _value, ts) in enumerate(records):
        for window, count, stamp in counts[topic].update(key, ts):
            if topic == "c":
                expected += model.process(window, "right", count, stamp)
            else:
                dirty.pop(window, None)
                dirty[window] = (count, stamp)
        if (index + 1) % size == 0 or index + 1 == len(records):
            for window, (count, stamp) in dirty.items():
                expected += model.process(window, "left", count, stamp)
            dirty.clear()
    ours, _ = run_task(program, records, batches)
    assert [(k.decode(), v.decode()) for topic, k, v in ours if topic != DROPPED_LATE_TOPIC] == [
        (key, value) for key, value, _ in expected]


class _CachedSessionCounts:
    """Kafka Streams' ``KStreamSessionWindowAggregate`` counting into sessions (``gap``; a grace that
    outlasts the records: none closes or expires) over a ``CachingSessionStore``: a record's sessions
    within the gap are merged away (removed, in store order: end, then start), then the merged session
    is put; the cache keeps each session's last update, sessions of all keys in last-update order, and
    its flush forwards them, each stamped with its end, a removal only of a session flushed before."""

    def __init__(self, gap: int):
        self.gap = gap
        self.sessions: dict = {}  # key -> {(start, end): count}
        self.flushed: set = set()  # (key, start, end) the store held at the last flush
        self.dirty: dict = {}  # (key, start, end) -> count or None (removed), in last-update order

    def update(self, key, timestamp: int) -> None:
        if key is None:
            return
        sessions = self.sessions.setdefault(key, {})
        found = sorted(((start, end) for start, end in sessions
                        if end >= timestamp - self.gap and start <= timestamp + self.gap), key=lambda s: (s[1], s[0]))
        merged = (min([timestamp, *(start for start, _ in found)]), max([timestamp, *(end for _, end in found)]))
        count = 1 + sum(sessions[session] for session in found)
        if merged != (timestamp, timestamp):
            for session in found:
                del sessions[session]
                self._put((key, *session), None)
        sessions[merged] = count
        self._put((key, *merged), count)

    def _put(self, session: tuple, count) -> None:
        self.dirty.pop(session, None)
        self.dirty[session] = count

    def flush(self) -> list[tuple]:
        forwarded = []
        for session, count in self.dirty.items():
            if count is None and session not in self.flushed:
                continue
            (self.flushed.add if count is not None else self.flushed.discard)(session)
            forwarded.append((session, count))
        self.dirty.clear()
        return forwarded


def _session_key(key: str, start: int, end: int) -> str:
    """A session as the model's join key, ordered as the session serde writes it (key, end, start)."""
    return f"{key}@{end:07d}-{start:07d}"


@settings(max_examples=150, deadline=None)
@given(_records, st.sampled_from([300, 1000, 2000]), st.integers(1, 3))
@example([("a", "e", "e0", 100_000), ("b", "e", "e1", 100_100), ("a", "e", "e2", 100_400), ("a", "e", "e3", 108_000),
          ("b", "e", "e4", 100_500), ("a", "e", "e5", 100_200)], 300, 2)
def test_a_join_fed_by_a_cached_session_store_pairs_its_sessions_as_kafka_streams_flushes_them(records, gap, batches):
    # Sessions' counts outer-joined with their counts above 1 times ten, under each session's own key
    # (the session serde's): a session merged away after a flush reaches the join as a tombstone.
    session_keys = WindowedSerde(Serdes.String(), session=True)
    builder = StreamsBuilder()
    sessions = builder.stream("e").group_by_key() \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=gap), timedelta(minutes=1))) \
        .count(Materialized.as_("cached")).to_stream()
    sessions.outer_join(sessions.filter(lambda session, count: count is not None and count > 1)
                        .map_values(lambda count: count * 10), lambda l, r: f"{l}+{r}",
                        JoinWindows(500, 500, 500), StreamJoined.with_(session_keys, Serdes.Long(), Serdes.Long())) \
        .map(lambda key, value: (_session_key(key.key, key.window.start, key.window.end), value)).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    model, expected, counts = KsJoin(500, 500, 500, "outer"), [], _CachedSessionCounts(gap)
    records = [record for record in records if record[1] == "e"]
    size = -(-len(records) // batches) if records else 1  # run_task's micro-batches; Kafka Streams commits there
    for index, (key, _topic, _value, ts) in enumerate(records):
        counts.update(key, ts)
        if (index + 1) % size == 0 or index + 1 == len(records):
            for (key, start, end), count in counts.flush():  # the filter's side first: its node came first
                if count is not None and count > 1:
                    expected += model.process(_session_key(key, start, end), "right", count * 10, end)
                expected += model.process(_session_key(key, start, end), "left", count, end)
    ours, _ = run_task(program, records, batches)
    assert [(k.decode(), v.decode()) for topic, k, v in ours if topic != DROPPED_LATE_TOPIC] == [
        (key, value) for key, value, _ in expected]
