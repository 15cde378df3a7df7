"""Reading time-windowed and sliding-window tables in joins and re-groupings: which tables may be
read, and the store facts behind each read (pure topology facts: no processor is built here).

Kafka Streams reads a time-windowed or sliding-window aggregation's table through its value getter,
one window of the key's store (``windowStore.fetch(key, windowStart)``, in
``KStreamWindowAggregate`` and ``KStreamSlidingWindowAggregate`` alike), which returns nothing for a
start at or below the store's observed stream time (the largest window start written, by any key)
minus its retention. A key's row cannot see that time: :func:`check_windows` admits only the joins
that never read a window that old. (A sliding aggregation writes a record's right window at its
timestamp plus one, so its store's observed time runs up to one past the stream time; the runner keeps
sliding windows longer than their retention, ``windows.build``, so every window Kafka Streams still
returns is there.) A windowed join's result without a store is read through both its tables (Kafka
Streams' join value getter asks each table's getter with the windowed key): it updates the windows
either table updates and reads both stores. The store of a materialized join, or of a
``filter``/``map_values`` that keeps its own, is keyed by windowed keys in Kafka Streams (the key and
the window's start), and never expires a window: :func:`windowed_store_size` gives the size of the
windows whose groups hold it here.
"""

from __future__ import annotations

from typing import Optional

from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.own_groups import windows_keyed_by_start
from dagster_kstreams.processors.table_behind import FILTERS_AND_MAP_VALUES, table_of, tables_joined
from dagster_kstreams.topology.emit_strategy import ON_WINDOW_UPDATE
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.windows import SlidingWindows, TimeWindows

__all__ = ["readable_windows_on_update", "windowed_store_size", "check_windows", "is_windowed_table"]


def readable_windows_on_update(node) -> bool:
    """Whether a join or a re-grouping may read the table of ``node``: a time-windowed or sliding-window
    aggregation forwarding every update (both read one window by its start, ``fetch(key, windowStart)``).
    Session windows are read by their start and end (``fetchSession``), not yet here."""
    return (node.kind is NodeKind.WINDOWED_AGGREGATE
            and isinstance(node.params["windows"], (TimeWindows, SlidingWindows))
            and node.params.get("emit_strategy", ON_WINDOW_UPDATE) == ON_WINDOW_UPDATE)


def _window_size(windows) -> int:
    """The size of the windows: a time window's, or a sliding window's time difference."""
    return windows.time_difference_ms if isinstance(windows, SlidingWindows) else windows.size_ms


def windowed_store_size(ctx, node) -> Optional[int]:
    """The window size of the windowed keys the store of ``node`` is keyed by, when ``node`` is a
    materialized join of two time-windowed (or sliding-window) tables or a filter/map_values keeping its
    own store over such a table (through filters/map_values); else None. Kafka Streams keys such a store
    by the key and the window's start; the runner by the window's group, by its start too unless the
    sub-topology has session windows (:mod:`.own_groups`), where both sides' windows must have one size
    for their updates to write one entry."""
    sub = ctx.subtopology
    if node.kind is NodeKind.TABLE_TABLE_JOIN_MERGE:
        if node.params.get("store_name") not in node.stores:
            return None  # no store: read through both tables (value_getters._joined_values)
        sizes = {_windowed_table_size(sub, table) for table in tables_joined(sub, node)}
        if None in sizes:
            return None
        if len(sizes) == 1:
            return sizes.pop()
        # windows of different sizes write one entry per start, as in Kafka Streams, when the groups are
        # kept by start (own_groups.py): the end of the window a read builds keys no group
        return min(sizes) if windows_keyed_by_start(sub) else None
    if node.kind in (NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES):
        return _windowed_table_size(sub, node)
    return None


def _windowed_table_size(sub, node) -> Optional[int]:
    """The window size of the time-windowed or sliding-window aggregation (updated on every record) whose
    table reaches ``node`` through filters/map_values only (``node`` itself included), else None."""
    aggregation = _windowed_aggregation(sub, node)
    return None if aggregation is None else _window_size(aggregation.params["windows"])


def _window_reach_and_retention(ctx, node) -> tuple[int, int]:
    """How far below stream time the start of a window the aggregation ``node`` updates may be (every
    start updated is above stream time minus the reach), and how far below stream time a window its
    store returns may start (every start above stream time minus it is returned); a window read is there
    when the store's figure is at least the updating table's reach.

    Time windows: a window is updated while its end is above stream time minus grace, so its start is
    above stream time minus size and grace; its store's observed time (the largest start written) is at
    most the stream time, so it returns every start above stream time minus its retention (Kafka
    Streams' default: size plus grace). Sliding windows: the end is inclusive (updated while at or above
    stream time minus grace), so the reach is the time difference plus grace plus one; a record's right
    window starts one past its timestamp, so the store's observed time runs up to stream time plus one,
    one less of the retention (default: twice the time difference plus grace) below stream time."""
    windows = node.params["windows"]
    store = next(store for store in ctx.subtopology.state_stores if store.name == node.params["store_name"])
    if isinstance(windows, SlidingWindows):
        reach = windows.time_difference_ms + windows.grace_ms + 1
        retention = 2 * windows.time_difference_ms + windows.grace_ms if store.retention_ms is None \
            else store.retention_ms
        return reach, retention - 1
    reach = windows.size_ms + windows.grace_ms
    return reach, reach if store.retention_ms is None else store.retention_ms


