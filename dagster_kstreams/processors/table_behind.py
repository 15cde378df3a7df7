"""The table whose updates reach a processor, and who reads the old values it sends: the facts of the
sub-topology that decide where a table's old value comes from (:mod:`.table_old_values`) and when a
filter/map_values keeps a store of its own (:mod:`.table_step_stores`). Pure topology facts: no
processor is built here.

:func:`table_of` is the one walk up a table's steps to the node writing it: the readers of a table
(joins, re-groupings, suppressions, user processors naming a step's store, a versioned step's store)
ask it, each passing the step kinds it reads through: :data:`TABLE_STEPS` for what takes the updates
as they come, :data:`FILTERS_AND_MAP_VALUES` for what reads a table's store through value getters
(:mod:`.value_getters`), which the runner has for filters and map_values only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["TableBehind", "table_behind", "table_of", "tables_joined", "TABLE_STEPS", "FILTERS_AND_MAP_VALUES",
           "materialized_step", "sends_old_values", "old_values_read_below"]

# What a table's updates pass on their way to a reader, keyed as the table is: a filter, a map_values
# (KTableFilter, KTableMapValues forward each update they keep) and a suppression (which forwards them
# later, KTableSuppressProcessorSupplier).
TABLE_STEPS = frozenset({NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES, NodeKind.SUPPRESS})
# The steps a reader of a table's store reads through: a filter's and a map_values' value getter
# applies the step to its parent's (KTableFilterValueGetter, KTableMapValuesValueGetter). A
# suppression's (its buffer, then its parent's: KTableSuppressProcessorSupplier's view) is read by a
# table-table join of a plain table only (value_getters.py, suppressed_table_reads.py), so the windowed
# and session reads stop there (passing it would admit a join of a materialized filter after a suppressed windowed table, not compared with
# Kafka Streams: tests/test_table_walkers_logic.py).
FILTERS_AND_MAP_VALUES = frozenset({NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES})


@dataclasses.dataclass(frozen=True)
class TableBehind:
    """The table whose updates reach a processor: ``steps``, the table filters, map_values and
    suppressions on the way (from the table's writer on); ``writer``, the first node above them
    (None: the processor has no parent); ``writers``, the nodes writing the table: a cogroup's
    aggregations (its inputs), else the writer itself."""

    steps: tuple
    writer: Optional[Any]
    writers: tuple

    @property
    def aggregations(self) -> tuple:
        """The windowed aggregations writing the table (none: the table is not windowed)."""
        return tuple(writer for writer in self.writers if writer.kind is NodeKind.WINDOWED_AGGREGATE)

    @property
    def windows(self):
        return self.aggregations[0].params["windows"] if self.aggregations else None

    def old_value_sender(self) -> Optional[int]:
        """The index in ``steps`` of the last one that sends its own old values (a suppression, or a
        materialized filter/map_values after a windowed aggregation or a suppression), or None."""
        sender = None
        for index, node in enumerate(self.steps):
            if node.kind is NodeKind.SUPPRESS or (materialized_step(node) and (self.aggregations or sender is not None)):
                sender = index
        return sender

    @property
    def windowed_or_suppressed(self) -> bool:
        """Whether the table is windowed, or a suppression (or a step that sends its own old values)
        is on the way: the old value of an update is then not the table's store's before it."""
        return bool(self.aggregations) or self.old_value_sender() is not None


def table_behind(sub, factory) -> TableBehind:
    """The table whose updates reach ``factory`` (a node of ``sub`` with at most one parent), through
    filters, map_values and suppressions."""
    (parent,) = factory.parents or (None,)
    if parent is None:
        return TableBehind((), None, ())
    return table_of(sub, sub.node(parent))


def table_of(sub, node, through=TABLE_STEPS) -> TableBehind:
    """The table ``node`` forwards: ``node`` and the steps above it whose kinds are in ``through``
    (:data:`TABLE_STEPS` or :data:`FILTERS_AND_MAP_VALUES`), up to the first node of another kind, the
    table's writer."""
    steps = []
    while node.kind in through:
        steps.append(node)
        (parent,) = node.parents  # a table step has one parent
        node = sub.node(parent)
    # A cogroup's table is written by its aggregations, one per cogrouped stream, on one store; its
    # merge passes their updates through.
    writers = tuple(sub.node(name) for name in node.parents) if node.kind is NodeKind.COGROUP_MERGE else (node,)
    return TableBehind(tuple(reversed(steps)), node, writers)


def tables_joined(sub, merge) -> tuple:
    """The nodes of the tables a table-table join's result ``merge`` joins, one per side, in the order of
    its parents (each side's join node reads its table, its only parent)."""
    return tuple(sub.node(sub.node(join).parents[0]) for join in merge.parents)


def materialized_step(node) -> bool:
    """A table filter or map_values with a store (Kafka Streams' ``queryableName``)."""
    return node.kind in (NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES) and bool(node.stores)


def sends_old_values(node) -> bool:
    """A table filter whose ``KTableFilter`` sends old values (and so drops what neither value passes)."""
    return node.kind is NodeKind.TABLE_FILTER and bool(node.params.get("send_old_values")) \
        and not node.params.get("versioned")


def old_values_read_below(sub, node) -> bool:
    """Whether a processor after ``node`` (through table filters, map_values and suppressions) reads
    the old values ``node`` sends: a filter that sends old values, a suppression bounded in bytes, a
    re-grouping, or a table-table join that asks for them (Kafka Streams' ``enableSendingOldValues``:
    a left join its left table, an outer join both, any join both when its result's old values are
    read). A materialized filter/map_values on the way reads its own (from its store when it keeps
    one: :func:`~.table_step_stores.keeps_own_store`)."""
    stack = list(node.children)
    while stack:
        child = sub.node(stack.pop())
        if child.kind is NodeKind.TABLE_GROUP_BY_MAP:
            return True
        if child.kind is NodeKind.TABLE_TABLE_JOIN:
            join_type, (merge,) = child.params["join_type"], child.children
            if join_type == "outer" or (join_type == "left" and child.params["side"] == "this") \
                    or old_values_read_below(sub, sub.node(merge)):
                return True
            continue
        if child.kind not in TABLE_STEPS or materialized_step(child):
            continue
        if sends_old_values(child) or (child.kind is NodeKind.SUPPRESS
                                       and child.params["buffer_config"].max_bytes is not None):
            return True
        stack.extend(child.children)
    return False
