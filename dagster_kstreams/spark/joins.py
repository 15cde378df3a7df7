"""Joins on the Spark runner: how a join processor is compiled and how it runs.

A join reads the state of its co-partitioned inputs. The task reads partition ``p`` of every
source topic of the sub-topology in one query; the stateful pass groups the records by their
source key (``applyInPandasWithState``), so the stores of all joined inputs for one key are the
slots of one state row, kept in the task's checkpoint (RocksDB). A join processor keeps no store
of its own here: it reads the slot of the store behind the joined table.

Stream-table join (``KStream.join/left_join(KTable)``)
------------------------------------------------------
Kafka Streams' ``KStreamKTableJoinProcessor``: a stream record whose value is null is dropped;
so is one whose key is null, except in a left join (KIP-962: the joiner gets a null table value);
otherwise the table's current value for the key is looked up through the table's value getter
(the store, then the table's own ``filter``/``map_values`` if the table is derived from it without a
store of its own) and the joiner's result is forwarded; an inner join forwards nothing when the
table has no value. Table updates never trigger output (Kafka's stream-table join is not
symmetric).

Table-table join (``KTable.join/left_join/outer_join``)
------------------------------------------------------
An update of either table (after the table's cache, i.e. once per key and micro-batch) reads
both tables' current values through their value getters and forwards the joined table's new
value: ``joiner(this, other)`` when both exist (inner), when ``this`` exists (left), when either
exists (outer); otherwise a tombstone. A ``Materialized`` join keeps the result in its store.

Order across inputs
-------------------
Kafka Streams' task merges its input partitions by the timestamp of their head records. Within
one micro-batch the runner orders the records of one key by ``(merge_time, topic, offset)``
(:func:`dagster_kstreams.spark.event_time.with_processing_order`), which is the same order for
the records of a batch whenever no two input partitions hold equal timestamps.
See the README, "Semantics that differ from Kafka Streams", for where that differs.
"""

from __future__ import annotations

from typing import Any

from dagster_kstreams.spark.program import ExecNode
from dagster_kstreams.topology.graph import NodeKind

__all__ = ["COMPILED_KINDS", "exec_node", "forward"]

COMPILED_KINDS = {NodeKind.STREAM_TABLE_JOIN, NodeKind.TABLE_TABLE_JOIN, NodeKind.TABLE_TABLE_JOIN_MERGE}

# Processors whose store the runner keeps in the task's state row (compile.py's stateful kinds).
_STORE_KINDS = {NodeKind.TABLE_SOURCE, NodeKind.TO_TABLE, NodeKind.AGGREGATE}


def _unsupported(message: str):
    from dagster_kstreams.spark.compile import UnsupportedTopologyError

    return UnsupportedTopologyError(message)


def _value_getter(compiled, factory, table_node_name: str) -> tuple[str, list[tuple[str, Any, bool]]]:
    """The store behind a table and the table operations applied to its values on the way to
    ``table_node_name``: ``(store_name, [(kind, fn(key, value), negate), ...])`` in store-to-table order."""
    sub = next(s for s in compiled.topology.subtopologies if any(n.name == factory.name for n in s.nodes))
    names = {node.name for node in sub.nodes}
    steps: list[tuple[str, Any, bool]] = []
    name = table_node_name
    while True:
        if name not in names:
            raise _unsupported(
                f"processor {factory.name} ({factory.kind.value}) joins the table {table_node_name!r}, whose "
                f"store is not in the joining sub-topology {sub.id}")
        node = sub.node(name)
        if node.kind in _STORE_KINDS and node.params.get("store_name") in node.stores:
            steps.reverse()
            return node.params["store_name"], steps
        if node.kind is NodeKind.TABLE_FILTER:
            fn = compiled._function(node, node.params["predicate"])
            steps.append(("filter", fn.as_key_value(), bool(node.params.get("negate"))))
        elif node.kind is NodeKind.TABLE_MAP_VALUES:
            fn = compiled._function(node, node.params["mapper"])
            steps.append(("map_values", fn.as_key_value(), False))
        else:
            raise _unsupported(
                f"processor {factory.name} ({factory.kind.value}) joins the table {table_node_name!r}, whose values "
                f"come from {node.name} ({node.kind.value}); the Spark runner joins tables read from a topic, "
                "built by to_table or an aggregation, and their filter/map_values only")
        if len(node.parents) != 1:
            raise _unsupported(f"table {table_node_name!r} of processor {factory.name}: cannot trace its store")
        name = node.parents[0]


