"""``KTable.group_by`` with count/reduce/aggregate: the pure logic (Kafka Streams' Change format,
the subtract-then-add pair, the record cache's old value) run through the programs without Spark,
against a brute-force model. The broker-backed comparison with Kafka Streams itself is
tests/test_equivalence_regroup.py."""

from __future__ import annotations

from datetime import timedelta
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.changes import Change, ChangedSerde, read_varint, write_varint
from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.processors.state import slot_value
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows, TimeWindows

STRING = Serdes.String()
CHANGED = ChangedSerde(STRING)


# -- the record format ------------------------------------------------------------------------
def test_changes_are_written_as_kafka_streams_changed_serializer_writes_them():
    assert CHANGED.serialize(Change("ab", None)) == b"ab\x01"
    assert CHANGED.serialize(Change(None, "xyz")) == b"xyz\x00"
    # {zigzag varint of len(new)}{new}{old}{2}: len 2 -> zigzag 4
    assert CHANGED.serialize(Change("ab", "xyz")) == b"\x04abxyz\x02"
    assert CHANGED.serialize(Change("", "x")) == b"\x00x\x02"
    with pytest.raises(ValueError, match="neither"):
        CHANGED.serialize(Change(None, None))


def test_varint_is_kafkas_zigzag_varint():
    assert write_varint(0) == b"\x00"
    assert write_varint(63) == b"\x7e"
    assert write_varint(64) == b"\x80\x01"  # zigzag 128
    assert write_varint(-1) == b"\x01"
    assert write_varint(300) == b"\xd8\x04"
    assert read_varint(b"\xd8\x04") == (300, 2)


@given(st.integers(-(1 << 31), (1 << 31) - 1))
def test_varint_round_trips(value):
    encoded = write_varint(value)
    assert read_varint(encoded + b"tail") == (value, len(encoded))


@given(st.one_of(st.none(), st.text(max_size=200)), st.one_of(st.none(), st.text(max_size=200)))
def test_changes_round_trip(new, old):
    if new is None and old is None:
        return
    assert CHANGED.deserialize(CHANGED.serialize(Change(new, old))) == Change(new, old)


def test_versioned_flags_are_read_and_bad_records_refused():
    assert CHANGED.deserialize(b"ab\x01\x04") == Change("ab", None)   # isLatest, flag 4
    assert CHANGED.deserialize(b"xy\x00\x03") == Change(None, "xy")
    assert CHANGED.deserialize(b"\x02aq\x01\x05") == Change("a", "q")
    for bad in (b"", None, b"ab\x07", b"\x10a\x02", b"a\x09\x04"):
        with pytest.raises(ValueError):
            CHANGED.deserialize(bad)


# -- the two programs ---------------------------------------------------------------------------
def _compiled(group, cached_table=False, caching=True):
    """users (user -> country) re-grouped by ``group``'s selector, then ``group``'s aggregation."""
    builder = StreamsBuilder()
    materialized = Materialized.as_("users-store")
    table = builder.table("users", materialized if cached_table else materialized.with_caching_disabled())
    group(table, caching).to_stream().to("out")
    return compile_topology(builder.build(), "app")


def _count(table, caching):
    materialized = Materialized.as_("counts")
    return table.group_by(lambda user, country: (country, user)).count(
        materialized if caching else materialized.with_caching_disabled())


