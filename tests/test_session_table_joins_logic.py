"""Joins of session tables without Spark: a session read by its start and end (``fetchSession``) by the
other store's observed time, whichever aggregation took the record first, and what stays refused,
naming the join. Compared with Kafka Streams in tests/test_equivalence_windowed_table_joins.py."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

import pytest
from hypothesis import given, settings, strategies as st

import session_reference

from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC, RecordContext
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import SessionWindows, TimeWindows

GRACE = timedelta(milliseconds=500)
SESSION_KEYS = WindowedSerde(Serdes.String(), session=True)


def _counts(grouped, gap_ms: int, store: str, cached: bool = False):
    materialized = Materialized.as_(store)
    return grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=gap_ms), GRACE)) \
        .count(materialized if cached else materialized.with_caching_disabled())


def _text(value) -> str:
    return "null" if value is None else str(value)


def _joined(long_first: bool, join: str = "left_join", long_gap_ms: int = 500):
    """Sessions of a ``long_gap_ms`` gap joined with sessions of a 300 ms gap (retention 800 ms), the
    longer-gap aggregation defined first or second (it then takes each record first or second)."""
    builder = StreamsBuilder()
    grouped = builder.stream("s").group_by_key()
    if long_first:
        long, short = _counts(grouped, long_gap_ms, "long"), _counts(grouped, 300, "short")
    else:
        short, long = _counts(grouped, 300, "short"), _counts(grouped, long_gap_ms, "long")
    getattr(long, join)(short, lambda n, m: f"{n}%{_text(m)}").to_stream() \
        .to("out", Produced.with_(SESSION_KEYS, Serdes.String()))
    return compile_topology(builder.build(), "app").program(0)


def _run(program, records: list[tuple[str, int]]) -> list[tuple[tuple, str]]:
    """One batch of ``(key, timestamp)`` records, each key group run as the Spark strategy runs it, with
    the task's stream time before and after each record; ``[((key, start, end), value)]`` in emit order."""
    by_key: dict = defaultdict(list)
    stream_time = -1
    for offset, (key, timestamp) in enumerate(records):
        before, stream_time = stream_time, max(stream_time, timestamp)
        context = RecordContext("s", 0, offset, timestamp, stream_time, before, position=offset)
        by_key[key.encode()].append((context, key.encode(), b"v"))
    rows = []
    for raw_key, rows_of_key in by_key.items():
        out, _ = program.run_key_group(rows_of_key, None)
        rows += [row for row in zip(out.emit_order(), out.key, out.value, out.topic) if row[3] != DROPPED_LATE_TOPIC]
    rows.sort(key=lambda row: row[0])
    return [((w.key, w.window.start, w.window.end), None if value is None else value.decode())
            for w, value in ((SESSION_KEYS.deserialize(key), value) for _, key, value, _ in rows)]


@pytest.mark.parametrize("long_first, expected", [
    (True, ["2%null", "2%2", None, "3%null"]),  # each update reads the other store before it took the record
    (False, ["2%2", None, "3%null"]),  # the 300 ms update of [10 s, 10.25 s] finds no left value yet
])
def test_a_session_the_other_store_no_longer_returns_joins_nothing(long_first, expected):
    """k's session [10 s, 10.25 s] is in both stores; j at 11.06 s moves both stores' observed time past
    10.25 s + 800 ms, so the 300 ms store no longer returns it (RocksDB's segmented get: end <= observed
    time - retention), while the 500 ms one still merges k at 10.1 s into it (not late: 10.25 s >= 11.06 s
    - 1 s). The update of that session reads nothing on the right, whichever aggregation took the record
    first (the 300 ms one drops it as late; its observed time is the stream time either way)."""
    joined = _run(_joined(long_first), [("k", 10_000), ("k", 10_250), ("j", 11_060), ("k", 10_100)])
    session = ("k", 10_000, 10_250)
    assert [value for window, value in joined if window == session] == expected


@pytest.mark.parametrize("long_first", [True, False])
def test_the_other_store_s_observed_time_is_the_stream_time_after_the_record_once_it_took_it(long_first):
    """k at 11.5 s is the newest record (the stream time before it 10.1 s): the 2 s gap merges k's [10 s]
    into [10 s, 11.5 s], deleting [10 s]. An inner join forwards that delete only when the 300 ms store still
    returns [10 s]: when that aggregation took k at 11.5 s first its observed time is 11.5 s, and
    10 s <= 11.5 s - 800 ms (nothing); else it is 10.1 s (a tombstone)."""
    joined = _run(_joined(long_first, join="join", long_gap_ms=2000), [("k", 10_000), ("j", 10_100), ("k", 11_500)])
    assert [value for window, value in joined if window == ("k", 10_000, 10_000)] == (
        ["1%1", None] if long_first else ["1%1"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 80)), max_size=30, unique=True))
