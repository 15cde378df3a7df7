"""What the Spark runner takes of a DSL store's supplier and kind (``Materialized.as_(Stores...)``,
``StreamJoined.with_this_store_supplier``, ``StreamsBuilder(TopologyConfig({"default.dsl.store":
"in_memory"}))``), checked when the application is defined.

Every DSL store is kept in Spark's state store whatever its supplier; what a supplier changes in
Kafka Streams, the runner follows or refuses:

* its name names the store (the topology layer), and a windowed aggregation's store keeps the
  supplier's retention (a processor reading the store sees it), a time-windowed one's cut by the store's
  time, so a supplier kept less than its windows stay open drops them as Kafka Streams' does
  (:mod:`.supplier_shape`);
* a join's window stores: Kafka Streams checks they match the join's windows exactly, so they hold
  what the DSL's own would; in memory or RocksDB, a join reads one key's records by time either way,
  but an in-memory store drops a put at or below its observed time minus retention where RocksDB's
  drops only a put into an expired segment (:func:`~.join_buffers.stored_when_put`; counted either way);
* a key-value store iterates by the key's bytes in memory as in RocksDB;
* refused, naming the processor and the store: a windowed aggregation's supplier whose retention is
  below what keeps its open windows (Kafka Streams checks only the ``Materialized`` retention; its
  store then drops windows still open) but for a time-windowed aggregation emitting on update, uncached,
  that no processor reads and no cogroup shares (:func:`~.supplier_shape.unmodeled_short_retention`
  says why the others stay refused), whose window size is not the windows' (the ``Windowed`` keys its
  reads and its cache's flushes make end elsewhere) but for the same time-windowed aggregation, which shows
  the store's size nowhere (:func:`~.supplier_shape.unmodeled_window_size`), that retains duplicates
  (each update a new entry) but for the same aggregation's in-memory store, which returns it no window
  (:func:`~.supplier_shape.unmodeled_duplicates`), or a plain RocksDB
  window store of an aggregation emitting on update (it keeps no timestamps: Kafka Streams reads each
  window back with timestamp -1; ``Stores.persistent_timestamped_window_store`` keeps them);
* a time- or sliding-windowed aggregation emitting on window close from a store kept in memory (a
  supplier's, ``with_store_type("in_memory")``, ``default.dsl.store=in_memory``): Kafka Streams' in-memory
  DSL suppliers ignore the emit strategy, and ``InMemoryWindowStore.fetchAll`` returns the closed windows
  by start, then key, as the time-ordered store does, from one start later (:mod:`.window_close`);
* refused, naming the processor and the store: emitting on window close from a RocksDB supplier's
  window store (its ``fetchAll`` goes by segment, then key, then start: not modeled yet) or session
  store (Kafka Streams' plain RocksDB session store throws ``UnsupportedOperationException`` when the
  emit fetches its sessions by end time), from a session store kept in memory (not compared with
  Kafka Streams yet), or from a store kept in memory that a user processor also reads (not modeled yet);
* a user processor reading a windowed aggregation's store kept in memory reads it in the in-memory
  store's order: a time- or sliding-windowed one's by window start, then key
  (:mod:`.user_dsl_window_store`), a session one's by session end, then key, then start descending
  (:mod:`.user_dsl_session_store`).
"""
from __future__ import annotations

from typing import Callable

from dagster_kstreams.processors.aggregations import read_by_user_processor
from dagster_kstreams.processors.errors import UnsupportedTopologyError
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
    if isinstance(factory.params["windows"], SessionWindows):
        if store.persistent is False:
            reason = "a session store kept in memory (InMemorySessionStore): not compared with Kafka Streams yet"
        else:
            reason = ("its supplier's RocksDB session store, which Kafka Streams cannot emit from (its findSessions "
                      "by end time throws UnsupportedOperationException at run time)")
    elif store.persistent is not False:
        reason = ("its supplier's RocksDB window store, whose fetchAll goes by segment, then key, then start (not the "
                  "time-ordered store's start, then key): not modeled by the Spark runner yet")
    elif read_by_user_processor(subtopology, store.name):
        reason = "a store kept in memory that a user processor also reads: not modeled by the Spark runner yet"
    else:
        return
    raise UnsupportedTopologyError(f"{where} emits on window close from {reason}")


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
        raise UnsupportedTopologyError(
            f"{where} is a plain RocksDB window store, which keeps no timestamps (Kafka Streams reads each window "
            "through WindowToTimestampedWindowByteStoreAdapter with timestamp -1, so a window's timestamp is its "
            "last record's, not the largest): not modeled by the Spark runner yet (Stores."
            "persistent_timestamped_window_store keeps them)")
    size = windows.time_difference_ms if isinstance(windows, SlidingWindows) else windows.size_ms
    unmodeled = unmodeled_window_size(factory, store, subtopology, cached)
    if supplier.window_size_ms != size and unmodeled:
        raise UnsupportedTopologyError(
            f"{where} has a window size of {supplier.window_size_ms} ms, not the windows' {size} ms, {unmodeled}")
    unmodeled = unmodeled_duplicates(factory, store, subtopology, cached)
    if supplier.retain_duplicates and unmodeled:
        raise UnsupportedTopologyError(f"{where} retains duplicates (each update a new entry), {unmodeled}")