class Pipeline:
    """Runs the upstream task (one key group per user and batch) and the downstream one (one key
    group per country and batch) the way the Spark strategies do, with their state rows."""

    def __init__(self, compiled):
        self.upstream, self.downstream = compiled.program(0), compiled.program(1)
        self.up_state: dict = {}
        self.down_state: dict = {}
        self.offset = 0
        self.repartitioned: list[tuple[bytes, bytes]] = []
        self.out: list[tuple[str, object]] = []

    def batch(self, updates: list[tuple]) -> None:
        """One micro-batch of ``(user, country or None)`` records of the users table (or
        ``(topic, user, value or None)``: of another table)."""
        by_user = defaultdict(list)
        for update in updates:
            topic, user, country = update if len(update) == 3 else ("users", *update)
            context = RecordContext(topic, 0, self.offset, 1000 + self.offset, position=self.offset)
            by_user[user.encode()].append((context, user.encode(), None if country is None else country.encode()))
            self.offset += 1
        produced = []
        for raw_key, records in by_user.items():
            out, self.up_state[raw_key] = self.upstream.run_key_group(records, self.up_state.get(raw_key))
            produced += sorted(zip(out.emit_order(), out.key, out.value, out.topic), key=lambda row: row[0])
        produced.sort(key=lambda row: row[0])  # the batch writer's emit order
        (repartition,) = {node.topic for node in self.upstream.nodes if node.kind == "sink"}
        assert all(topic == repartition for *_, topic in produced)
        self.repartitioned += [(key, value) for _, key, value, _ in produced]
        by_group = defaultdict(list)
        for position, (_, key, value, _) in enumerate(produced):
            by_group[key].append((RecordContext(repartition, 0, position, 0, position=position), key, value))
        rows = []
        for raw_key, records in by_group.items():
            out, self.down_state[raw_key] = self.downstream.run_key_group(records, self.down_state.get(raw_key))
            rows += zip(out.emit_order(), out.key, out.value)
        sink = next(node for node in self.downstream.nodes if node.kind == "sink")
        self.out += [(key.decode(), sink.value_serde.deserialize(value)) for _, key, value in sorted(rows, key=lambda r: r[0])]

    def changes(self) -> list[tuple[str, Change]]:
        return [(key.decode(), CHANGED.deserialize(value)) for key, value in self.repartitioned]

    def final(self) -> dict:
        table: dict = {}
        for key, value in self.out:
            if value is None:
                table.pop(key, None)
            else:
                table[key] = value
        return table


def test_a_row_that_changes_group_is_subtracted_from_the_old_group_before_it_is_added_to_the_new():
    pipeline = Pipeline(_compiled(_count, caching=False))
    pipeline.batch([("u1", "fr"), ("u2", "fr"), ("u1", "de"), ("u1", "de"), ("u2", None), ("u9", None)])
    assert pipeline.changes() == [
        ("fr", Change("u1", None)), ("fr", Change("u2", None)),
        ("fr", Change(None, "u1")), ("de", Change("u1", None)),   # subtract, then add
        ("de", Change("u1", "u1")),                               # same group: one record
        ("fr", Change(None, "u2")),                               # a tombstone only subtracts
    ]                                                             # u9's tombstone: nothing
    assert pipeline.out == [("fr", 1), ("fr", 2), ("fr", 1), ("de", 1), ("de", 1), ("fr", 0)]


def test_with_the_record_cache_the_old_value_is_the_one_at_the_last_flush():
    pipeline = Pipeline(_compiled(_count, cached_table=True))
    pipeline.batch([("u1", "fr"), ("u1", "de"), ("u1", "it"), ("u2", "fr"), ("u2", None), ("u3", "es")])
    # u1 flushed once (fr -> de -> it: one addition to it); u2 created and deleted in the batch:
    # nothing (Kafka Streams' cache skips a key absent before and after)
    assert pipeline.changes() == [("it", Change("u1", None)), ("es", Change("u3", None))]
    pipeline.batch([("u1", "fr"), ("u1", "it"), ("u3", "fr")])
    assert pipeline.changes()[2:] == [("it", Change("u1", "u1")), ("es", Change(None, "u3")),
                                      ("fr", Change("u3", None))]
    assert pipeline.final() == {"it": 1, "es": 0, "fr": 1}


def test_null_groups_and_null_values_from_the_selector_are_dropped():
    def group(table, caching):
        return table.group_by(lambda user, country: (None if country == "none" else country,
                                                     None if country == "anon" else user)).count()

    pipeline = Pipeline(_compiled(group))
    pipeline.batch([("u1", "fr"), ("u2", "none"), ("u3", "anon")])
    pipeline.batch([("u1", "none"), ("u2", "fr"), ("u3", "fr"), ("u4", "anon")])
    assert pipeline.changes() == [("fr", Change("u1", None)), ("fr", Change(None, "u1")), ("fr", Change("u2", None)),
                                  ("fr", Change("u3", None))]
    assert pipeline.final() == {"fr": 2}


