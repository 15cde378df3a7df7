"""``KTable.transform_values`` on the runner (Kafka Streams 4.3.1's ``KTableTransformValues``): each
table update's new value through a user's :class:`~dagster_kstreams.topology.value_transformer.ValueTransformerWithKey`,
a tombstone's too (``transform(key, None)``), forwarded with the update's key, time and headers.

The transformer runs as a user processor does (:class:`~.user_processors.UserProcessorNode`): a
fresh one per micro-batch, its sub-topology task-grouped, the stores it names (added with
``add_state_store``) readable and writable in ``transform`` and kept with the task's checkpoint,
punctuators scheduled from its context. What it gets in ``init`` is its processor's context with
forwarding refused (:class:`TransformerContext`, Kafka Streams' ``ForwardingDisabledProcessorContext``):
the returned value is what goes on.

With a ``Materialized.as_(name)`` store of its own and no record cache (``with_caching_disabled()``, or
``statestore.cache.max.bytes`` 0), each transformed value is put into that store before it is forwarded,
as ``KTableTransformValuesProcessor`` puts it and its ``TimestampedTupleForwarder`` forwards at once
over an uncached store: the store is one of the task's user stores (:mod:`.user_stores`), kept with the
checkpoint and read by interactive queries (``read_store``) as Kafka Streams' ``keyValueStore()`` view
gives it, the values without their timestamps (nothing the runner admits after it reads them).

With the record cache on (the default), the store is Kafka Streams' ``CachingKeyValueStore``: the
processor puts each transformed value, and its ``TimestampedTupleForwarder`` forwards nothing; the
cache's flush at a commit forwards each key's last put, with that put's record context (time and
headers), nothing for a key absent now and at the last flush. The runner keeps that store as a table
keeps its own, a slot of the key's state (:class:`CachedTableTransformValues`), flushed at the
micro-batch's end with the other caches (``program._flush``, upstream stores first), and
``read_store`` reads the slot.

What runs: a transform_values without a store of its own or with a plain one, whose updates go to
``to_stream`` (or to a re-grouping, with an uncached store of its own or without one: the old value of each
update, Kafka Streams' read of the store before the put, or without a store the transformer's result on the
old value of the table behind, is left for it: :class:`TransformingProcessor`), behind a table that
is neither windowed, suppressed nor versioned (the runner forwards such a table's updates with marks
and old values of their own). A stream-table join reads one without a store of its own through its value
getter, a transformer of the join's (:mod:`.transform_values_getter`), and so does an inner table-table join
whose result goes to ``to_stream`` only, for the other table's updates. Refused when defined, naming
the processor (README, "Refused when defined, and why"): everything else (:func:`check_runs`).
"""

from __future__ import annotations

from typing import Optional

from dagster_kstreams.processors.base import register
from dagster_kstreams.processors.errors import ProcessingError, UnsupportedTopologyError
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.suppressed_table_reads import sent_old_value_key
from dagster_kstreams.processors.table_behind import table_behind
from dagster_kstreams.processors.table_old_values import old_value_getter
from dagster_kstreams.processors.transform_values_getter import joined_without_old_values
from dagster_kstreams.processors.transform_values_steps import passes_updates_only
from dagster_kstreams.processors.user_processor_context import leave_old_value, processing, record_context_time
from dagster_kstreams.processors.user_processors import UserProcessorNode, connected_stores
from dagster_kstreams.processors.value_getters import ValueGetter
from dagster_kstreams.processors.versioned_tables import reads_versioned_updates
from dagster_kstreams.topology.node_specs import NodeKind, StoreType
from dagster_kstreams.topology.processor_api import FixedKeyProcessor, Record, RecordMetadata
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["TransformerContext", "TransformingProcessor", "TransformingSupplier", "TableTransformValues",
           "TableTransformValuesOfOldValues", "CachedTableTransformValues", "check_runs", "BUILDERS"]


