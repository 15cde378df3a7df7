"""``topology.optimization=single.store.self.join`` (Kafka Streams'
``InternalStreamsBuilder.rewriteSingleStoreSelfJoin``): a stream-stream join whose two sides are one
graph node (``s.join(s, ...)``, or two ``stream()`` calls on the same topics, merged into one source
first) becomes one ``KStreamKStreamSelfJoin`` processor, named as the join's merge, reading the left
window store only; the right side's windowed node is removed, with its store.

Kafka Streams 4.3.1 looks at nothing else: a join with a processor between the stream and either
side has two parents and is left alone, but a left or outer self-join and one with asymmetric
windows are rewritten as well (into the inner self-join), and so are they here.
"""
from __future__ import annotations

from .errors import TopologyException
from .graph import GraphNode, ProcessorGraphNode, StreamStreamJoinNode
from .node_specs import NodeKind

__all__ = ["rewrite_single_store_self_joins"]


def rewrite_single_store_self_joins(root: GraphNode) -> None:
    """Mark every stream-stream join below ``root`` with one parent as a self-join and remove its right
    windowed node from that parent, as Kafka Streams does, in its depth-first order (an iterative walk:
    deep topologies must not hit Python's recursion limit)."""
    visited: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, StreamStreamJoinNode) and len(node.parents) == 1:
            _rewrite(node)
        stack.extend(reversed(node.children))


def _rewrite(join_node: StreamStreamJoinNode) -> None:
    parent = join_node.parents[0]
    left = right = None
    for child in parent.children:
        if not (isinstance(child, ProcessorGraphNode) and child.spec.kind == NodeKind.JOIN_WINDOW
                and child.build_priority < join_node.build_priority):
            continue
        if child.name == join_node.this_windowed_name:
            left = child
        elif child.name == join_node.other_windowed_name:
            right = child
    if left is None or right is None or left.build_priority >= right.build_priority:
        raise TopologyException(f"Expected the left node {left} to have smaller build priority than the right node "
                                f"{right}, rewriting the self-join {join_node.name}.")
    parent.remove_child(right)
    join_node.self_join = True
