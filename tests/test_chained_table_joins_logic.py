"""Chained table-table joins without Spark: a table whose values come from a table-table join,
joined again (with another table, or by a stream), through the compiled program, against a small
model of Kafka Streams 4.3.1 (the same rules are compared with Kafka Streams itself in
tests/test_equivalence_chained_joins.py).

The model follows Kafka Streams' processors, not the runner's value getters: every table update is
a ``Change(new, old)``; ``KTableKTable{Inner,Left,Right,Outer}Join``'s processors decide from it and
the other table's value whether to forward, and forward ``joiner(new, other)`` and
``joiner(old, other)`` (the join downstream reads the old value); a table read through a join
without a store is the join's value getter (both tables looked up, the joiner applied).
"""

from __future__ import annotations

from datetime import timedelta
from typing import NamedTuple, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows, TimeWindows

TABLES = ("a", "b", "c")
JOIN_TYPES = ("join", "left_join", "outer_join")


def _java(value) -> str:
    return "null" if value is None else value


def _joiner(op: str):
    return lambda x, y: f"({_java(x)}{op}{_java(y)})"


class Change(NamedTuple):
    new: Optional[str]
    old: Optional[str]


# -- the model: Kafka Streams' join processors on Changes ---------------------------------------
class Join(NamedTuple):
    kind: str  # "join", "left_join", "outer_join"
    this: object  # a table name or a Join
    other: object
    op: str  # the joiner's operator: joiner(x, y) = "(x op y)"


def _present(kind: str, this, other) -> bool:
    if kind == "outer_join":
        return this is not None or other is not None
    if kind == "left_join":
        return this is not None
    return this is not None and other is not None


def model_value(node, tables: dict):
    """The table's value now: a source's stored value, or the join's value getter."""
    if isinstance(node, str):
        return tables.get(node)
    this, other = model_value(node.this, tables), model_value(node.other, tables)
    return _joiner(node.op)(this, other) if _present(node.kind, this, other) else None


def _join_processor(join: Join, from_this: bool, change: Change, other) -> Optional[Change]:
    """What ``KTableKTable*Join``'s processor for one side forwards (None: nothing)."""
    joiner = _joiner(join.op)
    if from_this:
        if join.kind == "join" and other is None:
            return None
        if join.kind != "join" and other is None and change.new is None and change.old is None:
            return None

        def side(value):
            if join.kind == "outer_join":
                return joiner(value, other) if value is not None or other is not None else None
            return joiner(value, other) if value is not None else None
        return Change(side(change.new), side(change.old))
    left = other
    if join.kind == "join":
        if left is None:
            return None
        return Change(*(joiner(left, v) if v is not None else None for v in change))
    if join.kind == "left_join":  # KTableKTableRightJoin
        return None if left is None else Change(joiner(left, change.new), joiner(left, change.old))
    if left is None and change.new is None and change.old is None:
        return None
    return Change(*(joiner(left, v) if left is not None or v is not None else None for v in change))


def _propagate(node, table: str, change: Change, tables: dict) -> Optional[Change]:
    """The change ``node`` forwards after an update of source ``table`` (None: nothing)."""
    if isinstance(node, str):
        return change if node == table else None
    for from_this, child, sibling in ((True, node.this, node.other), (False, node.other, node.this)):
        forwarded = _propagate(child, table, change, tables)
        if forwarded is not None:
            return _join_processor(node, from_this, forwarded, model_value(sibling, tables))
    return None


def model_outputs(tree, updates) -> list:
    """The new values ``tree``'s table forwards for one key's ``(table, value)`` updates (uncached)."""
    tables: dict = {}
    out = []
    for table, value in updates:
        old = tables.get(table)
        if value is None:
            tables.pop(table, None)
        else:
            tables[table] = value
        forwarded = _propagate(tree, table, Change(value, old), tables)
        if forwarded is not None:
            out.append(forwarded.new)
    return out