class TransformerContext:
    """What a transformer gets in ``init``: its processor's context, which it may ask for stores, the
    record's metadata and time, the task and its times, and schedule punctuators with, but not forward
    (Kafka Streams' ``ForwardingDisabledProcessorContext``)."""

    def __init__(self, context, processor_name: str, own_store: Optional[str] = None):
        self._context, self._processor_name, self._own_store = context, processor_name, own_store

    def forward(self, *args, **kwargs) -> None:
        raise ProcessingError(f"processor {self._processor_name}: ProcessorContext#forward() is not supported from "
                              "this context, as the return value of transformValues is used instead.")

    def get_state_store(self, name: str):
        if name == self._own_store:
            raise ProcessingError(f"processor {self._processor_name}: the transformer asked for {name}, the store "
                                  "transform_values keeps its results in; the Spark runner keeps it without the "
                                  "timestamps Kafka Streams' TimestampedKeyValueStore gives: not compared yet")
        return self._context.get_state_store(name)

    def schedule(self, interval, punctuation_type, punctuator):
        return self._context.schedule(interval, punctuation_type, punctuator)

    def record_metadata(self) -> RecordMetadata:
        return self._context.record_metadata()

    def timestamp(self) -> int:
        """The time of the update being transformed; in a punctuator the punctuation's time, in ``init``
        the wall clock's (Kafka Streams' record context there)."""
        return record_context_time(self._context)

    def task_id(self) -> TaskId:
        return self._context.task_id()

    def current_stream_time_ms(self) -> int:
        return self._context.current_stream_time_ms()

    def current_system_time_ms(self) -> int:
        return self._context.current_system_time_ms()


class TransformingProcessor(FixedKeyProcessor):
    """``KTableTransformValuesProcessor``: forwards each update with its value through the transformer,
    having put that value into its own store first when it keeps one (``own_store``; None deletes the
    key, as a put of a null value does). ``sends_old_values`` (a re-grouping reads them; only with a
    store of its own, :func:`check_runs`): the store's value before the put is the update's old value,
    left in the key's group under :func:`sent_old_value_key` for the reader, as a suppression leaves
    its own (Kafka Streams' ``Change.oldValue``, read from the store when materialized). ``cached``: its
    own store has the record cache on; its node (:class:`CachedTableTransformValues`) takes each value
    instead, and forwards at its flush."""

    def __init__(self, transformer, processor_name: str, own_store: Optional[str] = None,
                 sends_old_values: bool = False, cached: bool = False):
        self.transformer, self.processor_name, self.own_store = transformer, processor_name, own_store
        self.sends_old_values, self.cached = sends_old_values, cached

    def init(self, context) -> None:
        self.context = context
        self.store = None if self.own_store is None or self.cached else context.get_state_store(self.own_store)
        self.transformer.init(TransformerContext(context, self.processor_name, self.own_store))

    def process(self, record: Record) -> None:
        new_value = self.transformer.transform(record.key, record.value)
        if self.cached:
            node, record_context, group = processing(self.context)
            node.put(record.key, new_value, record_context, group)
            return
        if self.sends_old_values:
            leave_old_value(self.context, sent_old_value_key(self.processor_name), self._old_value(record.key))
        if self.store is not None:
            self.store.put(record.key, new_value)
        self.context.forward(record.with_value(new_value))

    def _old_value(self, key):
        """The update's old value: its own store's before the put; without a store, the transformer on the
        old value of the table behind, called after the new value's, in the same record context, as
        ``KTableTransformValuesProcessor`` does (a stateful transformer counts that call; a missing old
        value is transformed too: ``transform(key, None)``)."""
        if self.store is not None:
            return self.store.get(key)
        node, record_context, group = processing(self.context)
        return self.transformer.transform(key, node.old.get_old(node, key, group, record_context))

    def close(self) -> None:
        self.transformer.close()


class TransformingSupplier:
    """A new :class:`TransformingProcessor` around a new transformer of the user's supplier, per call
    (a class, not a closure: the program is pickled to Spark's workers)."""

    def __init__(self, transformer_supplier, processor_name: str, own_store: Optional[str] = None,
                 sends_old_values: bool = False, cached: bool = False):
        self.transformer_supplier, self.processor_name, self.own_store = transformer_supplier, processor_name, own_store
        self.sends_old_values, self.cached = sends_old_values, cached

    def __call__(self) -> TransformingProcessor:
        return TransformingProcessor(self.transformer_supplier(), self.processor_name, self.own_store,
                                     self.sends_old_values, self.cached)


