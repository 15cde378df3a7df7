"""What the Spark runner takes of a DSL store's supplier and kind (``Materialized.as_(Stores...)``,
``StreamJoined.with_this_store_supplier``, ``StreamsBuilder(TopologyConfig({"default.dsl.store":
"in_memory"}))``), checked when the application is defined.

Every DSL store is kept in Spark's state store whatever its supplier; what a supplier changes in
Kafka Streams, the runner follows or refuses:

* its name names the store (the topology layer), and a windowed aggregation's store keeps the
  supplier's retention (a processor reading the store sees it), a time-windowed one's cut by the store's
  time, so a supplier kept less than its windows stay open drops them as Kafka Streams' does (a
  sliding-windowed one's by the store's time kept as a task-level value, a session-windowed one's by
  the stream time before the record: :mod:`.supplier_shape`);
* a join's window stores: Kafka Streams checks they match the join's windows exactly, so they hold
  what the DSL's own would; in memory or RocksDB, a join reads one key's records by time either way,
  but an in-memory store drops a put at or below its observed time minus retention where RocksDB's
  drops only a put into an expired segment (:func:`~.join_buffers.stored_when_put`; counted either way);
* a key-value store iterates by the key's bytes in memory as in RocksDB;
* refused, naming the processor and the store: a windowed aggregation's supplier whose retention is
  below what keeps its open windows (Kafka Streams checks only the ``Materialized`` retention; its
  store then drops windows still open) but for a time-, sliding- or session-windowed aggregation
  emitting on update, uncached, that no processor reads and no cogroup shares
  (:func:`~.supplier_shape.unmodeled_short_retention` says why the others stay refused), whose window size is not the windows' (the ``Windowed`` keys its
  reads and its cache's flushes make end elsewhere) but for the same time-windowed aggregation, which shows
  the store's size nowhere (:func:`~.supplier_shape.unmodeled_window_size`), that retains duplicates
  (each update a new entry) but for the same aggregation's in-memory store, which returns it no window
  (:func:`~.supplier_shape.unmodeled_duplicates`), or a plain RocksDB
  window store of an aggregation emitting on update (it keeps no timestamps: Kafka Streams reads each
  window back with timestamp -1) but for a time- or sliding-windowed one, uncached, that no processor
  reads, no join beside it may read and no cogroup shares, whose store the runner keeps stamped -1 too
  (:mod:`.plain_window_store`; :func:`~.plain_window_store.unmodeled_plain_store` says why the others stay
  refused);
* a windowed aggregation emitting on window close from a store kept in memory (a supplier's,
  ``with_store_type("in_memory")``, ``default.dsl.store=in_memory``): Kafka Streams' in-memory DSL
  suppliers ignore the emit strategy. Time or sliding windows: ``InMemoryWindowStore.fetchAll`` returns
  the closed windows by start, then key, as the time-ordered store does, from one start later
  (:mod:`.window_close`); a user processor beside the aggregation (not downstream: it runs between the
  emits) reads and writes it as an in-memory store (:mod:`.user_dsl_window_store`), and the emit fetches
  what it wrote. Session windows: ``InMemorySessionStore.findSessions(earliest_end, latest_end)`` returns
  the closed sessions by end, then key, then start descending (its reads' order), and none ending below
  its time minus the retention plus 1 (:mod:`.session_close`); a user processor beside the aggregation
  reads and writes it as an in-memory session store (:mod:`.user_dsl_session_store`): the emit fetches
  what it put, and its ``remove`` leaves the store's time (which its ``put``, even of None, moves);
* a time- or sliding-windowed aggregation emitting on window close from a timestamped RocksDB
  supplier's window store (``Stores.persistent_timestamped_window_store``): Kafka Streams emits from that
  segmented store, whose ``fetchAll`` returns the in-memory store's windows segment by segment, then by
  key, then start (:mod:`.window_close`); a user processor beside the aggregation reads and writes it as
  that segmented store (:mod:`.user_dsl_window_store`), and the emit fetches what it wrote;
* refused, naming the processor and the store, where Kafka Streams itself fails at run time: emitting on
  window close from a RocksDB supplier's session store (its plain RocksDB session store throws
  ``UnsupportedOperationException`` when the emit fetches its sessions by end time) or from a plain
  RocksDB supplier's window store (``Stores.persistent_window_store``: the DSL reads its aggregates back
  with no timestamp, -1, and forwarding a closed window with it throws);
* refused, naming the processor and the store: emitting on window close from a timestamped RocksDB
  supplier's window store or a store kept in memory that a user processor downstream of the aggregation
  also reads (it runs as the emit forwards, while the emit's iterator is open: the live
  ``InMemoryWindowStore`` or ``InMemorySessionStore`` iterator reaches what the processor puts ahead of it,
  the RocksDB store's ``SegmentIterator`` opens each segment's iterator as it reaches it, after the
  processor's writes into it; not modeled yet);
* a user processor reading a windowed aggregation's store kept in memory reads it in the in-memory
  store's order: a time- or sliding-windowed one's by window start, then key
  (:mod:`.user_dsl_window_store`), a session one's by session end, then key, then start descending
  (:mod:`.user_dsl_session_store`).
"""
from __future__ import annotations

