"""The ``filter``/``map_values`` of a ``transform_values`` without a store of its own that the runner runs:
ones without a store of their own either, whose updates go, through more of them, to ``to_stream`` or a
re-grouping only. Pure topology facts: no processor is built here.

Such a step takes the transform_values' updates as they come, and the old value of each, where it reads
one (a filter sending old values drops an update neither value passes; a re-grouping after it subtracts
the old value), is the one the transform_values sends (Kafka Streams' ``KTableTransformValuesProcessor``
with ``sendOldValues``: its transformer's result on the old value behind it, which it leaves under its
name, :class:`~.table_old_values.SentOldValue`), through the steps between. A reader of a step's value
getter (a join: a transformer of its own on the table behind), or of a store of the step's own, is not
compared with Kafka Streams yet, and stays refused naming the step's reader (README, "Refused when defined,
and why").
"""

from __future__ import annotations

from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["passes_updates_only", "STEPS"]

# The steps admitted after a transform_values without a store (KTableFilter, KTableMapValues).
STEPS = frozenset({NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES})
# What reads the updates at the end of those steps: the stream of them, a re-grouping (by their old values).
_END_READERS = frozenset({NodeKind.TABLE_TO_STREAM, NodeKind.TABLE_GROUP_BY_MAP})


def passes_updates_only(sub, reader) -> bool:
    """Whether ``reader``, a child of a transform_values without a store, is a filter/map_values without a
    store of its own whose updates reach, through more of them, only ``to_stream`` and re-groupings."""
    stack = [reader]
    while stack:
        node = stack.pop()
        if node.kind in _END_READERS and node is not reader:
            continue
        if node.kind not in STEPS or node.stores:
            return False
        stack.extend(sub.node(child) for child in node.children)
    return True