# -- the runner ---------------------------------------------------------------------------------
def _build(node, builder, tables: dict, materialize: set, cached: bool):
    if isinstance(node, str):
        if node not in tables:
            materialized = Materialized.as_(f"{node}-store")
            tables[node] = builder.table(node, materialized if cached else materialized.with_caching_disabled())
        return tables[node]
    this = _build(node.this, builder, tables, materialize, cached)
    other = _build(node.other, builder, tables, materialize, cached)
    if node.op in materialize:
        materialized = Materialized.as_(f"joined-{'plus' if node.op == '+' else 'times'}")
        return getattr(this, node.kind)(other, _joiner(node.op), materialized.with_caching_disabled())
    return getattr(this, node.kind)(other, _joiner(node.op))


def _program(tree, materialize=frozenset(), cached=False):
    builder = StreamsBuilder()
    _build(tree, builder, {}, set(materialize), cached).to_stream().to("out")
    return compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def runner_outputs(program, updates, batches: int = 1) -> list:
    records = [(RecordContext(table, 0, offset, timestamp=offset, position=offset), b"k",
                None if value is None else value.encode()) for offset, (table, value) in enumerate(updates)]
    forwarded, stored, size = [], None, max(1, -(-len(records) // batches))
    for first in range(0, len(records), size):
        out, stored = program.run_key_group(records[first:first + size], stored)
        forwarded += [None if value is None else value.decode()
                      for topic, value in zip(out.topic, out.value) if topic == "out"]
    return forwarded


UPDATES = [("a", "a1"), ("c", "c1"), ("b", "b1"), ("a", None), ("b", None), ("c", None), ("a", "a2"),
           ("b", None), ("c", "c2"), ("b", "b2"), ("a", None), ("a", None), ("c", None), ("b", None)]


@pytest.mark.parametrize("first", JOIN_TYPES)
@pytest.mark.parametrize("second", JOIN_TYPES)
def test_a_join_of_a_join_forwards_what_kafka_streams_forwards(first, second):
    tree = Join(second, Join(first, "a", "b", "+"), "c", "*")
    expected = model_outputs(tree, UPDATES)
    assert runner_outputs(_program(tree), UPDATES) == expected
    assert runner_outputs(_program(tree), UPDATES, batches=5) == expected  # state carried between batches


def test_the_example_by_hand():
    tree = Join("outer_join", Join("left_join", "a", "b", "+"), "c", "*")
    assert model_outputs(tree, UPDATES[:7]) == [
        "((a1+null)*null)", "((a1+null)*c1)", "((a1+b1)*c1)",  # a, c, then b: each update joins
        "(null*c1)",  # a deleted: the left join forwards a tombstone, the outer join joins it with c
        # b deleted while a has no row: the left join forwards nothing
        None,  # c deleted: the joined table has no row (and c had one): a tombstone
        "((a2+null)*null)"]
    assert runner_outputs(_program(tree), UPDATES[:7]) == model_outputs(tree, UPDATES[:7])


@settings(max_examples=80, deadline=None)
@given(st.tuples(st.sampled_from(JOIN_TYPES), st.sampled_from(JOIN_TYPES), st.booleans()),
       st.lists(st.tuples(st.sampled_from(TABLES), st.one_of(st.none(), st.sampled_from(["1", "2", "3"]))),
                max_size=30),
       st.integers(1, 4), st.booleans())
def test_chained_joins_match_the_model(shape, updates, batches, materialize_first):
    first, second, join_on_the_right = shape
    inner = Join(first, "a", "b", "+")
    tree = Join(second, "c", inner, "*") if join_on_the_right else Join(second, inner, "c", "*")
    updates = [(table, None if value is None else f"{table}{value}") for table, value in updates]
    program = _program(tree, {"+"} if materialize_first else set())
    assert runner_outputs(program, updates, batches) == model_outputs(tree, updates)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(TABLES), st.one_of(st.none(), st.sampled_from(["1", "2"]))),
                max_size=30),
       st.integers(1, 3))
