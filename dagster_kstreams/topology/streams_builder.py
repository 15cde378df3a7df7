"""Entry point of the DSL: ``StreamsBuilder`` (Kafka Streams' ``StreamsBuilder``).

``stream()`` and ``table()`` start a :class:`~.kstream.KStream` or :class:`~.ktable.KTable`;
``build()`` writes the graph into the read-only :class:`~.view.Topology` the other layers consume.
Every method draws names in Kafka Streams' order (see :mod:`.abstract_stream`).
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Sequence, Union

from .abstract_stream import KTABLE_SOURCE_NAME, SOURCE_NAME, _or_generate, _parse, _suffix_or_generate
from .consumed_produced import Consumed
from .errors import TopologyException
from .global_ktable import GlobalKTable, GlobalTableSourceNode
from .graph import InternalStreamsBuilder, StreamSourceNode, TableSourceNode
from .kstream import KStream
from .ktable import KTable
from .materialized import Materialized
from .node_specs import KTableSourceSpec, NodeKind, StoreSpec, StoreType
from .optimization import optimize_topology, optimizations_of
from .processor_api import StateStoreNode, StoreBuilder
from .topology_config import TopologyConfig, apply_default_dsl_store
from .view import Topology

__all__ = ["StreamsBuilder"]


class StreamsBuilder:
    """Entry point of the DSL (Kafka Streams' ``StreamsBuilder``)."""

    def __init__(self, topology_config: Optional[TopologyConfig] = None) -> None:
        if topology_config is not None and not isinstance(topology_config, TopologyConfig):
            raise TypeError(f"StreamsBuilder takes a TopologyConfig, got {type(topology_config).__name__}")
        self._builder = InternalStreamsBuilder()
        self._topology = None
        self._config = topology_config or TopologyConfig()

    def stream(self, topics: Union[str, Sequence[str], "re.Pattern[str]"], consumed: Optional[Consumed] = None) -> KStream:
        consumed = consumed or Consumed()
        builder = self._builder
        pattern = None
        if isinstance(topics, re.Pattern):
            pattern, topic_list = topics.pattern, None
        elif isinstance(topics, str):
            topic_list = [topics]
        else:
            topic_list = list(topics)
            if not topic_list:
                raise TopologyException("topics cannot be empty")
        for topic in topic_list or []:
            if not isinstance(topic, str) or not topic:
                raise TypeError(f"stream(): a topic name must be a non-empty str, got {topic!r}")
        name = _or_generate(builder, consumed.processor_name, SOURCE_NAME)
        node = StreamSourceNode(name, topic_list, pattern, consumed)
        builder.add_graph_node(builder.root, node)
        return KStream(name, consumed.key_serde, consumed.value_serde, {name}, False, node, builder)

    def table(self, topic: str, *args) -> KTable:
        """``table(topic)``, ``table(topic, consumed)``, ``table(topic, materialized)``,
        ``table(topic, consumed, materialized)``."""
        consumed, materialized, key_serde, value_serde = self._table_arguments(topic, args, "table()")
        builder = self._builder
        queryable = materialized.store_name is not None
        store_name = materialized.store_name or builder.new_store_name(topic + "-")
        source_name = _suffix_or_generate(builder, consumed.processor_name, "-source", SOURCE_NAME)
        table_source_name = _or_generate(builder, consumed.processor_name, KTABLE_SOURCE_NAME)
        store = StoreSpec(store_name, StoreType.KEY_VALUE, materialized.logging_enabled, key_serde, value_serde,
                          queryable=queryable, caching=materialized.caching_enabled and not materialized.versioned,
                          history_retention_ms=materialized.history_retention_ms)
        spec = KTableSourceSpec(NodeKind.TABLE_SOURCE, {"topic": topic, "store_name": store_name}, store, queryable)
        node = TableSourceNode(table_source_name, source_name, topic, consumed, spec)
        node.output_versioned = materialized.versioned
        builder.add_graph_node(builder.root, node)
        return KTable(table_source_name, key_serde, value_serde, {source_name}, store_name if queryable else None,
                      node, builder, kind="source", source_spec=spec)

    def add_state_store(self, store_builder: StoreBuilder) -> "StreamsBuilder":
        """Add a store for processors of the Processor API to name (``KStream.process(supplier, name)``)."""
        if not isinstance(store_builder, StoreBuilder):
            raise TypeError(f"add_state_store expects a StoreBuilder (Stores.key_value_store_builder(...)), "
                            f"got {type(store_builder).__name__}")
        self._builder.add_graph_node(self._builder.root, StateStoreNode(store_builder.spec()))
        return self

    def global_table(self, topic: str, *args) -> GlobalKTable:
        """``global_table(topic)``, ``(topic, consumed)``, ``(topic, materialized)``,
        ``(topic, consumed, materialized)``: the whole topic as a table in every task that joins it
        (Kafka Streams' ``StreamsBuilder.globalTable``; names drawn as ``table()`` draws them; the
        store keeps no changelog, the topic itself is one)."""
        consumed, materialized, key_serde, value_serde = self._table_arguments(topic, args, "global_table()")
        builder = self._builder
        queryable = materialized.store_name is not None
        store_name = materialized.store_name or builder.new_store_name(topic + "-")
        source_name = _suffix_or_generate(builder, consumed.processor_name, "-source", SOURCE_NAME)
        table_source_name = _or_generate(builder, consumed.processor_name, KTABLE_SOURCE_NAME)
        store = StoreSpec(store_name, StoreType.KEY_VALUE, False, key_serde, value_serde,
                          queryable=queryable, caching=materialized.caching_enabled)
        node = GlobalTableSourceNode(table_source_name, source_name, topic, consumed, store)
        builder.add_graph_node(builder.root, node)
        return GlobalKTable(table_source_name, topic, store_name, key_serde, value_serde, queryable, builder)

    @staticmethod
    def _table_arguments(topic: str, args: tuple, operation: str) -> tuple[Consumed, Materialized, Any, Any]:
        """A table's ``(consumed, materialized)`` as ``table()`` and ``global_table()`` take them, and
        its serdes: the consumed ones first, else the materialized ones."""
        consumed, materialized = _parse(args, Consumed, Materialized, operation=operation)
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"{operation}: the topic name must be a non-empty str, got {topic!r}")
        if consumed is None:
            consumed = Consumed(materialized.key_serde if materialized else None,
                                materialized.value_serde if materialized else None)
        materialized = materialized or Materialized()
        return (consumed, materialized, consumed.key_serde or materialized.key_serde,
                consumed.value_serde or materialized.value_serde)

    def build(self, props: Optional[Mapping[str, Any]] = None) -> Topology:
        """Write the graph into a :class:`~dagster_kstreams.topology.view.Topology` (idempotent: a later
        call returns the first one's, and refuses other optimizations). ``props`` as Kafka Streams'
        ``build(Properties)``: its ``topology.optimization`` names the graph rewrites to apply (see
        :mod:`.optimization`)."""
        optimizations = optimizations_of(props)
        if self._topology is None:
            self._optimizations = optimizations
            self._topology = Topology(self._builder.build(lambda graph: optimize_topology(graph, optimizations)))
            apply_default_dsl_store(self._topology.state_stores.values(), self._config)
        elif optimizations != self._optimizations:
            raise TopologyException(
                f"this StreamsBuilder was built with topology.optimization {sorted(self._optimizations) or 'none'}; "
                f"building it again with {sorted(optimizations) or 'none'} would need a new StreamsBuilder")
        return self._topology
