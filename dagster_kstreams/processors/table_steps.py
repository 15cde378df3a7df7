"""The KTable operations that keep no store: ``KTableFilter``, ``KTableMapValues`` and
``KTable.toStream`` (``KTableImpl``'s processors), each forwarding a table update at once.

The runner forwards a table update's new value only. A filter whose ``KTableFilter`` sends old
values, and a filter or map_values that keeps a store of its own, are built elsewhere
(:mod:`.table_old_values`, :mod:`.table_step_stores`); these are what they build on.
"""

from __future__ import annotations

from dagster_kstreams.processors.base import register
from dagster_kstreams.processors.stateless import Filter, FunctionProcessor
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["TableFilter", "TableMapValues", "TableToStream", "BUILDERS"]


@register
class TableFilter(Filter):
    """A table update whose new value fails the predicate becomes a tombstone (``KTableFilter``
    without old values sent; with them: :class:`~.table_old_values.TableFilterOfOldValues`)."""

    kind = "table_filter"

    def passes(self, key, value, context) -> bool:
        """Whether a table value (None: none) passes the filter."""
        return value is not None and bool(self.call(context, self.fn, key, value)) != self.negate

    def process(self, key, value, context, out, state) -> None:
        new_value = value if self.passes(key, value, context) else None
        program = self.program
        for child in self.children:
            program._forward(child, key, new_value, context, out, state)


@register
class TableMapValues(FunctionProcessor):
    """Maps a table update's value; a tombstone stays a tombstone (``KTableMapValues``)."""

    kind = "table_map_values"

    def process(self, key, value, context, out, state) -> None:
        new_value = None if value is None else self.call(context, self.fn, key, value)
        program = self.program
        for child in self.children:
            program._forward(child, key, new_value, context, out, state)


@register
class TableToStream(FunctionProcessor):
    """``KTable.to_stream``: the table's updates as records (``fn``: an optional key-value mapper)."""

    kind = "table_to_stream"

    def process(self, key, value, context, out, state) -> None:
        if self.fn is not None:
            value = self.call(context, self.fn, key, value)
        program = self.program
        for child in self.children:
            program._forward(child, key, value, context, out, state)


def _table_to_stream(factory, ctx) -> TableToStream:
    return TableToStream(factory.name, None)


BUILDERS = {NodeKind.TABLE_TO_STREAM: _table_to_stream}
