"""Global tables: ``GlobalKTable`` (what ``StreamsBuilder.global_table`` returns) and the
stream-global-table join (``KStream.join/left_join(global_table, key_selector, joiner[, named])``),
as Kafka Streams' ``GlobalKTableImpl`` and ``KStreamImpl.globalTableJoin`` build them.

A global table is its own group of nodes (source and table source with the store), described as
"Sub-topology: N for global store (will not generate tasks)": no task runs it. Every task of a
sub-topology that joins it reads the whole topic (all partitions); the join node itself is
connected to no store (``stores: []``), and its parameters name the global topic and store so
that the runner and the Dagster assets find them.
"""
from __future__ import annotations

from typing import Optional

from .abstract_stream import LEFTJOIN_NAME, _name_of, _or_generate
from .errors import TopologyException
from .functions import FunctionForm as F
from .functions import UserFunction
from .graph import GraphNode, ProcessorGraphNode, _consumed_serdes
from .named import Named
from .node_specs import NodeKind, ProcessorSpec, StoreSpec

__all__ = ["GlobalKTable", "GlobalTableSourceNode", "add_global_table_join"]


class GlobalTableSourceNode(GraphNode):
    """The global store: a source of the topic and the table source that owns the store
    (Kafka Streams' ``TableSourceNode`` with ``isGlobalKTable``, written by ``addGlobalStore``)."""

    def __init__(self, node_name: str, source_name: str, topic: str, consumed, store: StoreSpec):
        super().__init__(node_name)
        self.source_name, self.topic, self.consumed, self.store = source_name, topic, consumed, store

    def write(self, builder):
        spec = ProcessorSpec(NodeKind.GLOBAL_TABLE_SOURCE, {"topic": self.topic, "store_name": self.store.name},
                             [self.store])
        builder.add_global_store(self.source_name, self.name, self.topic, spec, _consumed_serdes(self.consumed))


class GlobalKTable:
    """A table replicated whole to every task (Kafka Streams' ``GlobalKTable``): only a stream can
    join it (``KStream.join``/``left_join`` with a key selector)."""

    def __init__(self, name: str, topic: str, store_name: str, key_serde, value_serde, queryable: bool,
                 builder):
        self.name = name
        self.topic = topic
        self._store_name = store_name
        self.key_serde, self.value_serde = key_serde, value_serde
        self._queryable = queryable
        self._builder = builder

    def queryable_store_name(self) -> Optional[str]:
        """The store's name when ``Materialized.as_`` named it (Kafka Streams' rule), else None."""
        return self._store_name if self._queryable else None

    def __repr__(self) -> str:
        return f"GlobalKTable({self.topic!r}, store={self._store_name!r})"


def add_global_table_join(stream, table: GlobalKTable, key_selector, joiner, named: Optional[Named],
                          left: bool, operation: str):
    """``KStreamImpl.globalTableJoin``: one processor after the stream, no repartition (the table is
    whole in every task), the stream's key and repartition flag kept. Returns the joined stream."""
    if table._builder is not stream._builder:
        raise TopologyException("cannot join streams/tables from different StreamsBuilders")
    if key_selector is None or joiner is None:
        raise TypeError(f"{operation}: the key selector and the joiner must not be None")
    if named is not None and not isinstance(named, Named):
        raise TypeError(f"{operation}: the fourth argument must be a Named, got {type(named).__name__}")
    selector = UserFunction.of(key_selector, [F.KEY_VALUE], f"{operation} key selector")
    fn = UserFunction.of(joiner, [F.VALUE_VALUE, F.KEY_VALUE_VALUE], operation)
    # Kafka Streams names an inner global join KSTREAM-LEFTJOIN- too (KStreamImpl.globalTableJoin).
    name = _or_generate(stream._builder, _name_of(named), LEFTJOIN_NAME)
    spec = ProcessorSpec(NodeKind.STREAM_GLOBAL_TABLE_JOIN, {
        "key_selector": selector, "joiner": fn, "join_type": "left" if left else "inner",
        "global_topic": table.topic, "global_store_name": table._store_name,
        "global_key_serde": table.key_serde, "global_value_serde": table.value_serde})
    node = ProcessorGraphNode(name, spec)
    stream._builder.add_graph_node(stream._node, node)
    return stream._child(name, stream.key_serde, None, stream.repartition_required, node)
