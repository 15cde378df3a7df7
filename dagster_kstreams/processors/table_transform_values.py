"""``KTable.transform_values`` on the runner (Kafka Streams 4.3.1's ``KTableTransformValues``): each
table update's new value through a user's :class:`~dagster_kstreams.topology.value_transformer.ValueTransformerWithKey`,
a tombstone's too (``transform(key, None)``), forwarded with the update's key, time and headers.

The transformer runs as a user processor does (:class:`~.user_processors.UserProcessorNode`): a
fresh one per micro-batch, its sub-topology task-grouped, the stores it names (added with
``add_state_store``) readable and writable in ``transform`` and kept with the task's checkpoint,
punctuators scheduled from its context. What it gets in ``init`` is its processor's context with
forwarding refused (:class:`TransformerContext`, Kafka Streams' ``ForwardingDisabledProcessorContext``):
the returned value is what goes on.

What runs: a transform_values without a store of its own, whose updates go to ``to_stream``, behind a
table that is neither windowed, suppressed nor versioned (the runner forwards such a table's updates
with marks and old values of their own). Refused when defined, naming the processor (README, "Refused
when defined, and why"): everything else (:func:`check_runs`).
"""

from __future__ import annotations


from dagster_kstreams.processors.base import register
from dagster_kstreams.processors.errors import ProcessingError, UnsupportedTopologyError
from dagster_kstreams.processors.table_behind import table_behind
from dagster_kstreams.processors.user_processors import UserProcessorNode, connected_stores
from dagster_kstreams.processors.versioned_tables import reads_versioned_updates
from dagster_kstreams.topology.node_specs import NodeKind, StoreType
from dagster_kstreams.topology.processor_api import FixedKeyProcessor, Record, RecordMetadata
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["TransformerContext", "TransformingProcessor", "TransformingSupplier", "TableTransformValues", "check_runs", "BUILDERS"]


class TransformerContext:
    """What a transformer gets in ``init``: its processor's context, which it may ask for stores, the
    record's metadata and time, the task and its times, and schedule punctuators with, but not forward
    (Kafka Streams' ``ForwardingDisabledProcessorContext``)."""

    def __init__(self, context, processor_name: str):
        self._context, self._processor_name = context, processor_name

    def forward(self, *args, **kwargs) -> None:
        raise ProcessingError(f"processor {self._processor_name}: ProcessorContext#forward() is not supported from "
                              "this context, as the return value of transformValues is used instead.")

    def get_state_store(self, name: str):
        return self._context.get_state_store(name)

    def schedule(self, interval, punctuation_type, punctuator):
        return self._context.schedule(interval, punctuation_type, punctuator)

    def record_metadata(self) -> RecordMetadata:
        return self._context.record_metadata()

    def timestamp(self) -> int:
        """The time of the update being transformed; in a punctuator the punctuation's time, in ``init``
        the wall clock's (Kafka Streams' record context there)."""
        context = self._context
        if context._record_context is not None:
            return context._record_context.timestamp
        if context._punctuation_time is not None:
            return context._punctuation_time
        return context.current_system_time_ms()

    def task_id(self) -> TaskId:
        return self._context.task_id()

    def current_stream_time_ms(self) -> int:
        return self._context.current_stream_time_ms()

    def current_system_time_ms(self) -> int:
        return self._context.current_system_time_ms()


class TransformingProcessor(FixedKeyProcessor):
    """``KTableTransformValuesProcessor`` without a store: forwards each update with its value through
    the transformer (no old value: nothing after it reads one, :func:`check_runs`)."""

    def __init__(self, transformer, processor_name: str):
        self.transformer, self.processor_name = transformer, processor_name

    def init(self, context) -> None:
        self.context = context
        self.transformer.init(TransformerContext(context, self.processor_name))

    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(self.transformer.transform(record.key, record.value)))

    def close(self) -> None:
        self.transformer.close()


class TransformingSupplier:
    """A new :class:`TransformingProcessor` around a new transformer of the user's supplier, per call
    (a class, not a closure: the program is pickled to Spark's workers)."""

    def __init__(self, transformer_supplier, processor_name: str):
        self.transformer_supplier, self.processor_name = transformer_supplier, processor_name

    def __call__(self) -> TransformingProcessor:
        return TransformingProcessor(self.transformer_supplier(), self.processor_name)


@register
class TableTransformValues(UserProcessorNode):
    """A transform_values node: a user processor around a fresh transformer each micro-batch."""

    kind = NodeKind.TABLE_TRANSFORM_VALUES.value
    forwards_other_keys = False  # the key stays, and a transformer's punctuator cannot forward


def check_runs(factory, ctx) -> None:
    """Refuses, naming the processor, what the runner does not compare with Kafka Streams yet: a store
    of its own; a reader of its updates other than ``to_stream`` (a re-grouping reads old values, which
    Kafka Streams makes by calling the transformer on the old value too; a filter, map_values, join or
    suppression reads through its value getter, a transformer of its own); a DSL operation's store
    named; a table behind it that is windowed, suppressed or versioned."""
    where = f"processor {factory.name} (transform_values)"
    if factory.params.get("store_name") is not None:
        raise UnsupportedTopologyError(
            f"{where} keeps a store of its own ({factory.params['store_name']}, Materialized.as_); the Spark runner "
            "runs a transform_values without one only: its store, its record cache and the old values it sends "
            "are not compared with Kafka Streams yet")
    sub = ctx.subtopology
    for child in factory.children:
        reader = sub.node(child)
        if reader.kind is not NodeKind.TABLE_TO_STREAM:
            raise UnsupportedTopologyError(
                f"processor {reader.name} ({reader.kind.value}) reads the table of {where}; the Spark runner passes "
                "a transform_values' updates to to_stream only: a re-grouping (Kafka Streams calls the transformer "
                "on each update's old value too), a filter, map_values, transform_values, join or suppression of "
                "it are not compared with Kafka Streams yet")
    for store in factory.stores:
        if ctx.topology.state_stores[store].type not in _USER_STORES:
            raise UnsupportedTopologyError(
                f"{where} names the store {store} of a DSL operation; the Spark runner gives a transformer the "
                "stores added with add_state_store only")
    behind = table_behind(sub, factory)
    if behind.windowed_or_suppressed or reads_versioned_updates(ctx, factory.parents[0]):
        raise UnsupportedTopologyError(
            f"{where} transforms the updates of {behind.writer.name} ({behind.writer.kind.value}), a windowed, "
            "suppressed or versioned table; the Spark runner transforms a table that is neither only")


# The stores added with add_state_store (a DSL operation's are read through views a transformer does not get yet).
_USER_STORES = frozenset({StoreType.USER_KEY_VALUE, StoreType.USER_WINDOW, StoreType.USER_SESSION,
                          StoreType.USER_VERSIONED})


def build(factory, ctx) -> TableTransformValues:
    check_runs(factory, ctx)
    stores, _ = connected_stores(factory, ctx)
    return TableTransformValues(factory.name, TransformingSupplier(factory.params["supplier"], factory.name), stores,
                                fixed_key=True, child_names=list(factory.children))


BUILDERS = {NodeKind.TABLE_TRANSFORM_VALUES: build}
