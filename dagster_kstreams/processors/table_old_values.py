"""The old value behind a table update, for the processors that decide on it without a store of
their own: a table's ``filter`` and a suppression.

Kafka Streams forwards a table update as a ``Change`` of a new and an old value; the old one is
sent only where a reader asks for it (``enableSendingOldValues``). The runner forwards the new
value only; a reader that needs the old one reads it behind the update: the table's store as it
was before the update (:class:`~.table_joins.ValueGetter`: through the ``filter``/``map_values``
on the way, or a table-table join's result), or, for a windowed table, the old aggregate its
windowed aggregation sends with the update once asked (:class:`~.windowed_tables.WindowedOldValue`).
A suppression emits each update with the old value of its latest buffered update
(:class:`SuppressedOldValue`). The path from the table's writer to the reader is found by one walk
(:func:`table_behind`).

``KTableFilter`` (Kafka Streams 4.3.1): with old values sent (its own flag, the topology's
``send_old_values``: :meth:`~dagster_kstreams.topology.ktable.KTable._filter_params`), an update
whose new value and old value both fail the predicate (or are absent) is dropped, not turned into a
tombstone, unless the table is read from a versioned store (``useVersionedSemantics``). A
materialized filter reads its old value from its own store, which holds the filtered values of
its parent, so the filtered old value of the parent is the same value.
"""

from __future__ import annotations

import dataclasses

from dagster_kstreams.processors.base import register
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.stateless import TableFilter
from dagster_kstreams.processors.table_joins import ValueGetter, value_getter
from dagster_kstreams.processors.windowed_tables import WindowedOldValue
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["TableBehind", "table_behind", "old_value_getter", "SuppressedOldValue", "suppressed_old_value_key",
           "keeps_old_values", "TableFilterOfOldValues", "BUILDERS"]

_TABLE_STEPS = {NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES, NodeKind.SUPPRESS}


@dataclasses.dataclass(frozen=True)
class TableBehind:
    """The table whose updates reach a processor: ``steps``, the table filters, map_values and
    suppressions on the way (from the table's writer on); ``aggregations``, the windowed
    aggregations writing the table (a cogroup's inputs; none: the table is not windowed)."""

    steps: tuple
    aggregations: tuple

    @property
    def windows(self):
        return self.aggregations[0].params["windows"] if self.aggregations else None


def table_behind(sub, factory) -> TableBehind:
    """The table whose updates reach ``factory`` (a node of ``sub`` with at most one parent)."""
    steps, node = [], factory
    while True:
        (parent,) = node.parents or (None,)
        if parent is None:
            return TableBehind(tuple(reversed(steps)), ())
        node = sub.node(parent)
        if node.kind not in _TABLE_STEPS:
            break
        steps.append(node)
    writers = [sub.node(name) for name in node.parents] if node.kind is NodeKind.COGROUP_MERGE else [node]
    aggregations = tuple(writer for writer in writers if writer.kind is NodeKind.WINDOWED_AGGREGATE)
    return TableBehind(tuple(reversed(steps)), aggregations)


def suppressed_old_value_key(suppression: str) -> str:
    """Where a suppression that keeps old values leaves, in ``state.old_values``, the old value of
    the update it emits while that update travels on."""
    return f"suppressed.{suppression}"


class SuppressedOldValue(ValueGetter):
    """The old value of an update a suppression emits (Kafka Streams' buffer keeps the old value of
    each key's latest buffered update and emits it with the update), through the ``steps`` after the
    suppression; the suppression keeps them when a filter after it sends old values
    (:func:`keeps_old_values`)."""

    def __init__(self, suppression: str, steps: tuple):
        super().__init__(None, steps)
        self.suppression = suppression

    def bind(self, program) -> None:
        pass  # nothing to bind: the suppression leaves the value under its name

    def get_old(self, reader, key, state, context):
        return self.through_steps(reader, key, state.old_values.get(suppressed_old_value_key(self.suppression)),
                                  context)


