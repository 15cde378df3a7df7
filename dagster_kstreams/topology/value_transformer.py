"""``KTable.transform_values``' user-facing side (Kafka Streams' ``ValueTransformerWithKey`` and
``KTableImpl.doTransformValues``): what a user writes the transformer with, and the table node it
makes, importable with no Spark and no broker.

A *supplier* is a no-argument callable returning a new :class:`ValueTransformerWithKey`, as Kafka
Streams' ``ValueTransformerWithKeySupplier.get``.
"""
from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

from .errors import TopologyException
from .graph import ProcessorGraphNode
from .materialized import Materialized
from .named import Named
from .node_specs import NodeKind, ProcessorSpec, StoreSpec, StoreType
from .store_suppliers import KeyValueBytesStoreSupplier

__all__ = ["ValueTransformerWithKey", "TransformValuesArguments", "transform_values_arguments",
           "transform_values_node", "KTABLE_TRANSFORMVALUES_NAME"]

KTABLE_TRANSFORMVALUES_NAME = "KTABLE-TRANSFORMVALUES-"


class ValueTransformerWithKey:
    """A table's value transformer (Kafka Streams' ``ValueTransformerWithKey``): ``transform(key,
    value)`` returns the new value of each table update, a tombstone's (``value`` None) too; it
    may read and write the stores named in ``transform_values``. :meth:`init` keeps the context by
    default; the context cannot forward (the returned value is forwarded)."""

    context = None

    def init(self, context) -> None:
        self.context = context

    def transform(self, read_only_key, value):
        raise NotImplementedError

    def close(self) -> None:
        pass


class TransformValuesArguments(NamedTuple):
    materialized: Optional[Materialized]
    named: Optional[Named]
    store_names: tuple


def transform_values_arguments(args: Sequence, operation: str) -> TransformValuesArguments:
    """Kafka Streams' overloads: ``([materialized,] [named,] *store_names)``, in that order."""
    args = list(args)
    materialized = args.pop(0) if args and isinstance(args[0], Materialized) else None
    if materialized is not None:
        materialized.check_supplier(KeyValueBytesStoreSupplier, operation)
    named = args.pop(0) if args and isinstance(args[0], Named) else None
    for store_name in args:
        if not isinstance(store_name, str) or not store_name:
            raise TypeError(f"{operation}: expected ([materialized,] [named,] *store_names); a state store name must "
                            f"be a non-empty str, got {store_name!r}")
    return TransformValuesArguments(materialized, named, tuple(args))


def _checked_supplier(supplier, operation: str):
    if not callable(supplier):
        raise TypeError(f"{operation}: the supplier must be a no-argument callable returning a ValueTransformerWithKey, "
                        f"got {type(supplier).__name__}")
    if supplier() is supplier():
        raise TopologyException(f"{operation}: the supplier returned the same ValueTransformerWithKey instance twice; "
                                "it must return a new one on every call (Kafka Streams' supplier contract)")
    return supplier


def transform_values_node(name: str, supplier, arguments: TransformValuesArguments, key_serde,
                          operation: str) -> ProcessorGraphNode:
    """The table node (``ProcessorToStateConnectorNode``): a store of its own when materialized with a
    name (``Materialized.with_`` alone neither makes one nor, unlike map_values, draws a store name),
    connected to the stores it names. ``store_name``: its own store (None: its values are the parent
    table's through the transformer)."""
    materialized = arguments.materialized
    stores, store_name = [], None
    if materialized is not None and materialized.store_name is not None:
        store_name = materialized.store_name
        stores.append(StoreSpec(store_name, StoreType.KEY_VALUE, materialized.logging_enabled, key_serde,
                                materialized.value_serde, queryable=True,
                                caching=materialized.caching_enabled and not materialized.versioned,
                                history_retention_ms=materialized.history_retention_ms))
    spec = ProcessorSpec(NodeKind.TABLE_TRANSFORM_VALUES,
                         {"supplier": _checked_supplier(supplier, operation), "store_name": store_name}, stores)
    node = ProcessorGraphNode(name, spec, arguments.store_names)
    if materialized is not None:  # maybeSetOutputVersioned
        node.output_versioned = materialized.versioned
    return node
