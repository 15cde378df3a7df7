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

from typing import NamedTuple, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes

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