def test_reduce_deletes_a_group_whose_subtractor_returns_none_and_starts_again_from_the_value():
    def group(table, caching):
        return table.map_values(lambda value: value.split(":")).group_by(
            lambda user, parts: (parts[0], parts[1])).reduce(
            lambda total, amount: str(int(total) + int(amount)),
            lambda total, amount: None if int(total) == int(amount) else str(int(total) - int(amount)),
            Materialized.as_("sums").with_caching_disabled())

    pipeline = Pipeline(_compiled(group))
    pipeline.batch([("a1", "n:5"), ("a2", "n:7"), ("a1", "n:6"), ("a2", "s:7"), ("a1", None), ("a1", "n:2")])
    assert pipeline.out == [("n", "5"), ("n", "12"), ("n", "13"), ("n", "6"), ("s", "7"), ("n", None), ("n", "2")]


def test_aggregate_runs_the_initializer_then_adder_and_subtractor_with_the_key():
    def group(table, caching):
        return table.filter(lambda user, value: value != "frozen").group_by(
            lambda user, country: (country, user)).aggregate(
            lambda: "", lambda country, user, agg: f"{agg}+{user}@{country}",
            lambda country, user, agg: f"{agg}-{user}@{country}", Materialized.as_("history").with_caching_disabled())

    pipeline = Pipeline(_compiled(group))
    pipeline.batch([("u1", "fr"), ("u2", "fr"), ("u1", "frozen"), ("u1", "fr")])
    assert pipeline.out == [("fr", "+u1@fr"), ("fr", "+u1@fr+u2@fr"), ("fr", "+u1@fr+u2@fr-u1@fr"),
                            ("fr", "+u1@fr+u2@fr-u1@fr+u1@fr")]


@pytest.mark.parametrize("cached", [False, True])
def test_the_table_of_a_stream_aggregation_is_re_grouped_with_its_old_values(cached):
    # users per number of clicks: the clicks stream counted per user, that count re-grouped
    builder = StreamsBuilder()
    per_user = Materialized.as_("clicks-per-user")
    builder.stream("users").group_by_key().count(per_user if cached else per_user.with_caching_disabled()) \
        .group_by(lambda user, clicks: (str(clicks), user)).count().to_stream().to("out")
    pipeline = Pipeline(compile_topology(builder.build(), "app"))
    pipeline.batch([("u1", "p"), ("u2", "p"), ("u1", "q")])
    pipeline.batch([("u1", "p"), ("u3", "p")])
    assert pipeline.final() == {"1": 2, "2": 0, "3": 1}  # u2 and u3 clicked once, u1 three times
    moves = [(key, change) for key, change in pipeline.changes() if change.old is not None]
    if cached:  # u1: one update per batch (absent -> 2, then 2 -> 3)
        assert moves == [("2", Change(None, "u1"))]
    else:       # every count: 1 -> 2 -> 3
        assert moves == [("1", Change(None, "u1")), ("2", Change(None, "u1"))]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["u1", "u2", "u3", "u4"]),
                                   st.one_of(st.none(), st.sampled_from(["fr", "de", "it"]))),
                         max_size=12), max_size=5),
       st.booleans(), st.booleans())
def test_counts_match_the_model_whatever_the_batches_and_caches(batches, cached_table, caching):
    pipeline = Pipeline(_compiled(_count, cached_table=cached_table, caching=caching))
    table: dict = {}
    for updates in batches:
        pipeline.batch(updates)
        for user, country in updates:
            if country is None:
                table.pop(user, None)
            else:
                table[user] = country
    model: dict = defaultdict(int)
    for country in table.values():
        model[country] += 1
    final = pipeline.final()
    # a group whose rows all left keeps the count 0
    assert {key: value for key, value in final.items() if value} == dict(model)
    # the store holds what was forwarded last (one slot: the count, with its timestamp)
    stored = {key.decode(): slot_value(row[0])[0] for key, row in pipeline.down_state.items() if row is not None}
    assert stored == final


