"""The old value behind a table update, for the processors that decide on it without a store of
their own: a table's ``filter`` and a suppression.

Kafka Streams forwards a table update as a ``Change`` of a new and an old value; the old one is
sent only where a reader asks for it (``enableSendingOldValues``), and each table on the way passes
on the one it got, except a suppression (it emits the old value of the key's latest buffered
update) and a materialized ``filter``/``map_values`` (it reads the old value from its own store:
what it last forwarded for the key). The runner forwards the new value only; a reader that needs
the old one reads it behind the update, from the nearest of those on the way back to the table's
writer (:func:`old_value_getter`), then through the ``filter``/``map_values`` after it:

* a suppression: the old value it leaves, as it emits an update, under its name
  (:func:`sent_old_value_key`, :class:`SentOldValue`); it keeps one with each buffered update when a
  reader below it needs it (:func:`old_values_read_below`);
* a materialized ``filter``/``map_values`` behind which the table is windowed or suppressed
  (:func:`keeps_own_store`): it keeps its store (:class:`TableStepWithStore`) and leaves the old value
  the same way. Over a key-value table it keeps none: its store would hold its filtered or mapped
  values of the table's, so the table's old value through it is the same value;
* else the table's store as it was before the update (:class:`~.table_joins.ValueGetter`), or, for a
  windowed table, the old aggregate its windowed aggregation sends with the update once asked
  (:class:`~.windowed_tables.WindowedOldValue`).

``KTableFilter`` (Kafka Streams 4.3.1): with old values sent (its own flag, the topology's
``send_old_values``: :meth:`~dagster_kstreams.topology.ktable.KTable._filter_params`), an update
whose new value and old value both fail the predicate (or are absent) is dropped, not turned into a
tombstone, unless the table is read from a versioned store (``useVersionedSemantics``).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from dagster_kstreams.processors.base import Processor, register
from dagster_kstreams.processors.stateless import TableFilter, TableMapValues
from dagster_kstreams.processors.table_joins import ValueGetter, value_getter
from dagster_kstreams.processors.task_state import task_state_of
from dagster_kstreams.processors.windowed_tables import WindowedOldValue
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.serdes import WindowedSerde
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows

__all__ = ["TableBehind", "table_behind", "old_value_getter", "SentOldValue", "sent_old_value_key",
           "old_values_read_below", "keeps_own_store", "table_key_serde", "serialize_for",
           "TableFilterOfOldValues", "TableStepWithStore", "BUILDERS"]

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

    def old_value_sender(self) -> Optional[int]:
        """The index in ``steps`` of the last one that sends its own old values (a suppression, or a
        materialized filter/map_values after a windowed aggregation or a suppression), or None."""
        sender = None
        for index, node in enumerate(self.steps):
            if node.kind is NodeKind.SUPPRESS or (_materialized(node) and (self.aggregations or sender is not None)):
                sender = index
        return sender


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


def _materialized(node) -> bool:
    """A table filter or map_values with a store (Kafka Streams' ``queryableName``)."""
    return node.kind in (NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES) and bool(node.stores)


def _sends_old_values(node) -> bool:
    """A table filter whose ``KTableFilter`` sends old values (and so drops what neither value passes)."""
    return node.kind is NodeKind.TABLE_FILTER and bool(node.params.get("send_old_values")) \
        and not node.params.get("versioned")


def old_values_read_below(sub, node) -> bool:
    """Whether a processor after ``node`` (through table filters, map_values and suppressions) reads
    the old values ``node`` sends: a filter that sends old values, or a suppression bounded in bytes.
    A materialized filter/map_values on the way reads its own (:func:`keeps_own_store`)."""
    stack = list(node.children)
    while stack:
        child = sub.node(stack.pop())
        if child.kind not in _TABLE_STEPS or _materialized(child):
            continue
        if _sends_old_values(child) or (child.kind is NodeKind.SUPPRESS
                                        and child.params["buffer_config"].max_bytes is not None):
            return True
        stack.extend(child.children)
    return False


def keeps_own_store(sub, node) -> bool:
    """Whether the runner keeps the store of ``node``, a materialized filter or map_values, to read
    its old values from it as Kafka Streams does: when they are read (by itself, a filter that sends
    old values, or below it) and the table behind it is windowed or suppressed, where they are not
    the table's old values through it."""
    if not _materialized(node) or not (_sends_old_values(node) or old_values_read_below(sub, node)):
        return False
    table = table_behind(sub, node)
    return bool(table.aggregations) or table.old_value_sender() is not None


def sent_old_value_key(sender: str) -> str:
    """Where a processor that sends its own old values (a suppression, a materialized table with its
    store kept) leaves, in ``state.old_values``, the old value of the update it forwards while that
    update travels on."""
    return f"sent.{sender}"


class SentOldValue(ValueGetter):
    """The old value of an update ``sender`` forwards (a suppression: its latest buffered update's;
    a materialized filter/map_values: its store's before the update), through the ``steps`` after it."""

    def __init__(self, sender: str, steps: tuple):
        super().__init__(None, steps)
        self.sender = sender

    def bind(self, program) -> None:
        pass  # nothing to bind: the sender leaves the value under its name

    def get_old(self, reader, key, state, context):
        return self.through_steps(reader, key, state.old_values.get(sent_old_value_key(self.sender)), context)


def old_value_getter(ctx, factory, table: TableBehind, through_joins: bool = False) -> ValueGetter:
    """The getter of the old value behind each update reaching ``factory``: what the last processor
    on the way that sends its own old values left (:class:`SentOldValue`), else the table's store, or
    what the windowed aggregations send (:class:`WindowedOldValue`, which asks them to send it).
    ``through_joins``: as :func:`~.table_joins.value_getter`."""
    sender = table.old_value_sender()
    if sender is not None:
        return SentOldValue(table.steps[sender].name, _steps(ctx, table.steps[sender + 1:]))
    if not table.aggregations:
        (parent,) = factory.parents
        return value_getter(ctx, factory, parent, through_joins)
    return WindowedOldValue(table.aggregations[0].params["store_name"], _steps(ctx, table.steps),
                            tuple(aggregation.name for aggregation in table.aggregations))


def table_key_serde(ctx, store_name: Optional[str], windows):
    """The key serde Kafka Streams serializes a table's keys with in ``store_name`` (a suppression's
    buffer, a materialized table's store): the store's, else the default one (windowed as ``windows``)."""
    store = ctx.topology.state_stores.get(store_name)
    serde = None if store is None else store.key_serde
    if serde is not None:
        return serde
    if windows is None:
        return ctx.default_key_serde
    if isinstance(windows, SessionWindows):
        return WindowedSerde(ctx.default_key_serde, session=True)
    size = windows.time_difference_ms if isinstance(windows, SlidingWindows) else windows.size_ms
    return WindowedSerde(ctx.default_key_serde, window_size_ms=size)


def serialize_for(processor: Processor, serde, data, what: str) -> bytes:
    """``data`` serialized with ``serde``; a failure names ``processor``."""
    try:
        return serde.serialize(data)
    except Exception as cause:  # noqa: BLE001 - named below
        raise ValueError(f"processor {processor.name} cannot serialize the {what} {data!r} with {serde!r}: "
                         f"{type(cause).__name__}: {cause}") from cause


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


@register
class TableStepWithStore(Processor):
    """A materialized ``KTableFilter`` or ``KTableMapValues`` with its store kept (:func:`keeps_own_store`):
    the store holds what it last forwarded per key (serialized with ``key_serde``, as Kafka Streams'
    store keys are), its old value is read from there and left for the readers below
    (:func:`sent_old_value_key`), and a filter that sends old values (``drops_when_both_absent``)
    drops an update whose new value fails and whose stored one is absent, leaving the store as it is.

    The store is a task-level value (the sub-topology runs task-grouped), as a suppression's buffer
    is: a key-grouped state row has one slot value per record key, where a windowed table needs one
    per window. Like Kafka Streams' store, it keeps every key it holds a value for, until a tombstone
    deletes it; the runner keeps no record cache for it (see the README, "Old values through tables")."""

    kind = "table_step_with_store"
    task_grouped = True

    def __init__(self, name: str, step: TableFilter | TableMapValues, drops_when_both_absent: bool, key_serde):
        super().__init__(name)
        self.step = step  # computes the new value: ``passes`` for a filter, its mapper for map_values
        self.drops_when_both_absent = drops_when_both_absent
        self.key_serde = key_serde
        self._state_key = f"table-store.{name}"

    def _computed(self, key, value, context):
        step = self.step
        if isinstance(step, TableFilter):
            return value if step.passes(key, value, context) else None
        return None if value is None else self.call(context, step.fn, key, value)

    def process(self, key, value, context, out, state) -> None:
        store = task_state_of(self, state).values.setdefault(self._state_key, {})
        key_bytes = serialize_for(self, self.key_serde, key, "key")
        old = store.get(key_bytes)
        new = self._computed(key, value, context)
        if self.drops_when_both_absent and old is None and new is None:
            return  # Kafka Streams' KTableFilter forwards nothing and leaves its store as it is
        if new is None:
            store.pop(key_bytes, None)
        else:
            store[key_bytes] = new
        state.old_values[sent_old_value_key(self.name)] = old
        self.forward(key, new, context, out, state)


def _with_store(factory, ctx, step) -> TableStepWithStore:
    windows = table_behind(ctx.subtopology, factory).windows
    return TableStepWithStore(factory.name, step, _sends_old_values(factory),
                              table_key_serde(ctx, factory.params["store_name"], windows))


def _table_filter(factory, ctx) -> Processor:
    params = factory.params
    fn = ctx.function(factory, params["predicate"]).as_key_value()
    negate = bool(params.get("negate"))
    if keeps_own_store(ctx.subtopology, factory):
        return _with_store(factory, ctx, TableFilter(factory.name, fn, negate=negate))
    if not _sends_old_values(factory):
        return TableFilter(factory.name, fn, negate=negate)
    old = old_value_getter(ctx, factory, table_behind(ctx.subtopology, factory), through_joins=True)
    return TableFilterOfOldValues(factory.name, fn, negate, old)


def _table_map_values(factory, ctx) -> Processor:
    step = TableMapValues(factory.name, ctx.function(factory, factory.params["mapper"]).as_key_value())
    return _with_store(factory, ctx, step) if keeps_own_store(ctx.subtopology, factory) else step


BUILDERS = {NodeKind.TABLE_FILTER: _table_filter, NodeKind.TABLE_MAP_VALUES: _table_map_values}