@register
class TableTransformValues(UserProcessorNode):
    """A transform_values node: a user processor around a fresh transformer each micro-batch."""

    kind = NodeKind.TABLE_TRANSFORM_VALUES.value
    forwards_other_keys = False  # the key stays, and a transformer's punctuator cannot forward


class TableTransformValuesOfOldValues(TableTransformValues):
    """A transform_values node without a store of its own whose table sends old values (Kafka Streams'
    ``sendOldValues``, asked by a re-grouping or a filter after it): ``old`` reads the old value of the table behind,
    which its processor transforms (not registered: it runs the transform_values kind)."""

    def __init__(self, name: str, supplier, stores: dict, child_names: list[str], old: ValueGetter):
        super().__init__(name, supplier, stores, fixed_key=True, child_names=child_names)
        self.old = old

    def init(self, program) -> None:
        super().init(program)
        self.old.bind(program)


class CachedTableTransformValues(TableTransformValues):
    """A transform_values node whose own store has the record cache on: the store is a slot of the key's
    state (``store``), written at each update and flushed as a cached table's is (not registered: it
    runs the transform_values kind). The slot's old value is its value at the last flush, taken at the
    first put since, which the flush compares with the new one (``CachingKeyValueStore``'s
    ``putAndMaybeForward`` reads the store beneath the cache)."""

    stateful = True
    # handed the record's key's group, whose slot is its store, as a table's step is (the stores the
    # transformer names are the task's, which it finds by name: no DSL store is named, check_runs)
    looks_up_each_store = False

    def __init__(self, name: str, supplier, stores: dict, child_names: list[str], store: str):
        super().__init__(name, supplier, stores, fixed_key=True, child_names=child_names)
        self.store, self.cached = store, True

    def put(self, key, value, context, group) -> None:
        """Put the transformed ``value`` (None: delete) for ``key``, held for the flush with ``context``,
        the record's, as the cache entry keeps it (its time and headers)."""
        slot = self.state_slot
        if slot not in group.dirty:
            group.old_values[slot] = group.values[slot]
        group.values[slot] = ABSENT if value is None else value
        group.keys[slot] = key
        group.changed = True
        group.mark_dirty(slot, context)

    def flush_entries(self, group, context) -> list:
        return [(context.position, lambda out: self.flush(group, out, context))]

    def flush(self, group, out, context) -> None:
        """Forward the key's last put with its context; nothing when the key is absent now and was at
        the last flush (put and deleted in between, or a null result for a key never held)."""
        slot = self.state_slot
        value = group.values[slot]
        if value is ABSENT and group.old_values.get(slot, ABSENT) is ABSENT:
            return
        self.forward(group.keys[slot], None if value is ABSENT else value, context, out, group)


