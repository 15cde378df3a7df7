"""A time- or sliding-windowed aggregation emitting on update over a plain RocksDB supplier's store
(``Materialized.as_(Stores.persistent_window_store(name, retention, size, False))``), which keeps no
timestamps.

What Kafka Streams 4.3.1 does with it: the DSL builds a timestamped window store over any supplier
(``TimestampedWindowStoreBuilder``); a persistent store that is not a ``TimestampedBytesStore`` is wrapped
in ``WindowToTimestampedWindowByteStoreAdapter``, whose ``put`` keeps the aggregate without its timestamp
(``rawValue``) and whose reads (``fetch``, ``backwardFetch``, ``fetchAll``) return each window stamped
``-1`` (``convertToTimestampedFormat``). ``KStreamWindowAggregate`` then stamps an update with
``max(record timestamp, -1)``: the timestamp of the window's last record, not the largest of its records.
``KStreamSlidingWindowAggregate`` reads the stamps too, as the times of a window's records: stamped ``-1``,
a record's new left window starts from the initializer (the window before it seems to hold no record within
the time difference) and no right window is copied for it (the window after it seems to hold no record later
than this one). The runner follows it by keeping
what the adapter keeps: each window's aggregate stamped ``-1`` once the record has put it
(:class:`ForgetsTimestamps`), so the same algorithms (:mod:`.window_store`) read what Kafka Streams' read.

Not modeled yet, so refused when defined (:mod:`.store_suppliers`), each with why:
:func:`unmodeled_plain_store`.
"""
from __future__ import annotations

from typing import Callable, Optional

from dagster_kstreams.processors.supplier_shape import unmodeled_use
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["NO_TIMESTAMP", "keeps_no_timestamps", "ForgetsTimestamps", "stamps_of", "unmodeled_plain_store"]

NO_TIMESTAMP = -1  # what the adapter stamps every window it returns with (ConsumerRecord.NO_TIMESTAMP)

# The processors that read an aggregation's table through its value getter, which returns the store's
# windows stamped -1 too (a join stamps its result with the larger of both sides' timestamps).
_GETTER_READERS = (NodeKind.TABLE_TABLE_JOIN, NodeKind.STREAM_TABLE_JOIN, NodeKind.TABLE_TRANSFORM_VALUES,
                   NodeKind.FK_SUBSCRIPTION_SEND, NodeKind.FK_RESPONSE_JOIN)


def keeps_no_timestamps(store) -> bool:
    """Whether a windowed aggregation's ``store`` is a plain RocksDB supplier's (read back stamped -1)."""
    supplier = store.supplier
    return supplier is not None and not supplier.keeps_timestamps


class ForgetsTimestamps:
    """A windowed aggregation's algorithm (:func:`.process_time_windows`, :func:`.process_sliding_windows`)
    over a store that keeps no timestamps: the updates are forwarded with the timestamps the algorithm
    computed, and the store keeps each window updated stamped :data:`NO_TIMESTAMP`. A record reads its
    windows before it puts any (one window per fetch for time windows; for sliding windows, one iterator
    opened before the puts, as nobody else writes the store), so stamping them after the record is
    stamping each put."""

    def __init__(self, algorithm: Callable):
        self.algorithm = algorithm

    def __call__(self, windows, store: dict, *args, **options):
        updates, dropped = self.algorithm(windows, store, *args, **options)
        for start, _end, new, _timestamp, _old in updates:
            if new is not None and start in store:
                store[start] = (store[start][0], NO_TIMESTAMP)
        return updates, dropped


def stamps_of(store, algorithm: Callable) -> Callable:
    """The algorithm a windowed aggregation over ``store`` runs: ``algorithm``, or, over a store that keeps
    no timestamps, ``algorithm`` forgetting them."""
    return ForgetsTimestamps(algorithm) if keeps_no_timestamps(store) else algorithm


def unmodeled_plain_store(factory, store, subtopology, cached: bool) -> Optional[str]:
    """Why the runner does not model ``factory``'s aggregation emitting on update over a store that keeps no
    timestamps (None: it does)."""
    unmodeled = unmodeled_use(factory, store, subtopology, cached, cache=(
        ": Kafka Streams' caching store returns a window with its timestamp from the cache until the cache evicts it "
        "(by size) or the application restarts, stamped -1 after: not modeled"),
        read=" (which reads each window stamped -1): not compared with Kafka Streams yet")
    if unmodeled is None and any(node.kind in _GETTER_READERS for node in subtopology.nodes):
        return ("beside a processor that may read its table through its value getter (which returns each window "
                "stamped -1): not compared with Kafka Streams yet")
    return unmodeled
