"""The old value behind a table update, for the processors that decide on it without a store of
their own: a table's ``filter`` and a suppression; and the one builder of a table's ``filter`` and
``map_values``.

Kafka Streams forwards a table update as a ``Change`` of a new and an old value; the old one is
sent only where a reader asks for it (``enableSendingOldValues``), and each table on the way passes
on the one it got, except a suppression (it emits the old value of the key's latest buffered
update) and a materialized ``filter``/``map_values`` (it reads the old value from its own store:
what it last forwarded for the key). The runner forwards the new value only; a reader that needs
the old one reads it behind the update, from the nearest of those on the way back to the table's
writer (:func:`old_value_getter`), then through the ``filter``/``map_values`` after it:

* a transform_values: the old value it leaves under its name as it forwards an update (its store's
  before the put, or its transformer's result on the old value behind it: :mod:`.table_transform_values`);
* a suppression: the old value it leaves, as it emits an update, under its name
  (:func:`sent_old_value_key`, :class:`SentOldValue`); it keeps one with each buffered update when a
  reader below it needs it (:func:`~.table_behind.old_values_read_below`);
* a materialized ``filter``/``map_values`` behind which the table is windowed or suppressed: it
  keeps its store (:func:`~.table_step_stores.keeps_own_store`), read as any table's store is (its
  slot's value before the update, :class:`~.value_getters.ValueGetter`). Over a key-value table it
  keeps none: its store would hold its filtered or mapped values of the table's, so the table's old
  value through it is the same value;
* else the table's store as it was before the update (:class:`~.value_getters.ValueGetter`), or, for a
  windowed table, the old aggregate its windowed aggregation sends with the update once asked
  (:class:`~.windowed_tables.WindowedOldValue`).

``KTableFilter`` (Kafka Streams 4.3.1): with old values sent (its own flag, the topology's
``send_old_values``: :meth:`~dagster_kstreams.topology.ktable.KTable._filter_params`), an update
whose new value and old value both fail the predicate (or are absent) is dropped, not turned into a
tombstone, unless the table is read from a versioned store (``useVersionedSemantics``).

A ``filter`` or ``map_values`` that keeps its own store is built by :mod:`.table_step_stores`
(:func:`~.table_step_stores.keeps_own_store`), any other here.
"""

from __future__ import annotations

from typing import Optional

from dagster_kstreams.processors.base import Processor, register
from dagster_kstreams.processors.table_steps import TableFilter, TableMapValues
from dagster_kstreams.processors.suppressed_table_reads import sent_old_value_key
from dagster_kstreams.processors.table_behind import TableBehind, sends_old_values, table_behind
from dagster_kstreams.processors.value_getters import ValueGetter, value_getter
from dagster_kstreams.processors.table_step_stores import keeps_own_store, table_step_store
from dagster_kstreams.processors.windowed_tables import WindowedOldValue
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.serdes import WindowedSerde
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows

__all__ = ["old_value_getter", "SentOldValue", "sent_old_value_key", "table_key_serde", "serialize_for",
           "TableFilterOfOldValues", "BUILDERS"]


class SentOldValue(ValueGetter):
    """The old value of an update the suppression ``sender`` emits (its latest buffered update's),
    through the ``steps`` after it."""

    def __init__(self, sender: str, steps: tuple):
        super().__init__(None, steps)
        self.sender = sender

    def bind(self, program) -> None:
        pass  # nothing to bind: the sender leaves the value under its name

    def get_old(self, reader, key, state, context):
        return self.through_steps(reader, key, state.old_values.get(sent_old_value_key(self.sender)), context)


def old_value_getter(ctx, factory, table: TableBehind, through_joins: bool = False,
                     windowed: bool = False, suppressions: bool = False) -> ValueGetter:
    """The getter of the old value behind each update reaching ``factory``, from the last processor
    on the way that sends its own old values: a transform_values' or a suppression's (:class:`SentOldValue`), or the store
    of a filter/map_values that keeps one (its old values are read here, so it keeps it:
    :func:`~.table_step_stores.keeps_own_store`); else the table's store, or what the windowed
    aggregations send (:class:`WindowedOldValue`, which asks them to send it).
    ``through_joins``, ``windowed``, ``suppressions``: as :func:`~.value_getters.value_getter` (a windowed
    reader reads a join of session tables too: its old value is the one the join sends)."""
    if table.writer is not None and table.writer.kind is NodeKind.TABLE_TRANSFORM_VALUES:
        # the old value it sends (its store's before the put, or its transformer's result on the old value
        # behind it), through the filters/map_values after it (transform_values_steps: none with a store)
        return SentOldValue(table.writer.name, _steps(ctx, table.steps))
    sender = table.old_value_sender()
    if sender is not None:
        node, after = table.steps[sender], _steps(ctx, table.steps[sender + 1:])
        if node.kind is NodeKind.SUPPRESS:
            return SentOldValue(node.name, after)
        return ValueGetter(node.params["store_name"], after)
    if not table.aggregations:
        (parent,) = factory.parents
        return value_getter(ctx, factory, parent, through_joins, windowed, sessions=windowed, suppressions=suppressions)
    return WindowedOldValue(table.aggregations[0].params["store_name"], _steps(ctx, table.steps),
                            tuple(aggregation.name for aggregation in table.aggregations))


def table_key_serde(ctx, store_name: Optional[str], windows):
    """The key serde Kafka Streams serializes a table's keys with in ``store_name`` (a suppression's
    buffer): the store's, else the default one (windowed as ``windows``)."""
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


def _table_filter(factory, ctx) -> Processor:
    params = factory.params
    fn = ctx.function(factory, params["predicate"]).as_key_value()
    negate = bool(params.get("negate"))
    if keeps_own_store(ctx, factory):
        return table_step_store(factory, ctx)
    if not sends_old_values(factory):
        return TableFilter(factory.name, fn, negate=negate)
    # a windowed join's result too (its old value: the one its join sends, read as the join reads)
    old = old_value_getter(ctx, factory, table_behind(ctx.subtopology, factory), through_joins=True, windowed=True)
    return TableFilterOfOldValues(factory.name, fn, negate, old)


def _table_map_values(factory, ctx) -> Processor:
    if keeps_own_store(ctx, factory):
        return table_step_store(factory, ctx)
    return TableMapValues(factory.name, ctx.function(factory, factory.params["mapper"]).as_key_value())


BUILDERS = {NodeKind.TABLE_FILTER: _table_filter, NodeKind.TABLE_MAP_VALUES: _table_map_values}
