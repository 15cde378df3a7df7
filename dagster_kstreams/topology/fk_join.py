"""The foreign-key table-table join's graph (Kafka Streams' ``KTableImpl.doJoinOnForeignKey``).

``left.join(right, foreign_key_extractor, joiner)`` joins each row of ``left`` with the row of
``right`` whose key the extractor finds in it. The two tables are not co-partitioned, so the join
is three hops through two internal topics, as Kafka Streams builds it:

1. on ``left``'s task, a *subscription* (the left key, a murmur3 hash of the left value, the left
   partition and an instruction) is sent keyed by the foreign key to the subscription-registration
   topic (``KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-<n>-topic``), co-partitioned with ``right``;
2. on ``right``'s task, the subscription is kept in the subscription store (by foreign key, then
   left key) and answered with ``right``'s value; an update of ``right`` answers every subscriber
   of its key. Answers go to the subscription-response topic
   (``KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-<n>-topic``), to the left record's partition;
3. back on ``left``'s task, an answer whose hash is not the hash of ``left``'s current value is
   stale and dropped; otherwise the joiner's result (or a tombstone) is the joined table's value.

Every name is drawn from the shared counter in Kafka Streams' order, so ``describe()`` and the
topics' names come out as Kafka Streams'.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .abstract_stream import KTABLE_SOURCE_NAME, _materialized, _suffix_or_generate
from .consumed_produced import Consumed, Produced
from .graph import GraphNode, InternalStreamsBuilder, ProcessorGraphNode, StreamSinkNode, StreamSourceNode
from .joined import TableJoined
from .materialized import Materialized
from .node_specs import KTableSourceSpec, NodeKind, ProcessorSpec, StoreSpec, StoreType
from .serdes import Serdes

__all__ = ["ForeignKeyJoinSide", "ForeignKeyJoinResult", "TableJoinedPartitioner", "build_foreign_key_join",
           "TOPIC_SUFFIX", "SUBSCRIPTION_REGISTRATION", "SUBSCRIPTION_RESPONSE"]

# KTableImpl's own prefixes (its sources and sinks are KTABLE-, not KSTREAM-).
KTABLE_SINK_NAME = "KTABLE-SINK-"
FK_JOIN = "KTABLE-FK-JOIN-"
FK_JOIN_STATE_STORE_NAME = FK_JOIN + "SUBSCRIPTION-STATE-STORE-"
SUBSCRIPTION_REGISTRATION = FK_JOIN + "SUBSCRIPTION-REGISTRATION-"
SUBSCRIPTION_RESPONSE = FK_JOIN + "SUBSCRIPTION-RESPONSE-"
SUBSCRIPTION_PROCESSOR = FK_JOIN + "SUBSCRIPTION-PROCESSOR-"
SUBSCRIPTION_RESPONSE_RESOLVER_PROCESSOR = FK_JOIN + "SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-"
FK_JOIN_OUTPUT_NAME = FK_JOIN + "OUTPUT-"
TOPIC_SUFFIX = "-topic"
# The internal topics carry Kafka Streams' wrapper formats, which the join's processors write and
# read themselves (dagster_kstreams.processors.fk_join_wire); answers keep the left key's bytes.
_WIRE = Serdes.ByteArray()


@dataclass(frozen=True)
class TableJoinedPartitioner:
    """A sink partitioner of the join's internal topics, as ``KTableImpl`` wraps ``TableJoined``'s:
    the user's ``partitioner`` (None: Kafka's default) is called with a null value and must give at
    most one partition. ``answers``: the sink of the answers, whose key (the left key) reaches it
    serialized and is deserialized with ``key_serde`` (None: the default key serde) for the user;
    with no partitioner an answer goes back to the partition its subscription came from (Kafka
    Streams' default response partitioner). Invisible in ``describe()``, as in Kafka Streams."""

    partitioner: Any = None
    answers: bool = False
    key_serde: Any = None


@dataclass
class ForeignKeyJoinSide:
    """What the join needs of one table (the ``KTable`` is built by :mod:`.ktable`)."""

    node: GraphNode
    key_serde: Any
    value_serde: Any
    source_nodes: set
    value_getter_store_names: list


@dataclass
class ForeignKeyJoinResult:
    """The joined table's facts, for :class:`~.ktable.KTable` to wrap."""

    name: str
    node: GraphNode
    key_serde: Any
    value_serde: Any
    source_nodes: set
    queryable_store_name: str
    spec: KTableSourceSpec


def build_foreign_key_join(builder: InternalStreamsBuilder, left: ForeignKeyJoinSide, right: ForeignKeyJoinSide,
                           extractor, joiner, table_joined: Optional[TableJoined],
                           materialized: Optional[Materialized], left_join: bool) -> ForeignKeyJoinResult:
    """Add the join's nodes, stores and topics in Kafka Streams' order. The caller has already
    enabled sending old values on both tables and resolved their value getters' stores."""
    table_joined = table_joined or TableJoined()
    name = table_joined.name
    topology_builder = builder.topology_builder

    def named(suffix: str, prefix: str) -> str:
        return _suffix_or_generate(builder, name, suffix, prefix)

    registration_topic = named("-subscription-registration", SUBSCRIPTION_REGISTRATION) + TOPIC_SUFFIX
    topology_builder.add_internal_topic(registration_topic, None)
    common = {"join_type": "left" if left_join else "inner", "registration_topic": registration_topic,
              "left_table": left.node.name, "right_table": right.node.name,
              "left_key_serde": left.key_serde, "left_value_serde": left.value_serde,
              "foreign_key_serde": right.key_serde, "foreign_value_serde": right.value_serde}

    send = ProcessorGraphNode(named("-subscription-registration-processor", SUBSCRIPTION_REGISTRATION),
                              ProcessorSpec(NodeKind.FK_SUBSCRIPTION_SEND, {**common, "extractor": extractor}))
    builder.add_graph_node(left.node, send)
    registration_sink = StreamSinkNode(
        named("-subscription-registration-sink", KTABLE_SINK_NAME), registration_topic, None,
        Produced(right.key_serde, _WIRE, None if table_joined.other_partitioner is None
                 else TableJoinedPartitioner(table_joined.other_partitioner)))
    builder.add_graph_node(send, registration_sink)
    registration_source = StreamSourceNode(named("-subscription-registration-source", KTABLE_SOURCE_NAME),
                                           [registration_topic], None, Consumed(right.key_serde, _WIRE))
    builder.add_graph_node(registration_sink, registration_source)
    topology_builder.copartition_sources(right.source_nodes | {registration_source.name})

    store_name = named("-subscription-store", FK_JOIN_STATE_STORE_NAME)
    # One store object, owned by both processors that use it (as Kafka Streams' one store factory).
    store = StoreSpec(store_name, StoreType.KEY_VALUE, True, right.key_serde, None)
    common["subscription_store"] = store_name
    receive = ProcessorGraphNode(named("-subscription-receive", SUBSCRIPTION_PROCESSOR),
                                 ProcessorSpec(NodeKind.FK_SUBSCRIPTION_RECEIVE, dict(common), [store]))
    builder.add_graph_node(registration_source, receive)
    join_foreign = ProcessorGraphNode(
        named("-subscription-join-foreign", SUBSCRIPTION_PROCESSOR),
        ProcessorSpec(NodeKind.FK_SUBSCRIPTION_JOIN, {**common, "foreign_store_names": right.value_getter_store_names}),
        right.value_getter_store_names)
    builder.add_graph_node(receive, join_foreign)
    foreign_table_join = ProcessorGraphNode(named("-foreign-join-subscription", SUBSCRIPTION_PROCESSOR),
                                            ProcessorSpec(NodeKind.FK_FOREIGN_TABLE_JOIN, dict(common), [store]))
    builder.add_graph_node(right.node, foreign_table_join)

    response_topic = named("-subscription-response", SUBSCRIPTION_RESPONSE) + TOPIC_SUFFIX
    topology_builder.add_internal_topic(response_topic, None)
    common["response_topic"] = response_topic
    # No partitioner given: an answer goes to the partition its subscription came from.
    response_partitioner = TableJoinedPartitioner(table_joined.partitioner, answers=True, key_serde=left.key_serde)
    response_sink = StreamSinkNode(named("-subscription-response-sink", KTABLE_SINK_NAME), response_topic, None,
                                   Produced(_WIRE, _WIRE, response_partitioner))
    builder.add_graph_node([join_foreign, foreign_table_join], response_sink)
    response_source = StreamSourceNode(named("-subscription-response-source", KTABLE_SOURCE_NAME), [response_topic], None,
                                       Consumed(left.key_serde, _WIRE))
    builder.add_graph_node(response_sink, response_source)
    result_sources = left.source_nodes | {response_source.name}
    topology_builder.copartition_sources(result_sources)

    resolver = ProcessorGraphNode(
        named("-subscription-response-resolver", SUBSCRIPTION_RESPONSE_RESOLVER_PROCESSOR),
        ProcessorSpec(NodeKind.FK_RESPONSE_JOIN, {**common, "joiner": joiner,
                                                  "left_store_names": left.value_getter_store_names}),
        left.value_getter_store_names)
    builder.add_graph_node(response_source, resolver)

    result_name = named("-result", FK_JOIN_OUTPUT_NAME)
    materialized, result_store_name, queryable = _materialized(materialized, builder, FK_JOIN_OUTPUT_NAME)
    key_serde = materialized.key_serde or left.key_serde
    value_serde = materialized.value_serde
    result_store = StoreSpec(result_store_name, StoreType.KEY_VALUE, materialized.logging_enabled, key_serde,
                             value_serde, queryable=queryable,
                             caching=materialized.caching_enabled and not materialized.versioned,
                             history_retention_ms=materialized.history_retention_ms)
    # A KTableSource: its store exists only if named or read downstream (materialized lazily).
    spec = KTableSourceSpec(NodeKind.FK_JOIN_RESULT, {"store_name": result_store_name}, result_store, queryable)
    result = ProcessorGraphNode(result_name, spec)
    builder.add_graph_node(resolver, result)
    # Kafka Streams gives the joined table its store's name as queryable name, named or not.
    return ForeignKeyJoinResult(result_name, result, key_serde, value_serde, result_sources, result_store_name, spec)
