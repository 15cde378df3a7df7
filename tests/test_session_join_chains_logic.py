"""Joins of session tables materialized, re-grouped and joined again, without Spark: a materialized join
forwards what the join without a store forwards and keeps each session's value with its stamp (Kafka
Streams' ``KTableKTableJoinMerger`` puts, then forwards); a re-grouping of a join adds each session's new
joined value and subtracts its old one, so its totals are the sums of the latest joined values per key;
a join of a join reads both its tables by the session (``fetchSession``) or its store. Properties over
random inputs, with merges, late records and expiries; compared with Kafka Streams in
tests/test_equivalence_windowed_table_joins.py."""

from __future__ import annotations

import sys
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Optional

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dsl_store_processor_topology import key_text  # noqa: E402

from dagster_kstreams.processors.changes import ChangedSerde  # noqa: E402
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC  # noqa: E402
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology  # noqa: E402
from dagster_kstreams.topology import Grouped, Materialized, SessionWindows, StreamsBuilder  # noqa: E402
from dagster_kstreams.topology.processor_api import Processor, Record  # noqa: E402
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde  # noqa: E402

GRACE = timedelta(milliseconds=500)
SESSION_KEYS = WindowedSerde(Serdes.String(), session=True)
JOINS = ("join", "left_join", "outer_join")
CHANGES = ChangedSerde(Serdes.String())


def _text(value) -> str:
    return "null" if value is None else str(value)