def keeps_old_values(sub, suppression) -> bool:
    """Whether a filter after ``suppression`` (through table filters, map_values and suppressions)
    sends old values, which the suppression then emits with each update."""
    stack = list(suppression.children)
    while stack:
        node = sub.node(stack.pop())
        if node.kind not in _TABLE_STEPS:
            continue
        if node.kind is NodeKind.TABLE_FILTER and node.params.get("send_old_values") \
                and not node.params.get("versioned"):
            return True
        stack.extend(node.children)
    return False


def old_value_getter(ctx, factory, table: TableBehind, what: str, why: str, instead: str,
                     through_joins: bool = False, through_suppressions: bool = False) -> ValueGetter:
    """The getter of the old value behind each update reaching ``factory``: the table's store, or
    what the windowed aggregations send (:class:`WindowedOldValue`, which asks them to send it), or
    (``through_suppressions``) what the last suppression on the way emits (:class:`SuppressedOldValue`);
    a refusal naming ``why`` the old value is needed, and what to do ``instead``, when the table
    reaches ``factory`` through a suppressed table (or, windowed, a materialized one), whose old
    values the runner does not carry. ``through_joins``: as :func:`~.table_joins.value_getter`."""
    suppressions = [index for index, node in enumerate(table.steps) if node.kind is NodeKind.SUPPRESS]
    if through_suppressions and suppressions:
        last = suppressions[-1]
        return SuppressedOldValue(table.steps[last].name, _steps(ctx, table.steps[last + 1:]))
    for node in table.steps:
        if node.kind is NodeKind.SUPPRESS or (table.aggregations and node.stores):
            raise UnsupportedTopologyError(
                f"{what}: {why}, and the {'windowed ' if table.aggregations else ''}table reaches it through "
                f"{node.name} ({node.kind.value}), a suppressed or materialized table; Kafka Streams then reads each "
                f"update's old value from that table, which the Spark runner does not carry. {instead}")
    if not table.aggregations:
        (parent,) = factory.parents
        return value_getter(ctx, factory, parent, through_joins)
    return WindowedOldValue(table.aggregations[0].params["store_name"], _steps(ctx, table.steps),
                            tuple(aggregation.name for aggregation in table.aggregations))


def _steps(ctx, nodes) -> tuple:
    """The ``(kind, fn(key, value), negate)`` steps of table filters and map_values, as getters take them."""
    steps = []
    for node in nodes:
        fn = ctx.function(node, node.params["predicate" if node.kind is NodeKind.TABLE_FILTER else "mapper"])
        steps.append((node.kind.value.removeprefix("table_"), fn.as_key_value(), bool(node.params.get("negate"))))
    return tuple(steps)


@register
class TableFilterOfOldValues(TableFilter):
    """``KTableFilter`` with old values sent: an update whose new value fails the predicate is
    forwarded as a tombstone only when its old value (``old``: the parent table's, before the
    update) passes; else it is dropped."""

    kind = "table_filter_of_old_values"

    def __init__(self, name: str, fn, negate: bool, old: ValueGetter):
        super().__init__(name, fn, negate=negate)
        self.old = old

    def init(self, program) -> None:
        super().init(program)
        self.old.bind(program)

    def process(self, key, value, context, out, state) -> None:
        if not self.passes(key, value, context):
            if not self.passes(key, self.old.get_old(self, key, state, context), context):
                return  # neither the new nor the old value passes: Kafka Streams forwards nothing
            value = None
        program = self.program
        for child in self.children:
            program._forward(child, key, value, context, out, state)


def _table_filter(factory, ctx) -> TableFilter:
    params = factory.params
    fn = ctx.function(factory, params["predicate"]).as_key_value()
    negate = bool(params.get("negate"))
    if not params.get("send_old_values") or params.get("versioned"):
        return TableFilter(factory.name, fn, negate=negate)
    old = old_value_getter(
        ctx, factory, table_behind(ctx.subtopology, factory), f"table filter {factory.name}",
        "it drops an update whose new and old values both fail, as Kafka Streams' KTableFilter does when "
        "old values are sent (a join, a group_by or a suppression reads the filtered table, or the table it "
        "filters has a store)", "Filter after to_stream()", through_joins=True, through_suppressions=True)
    return TableFilterOfOldValues(factory.name, fn, negate, old)


BUILDERS = {NodeKind.TABLE_FILTER: _table_filter}
