"""Records forwarded under another key than the record being processed: which state they go on with.

A windowed table forwards windowed keys; a suppression's buffer forwards the evicted records of any
key, and a user processor's punctuators records of any key, while one key's record is processed.
Kafka Streams' stores downstream are keyed by the forwarded record's own key, so a count after them
counts that key (each window of it), a table join reads that key's row, and a stream-stream join
buffers the record under that key and pairs it with the other side's records of that key. Here a downstream store
keeps its values in a slot of a key's group (:mod:`.state`): such a record must go on with the group
of *its own* key, found in the task's state (:mod:`.task_state`), as a stream-stream join finds the
group of each pending record it emits.

A forwarded key's group is kept under what :func:`group_key` gives: its bytes in the program's group
key serde (the group a record of that key read from a source has), or, for a windowed key,
``(its key's bytes, window start, window end)``: one group per window, which holds only the slots of
the stores downstream of the windowed table (the source keys' groups hold those upstream of it).

This needs the task-grouped mode: a sub-topology with one of these forwarders and a processor that
reads or writes a key's state downstream of it in the sub-topology runs task-grouped (a suppression
and a user processor always do; a windowed aggregation then does too). Downstream of a forwarder
with nothing but stateless steps after it, the record goes on with the group it came with (its
group is never read: nothing is looked up for it).
"""

from __future__ import annotations

from typing import Any, Optional

from dagster_kstreams.processors.base import Processor
from dagster_kstreams.processors.fused_chains import fusable
from dagster_kstreams.processors.stateless import Branch, Sink, TableFilter, TableMapValues, TableToStream
from dagster_kstreams.topology.serdes import Window, Windowed

__all__ = ["group_key", "key_of_group", "reads_state_downstream", "own_group"]

# Besides the fusable record operations: processors that read no key's state (exact classes: a
# subclass, such as the filter that reads old values, may).
_PASS_ON = (Sink, Branch, TableFilter, TableMapValues, TableToStream)


def group_key(program, key) -> Any:
    """What the task's state keeps the group of ``key`` under (see the module docstring)."""
    if key is None:
        return None
    serialize = program.group_key_serde.serialize
    if isinstance(key, Windowed):
        return (serialize(key.key), key.window.start, key.window.end)
    return serialize(key)


def key_of_group(stored_key, key_serde) -> Any:
    """The key a group kept under ``stored_key`` (:func:`group_key`) is for, ``key_serde`` reading
    its bytes (``read_store``)."""
    if isinstance(stored_key, tuple):
        raw_key, start, end = stored_key
        return Windowed(key_serde.deserialize(raw_key), Window(start, end))
    return key_serde.deserialize(stored_key)


def reads_state_downstream(program, processor: Processor) -> bool:
    """Whether a processor reachable from ``processor``'s children in ``program`` reads or writes a
    key's state (anything but stateless record and table steps)."""
    todo, seen = list(processor.children), set()
    while todo:
        index = todo.pop()
        if index in seen:
            continue
        seen.add(index)
        node = program.nodes[index]
        if not (fusable(node) or type(node) in _PASS_ON):
            return True
        todo.extend(node.children)
    return False


def own_group(processor: Processor, key, state) -> Optional[Any]:
    """The group a record forwarded now under ``key`` by ``processor`` goes on with: ``key``'s own
    in the task's state when the processor regroups (:attr:`regroups`, set by the program), else
    ``state`` (the group of the record being processed)."""
    if not processor.regroups or state is None or state.task is None:
        return state
    return state.task.group(group_key(processor.program, key))