class _StoreReader(Processor):
    """Forwards each update with its timestamp and what the join's store ``ab`` holds for its session."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("ab")

    def process(self, record: Record) -> None:
        stored = self.store.get(record.key)
        held = "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"
        self.context.forward(record.with_value(f"{_text(record.value)}|t{record.timestamp}|{held}"))


def _tables(builder, retention: Optional[timedelta]):
    """A count in sessions of a 500 ms gap and a concatenation in sessions of 300 ms (their retentions
    gap and grace, 1 s and 800 ms, unless ``retention``)."""
    grouped = builder.stream("in").group_by_key()

    def windowed(gap_ms):
        return grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=gap_ms), GRACE))

    def store(name):
        materialized = Materialized.as_(name).with_caching_disabled()
        return materialized if retention is None else materialized.with_retention(retention)

    return windowed(500).count(store("a")), windowed(300).reduce(lambda x, y: x + y, store("b"))


def _pair(builder, join: str, materialized: bool, retention: Optional[timedelta] = None):
    counts, values = _tables(builder, retention)
    store = [Materialized.as_("ab").with_key_serde(SESSION_KEYS).with_caching_disabled()] if materialized else []
    return getattr(counts, join)(values, lambda n, v: f"{_text(n)}%{_text(v)}", *store)


def _run(builder, rows) -> dict[str, list[tuple]]:
    """One micro-batch of ``(key, timestamp)`` records (value ``v<index>``) through sub-topology 0:
    ``{topic: [(key text, raw value)]}`` in emit order."""
    program = compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    stream_times, stream = [], -1
    for _, timestamp in rows:
        stream = max(stream, timestamp)
        stream_times.append(stream)
    offsets = list(range(len(rows)))
    frame = pd.DataFrame({
        "key": [key.encode() for key, _ in rows], "value": [f"v{i}".encode() for i in offsets],
        "topic": ["in"] * len(rows), "partition": [0] * len(rows), "offset": offsets,
        "timestamp": [None] * len(rows), "event_time": [t for _, t in rows], "merge_time": [t for _, t in rows],
        "stream_time": stream_times, "seq": offsets})
    out, _ = program.process_task_batch(frame, None)
    topics: dict = defaultdict(list)
    if out is not None:
        out = out.sort_values("emit_order", kind="stable")
        for key, value, topic in zip(out["key"], out["value"], out["topic"]):
            if topic != DROPPED_LATE_TOPIC:
                topics[topic].append((key.decode(), value))
    return topics


_RECORDS = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 60)), max_size=30, unique=True)


def _timed(records):
    return [(key, 10_000 + 50 * tick) for key, tick in records]  # no key twice at one instant


@settings(max_examples=60, deadline=None)
@given(_RECORDS, st.sampled_from(JOINS))
def test_a_materialized_join_forwards_what_the_join_without_a_store_does_and_holds_each_update(records, join):
    def build(materialized: bool):
        builder = StreamsBuilder()
        joined = _pair(builder, join, materialized).to_stream()
        if materialized:
            joined = joined.process(_StoreReader, "ab")
        joined.select_key(lambda windowed, value: key_text(windowed)).to("out")
        return builder

    plain, kept = (_texts(_run(build(materialized), _timed(records))["out"]) for materialized in (False, True))
    assert [(key, value.split("|t")[0]) for key, value in kept] == [(key, _text(value)) for key, value in plain]
    for key, value in kept:  # what was forwarded is in the store, stamped as forwarded; a tombstone deleted it
        forwarded, stamp, held = value.split("|")
        assert held == ("null" if forwarded == "null" else f"{forwarded}@{stamp[1:]}")
        assert int(stamp[1:]) == int(key.split("/")[1][:-1])  # both sessions' stamp: their one end


@settings(max_examples=60, deadline=None)
@given(_RECORDS, st.sampled_from(JOINS), st.booleans())
def test_a_re_grouped_join_totals_the_latest_joined_value_of_each_session(records, join, materialized):
    """Each update adds the session's new joined value and subtracts its old one (a merged session's
    delete subtracts only), so a key's total is the sum of its sessions' latest joined values' lengths.
    The old value is the join's of the updated table's old value and the other's *current* one, which
    Kafka Streams no longer returns once it expired (the old value then differs from the one forwarded
    before: compared with Kafka Streams only), so here the stores keep every session of the input."""
    builder = StreamsBuilder()
    joined = _pair(builder, join, materialized, retention=timedelta(seconds=10))
    joined.to_stream().select_key(lambda windowed, value: key_text(windowed)).to("joined")
    joined.group_by(lambda windowed, value: (windowed.key, value), Grouped.as_("by-key")) \
        .aggregate(lambda: 0, lambda key, value, total: total + len(value),
                   lambda key, value, total: total - len(value), Materialized.as_("totals").with_caching_disabled())
    outputs = _run(builder, _timed(records))
    latest = dict(_texts(outputs["joined"]))
    totals: dict = defaultdict(int)
    for session, value in latest.items():
        totals[session[1:].split("@")[0]] += 0 if value is None else len(value)
    re_grouped: dict = defaultdict(int)  # the repartition topic's Changes, applied in order
    (changes,) = [rows for topic, rows in outputs.items() if topic.endswith("by-key-repartition")] or [[]]
    assert changes or not any(latest.values())
    for key, raw in changes:
        change = CHANGES.deserialize(raw)
        re_grouped[key] += sum(sign * len(part) for sign, part in ((1, change.new), (-1, change.old)) if part)
    assert {key: total for key, total in re_grouped.items() if total} == \
        {key: total for key, total in totals.items() if total}


@settings(max_examples=60, deadline=None)
@given(_RECORDS, st.sampled_from(JOINS), st.booleans(), st.booleans())
def test_a_join_joined_again_reads_its_store_or_both_its_tables_alike(records, join, pair_first, filtered):
    """The join's result read by its store (materialized) or through both its tables and the joiner by the
    session (fetchSession, each table's, as Kafka Streams' join value getter asks them) is one table, as
    long as no session read expired (the stores here keep every session of the input; a materialized
    join's store never expires one); either side of the second join, through a filter (of sessions of
    more than one instant, sending old values to a left or outer join) or not."""
    def build(materialized: bool):
        builder = StreamsBuilder()
        pair = _pair(builder, "left_join", materialized, retention=timedelta(seconds=10))
        if filtered:
            pair = pair.filter(lambda windowed, value: windowed.window.end > windowed.window.start)
        third = builder.stream("in").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(
            timedelta(milliseconds=400), GRACE)).count(Materialized.as_("c").with_caching_disabled())
        tables = (pair, third) if pair_first else (third, pair)
        getattr(tables[0], join)(tables[1], lambda x, y: f"{_text(x)}#{_text(y)}").to_stream() \
            .select_key(lambda windowed, value: key_text(windowed)).to("out")
        return builder

    plain, kept = (_texts(_run(build(materialized), _timed(records))["out"]) for materialized in (False, True))
    assert kept == plain
    assert filtered or not records or plain  # something joined (a filter may leave nothing)


def _texts(rows) -> list[tuple]:
    return [(key, None if value is None else value.decode()) for key, value in rows]


def test_a_processor_names_the_materialized_join_s_store_with_a_session_windowed_key_serde_only():
    """Kafka Streams keys the join's store by the key, the session's end and its start: a time-windowed
    serde cannot write those keys, and is refused naming the processor, the join and the serde it needs."""
    def build(key_serde):
        builder = StreamsBuilder()
        counts, values = _tables(builder, None)
        counts.join(values, lambda n, v: f"{n}%{v}", Materialized.as_("ab").with_key_serde(key_serde)
                    .with_caching_disabled()).to_stream().process(_StoreReader, "ab").to("out")
        return compile_topology(builder.build(), "app").program(0)

    assert build(SESSION_KEYS) is not None
    with pytest.raises(UnsupportedTopologyError, match="processor KSTREAM-PROCESSOR-.*: store ab belongs to "
                                                       "KTABLE-MERGE-.*Serdes.SessionWindowed"):
        build(WindowedSerde(Serdes.String(), 1000))
