"""Reading a suppressed plain table: Kafka Streams 4.3.1's ``KTableSuppressProcessorSupplier.view()``.

A stream-table or table-table join reads a table suppressed by a time limit
(``table.suppress(Suppressed.until_time_limit(...))``) through the suppression's value getter
(:class:`SuppressedView`): for a key in the suppression's buffer, the buffer's prior value, the old
value of the first update buffered for the key (what the suppressed table showed before it:
``priorValueForBuffered``), with Kafka's unknown timestamp; for any other key,
the value of the table behind the suppression (a table-table join's result too, whose own getter reads
a suppressed table through its buffer; a suppressed table's, through its buffer too), through its own
getter. A ``filter``/``map_values`` with a store of its own after the suppression is read from that
store, as any table's (it keeps it: :func:`read_by_join_getter`). The old value of an update the
suppression forwards is the one it sends with it (its latest buffered update's old value, left in the
key's ``state.old_values`` under :func:`sent_old_value_key`), which a re-grouping subtracts and a left or
outer join reads.

The suppression keeps the prior value of each buffered key only when a getter reads it
(:func:`read_by_join_getter`), as it keeps old values only when a reader below needs them, a
suppression after it too (:func:`keeps_old_values`): the prior values of that one are the old values
this one sends.
"""

from __future__ import annotations

from typing import Any

from dagster_kstreams.processors.base import Processor
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.table_behind import old_values_read_below
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["SuppressedView", "sent_old_value_key", "read_by_join_getter", "keeps_old_values", "UNKNOWN_TIMESTAMP"]

# The steps a join's getter reads through to the table above them (KTableFilter's and KTableMapValues'
# getters without a store of their own apply the step to their parent's value).
_READ_THROUGH = (NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES)

# Kafka Streams' RecordQueue.UNKNOWN: the timestamp the buffer's prior value is read with (a join
# stamps its result with the larger of both rows' times, so the update's own wins).
UNKNOWN_TIMESTAMP = -1


def sent_old_value_key(sender: str) -> str:
    """Where a suppression leaves, in ``state.old_values``, the old value of the update it emits
    while that update travels on (a filter/map_values with its own store leaves it as any table's
    store does: under its slot)."""
    return f"sent.{sender}"


def read_by_join_getter(sub, table) -> bool:
    """Whether a stream-table or table-table join reads the table the node ``table`` forwards through
    value getters: directly or through filters/map_values without a store of their own. A suppression
    read so keeps each buffered key's prior value; a filter/map_values with a store of its own after a
    suppression keeps that store (Kafka Streams' join reads it, not the suppression behind)."""
    read_through, stack = {table.name}, list(table.children)
    while stack:
        child = sub.node(stack.pop())
        if child.kind is NodeKind.TABLE_TABLE_JOIN:
            return True
        if child.kind in _READ_THROUGH and not child.stores:
            read_through.add(child.name)
            stack.extend(child.children)
    # a stream-table join names its table (the table is not its parent)
    return any(node.kind is NodeKind.STREAM_TABLE_JOIN and node.params.get("table") in read_through
               for node in sub.nodes)


def keeps_old_values(sub, suppression) -> bool:
    """Whether the suppression ``suppression`` keeps the old value of each update it buffers (to emit it
    with the update, and as a buffered key's prior value): a reader below needs them
    (:func:`~.table_behind.old_values_read_below`), a join's getter reads it (:func:`read_by_join_getter`),
    or a suppression after it (through filters/map_values without a store of their own) keeps its own,
    which are the ones this one sends (Kafka Streams' suppression asks its parent for old values always)."""
    if old_values_read_below(sub, suppression) or read_by_join_getter(sub, suppression):
        return True
    stack = list(suppression.children)
    while stack:
        child = sub.node(stack.pop())
        if child.kind is NodeKind.SUPPRESS:
            if keeps_old_values(sub, child):
                return True
        elif child.kind in _READ_THROUGH and not child.stores:
            stack.extend(child.children)
    return False


class SuppressedView:
    """The suppressed table's value for a key (``KTableSuppressProcessorSupplier``'s value getter):
    the suppression ``suppression``'s buffered prior value, else ``parent``'s (the table behind it,
    a :class:`~.value_getters.ValueGetter`). Read by a :class:`~.value_getters.ValueGetter` as a
    table it reads through (its ``joined``), with the same methods as a join's result."""

    def __init__(self, suppression: str, parent):
        self.suppression, self.parent = suppression, parent
        self._processor = None  # the suppress processor, once bound to a program

    def bind(self, program) -> None:
        self.parent.bind(program)
        (self._processor,) = [node for node in program.nodes if node.name == self.suppression]

    def keep_timestamps(self, program) -> None:
        self.parent.keep_timestamps(program)

    def get(self, reader: Processor, key, state, context) -> Any:
        """The value (ABSENT: none)."""
        buffered, prior = self._processor.prior_value_for(key, state)
        value = prior if buffered else self.parent.get(reader, key, state, context)
        return ABSENT if value is None else value

    def get_timestamped(self, reader: Processor, key, state, context) -> tuple[Any, int]:
        """``(value or ABSENT, timestamp)``: a buffered key's prior value with the unknown timestamp
        (only once :meth:`keep_timestamps` was called)."""
        buffered, prior = self._processor.prior_value_for(key, state)
        if buffered:
            return ABSENT if prior is None else prior, UNKNOWN_TIMESTAMP
        value, timestamp = self.parent.get_timestamped(reader, key, state, context)
        return ABSENT if value is None else value, timestamp

    def get_old(self, state) -> Any:
        """The old value the suppression sends with the update it forwards now (ABSENT: none)."""
        old = state.old_values.get(sent_old_value_key(self.suppression))
        return ABSENT if old is None else old