def check_runs(factory, ctx) -> None:
    """Refuses, naming the processor, what the runner does not compare with Kafka Streams yet: a store
    of its own that is versioned; a reader of its updates other than ``to_stream`` and a re-grouping (whose
    old values are its uncached store's value before the update, or without a store the transformer's
    result on the old value behind; a cached store's are not compared yet), and without a store a
    filter/map_values without one going on to those (:mod:`.transform_values_steps`); a filter or map_values
    read otherwise, a table-table join or a suppression reads through its value getter, a transformer of its own, which only a
    stream-table join's and an inner join's whose result goes to to_stream only read here
    (:mod:`.transform_values_getter`), and a filter, a suppression, a left or outer join read old values;
    a DSL operation's store
    named; a table behind it that is windowed, suppressed or versioned."""
    where = f"processor {factory.name} (transform_values)"
    own_store = factory.params.get("store_name")
    if own_store is not None:
        _check_own_store(where, own_store, ctx)
    sub = ctx.subtopology
    for child in factory.children:
        reader = sub.node(child)
        if reader.kind is NodeKind.TABLE_TO_STREAM:
            continue
        if reader.kind is NodeKind.TABLE_GROUP_BY_MAP and own_store and ctx.cached(own_store):
            raise UnsupportedTopologyError(
                f"processor {reader.name} ({reader.kind.value}) re-groups the table of {where}, which keeps its "
                f"results in a cached store ({own_store}); the Spark runner re-groups a transform_values with an "
                "uncached store of its own only: the old values its record cache's flush sends (the store's value "
                "at the last flush) are not compared with Kafka Streams yet")
        if reader.kind is NodeKind.TABLE_GROUP_BY_MAP:
            continue  # a re-grouping reads the old values its store gives, or its transformer makes of the old ones
        if own_store is None and joined_without_old_values(sub, reader):
            continue  # the other table's updates read it through its value getter (transform_values_getter)
        if own_store is None and passes_updates_only(sub, reader):
            continue  # a filter/map_values without a store: the old values it reads are the ones sent to it
        raise UnsupportedTopologyError(
            f"processor {reader.name} ({reader.kind.value}) reads the table of {where}; the Spark runner passes "
            "a transform_values' updates to to_stream and a re-grouping only (without a store of its own, through "
            "filter/map_values without one too): a filter or map_values with a store of its own or read otherwise, a "
            "transform_values, a join (but an inner join of one without a store whose result goes to to_stream only, whose updates need "
            "no old values) or suppression of it (read through its value getter, or asking it for old values, which "
            "Kafka Streams makes by calling the transformer on each update's old value too) are not compared with "
            "Kafka Streams yet")
    for store in factory.stores:
        if store != own_store and ctx.topology.state_stores[store].type not in _USER_STORES:
            raise UnsupportedTopologyError(
                f"{where} names the store {store} of a DSL operation; the Spark runner gives a transformer the "
                "stores added with add_state_store only")
    behind = table_behind(sub, factory)
    if behind.windowed_or_suppressed or reads_versioned_updates(ctx, factory.parents[0]):
        raise UnsupportedTopologyError(
            f"{where} transforms the updates of {behind.writer.name} ({behind.writer.kind.value}), a windowed, "
            "suppressed or versioned table; the Spark runner transforms a table that is neither only")


def _check_own_store(where: str, store: str, ctx) -> None:
    """A store of its own runs plain only: a versioned store drops and marks updates by their time."""
    if ctx.topology.state_stores[store].history_retention_ms is not None:
        raise UnsupportedTopologyError(
            f"{where} keeps its results in a versioned store ({store}); the Spark runner keeps a transform_values' "
            "own store as a plain key-value store only: a versioned one is not compared with Kafka Streams yet")


# The stores added with add_state_store (a DSL operation's are read through views a transformer does not get yet).
_USER_STORES = frozenset({StoreType.USER_KEY_VALUE, StoreType.USER_WINDOW, StoreType.USER_SESSION,
                          StoreType.USER_VERSIONED})


def build(factory, ctx) -> TableTransformValues:
    check_runs(factory, ctx)
    own_store = factory.params.get("store_name")
    stores, _ = connected_stores(factory, ctx, skip=(own_store,))
    children = list(factory.children)
    if own_store is not None and ctx.cached(own_store):  # a slot of the key's state, as a cached table's store
        supplier = TransformingSupplier(factory.params["supplier"], factory.name, own_store, cached=True)
        return CachedTableTransformValues(factory.name, supplier, stores, children, own_store)
    if own_store is not None:  # one of the task's user key-value stores (window None)
        spec = ctx.topology.state_stores[own_store]
        stores[own_store] = (spec.key_serde or ctx.default_key_serde, spec.value_serde or ctx.default_value_serde, None)
    if own_store is None and factory.params.get("send_old_values"):
        # KTableTransformValues' sendOldValues (a re-grouping asked for them): the transformer is called on the
        # old value of the table behind too, which check_runs admits neither windowed nor suppressed
        old = old_value_getter(ctx, factory, table_behind(ctx.subtopology, factory))
        supplier = TransformingSupplier(factory.params["supplier"], factory.name, sends_old_values=True)
        return TableTransformValuesOfOldValues(factory.name, supplier, stores, children, old)
    sends_old_values = any(ctx.subtopology.node(child).kind is NodeKind.TABLE_GROUP_BY_MAP
                           for child in factory.children)
    supplier = TransformingSupplier(factory.params["supplier"], factory.name, own_store, sends_old_values)
    return TableTransformValues(factory.name, supplier, stores, fixed_key=True, child_names=children)


BUILDERS = {NodeKind.TABLE_TRANSFORM_VALUES: build}
