"""How many partitions each topic of a topology has: Kafka Streams' ``RepartitionTopics`` (a
repartition topic takes the largest count among the source topics of the sub-topologies writing
it, unless ``Repartitioned`` set one) and ``CopartitionedTopicsEnforcer`` (joined inputs must have
the same count; repartition topics among them follow the external topics). Pure functions over a
:class:`~dagster_kstreams.topology.view.Topology`'s sub-topologies and groups."""

from __future__ import annotations

import re
from typing import Iterable, Mapping, Optional, Sequence

from .errors import TopologyException

__all__ = ["CopartitionError", "partition_counts", "pattern_subscriptions"]


class CopartitionError(TopologyException):
    """Joined inputs are not co-partitioned."""


def pattern_subscriptions(subtopology, topics: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """For each source node of ``subtopology`` subscribed by a pattern, the topics among ``topics``
    whose whole name its pattern matches (sorted), as Kafka Streams' ``SourceNode`` pattern matches a
    topic's whole name. KeyError naming the pattern and the sub-topology if it matches none: a task
    needs at least one partition to read."""
    topics = sorted(set(topics))
    matched = {}
    for node in subtopology.nodes:
        if node.pattern is None:
            continue
        regex = re.compile(node.pattern)
        matched[node.name] = tuple(topic for topic in topics if regex.fullmatch(topic))
        if not matched[node.name]:
            raise KeyError(f"no topic among {topics} matches the source pattern {node.pattern!r} of "
                           f"sub-topology {subtopology.id}")
    return matched


def _subscribed(subtopology, counts: Mapping[str, int]) -> list[str]:
    return [topic for topics in pattern_subscriptions(subtopology, counts).values() for topic in topics]


def _external_counts(subtopology, counts: Mapping[str, int]) -> dict[str, int]:
    result = {}
    for topic in subtopology.external_source_topics:
        if topic not in counts:
            raise KeyError(
                f"no partition count given for source topic {topic!r} (sub-topology {subtopology.id}); "
                f"given: {sorted(counts)}")
        count = counts[topic]
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ValueError(f"partition count of topic {topic!r} must be a positive int, got {count!r}")
        result[topic] = count
    result.update({topic: counts[topic] for topic in _subscribed(subtopology, counts)})
    return result


def partition_counts(subtopologies: Sequence, repartition_topics: Mapping[str, Optional[int]],
                     copartition_groups: Sequence[Sequence[str]], source_partition_counts: Mapping[str, int]) -> dict[str, int]:
    """Partitions of every topic read by the topology's ``subtopologies``, repartition topics
    included. ``repartition_topics``: name -> the count set for it (``Repartitioned``), or None."""
    counts: dict[str, int] = {}
    for subtopology in subtopologies:
        counts.update(_external_counts(subtopology, source_partition_counts))
    enforced = {topic: n for topic, n in repartition_topics.items() if n is not None}
    counts.update(enforced)
    # Kafka Streams' RepartitionTopics: a repartition topic gets the largest known partition
    # count among the source topics of the sub-topologies writing it; repeat until all are set.
    while True:
        needed = progressed = False
        for subtopology in subtopologies:
            for topic in subtopology.repartition_source_topics:
                if topic in counts:
                    continue
                candidate = None
                for writer in subtopologies:
                    if topic not in writer.repartition_sink_topics:
                        continue
                    inputs = [*writer.source_topic_names, *_subscribed(writer, source_partition_counts)]
                    for upstream in inputs:
                        if upstream in counts and (candidate is None or counts[upstream] > candidate):
                            candidate = counts[upstream]
                if candidate is None:
                    needed = True
                else:
                    counts[topic] = candidate
                    progressed = True
        if not needed:
            break
        if not progressed:
            missing = sorted(t for t in repartition_topics if t not in counts)
            raise TopologyException(f"cannot compute the partition count of repartition topics {missing}")
    _enforce_copartitioning(copartition_groups, repartition_topics, counts, enforced)
    return counts


def _enforce_copartitioning(copartition_groups: Sequence[Sequence[str]], repartition_topics: Mapping[str, Optional[int]],
                            counts: dict[str, int], enforced: Mapping[str, int]) -> None:
    """Kafka Streams' ``CopartitionedTopicsEnforcer``, over groups that share a topic taken as
    one, as ``InternalTopologyBuilder.copartitionGroups()`` closes them: two joins that share an
    input make one group (and a join of a join's result holds every source topic upstream of
    either side anyway)."""
    for group in _connected(copartition_groups):
        repartition = [t for t in group if t in repartition_topics]
        external = {t: counts[t] for t in group if t not in repartition_topics}
        if not external:
            fixed = {t: enforced[t] for t in repartition if t in enforced}
            if fixed and len(set(fixed.values())) > 1:
                detail = ", ".join(f"{t}={n}" for t, n in sorted(fixed.items()))
                raise CopartitionError(f"Following topics do not have the same number of partitions: [{{{detail}}}]")
            target = next(iter(fixed.values())) if fixed else max(counts[t] for t in repartition)
        else:
            if len(set(external.values())) > 1:
                ordered = sorted(external.items())
                detail = ", ".join(f"{t}={n}" for t, n in ordered)
                pairs = "; ".join(
                    f"topic {a!r} has {na} partitions but topic {b!r} has {nb}"
                    for (a, na), (b, nb) in zip(ordered, ordered[1:]) if na != nb)
                raise CopartitionError(
                    f"Topics not co-partitioned: [{{{detail}}}]: {pairs}; joined inputs must have the same "
                    f"number of partitions")
            target = next(iter(external.values()))
        for topic in repartition:
            if topic not in enforced:
                counts[topic] = target
            elif counts[topic] != target:
                raise CopartitionError(
                    f"Number of partitions [{counts[topic]}] of repartition topic [{topic}] doesn't match "
                    f"number of partitions [{target}] of the source topic.")


def _connected(groups) -> list[list[str]]:
    """``groups`` of topics, those sharing a topic merged (in the order first seen)."""
    merged: list[list[str]] = []
    for group in groups:
        topics = list(dict.fromkeys(group))
        for other in [m for m in merged if set(m) & set(topics)]:
            merged.remove(other)
            topics = list(dict.fromkeys([*other, *topics]))
        merged.append(topics)
    return merged
