"""Whether a time or sliding windowed aggregation may read the task's stream time: the check, at
definition time, that the task's stream time is, at every record reaching the aggregation, the
processor's own (Kafka Streams keeps it in the processor, of the records that reach it). Where it
is not, the aggregation is built with its own clocks (:mod:`.own_stream_time`)."""

from __future__ import annotations

from dagster_kstreams.processors.base import reachable
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.windows import SlidingWindows

__all__ = ["reads_task_stream_time"]

# Between the source and a windowed aggregation in one sub-topology, only processors that pass
# every record on with its key (and value nullness: all but map_values) unchanged.
_PASS_ALL_KINDS = {NodeKind.SOURCE, NodeKind.MERGE, NodeKind.PEEK, NodeKind.PRINT}
_PASS_KEYS_KINDS = _PASS_ALL_KINDS | {NodeKind.MAP_VALUES}


def reads_task_stream_time(sub, factory) -> bool:
    """Whether the task's stream time is, at every record reaching the time or sliding windowed
    aggregation ``factory`` of sub-topology ``sub``, the processor's own (Kafka Streams'): every
    source reaches it through processors that pass each record on with its key (sliding windows:
    and its value) null or not as at the source, and, for sliding windows, which skip null values,
    no other windowed processor or join of the sub-topology counts them."""
    sliding = isinstance(factory.params["windows"], SlidingWindows)
    allowed = _PASS_ALL_KINDS if sliding else _PASS_KEYS_KINDS
    ancestors = list(reachable(sub, factory.parents, lambda node: node.parents))
    if any(node.kind not in allowed for node in ancestors):
        return False
    names = {node.name for node in ancestors}
    if any(node.kind is NodeKind.SOURCE and node.name not in names for node in sub.nodes):
        return False
    return not sliding or not any(node.name != factory.name and (
        node.kind in (NodeKind.JOIN_WINDOW, NodeKind.STREAM_STREAM_JOIN)
        or (node.kind is NodeKind.WINDOWED_AGGREGATE and not isinstance(node.params["windows"], SlidingWindows)))
        for node in sub.nodes)