def test_with_the_record_cache_each_batch_ends_where_the_model_ends(updates, batches):
    """Cached tables forward once per key and batch, so the sequence differs from the uncached
    model, but the joined table's value after each batch is the model's."""
    tree = Join("left_join", Join("outer_join", "a", "b", "+"), "c", "*")
    updates = [(table, None if value is None else f"{table}{value}") for table, value in updates]
    program = _program(tree, cached=True)
    size = max(1, -(-len(updates) // batches))
    stored, tables, last = None, {}, None
    for first in range(0, len(updates), size):
        batch = updates[first:first + size]
        records = [(RecordContext(t, 0, first + i, timestamp=first + i, position=first + i), b"k",
                    None if v is None else v.encode()) for i, (t, v) in enumerate(batch)]
        out, stored = program.run_key_group(records, stored)
        values = [None if value is None else value.decode() for topic, value in zip(out.topic, out.value)
                  if topic == "out"]
        for table, value in batch:
            tables[table] = value
        if values:
            last = values[-1]
        assert last == model_value(tree, {t: v for t, v in tables.items() if v is not None}) or not values


def test_a_stream_joins_a_joined_table_through_both_tables_and_the_joiner():
    builder = StreamsBuilder()
    a = builder.table("a", Materialized.as_("a-store").with_caching_disabled())
    b = builder.table("b", Materialized.as_("b-store").with_caching_disabled())
    joined = a.left_join(b, _joiner("+")).map_values(lambda v: v.upper())
    stream = builder.stream("s")
    stream.join(joined, _joiner("|")).to("out")
    stream.left_join(joined, _joiner("?")).to("out")
    program = compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    updates = [("s", "s0"), ("b", "b1"), ("s", "s1"), ("a", "a1"), ("s", "s2"), ("b", None), ("s", "s3"),
               ("a", None), ("s", "s4")]
    assert runner_outputs(program, updates) == [
        "(s0?null)", "(s1?null)",  # no row of a: no joined row, even with b
        "(s2|(A1+B1))", "(s2?(A1+B1))", "(s3|(A1+NULL))", "(s3?(A1+NULL))", "(s4?null)"]


def test_a_join_of_a_windowed_table_is_still_refused():
    builder = StreamsBuilder()
    counts = builder.stream("s").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=1))).count()
    builder.stream("t").join(counts, _joiner("|")).to("out")
    with pytest.raises(UnsupportedTopologyError):
        compile_topology(builder.build(), "app").program(0)



def _windowed(builder, topic: str, size_ms: int = 1000, grace_ms: int = 0, store: Optional[str] = None):
    windows = TimeWindows.of_size_and_grace(timedelta(milliseconds=size_ms), timedelta(milliseconds=grace_ms))
    grouped = builder.stream(topic).group_by_key().windowed_by(windows)
    return grouped.count() if store is None else grouped.count(Materialized.as_(store).with_retention(
        timedelta(milliseconds=size_ms + grace_ms)))


def _sessions(builder, topic: str) -> None:
    """A session count of ``topic`` written to a topic, in the sub-topology of the stream read first."""
    builder.stream(topic).group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(
        timedelta(seconds=1))).count().to_stream().to("sessions")