def test_a_left_join_of_two_counts_of_one_gap_ends_with_each_session_joined_with_itself(records):
    """Both stores hold the same sessions: each put reads the other's before it took the record, then the
    other's put joins both (``n%n``); a merged session's deletes leave it without a value (the left
    side's tombstone; the right side's delete then finds no left value). So the last value per session
    is ``n%n`` for the sessions of a plain model, whatever the merges, late records and expiries, except
    for a session ending exactly at the stream time minus 800 ms (gap and grace) when last updated: not
    late, but already at the store's observed time minus its retention (800 ms), so the store returns it
    no more (``n%null``), and by the end of the input it is gone either way."""
    timed = [(key, 10_000 + 50 * tick) for key, tick in records]  # no key twice at one instant
    last: dict = {}
    for window, value in _run(_joined(long_first=True, long_gap_ms=300), timed):
        last[window] = value
    sessions, _, _ = session_reference.count([(key, "v", t) for key, t in timed], 300, 500)
    assert {window for window, value in last.items() if value is not None} == set(sessions)
    final_stream_time = max((t for _, t in timed), default=0)
    for (key, start, end), n in sessions.items():
        assert last[key, start, end] == f"{n}%{n}" or (
            last[key, start, end] == f"{n}%null" and end <= final_stream_time - 800)


def _sessions(builder, gap_ms=500):
    return builder.stream("s").group_by_key().windowed_by(
        SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=gap_ms), GRACE))


def _refused(build, match: str) -> None:
    builder = StreamsBuilder()
    build(builder)
    with pytest.raises(UnsupportedTopologyError, match=match):
        compile_topology(builder.build(), "app").check()


def test_joins_of_session_tables_the_runner_does_not_model_are_refused_naming_the_join():
    join = "processor KTABLE-JOINTHIS-.* \\(table_table_join\\) joins session tables, but "
    uncached = Materialized.as_
    _refused(lambda b: _sessions(b).count(uncached("a").with_caching_disabled()).join(
        b.stream("s").group_by_key().windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=1), GRACE)).count(
            uncached("t").with_caching_disabled()), lambda x, y: f"{x}{y}"),
        join + "only one of its tables is a session aggregation's")
    _refused(lambda b: _sessions(b).count(uncached("a").with_caching_disabled()).join(
        _sessions(b).count(uncached("b").with_caching_disabled()), lambda x, y: f"{x}{y}",
        Materialized.as_("joined").with_key_serde(SESSION_KEYS)),
        join + "a session table or the join has the record cache")
    _refused(lambda b: _sessions(b).count(uncached("a")).join(
        _sessions(b).count(uncached("b").with_caching_disabled()), lambda x, y: f"{x}{y}"),
        join + "a session table or the join has the record cache")
    _refused(lambda b: _sessions(b).count(uncached("a").with_caching_disabled()).filter(
        lambda w, n: n > 1, Materialized.as_("kept").with_key_serde(SESSION_KEYS)).join(
        _sessions(b).count(uncached("b").with_caching_disabled()), lambda x, y: f"{x}{y}"),
        join + "KTABLE-FILTER-.* \\(table_filter\\) on the way keeps a store of its own")


def test_a_session_table_with_its_own_stream_time_is_refused_when_joined_naming_the_aggregation():
    """After a filter of the stream its store's observed time is not the task's stream time."""
    def build(builder):
        grouped = builder.stream("s").filter(lambda key, value: value is not None).group_by_key()
        _counts(grouped, 500, "a").join(_counts(grouped, 300, "b"), lambda x, y: f"{x}{y}")

    _refused(build, "the windowed table of KSTREAM-AGGREGATE-.* is joined, but the aggregation keeps its own stream time")


def _pair(builder, materialized: bool = False):
    joined = Materialized.as_("ab").with_key_serde(SESSION_KEYS).with_caching_disabled() if materialized else None
    return _sessions(builder).count(Materialized.as_("a").with_caching_disabled()).join(
        _sessions(builder).count(Materialized.as_("b").with_caching_disabled()), lambda x, y: f"{x}|{y}",
        *([joined] if joined else []))


@pytest.mark.parametrize("materialized", [False, True])
def test_a_join_of_session_tables_joined_with_other_windows_or_through_a_kept_store_is_refused_naming_the_reader(
        materialized):
    """A join of session tables joins again with a session table and re-groups
    (tests/test_session_join_chains_logic.py), and no more: a table of other windows beside it is refused
    naming the join; a re-grouping through a filter that keeps a store of its own (whose old values are
    its own) naming the re-grouping."""
    windows = TimeWindows.of_size_and_grace(timedelta(seconds=1), GRACE)
    _refused(lambda b: _pair(b, materialized).join(
        b.stream("s").group_by_key().windowed_by(windows).count(Materialized.as_("t").with_caching_disabled()),
        lambda x, y: f"{x}{y}"),
        "processor KTABLE-JOINTHIS-.* \\(table_table_join\\) joins session tables, but only one of its tables")
    _refused(lambda b: _pair(b, materialized).filter(
        lambda w, v: True, Materialized.as_("kept").with_key_serde(SESSION_KEYS)).group_by(
        lambda w, v: (w.key, v)).count(), "processor KTABLE-SELECT-.* \\(table_group_by_map\\) reads the "
                                          "windowed join KTABLE-MERGE-.* through KTABLE-FILTER-")
