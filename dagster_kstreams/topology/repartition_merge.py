"""``merge.repartition.topics``: one repartition topic per key-changing operation (Kafka Streams'
``InternalStreamsBuilder.mergeRepartitionTopics``).

Without it, a stream re-keyed once and then grouped or joined several times writes one repartition
topic per grouping or join, each with the same records. With it, the graph is rewritten before it is
written: every optimizable repartition node below one key-changing node (``select_key``, ``map``,
``flat_map``, ``group_by``'s key selector) is replaced by one new repartition node straight under the
key changer, which all the former repartition nodes' downstream operations then read. What lay
between the key changer and a repartition node (a filter, a peek) moves below the merged topic.

Kafka Streams' rules, kept here because they decide ``describe()``:

* only repartition nodes of grouping and joins are merged (``repartition()`` and ``KTable.group_by``'s
  are not: they are not optimizable), and only where the nearest key- or value-changing ancestor is the
  key changer itself: a ``map_values`` between them keeps that grouping's own topic;
* the merged topic takes the name of the first repartition node (in the order they were added), a
  user's ``Grouped`` name or a generated one, so differently named ``Grouped``\\ s end up on the first
  name; its key and value serdes are the first ones set among them;
* the merged node's sink, filter and source are named ``<topic>-sink``, ``-filter``, ``-source``;
* a merge node (``KStream.merge``) over key changers whose repartition nodes all lie below it takes
  their place as the key changer;
* co-partition groups naming a replaced repartition source name the merged one instead.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from .abstract_stream import _create_repartitioned_source
from .errors import TopologyException
from .graph import GraphNode, InternalStreamsBuilder, RepartitionNode

__all__ = ["RepartitionTopicMerge"]


def find_ancestor(start: GraphNode, matches: Callable[[GraphNode], bool]) -> Optional[GraphNode]:
    """The first of ``start`` and its ancestors that ``matches``, depth first through the parents in
    order (``InternalStreamsBuilder.findParentNodeMatching``: which one is first decides the merge)."""
    if matches(start):
        return start
    for parent in start.parents:
        if matches(parent):
            return parent
        found = find_ancestor(parent, matches)
        if found is not None:
            return found
    return None


def _is_optimizable(node: GraphNode) -> bool:
    return isinstance(node, RepartitionNode) and node.optimizable and not node.changes


def _unique(nodes: Iterable[GraphNode]) -> list[GraphNode]:
    """First occurrences, in order (a node is added again for each of its parents, and a named
    ``Grouped``'s repartition node once per aggregation)."""
    return list({id(node): node for node in nodes}.values())


class RepartitionTopicMerge:
    """Rewrites ``builder``'s graph in place; :meth:`apply` once, before the graph is written."""

    def __init__(self, builder: InternalStreamsBuilder):
        self.builder = builder

    def apply(self) -> None:
        for key_changer, repartitions in self._repartitions_by_key_changer().items():
            if repartitions:
                self._merge(key_changer, repartitions)

    # -- which repartition nodes share a key changer --------------------------------------
    def _repartitions_by_key_changer(self) -> dict[GraphNode, list[RepartitionNode]]:
        """Key changer -> its optimizable repartition nodes, both in the order they were added (as
        ``keyChangingOperationsToOptimizableRepartitionNodes``), merge nodes folded in."""
        added = _unique(self.builder.added_nodes)
        groups: dict[GraphNode, list[RepartitionNode]] = {}
        for node in added:
            if node.key_changing:
                groups[node] = []
            elif _is_optimizable(node):
                key_changer = self._key_changing_parent(node)
                if key_changer is not None and node not in groups[key_changer]:
                    groups[key_changer].append(node)
        merge_nodes = [node for node in added if node.merge_node and not node.key_changing]
        return self._fold_merge_nodes(groups, merge_nodes)

    @staticmethod
    def _key_changing_parent(repartition: GraphNode) -> Optional[GraphNode]:
        """The nearest key changer, unless a value changer is nearer (``getKeyChangingParentNode``)."""
        nearest_changer = find_ancestor(repartition, lambda n: n.key_changing or n.value_changing)
        key_changer = find_ancestor(repartition, lambda n: n.key_changing)
        return key_changer if nearest_changer is not None and nearest_changer is key_changer else None

    @staticmethod
    def _fold_merge_nodes(groups: dict[GraphNode, list[RepartitionNode]],
                          merge_nodes: list[GraphNode]) -> dict[GraphNode, list[RepartitionNode]]:
        """``maybeUpdateKeyChangingRepartitionNodeMap``: a merge node under key changers whose
        repartition nodes all lie below it becomes their key changer (added after the others)."""
        merged_key_changers: dict[GraphNode, list[GraphNode]] = {}
        for merge_node in merge_nodes:
            merged_key_changers[merge_node] = []
            for key_changer, repartitions in groups.items():
                below_merge = all(find_ancestor(node, lambda n: merge_node in n.parents) is not None
                                  for node in repartitions)
                if below_merge and find_ancestor(merge_node, lambda n: key_changer in n.parents) is not None:
                    merged_key_changers[merge_node].append(key_changer)
        folded = dict(groups)
        replaced: list[GraphNode] = []
        for merge_node, key_changers in merged_key_changers.items():
            folded[merge_node] = _unique(node for key_changer in key_changers for node in groups[key_changer])
            replaced.extend(key_changers)
        for key_changer in replaced:
            folded.pop(key_changer, None)
        return folded

    # -- the rewrite ----------------------------------------------------------------------
    def _merge(self, key_changer: GraphNode, repartitions: list[RepartitionNode]) -> None:
        topic = repartitions[0].topic
        key_serde = next((node.key_serde for node in repartitions if node.key_serde is not None), None)
        value_serde = next((node.value_serde for node in repartitions if node.value_serde is not None), None)
        # the merged topic's name counts as the user's: its nodes are named after it, not generated
        merged = _create_repartitioned_source(self.builder, key_serde, value_serde, topic)
        merged.build_priority = key_changer.build_priority
        for replaced in repartitions:
            child_of_key_changer = find_ancestor(replaced, lambda n: key_changer in n.parents)
            if child_of_key_changer is None:
                raise TopologyException(f"Found a null keyChangingChild node for {replaced}")
            merged.add_child(child_of_key_changer)
            key_changer.remove_child(child_of_key_changer)
            for downstream in list(replaced.children):
                for parent in list(replaced.parents):
                    parent.add_child(downstream)
            for parent in list(replaced.parents):
                parent.remove_child(replaced)
            for downstream in list(replaced.children):
                replaced.remove_child(downstream)
            self.builder.topology_builder.rename_copartition_source(replaced.source_name, merged.source_name)
        key_changer.add_child(merged)