def test_a_join_of_two_windowed_tables_compiles_and_its_limits_are_refused():
    """Joins of windowed tables run (tests/test_equivalence_windowed_table_joins.py); refused: a
    windowed table joined with a plain one, a store that may have expired a window the other side's
    updates reach, and a join that keeps a store for the windowed keys."""
    builder = StreamsBuilder()
    _windowed(builder, "s").join(_windowed(builder, "s", 500, 500), _joiner("|")).to_stream().to("out")
    compile_topology(builder.build(), "app").check()  # each retention (size plus grace) covers the other's

    builder = StreamsBuilder()
    _windowed(builder, "s").join(builder.table("t"), _joiner("|")).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="only one of its tables is windowed"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()
    _windowed(builder, "s", store="short").join(_windowed(builder, "s", 2000, 500), _joiner("|")) \
        .to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="retention is below"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # its store keyed by windowed keys: one group per window, task-grouped
    _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"), Materialized.as_("joined")) \
        .to_stream().to("out")
    assert compile_topology(builder.build(), "app").program(0).task_grouped

    builder = StreamsBuilder()  # through a filter and a map_values with its own store (a left join reads it)
    counts = _windowed(builder, "s").filter(lambda windowed, n: n > 1)
    mapped = _windowed(builder, "s").map_values(lambda n: n * 2, Materialized.as_("doubled"))
    counts.join(mapped, _joiner("|")).to_stream().to("out")
    mapped.left_join(counts, _joiner("|"), Materialized.as_("left")) \
        .group_by(lambda windowed, value: (windowed.key, value)).count()
    assert compile_topology(builder.build(), "app").program(0).task_grouped

    builder = StreamsBuilder()  # a windowed join's result without a store: read through both tables
    _windowed(builder, "s").join(_windowed(builder, "s", 500, 500), _joiner("|")) \
        .group_by(lambda windowed, value: (windowed.key, value)).count()
    assert not compile_topology(builder.build(), "app").program(0).task_grouped

    builder = StreamsBuilder()  # Kafka Streams keys its store by start: a window of each size shares it, here too
    _windowed(builder, "s").join(_windowed(builder, "s", 500, 500), _joiner("|"), Materialized.as_("joined")) \
        .to_stream().to("out")
    program = compile_topology(builder.build(), "app").program(0)
    assert program.task_grouped and program.window_keys.by_start

    builder = StreamsBuilder()  # ... but beside session windows, whose groups keep the window's end too
    _windowed(builder, "s").join(_windowed(builder, "s", 500, 500), _joiner("|"), Materialized.as_("joined")) \
        .to_stream().to("out")
    _sessions(builder, "s")
    with pytest.raises(UnsupportedTopologyError, match="KTABLE-JOINTHIS-.* materialized and its tables' windows "
                                                       "differ in size beside session windows"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # a materialized join of a join without a store: refused for what it is
    joined = _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"))
    joined.join(_windowed(builder, "s"), _joiner("|"), Materialized.as_("joined")).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="KTABLE-JOINTHIS-.* is materialized and one of its tables is "
                                                       "itself a windowed join's") as refusal:
        compile_topology(builder.build(), "app").check()
    assert "differ in size" not in str(refusal.value)  # one size, and no session windows

    builder = StreamsBuilder()  # a join of a materialized windowed join's result: read from its store
    joined = _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"), Materialized.as_("joined"))
    joined.join(_windowed(builder, "s"), _joiner("|")).to_stream().to("out")
    compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # without a store: read through both tables and the joiner, a filter too
    joined = _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"))
    joined.filter(lambda windowed, value: True).join(_windowed(builder, "s"), _joiner("|")).to_stream().to("out")
    compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # ... but not through a step with a store of its own (its old values are its store's)
    joined = _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"))
    joined.map_values(lambda value: value, Materialized.as_("kept")) \
        .group_by(lambda windowed, value: (windowed.key, value)).count()
    with pytest.raises(UnsupportedTopologyError, match="KTABLE-SELECT-.* reads the windowed join KTABLE-MERGE-.* "
                                                       "through KTABLE-MAPVALUES-.* with a store of its own"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # ... whose reach (either table's) the other store's retention must cover
    joined = _windowed(builder, "s").join(_windowed(builder, "s", 1000, 500), _joiner("|"))
    joined.join(_windowed(builder, "s", store="short"), _joiner("|")).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="KTABLE-JOINTHIS-.* joins windowed tables, but a store's "
                                                       "retention is below"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # through a filter of the joined table: its store is not modelled there
    joined = _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"), Materialized.as_("joined"))
    joined.filter(lambda windowed, value: True, Materialized.as_("kept")) \
        .group_by(lambda windowed, value: (windowed.key, value)).count()
    with pytest.raises(UnsupportedTopologyError, match="reads the windowed join KTABLE-MERGE-.* through filter"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # the other store's retention below the joined table's reach
    joined = _windowed(builder, "s").join(_windowed(builder, "s", 1000, 500), _joiner("|"), Materialized.as_("j"))
    joined.join(_windowed(builder, "s", store="short"), _joiner("|")).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="retention is below"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # state by window after a join of windows of one size, in its sub-topology
    _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"), Materialized.as_("joined")).to_stream() \
        .group_by_key().reduce(lambda left, right: right).to_stream().to("out")
    assert compile_topology(builder.build(), "app").program(0).task_grouped

    builder = StreamsBuilder()  # ... of different sizes: Kafka Streams keys it by the window's start alone, as here
    _windowed(builder, "s").join(_windowed(builder, "s", 500, 500), _joiner("|")).to_stream() \
        .group_by_key().reduce(lambda left, right: right).to_stream().to("out")
    assert compile_topology(builder.build(), "app").program(0).window_keys.by_start

    builder = StreamsBuilder()  # ... but beside session windows, whose groups keep the window's end too
    _windowed(builder, "s").join(_windowed(builder, "s", 500, 500), _joiner("|")).to_stream() \
        .group_by_key().reduce(lambda left, right: right).to_stream().to("out")
    _sessions(builder, "s")
    with pytest.raises(UnsupportedTopologyError, match="KSTREAM-REDUCE-.* after it keeps state by window, reached "
                                                       "by windows of 2 sizes.*Add .repartition\\(\\) after"):
        compile_topology(builder.build(), "app").check()


def _sliding(builder, grouped=None, difference_ms: int = 1000, grace_ms: int = 500, retention_ms=None):
    """A sliding-window count of stream ``s`` grouped by key (or of ``grouped``)."""
    windows = SlidingWindows.of_time_difference_and_grace(timedelta(milliseconds=difference_ms),
                                                          timedelta(milliseconds=grace_ms))
    grouped = builder.stream("s").group_by_key() if grouped is None else grouped
    materialized = None if retention_ms is None else Materialized.as_(f"slides-{difference_ms}").with_retention(
        timedelta(milliseconds=retention_ms))
    return grouped.windowed_by(windows).count(materialized)


def test_joins_and_regroupings_of_sliding_window_tables_compile_and_their_limits_are_refused():
    """Sliding tables are read as Kafka Streams reads them, one window by its start
    (tests/test_equivalence_windowed_table_joins.py); a retention below the other side's reach, and a
    sliding table beside time windows (its aggregation then keeps its own stream time), are refused."""
    builder = StreamsBuilder()  # key-grouped: the key's own windows answer
    grouped = builder.stream("s").group_by_key()
    slides = _sliding(builder, grouped)
    slides.join(_sliding(builder, grouped, 500, 500, retention_ms=1502), _joiner("|")).to_stream().to("out")
    slides.group_by(lambda windowed, n: (windowed.key, n)).count()
    assert not compile_topology(builder.build(), "app").program(0).task_grouped

    builder = StreamsBuilder()  # the least retention: time difference plus grace plus 2 (a right window's start)
    grouped = builder.stream("s").group_by_key()
    _sliding(builder, grouped).join(_sliding(builder, grouped, 500, 500, retention_ms=1501), _joiner("|")) \
        .to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="KTABLE-JOINTHIS-.* joins windowed tables, but a store's "
                                                       "retention is below"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # materialized: a store keyed by windowed keys, task-grouped
    grouped = builder.stream("s").group_by_key()
    _sliding(builder, grouped).outer_join(_sliding(builder, grouped), _joiner("~"), Materialized.as_("j")) \
        .to_stream().to("out")
    assert compile_topology(builder.build(), "app").program(0).task_grouped

    builder = StreamsBuilder()  # beside time windows a sliding aggregation keeps its own stream time
    tumbling = builder.stream("s").group_by_key().windowed_by(TimeWindows.of_size_and_grace(
        timedelta(seconds=1), timedelta(milliseconds=500))).count(Materialized.as_("t").with_retention(
            timedelta(seconds=3)))
    _sliding(builder).join(tumbling, _joiner("|")).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="KSTREAM-AGGREGATE-.* is joined, but the aggregation keeps "
                                                       "its own stream time"):
        compile_topology(builder.build(), "app").check()


def test_a_join_of_session_tables_runs_a_join_of_it_with_another_is_refused_naming_the_reader():
    """Kafka Streams reads a session table by the session's start and end (fetchSession): a join of two
    session tables reads them so (tests/test_session_table_joins_logic.py), not yet through a join's result
    (a re-grouping of a session table reads the old value its update carries: tests/test_session_regroup_logic.py)."""
    def sessions(builder, store):
        return builder.stream("s").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(
            timedelta(seconds=1), timedelta(milliseconds=500))).count(Materialized.as_(store).with_caching_disabled())

    builder = StreamsBuilder()
    sessions(builder, "a").join(sessions(builder, "b"), _joiner("|")).to_stream().to("out")
    compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()
    sessions(builder, "a").left_join(sessions(builder, "b"), _joiner("|")) \
        .join(sessions(builder, "c"), _joiner("#")).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="processor KTABLE-JOINTHIS-.* reads the windowed table of "
                                                       "KSTREAM-AGGREGATE-.* \\(SessionWindows.*fetchSession"):
        compile_topology(builder.build(), "app").check()