def exec_node(compiled, factory) -> ExecNode:
    """The runnable form of a join processor (``compiled`` is the CompiledTopology)."""
    params = factory.params
    if factory.kind is NodeKind.STREAM_TABLE_JOIN:
        store, getter = _value_getter(compiled, factory, params["table"])
        joiner = compiled._function(factory, params["joiner"])
        return ExecNode(
            factory.name, "stream_table_join", fn=joiner.as_joiner(),
            options={"join_type": params["join_type"], "store": store, "getter": tuple(getter)},
        )
    if factory.kind is NodeKind.TABLE_TABLE_JOIN:
        sub = next(s for s in compiled.topology.subtopologies if any(n.name == factory.name for n in s.nodes))
        (merge_name,) = factory.children
        (sibling_name,) = [name for name in sub.node(merge_name).parents if name != factory.name]
        own_table, other_table = factory.parents[0], sub.node(sibling_name).parents[0]
        this_table, that_table = (own_table, other_table) if params["side"] == "this" else (other_table, own_table)
        this_store, this_getter = _value_getter(compiled, factory, this_table)
        other_store, other_getter = _value_getter(compiled, factory, that_table)
        joiner = compiled._function(factory, params["joiner"])
        return ExecNode(
            factory.name, "table_table_join", fn=joiner.as_joiner(),
            options={"join_type": params["join_type"], "side": params["side"],
                     "this": (this_store, tuple(this_getter)), "other": (other_store, tuple(other_getter))},
        )
    if factory.kind is NodeKind.TABLE_TABLE_JOIN_MERGE:
        store = params.get("store_name")
        if store is not None and store in factory.stores:
            return ExecNode(factory.name, "to_table", store=store, cached=compiled._cached(store))  # materialized
        return ExecNode(factory.name, "merge")
    raise _unsupported(f"processor {factory.name} ({factory.kind.value}) is not supported by the Spark runner yet")


def _table_value(program, node: ExecNode, key, state, context, store=None, getter=None):
    from dagster_kstreams.spark.program import _ABSENT

    store = node.options["store"] if store is None else store
    value = state.values[program.store_slots[store]]
    value = None if value is _ABSENT else value
    for kind, fn, negate in (node.options["getter"] if getter is None else getter):
        if value is None:
            return None
        if kind == "filter":
            if bool(program._call(node, context, fn, key, value)) == negate:
                return None
        else:
            value = program._call(node, context, fn, key, value)
    return value


def forward(program, node: ExecNode, key, value, context, out, state) -> None:
    """Process one record arriving at a join processor (called by ``SubtopologyProgram._forward``)."""
    if node.kind == "stream_table_join":
        left = node.options["join_type"] == "left"
        if value is None or (key is None and not left):
            return  # Kafka Streams drops it (and counts it as skipped)
        if state is None:
            raise ValueError(f"processor {node.name} needs its table's state but runs in a stateless pass")
        table_value = None if key is None else _table_value(program, node, key, state, context)
        if table_value is None and not left:
            return
        joined = program._call(node, context, node.fn, key, value, table_value)
        for child in node.children:
            program._forward(child, key, joined, context, out, state)
        return
    if node.kind == "table_table_join":
        # An update of either table joins its new value with the other table's current one
        # (KTableKTable{Inner,Left,Outer}Join): the joined table's value for the key afterwards.
        if key is None:
            return
        this_value = _table_value(program, node, key, state, context, *node.options["this"])
        other_value = _table_value(program, node, key, state, context, *node.options["other"])
        join_type = node.options["join_type"]
        if this_value is not None and other_value is not None:
            present = True
        elif join_type == "left":
            present = this_value is not None
        elif join_type == "outer":
            present = this_value is not None or other_value is not None
        else:
            present = False
        joined = program._call(node, context, node.fn, key, this_value, other_value) if present else None
        for child in node.children:
            program._forward(child, key, joined, context, out, state)
        return
    raise ValueError(f"processor {node.name}: unknown join kind {node.kind!r}")
