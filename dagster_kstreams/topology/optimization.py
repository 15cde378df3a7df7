"""``topology.optimization``: which of Kafka Streams' graph rewrites ``StreamsBuilder.build(props)``
applies (``StreamsConfig.verifyTopologyOptimizationConfigs``), and applying them in Kafka Streams' order
(``InternalStreamsBuilder.optimizeTopology``)."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from .errors import TopologyException
from .graph import InternalStreamsBuilder
from .ktable_source_reuse import reuse_ktable_source_topics
from .repartition_merge import RepartitionTopicMerge
from .self_join import rewrite_single_store_self_joins
from .streams_config import StreamsConfig

__all__ = ["optimizations_of", "optimize_topology"]

_EACH = (StreamsConfig.REUSE_KTABLE_SOURCE_TOPICS, StreamsConfig.MERGE_REPARTITION_TOPICS,
         StreamsConfig.SINGLE_STORE_SELF_JOIN)


def optimizations_of(props: Optional[Mapping[str, Any]]) -> frozenset[str]:
    """The rewrites ``props["topology.optimization"]`` names: ``"all"``, ``"none"`` (the default) or a
    comma-separated list of the single ones; anything else is refused naming the setting, as Kafka
    Streams' ``ConfigException`` does."""
    setting = StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG
    value = (props or {}).get(setting, StreamsConfig.NO_OPTIMIZATION)
    if not isinstance(value, str):
        raise TopologyException(f"Invalid value {value!r} for configuration {setting}: expected a string")
    names = [name.strip() for name in value.split(",")]
    while len(names) > 1 and not names[-1]:  # Java's split drops trailing empty strings
        names.pop()
    if names == [StreamsConfig.OPTIMIZE]:
        return frozenset(_EACH)
    if names == [StreamsConfig.NO_OPTIMIZATION]:
        return frozenset()
    unknown = [name for name in names if name not in _EACH]
    if unknown:
        raise TopologyException(
            f"Invalid value {value!r} for configuration {setting}: {', '.join(repr(name) for name in unknown)} "
            f"is not {StreamsConfig.OPTIMIZE!r}, {StreamsConfig.NO_OPTIMIZATION!r} or one of {', '.join(_EACH)} "
            f"(a comma-separated list)")
    return frozenset(names)


def optimize_topology(graph: InternalStreamsBuilder, optimizations: frozenset[str]) -> None:
    """Rewrite ``graph`` in place (its duplicate sources already merged) by ``optimizations``, in Kafka
    Streams' order: the source-topic reuse, the repartition merge, the single-store self-join."""
    if StreamsConfig.REUSE_KTABLE_SOURCE_TOPICS in optimizations:
        reuse_ktable_source_topics(graph)
    if StreamsConfig.MERGE_REPARTITION_TOPICS in optimizations:
        RepartitionTopicMerge(graph).apply()
    if StreamsConfig.SINGLE_STORE_SELF_JOIN in optimizations:
        rewrite_single_store_self_joins(graph.root)
