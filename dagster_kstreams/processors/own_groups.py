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
``(its key's bytes, window start)``: one group per window start, which holds only the slots of the
stores downstream of the windowed table (the source keys' groups hold those upstream of it). That is
Kafka Streams' entry in such a store: its time-windowed serde writes the key and the window's start,
so windows of one start and different sizes (a join of 1 s and 500 ms windows) share it. A session
window's serde writes its end too: in a sub-topology with session windows, a windowed key's group is
``(its key's bytes, window start, window end)`` (:class:`WindowKeys`, decided when the program is
built: :func:`window_keys`). Where the sources themselves read windowed keys (a windowed table's
output topic), a window's group is a source record's: its whole key's bytes in that windowed serde.

This needs the task-grouped mode: a sub-topology with one of these forwarders and a processor that
reads or writes a key's state downstream of it in the sub-topology runs task-grouped (a suppression
and a user processor always do; a windowed aggregation then does too). Downstream of a forwarder
with nothing but stateless steps after it, the record goes on with the group it came with (its
group is never read: nothing is looked up for it).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional

from dagster_kstreams.processors.base import Processor
from dagster_kstreams.processors.fused_chains import fusable
from dagster_kstreams.processors.stateless import Branch, Sink
from dagster_kstreams.processors.table_steps import TableFilter, TableMapValues, TableToStream
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.serdes import Window, Windowed, WindowedSerde
from dagster_kstreams.topology.windows import SessionWindows

__all__ = ["WindowKeys", "window_keys", "windows_keyed_by_start", "group_key", "key_of_group",
           "reads_state_downstream", "own_group"]


@dataclasses.dataclass(frozen=True)
class WindowKeys:
    """How a program keeps windowed keys' groups: ``by_start``, by the key and the window's start
    (else with the window's end too); ``sizes``, each store's windowed serde's window size, which gives
    a window read back by its start its end (``read_store``), as Kafka Streams' serde reads it."""

    by_start: bool = False
    sizes: Mapping[str, int] = dataclasses.field(default_factory=dict)


def windows_keyed_by_start(sub) -> bool:
    """Whether sub-topology ``sub`` keeps windowed keys' groups by their start: it has no session
    windows (whose serde writes the window's end too)."""
    return not any(node.kind is NodeKind.WINDOWED_AGGREGATE and isinstance(node.params.get("windows"), SessionWindows)
                   for node in sub.nodes)


def window_keys(sub) -> WindowKeys:
    """The :class:`WindowKeys` of sub-topology ``sub``."""
    sizes = {store.name: store.key_serde.window_size_ms for store in sub.state_stores
             if isinstance(store.key_serde, WindowedSerde) and store.key_serde.window_size_ms is not None}
    return WindowKeys(windows_keyed_by_start(sub), sizes)

# Besides the fusable record operations: processors that read no key's state (exact classes: a
# subclass, such as the filter that reads old values, may).
_PASS_ON = (Sink, Branch, TableFilter, TableMapValues, TableToStream)


def group_key(program, key) -> Any:
    """What the task's state keeps the group of ``key`` under (see the module docstring)."""
    if key is None:
        return None
    serde = program.group_key_serde
    serialize = serde.serialize
    # A window forwarded in a sub-topology whose sources read windowed keys (a windowed table's output
    # topic) goes on with the group a source record of that key has: its whole key's bytes.
    if isinstance(key, Windowed) and not isinstance(serde, WindowedSerde):
        if program.window_keys.by_start:
            return (serialize(key.key), key.window.start)
        return (serialize(key.key), key.window.start, key.window.end)
    return serialize(key)


def key_of_group(stored_key, key_serde, window_size: Optional[int] = None) -> Any:
    """The key a group kept under ``stored_key`` (:func:`group_key`) is for, ``key_serde`` reading
    its bytes (``read_store``); a window kept by its start ends ``window_size`` after it (the store's
    windowed serde's size, as Kafka Streams reads the store back)."""
    if isinstance(stored_key, tuple):
        if len(stored_key) == 2:
            raw_key, start = stored_key
            if window_size is None:
                raise ValueError("a store kept by window start has no windowed key serde with a window size: "
                                 "its windows' ends are unknown")
            return Windowed(key_serde.deserialize(raw_key), Window(start, start + window_size))
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
