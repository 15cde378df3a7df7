"""DSL behaviour: the forms of user functions (value or key-value mappers, joiners) and PySpark
Column expressions, which the DSL stores opaquely for the runner to plan.

(The rest of the DSL's behaviour is tests/test_topology_dsl.py.)
"""

from __future__ import annotations

import pytest

from dagster_kstreams import FunctionForm, NodeKind, StreamsBuilder


def test_map_values_form_is_detected_from_the_signature():
    b = StreamsBuilder()
    s = b.stream("in")
    s.map_values(lambda v: v).to("a")
    s.map_values(lambda k, v: v).to("b")
    s.flat_map_values(lambda k, v: [v]).to("c")
    topology = b.build()
    forms = [n.params["mapper"].form for n in topology.subtopologies[0].nodes
             if n.kind in (NodeKind.MAP_VALUES, NodeKind.FLAT_MAP_VALUES)]
    assert forms == [FunctionForm.VALUE, FunctionForm.KEY_VALUE, FunctionForm.KEY_VALUE]


def test_user_function_helpers_call_either_form_as_key_value():
    b = StreamsBuilder()
    s = b.stream("in")
    s.map_values(str.upper).to("a")
    s.map_values(lambda k, v: f"{k}:{v}").to("b")
    nodes = [n for n in b.build().subtopologies[0].nodes if n.kind is NodeKind.MAP_VALUES]
    assert [n.params["mapper"].as_key_value()("k", "v") for n in nodes] == ["V", "k:v"]


def test_joiner_forms():
    b = StreamsBuilder()
    table = b.table("t")
    b.stream("s").join(table, lambda v, tv: (v, tv)).to("o1")
    b.stream("s2").left_join(table, lambda k, v, tv: (k, v, tv)).to("o2")
    topology = b.build()
    joins = [n for s in topology.subtopologies for n in s.nodes if n.kind is NodeKind.STREAM_TABLE_JOIN]
    assert [j.params["joiner"].form for j in joins] == [FunctionForm.VALUE_VALUE, FunctionForm.KEY_VALUE_VALUE]
    assert [j.params["join_type"] for j in joins] == ["inner", "left"]
    assert joins[0].params["joiner"].as_joiner()("k", 1, 2) == (1, 2)
    assert joins[1].params["joiner"].as_joiner()("k", 1, 2) == ("k", 1, 2)


@pytest.mark.parametrize("bad", [lambda: None, lambda a, b, c: None])
def test_wrong_arity_is_a_clear_error(bad):
    b = StreamsBuilder()
    with pytest.raises(TypeError, match=r"KStream.filter expects a function of \(key, value\)"):
        b.stream("in").filter(bad)


def test_not_a_function_is_rejected():
    with pytest.raises(TypeError, match="expects a function"):
        StreamsBuilder().stream("in").map_values("upper")


class Column:  # stands in for pyspark.sql.Column without importing pyspark
    def __init__(self, expr):
        self.expr = expr


Column.__module__ = "pyspark.sql.column"


def test_column_expressions_are_stored_opaquely():
    b = StreamsBuilder()
    predicate = Column("value > 3")
    b.stream("in").filter(predicate).map(( Column("k"), Column("v") )).to("out")
    nodes = b.build().subtopologies[0].nodes
    assert nodes[1].params["predicate"].form is FunctionForm.COLUMN
    assert nodes[1].params["predicate"].fn is predicate
    assert nodes[2].params["mapper"].form is FunctionForm.COLUMN


def test_column_rejected_where_an_operation_cannot_take_one():
    with pytest.raises(TypeError, match="does not accept a PySpark Column"):
        StreamsBuilder().stream("in").peek(Column("x"))