from typing import Callable

from dagster_kstreams.processors.base import reachable
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.plain_window_store import unmodeled_plain_store
from dagster_kstreams.processors.supplier_shape import (unmodeled_duplicates, unmodeled_short_retention,
                                                        unmodeled_window_size)
from dagster_kstreams.topology.emit_strategy import ON_WINDOW_CLOSE
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.window_store_settings import windows_minimum_retention
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows

__all__ = ["check_store_suppliers"]


def check_store_suppliers(factory, stores, subtopology, cached: Callable[[str], bool]) -> None:
    """Refuse what the runner does not model of the suppliers and kinds of the stores of ``factory``
    (``stores``: the topology's, by name; ``subtopology``: the one ``factory`` is in; ``cached(name)``:
    whether the store keeps its record cache)."""
    if factory.kind is NodeKind.WINDOWED_AGGREGATE:
        store = stores[factory.params["store_name"]]
        _check_aggregation_supplier(factory, store, subtopology, cached(store.name))
        if factory.params.get("emit_strategy") == ON_WINDOW_CLOSE and (store.supplier or store.persistent is False):
            _check_emit_on_close_store(factory, store, subtopology)


def _check_emit_on_close_store(factory, store, subtopology) -> None:
    """A windowed aggregation emitting on window close from a store not Kafka Streams' time-ordered one."""
    where = f"processor {factory.name}: store {store.name}"
    sessions, supplier = isinstance(factory.params["windows"], SessionWindows), store.supplier
    if sessions and store.persistent is not False:
        reason = ("its supplier's RocksDB session store, which Kafka Streams itself cannot emit from (its "
                  "findSessions by end time throws UnsupportedOperationException at run time)")
    elif supplier is not None and supplier.persistent and not supplier.timestamped:
        reason = ("its supplier's plain RocksDB window store, which Kafka Streams itself cannot emit from (the DSL "
                  "reads its aggregates back with no timestamp, -1, and forwarding a closed window with it fails at "
                  "run time): Stores.persistent_timestamped_window_store emits")
    elif store.persistent is not False and _read_while_emitting(factory, store.name, subtopology):
        reason = ("its supplier's RocksDB window store that a user processor it forwards to also reads (it runs "
                  "while the emit's iterator is open, which opens each segment's RocksDB iterator as it reaches "
                  "it, after the processor's writes into it): not modeled by the Spark runner yet")
    elif _read_while_emitting(factory, store.name, subtopology):
        iterator = "InMemorySessionStore" if sessions else "InMemoryWindowStore"
        reason = ("a store kept in memory that a user processor it forwards to also reads (it runs while the emit's "
                  f"{iterator} iterator is open, which sees the processor's writes ahead of it): not modeled by the "
                  "Spark runner yet")
    else:
        return
    raise UnsupportedTopologyError(f"{where} emits on window close from {reason}")


def _read_while_emitting(factory, store_name: str, subtopology) -> bool:
    """Whether a user processor naming the store is downstream of the aggregation, so runs as the emit
    forwards each closed window (a processor elsewhere in the sub-topology runs between the emits)."""
    return any(node.kind in (NodeKind.PROCESS, NodeKind.PROCESS_VALUES) and store_name in node.stores
               for node in reachable(subtopology, factory.children, lambda node: node.children))


def _check_aggregation_supplier(factory, store, subtopology, cached: bool) -> None:
    supplier = store.supplier
    if supplier is None:
        return
    windows = factory.params["windows"]
    where = f"processor {factory.name}: store {store.name}'s supplier"
    needed = windows_minimum_retention(windows)
    unmodeled = unmodeled_short_retention(factory, store, subtopology, cached)
    if supplier.retention_ms < needed and unmodeled:
        raise UnsupportedTopologyError(
            f"{where} keeps {supplier.retention_ms} ms, less than the {needed} ms its windows stay open (Kafka "
            "Streams' store then returns no window older than its retention, so a late record within the grace "
            f"aggregates from nothing), {unmodeled}")
    if isinstance(windows, SessionWindows):
        return
    if not supplier.keeps_timestamps and factory.params.get("emit_strategy") != ON_WINDOW_CLOSE:
        unmodeled = unmodeled_plain_store(factory, store, subtopology, cached)
        if unmodeled:
            raise UnsupportedTopologyError(
                f"{where} is a plain RocksDB window store, which keeps no timestamps (Kafka Streams reads each "
                f"window through WindowToTimestampedWindowByteStoreAdapter with timestamp -1), {unmodeled}")
    size = windows.time_difference_ms if isinstance(windows, SlidingWindows) else windows.size_ms
    unmodeled = unmodeled_window_size(factory, store, subtopology, cached)
    if supplier.window_size_ms != size and unmodeled:
        raise UnsupportedTopologyError(
            f"{where} has a window size of {supplier.window_size_ms} ms, not the windows' {size} ms, {unmodeled}")
    unmodeled = unmodeled_duplicates(factory, store, subtopology, cached)
    if supplier.retain_duplicates and unmodeled:
        raise UnsupportedTopologyError(f"{where} retains duplicates (each update a new entry), {unmodeled}")