# -- re-grouping a table-table join's result ---------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["users", "homes"]), st.sampled_from(["u1", "u2", "u3"]),
                                   st.one_of(st.none(), st.sampled_from(["fr", "de"]))),
                         max_size=12), max_size=4),
       st.sampled_from(["join", "left_join", "outer_join"]), st.booleans())
def test_a_joined_table_is_re_grouped_with_the_old_values_its_join_computes(batches, join, materialized):
    """users (user -> country) joined with homes (user -> country), counted per joined pair: each
    count is the number of users whose joined row is that pair, whatever the batches.

    Without the record cache only: with it, both tables of a key updated between two flushes each
    forward their update, and Kafka Streams' join processors join each with the other table's
    *new* value and old value null (``joiner(old, other)`` needs the updated side's old value), so
    the re-grouping adds the pair twice; the runner flushes and joins the same way."""
    builder = StreamsBuilder()
    def table(topic):
        return builder.table(topic, Materialized.as_(f"{topic}-store").with_caching_disabled())
    def pair(user, home):
        return f"{user}/{home}"
    arguments = (Materialized.as_("pairs").with_caching_disabled(),) if materialized else ()
    joined = getattr(table("users"), join)(table("homes"), pair, *arguments)
    joined.group_by(lambda user, value: (value, user)).count().to_stream().to("out")
    pipeline = Pipeline(compile_topology(builder.build(), "app"))
    tables: dict = {"users": {}, "homes": {}}
    for updates in batches:
        pipeline.batch(updates)
        for topic, user, value in updates:
            if value is None:
                tables[topic].pop(user, None)
            else:
                tables[topic][user] = value
    model: dict = defaultdict(int)
    for user in tables["users"].keys() | tables["homes"].keys():
        this, other = tables["users"].get(user), tables["homes"].get(user)
        if (join == "outer_join" and (this or other)) or (join == "left_join" and this) or (this and other):
            model[pair(this, other)] += 1
    assert {key: value for key, value in pipeline.final().items() if value} == dict(model)


@pytest.mark.parametrize("join_store", [None, "uncached", "cached"])
def test_with_cached_tables_a_key_updated_on_both_sides_is_forwarded_by_the_join_twice(join_store):
    """Kafka Streams' rule (read in KTableKTableInnerJoin and KTableKTableJoinMerger): each table's
    flush joins its update with the other table's *new* value, and the join's old value comes from
    the updated table's old value (null here); a materialized join without the cache forwards that
    same change, with the cache its store's value at the last flush (one addition)."""
    builder = StreamsBuilder()
    users, homes = builder.table("users", Materialized.as_("u")), builder.table("homes", Materialized.as_("h"))
    arguments = () if join_store is None else (
        Materialized.as_("pairs") if join_store == "cached" else Materialized.as_("pairs").with_caching_disabled(),)
    users.join(homes, lambda u, h: f"{u}/{h}", *arguments).group_by(lambda user, value: (value, user)).count(
        Materialized.as_("counts").with_caching_disabled()).to_stream().to("out")
    pipeline = Pipeline(compile_topology(builder.build(), "app"))
    pipeline.batch([("users", "u1", "fr"), ("homes", "u1", "de")])
    assert pipeline.final() == {"fr/de": 1 if join_store == "cached" else 2}


# -- what is refused when the topology is defined ---------------------------------------------------
def test_re_grouping_a_time_sliding_or_session_windowed_table_runs():
    """Time and sliding windows, and session windows (the old value the aggregation sends with each
    update, tests/test_session_regroup_logic.py): compared with Kafka Streams in
    tests/test_equivalence_windowed_table_joins.py."""
    for windows in (TimeWindows.of_size_with_no_grace(timedelta(seconds=1)),
                    SlidingWindows.of_time_difference_with_no_grace(timedelta(seconds=1)),
                    SessionWindows.of_inactivity_gap_with_no_grace(timedelta(seconds=1))):
        builder = StreamsBuilder()
        counts = builder.stream("clicks").group_by_key().windowed_by(windows).count()
        counts.group_by(lambda window, count: (str(count), "x")).count().to_stream().to("out")
        compile_topology(builder.build(), "app").check()
