"""A user processor on a session aggregation's store, without Spark: what the store holds while a
record's merged-away sessions are forwarded one after the other, retention by the store's observed
time (which a processor's put moves), batches with the task state pickled in between, and a cached
store forwarding a processor's write at the flush. The broker-backed comparison with Kafka Streams is
the session side of test_equivalence_dsl_window_store_processor.py."""

from __future__ import annotations

from datetime import timedelta

import pytest

from test_dsl_window_store_processor_logic import _program, _run, _Stamp

from dagster_kstreams.topology import Materialized, SessionWindows, StreamsBuilder, Window, Windowed
from dagster_kstreams.topology.processor_api import Processor, Record
from dagster_kstreams.topology.serdes import Serdes

SECOND = timedelta(seconds=1)


class _Lister(Processor):
    """Forwards each session update with what the store then holds: the session (``fetch_session``)
    and every session of keys "a" to "z"; on a sum above 100, first puts a session of 7 at 60 s."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("s")

    def process(self, record: Record) -> None:
        key, window = record.key.key, record.key.window
        if record.value is not None and record.value > 100:
            self.store.put(Windowed(key, Window(60_000, 60_000)), 7)
        listed = ",".join(f"{e.key.key}@{e.key.window.start}-{e.key.window.end}={e.value}"
                          for e in self.store.fetch("a", "z"))
        stored = self.store.fetch_session(key, window.start, window.end)
        self.context.forward(Record(f"{key}@{window.start}-{window.end}", f"{record.value}|{stored}|{listed}", 0))


def _sum_program(gap, grace):
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(gap, grace)).aggregate(
        lambda: 0, lambda k, v, total: total + int(v), lambda k, a, b: a + b,
        Materialized.as_("s").with_value_serde(Serdes.Long()).with_caching_disabled(),
    ).to_stream().process(_Lister, "s").to("out")
    return _program(builder)


def test_merged_away_sessions_are_removed_and_forwarded_one_after_the_other():
    """Kafka Streams removes and forwards each merged-away session before the next, and puts the new
    session last: on the first tombstone the store still holds the second session, not the new one."""
    rows = [("k", "1", 1_000), ("k", "1", 5_000), ("k", "1", 3_000)]
    outputs, _ = _run(_sum_program(2 * SECOND, 10 * SECOND), rows)
    assert outputs == [
        ("k@1000-1000", "1|1|k@1000-1000=1"),
        ("k@5000-5000", "1|1|k@1000-1000=1,k@5000-5000=1"),
        ("k@1000-1000", "None|None|k@5000-5000=1"),
        ("k@5000-5000", "None|None|"),
        ("k@1000-5000", "3|3|k@1000-5000=3"),
    ]


@pytest.mark.parametrize("batches", [1, 2, 4])
def test_a_processor_put_ahead_moves_the_stores_time_and_hides_what_retention_drops(batches):
    """The store's time is the largest session end put, whoever put it: once the processor put the
    session at 60 s (retention 15 s), sessions ending at 45 s or before are gone, for the processor and
    for the aggregation, whose next record near them starts a session of its own (forwarded, but put
    below the retention: never read); a later record merges with the processor's session."""
    rows = [("k", "1", 1_000), ("k", "100", 2_000), ("k", "1", 3_000), ("k", "5", 52_000)]
    outputs, _ = _run(_sum_program(10 * SECOND, 5 * SECOND), rows, batches)
    assert outputs == [
        ("k@1000-1000", "1|1|k@1000-1000=1"),
        ("k@1000-1000", "None|None|"),
        ("k@1000-2000", "101|None|k@60000-60000=7"),
        ("k@3000-3000", "1|None|k@60000-60000=7"),
        ("k@60000-60000", "None|None|"),
        ("k@52000-60000", "12|12|k@52000-60000=12"),
    ]


class _SessionFixer(Processor):
    """Puts the session ``start-end:count`` of its record's value (``start-end:del`` removes it)."""

    def init(self, context) -> None:
        self.store = context.get_state_store("s")

    def process(self, record: Record) -> None:
        window, count = record.value.split(":")
        start, end = (int(bound) for bound in window.split("-"))
        session = Windowed(record.key, Window(start, end))
        if count == "del":
            self.store.remove(session)
        else:
            self.store.put(session, int(count))


def test_a_cached_store_forwards_a_processor_write_at_the_flush_as_the_aggregations_update():
    """Kafka Streams' cache flush listener forwards whatever wrote the cached store, stamped with the
    session's end; the key's next record merges with what the processor put, and a session created and
    removed between two flushes forwards nothing."""
    builder = StreamsBuilder()
    counts = builder.stream("in").group_by_key().windowed_by(
        SessionWindows.of_inactivity_gap_and_grace(SECOND, 10 * SECOND)).count(Materialized.as_("s"))
    counts.to_stream().map(lambda k, v: (f"{k.key}@{k.window.start}-{k.window.end}", f"{v}")).process(_Stamp).to("out")
    builder.stream("fix").process(_SessionFixer, "s")
    rows = [("k", "x", 1_000), ("k", "1000-1000:20", 1_500, "fix"), ("k", "x", 1_800), ("j", "x", 3_000),
            ("j", "3000-3000:del", 3_500, "fix"), ("k", "5000-5000:5", 4_000, "fix")]
    assert _run(_program(builder), rows, 2)[0] == [("k@1000-1800", "21|t1800"), ("k@5000-5000", "5|t5000")]


class _BadPut(Processor):
    def init(self, context) -> None:
        self.store = context.get_state_store("s")

    def process(self, record: Record) -> None:
        self.store.put(record.key.key, 5)


def test_a_put_without_a_session_fails_naming_the_store():
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(SECOND)).count(
        Materialized.as_("s")).to_stream().process(_BadPut, "s")
    with pytest.raises(Exception, match=r"session store s: put\(\) takes Windowed"):
        _run(_program(builder), [("k", "x", 1)])


@pytest.mark.parametrize("store_type, last", [("in_memory", "k@1000-1800"), ("rocksDB", "k@1800-1800")])
def test_an_uncached_in_memory_stores_remove_leaves_its_observed_time(store_type, last):
    """``InMemorySessionStore.remove`` does not take the session's end as the store's time (RocksDB's does):
    after a processor removes a session ending at 60 s (retention 11 s), the in-memory store still returns the
    session ending at 1 s, which the key's next record merges with; the RocksDB store no longer does."""
    builder = StreamsBuilder()
    counts = builder.stream("in").group_by_key().windowed_by(
        SessionWindows.of_inactivity_gap_and_grace(SECOND, 10 * SECOND)).count(
        Materialized.as_("s").with_store_type(store_type).with_caching_disabled())
    counts.to_stream().map(lambda k, v: (f"{k.key}@{k.window.start}-{k.window.end}", f"{v}")).process(_Stamp).to("out")
    builder.stream("fix").process(_SessionFixer, "s")
    rows = [("k", "x", 1_000), ("k", "60000-60000:del", 1_500, "fix"), ("k", "x", 1_800)]
    assert _run(_program(builder), rows)[0][-1][0] == last