def check_windows(ctx, factory, this_table: str, that_table: str, merge) -> None:
    """A join of windowed tables (``this_table``, ``that_table``: the nodes joined; ``merge``: the joined
    table): both time-windowed or sliding-window aggregations' (through filters/map_values), a
    materialized join of two or a join of two without a store, and each store keeps the windows the
    other's updates reach. Kafka Streams' window store returns nothing for a start at or below its
    observed stream time (the largest window start written, by any key) minus its retention; an update
    reaches starts above its stream time minus its reach (time windows: size and grace; a joined
    table's: either table's; a join without a store reads both stores); so when each store's figure of
    :func:`_window_reach_and_retention` covers the other's reach, no window read is expired, there or
    here, and the key's own windows answer (the runner's key-grouped row has no other keys' writes to
    tell that time by). A store of a filter/map_values after the aggregation, or of a materialized
    join, never expires a window, in Kafka Streams as here. A materialized join's store is keyed by the
    updated window's start; beside session windows by the window itself here, so both sides' windows
    must then have one size (see :func:`windowed_store_size`)."""
    sub = ctx.subtopology
    this, that = (_reach_and_retention(ctx, sub.node(name)) for name in (this_table, that_table))
    if this is None and that is None:
        if is_windowed_table(sub, sub.node(this_table)) or is_windowed_table(sub, sub.node(that_table)):
            problem = ("a table joined is neither a time-windowed or sliding-window aggregation's (through "
                       "filter/map_values) nor a join of two")
        else:
            return
    elif this is None or that is None:
        problem = "only one of its tables is windowed"
    else:
        (this_reach, this_retention), (that_reach, that_retention) = this, that
        if this_retention < that_reach or that_retention < this_reach:
            problem = ("a store's retention is below the other aggregation's window size plus grace (sliding "
                       "windows: time difference plus grace plus 2)")
        elif merge.params.get("store_name") in merge.stores and windowed_store_size(ctx, merge) is None:
            if any(_windowed_aggregation(sub, sub.node(name)) is None for name in (this_table, that_table)):
                problem = "it is materialized and one of its tables is itself a windowed join's"
            else:
                problem = "it is materialized and its tables' windows differ in size beside session windows"
        else:
            return
    raise UnsupportedTopologyError(
        f"processor {factory.name} ({factory.kind.value}) joins windowed tables, but {problem}; the Spark runner "
        "joins two time-windowed or sliding-window tables (updated on every record, through filter/map_values, or "
        "a join of two) "
        "whose stores each keep the windows the other updates, materialized only when both are aggregations' "
        "tables, with windows of different sizes only in a sub-topology without session windows")


def _reach_and_retention(ctx, node) -> Optional[tuple[int, float]]:
    """How far below stream time the start of a window the table of ``node`` updates can be, and how far
    below stream time a window its store returns can start (infinite: a materialized join's store never
    expires one; :func:`_window_reach_and_retention`), when it is a time-windowed or sliding-window
    aggregation's table (through filters/map_values),
    a materialized join of two of one size, or a join without a store of two such tables (through
    filters/map_values: it updates what either table updates, and reads both stores); else None."""
    sub = ctx.subtopology
    merge = table_of(sub, node, FILTERS_AND_MAP_VALUES).writer
    if merge.kind is NodeKind.TABLE_TABLE_JOIN_MERGE:
        if merge.params.get("store_name") in merge.stores:
            if windowed_store_size(ctx, merge) is None:
                return None
            tables = [_windowed_aggregation(sub, table) for table in tables_joined(sub, merge)]
            return max(_window_reach_and_retention(ctx, table)[0] for table in tables), float("inf")
        sides = [_reach_and_retention(ctx, table) for table in tables_joined(sub, merge)]
        if None in sides:
            return None
        return max(reach for reach, _ in sides), min(retention for _, retention in sides)
    aggregation = _windowed_aggregation(sub, node)
    return None if aggregation is None else _window_reach_and_retention(ctx, aggregation)


def _windowed_aggregation(sub, node):
    """The time-windowed or sliding-window aggregation (updated on every record) whose table reaches
    ``node`` through filters/map_values only (read through their value getters; the runner reads none
    through a suppression: :data:`~.table_behind.FILTERS_AND_MAP_VALUES`), else None."""
    writer = table_of(sub, node, FILTERS_AND_MAP_VALUES).writer
    return writer if readable_windows_on_update(writer) else None


def is_windowed_table(sub, node) -> bool:
    """Whether ``node``'s table is windowed: a windowed aggregation's (a cogroup's), through table steps
    and joins."""
    table = table_of(sub, node)
    if table.writer.kind is NodeKind.TABLE_TABLE_JOIN_MERGE:
        return any(is_windowed_table(sub, joined) for joined in tables_joined(sub, table.writer))
    return bool(table.aggregations)
