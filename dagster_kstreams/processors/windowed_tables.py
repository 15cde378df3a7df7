"""A windowed aggregation's table and its old values: what Kafka Streams' windowed aggregations
(``KStreamWindowAggregate``, ``KStreamSlidingWindowAggregate``, ``KStreamSessionWindowAggregate``)
send as ``Change.oldValue`` once a table downstream asks for it (``enableSendingOldValues``; a
suppression always asks: ``KTableSuppressProcessorSupplier``).

The writer, :class:`WindowedTable`, forwards each update of a window (session) with its old value
readable in ``state.old_values[slot]`` as ``((start, end), old)`` while the update travels on; the
reader, :class:`WindowedOldValue`, gives a suppression that old value through the same
``filter``/``map_values`` steps as the update, and asks the aggregations it reads to send it when
the program is built (:meth:`WindowedOldValue.bind`), as the suppression asks its parent table in
Kafka Streams. What the old value is, each family says where it forwards: the aggregate the update
was computed from (:mod:`.window_store`), None for a new session and a merged session's old
aggregate for its removal (:mod:`.sessions`), the store's value at the last flush with the record
cache on.
"""

from __future__ import annotations

from typing import Any

from dagster_kstreams.processors.base import Processor, StoreProcessor, reachable
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.own_groups import own_group, windows_keyed_by_start
from dagster_kstreams.processors.value_getters import ValueGetter
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.serdes import Window, Windowed
from dagster_kstreams.topology.windows import SlidingWindows, TimeWindows

__all__ = ["WindowedTable", "WindowedOldValue", "check_own_window_reads", "keeps_state_downstream"]

# What may follow a windowed table in its sub-topology and still let it run key-grouped: steps that
# read no key's state (a global table is read by the record's own key, whatever group it runs in).
_STATELESS_KINDS = {
    NodeKind.SINK, NodeKind.FILTER, NodeKind.MAP, NodeKind.MAP_VALUES, NodeKind.FLAT_MAP, NodeKind.FLAT_MAP_VALUES,
    NodeKind.SELECT_KEY, NodeKind.PEEK, NodeKind.FOREACH, NodeKind.PRINT, NodeKind.MERGE, NodeKind.BRANCH,
    NodeKind.BRANCH_CHILD, NodeKind.REPARTITION_FILTER, NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES,
    NodeKind.TABLE_TO_STREAM, NodeKind.STREAM_GLOBAL_TABLE_JOIN,
}


def keeps_state_downstream(sub, factory) -> bool:
    """Whether a processor after the windowed aggregation ``factory`` in sub-topology ``sub`` keeps or
    reads keyed state: its windows are keys of their own there, whose groups only the task-grouped
    state holds (:mod:`.own_groups`), so the sub-topology runs task-grouped. A join of windowed tables
    without a store and a re-grouping keep none: they read the windows of the record's own key and the
    update's old value (:mod:`.table_joins`, :mod:`.table_regroup`), key-grouped. (A filter/map_values
    that keeps its own store makes the sub-topology task-grouped itself: :mod:`.table_step_stores`.)"""
    return any(node.kind not in _STATELESS_KINDS and not _reads_own_windows(node)
               for node in reachable(sub, factory.children, lambda n: n.children))


def check_own_window_reads(sub, factory, what: str) -> None:
    """Refuses a join of windowed tables or a re-grouping after the windowed aggregation ``factory``
    when something after it keeps state by window (a count of the join's stream, say) that windows of
    different sizes reach, in a sub-topology with session windows. With those readers, the sub-topology
    runs task-grouped with a group per window (:mod:`.own_groups`), where the readers find each store's
    window, and the aggregations' windows in the source key's group; a store after them is keyed by the
    key and the window's start in Kafka Streams (a time-windowed serde), as the groups are, unless
    session windows key them by the window's end too: then windows of one start and different sizes
    would be one entry there and two groups here."""
    after = list(reachable(sub, factory.children, lambda n: n.children))
    readers = [node for node in after if _reads_own_windows(node)]
    if not readers or windows_keyed_by_start(sub):
        return
    for node in after:
        if node.kind in _STATELESS_KINDS or _reads_own_windows(node) or node.kind is NodeKind.TABLE_TABLE_JOIN_MERGE:
            continue  # a materialized join's store: check_windows refuses one of windows of two sizes
        sizes = _window_sizes_reaching(sub, node)
        if len(sizes) > 1:
            raise UnsupportedTopologyError(
                f"{what}: {readers[0].name} ({readers[0].kind.value}) reads its windows in sub-topology {sub.id}, "
                f"where {node.name} ({node.kind.value}) after it keeps state by window, reached by windows of "
                f"{len(sizes)} sizes; beside session windows the Spark runner keeps such state by window, Kafka "
                "Streams by the key and the window's start (one entry for windows of one start and different "
                "sizes). Add .repartition() after to_stream()")


def _window_sizes_reaching(sub, node) -> set:
    """The sizes of the windows of the windowed aggregations whose updates reach ``node`` (a session
    window's: None, its end its own)."""
    sizes = set()
    for ancestor in reachable(sub, node.parents, lambda n: n.parents):
        if ancestor.kind is NodeKind.WINDOWED_AGGREGATE:
            windows = ancestor.params["windows"]
            if isinstance(windows, TimeWindows):
                sizes.add(windows.size_ms)
            else:
                sizes.add(windows.time_difference_ms if isinstance(windows, SlidingWindows) else None)
    return sizes


def _reads_own_windows(node) -> bool:
    return node.kind in (NodeKind.TABLE_TABLE_JOIN, NodeKind.TABLE_GROUP_BY_MAP) or (
        node.kind is NodeKind.TABLE_TABLE_JOIN_MERGE and node.params.get("store_name") not in node.stores)


class WindowedTable(StoreProcessor):
    """A windowed aggregation, whose table's updates are windowed keys with their new aggregates."""

    # Kafka Streams' sendOldValues: off until a suppression reading the table asks for it.
    sends_old_values = False
    # each window is a key of its own downstream (own_groups.py)
    forwards_other_keys = True

    def enable_sending_old_values(self) -> None:
        self.sends_old_values = True

    def forward_update(self, key, window: Window, new, old, context, out, state) -> None:
        """Forward ``new`` for ``key``'s ``window`` (with ``context``'s timestamp), ``old`` readable
        behind it when old values are sent."""
        windowed = Windowed(key, window)
        group = own_group(self, windowed, state)
        if self.sends_old_values:
            group.old_values[self.state_slot] = ((window.start, window.end), old)
        self.forward(windowed, new, context, out, group)


class WindowedOldValue(ValueGetter):
    """The old value of a windowed table's update as the ``filter``/``map_values`` ``steps`` on the
    way show it; ``senders``: the names of the aggregations writing the table (a cogroup's inputs)."""

    def __init__(self, store: str, steps: tuple[tuple[str, Any, bool], ...], senders: tuple[str, ...]):
        super().__init__(store, steps)
        self.senders = senders

    def bind(self, program) -> None:
        super().bind(program)
        senders = [node for node in program.nodes if node.name in self.senders]
        if len(senders) != len(self.senders):
            raise ValueError(f"the windowed aggregations {self.senders} are not all in the program")
        for node in senders:
            node.enable_sending_old_values()

    def get_old(self, reader: Processor, key, state, context):
        sent = state.old_values.get(self.slot)
        window = (key.window.start, key.window.end)
        old = sent[1] if sent is not None and sent[0] == window else None
        return self.through_steps(reader, key, old, context)
