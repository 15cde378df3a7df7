"""What a windowed aggregation's store supplier changes of its store that the runner follows: the time the
store expires its windows by, a time-, sliding- or session-windowed aggregation whose store's supplier keeps less
than its windows stay open (below), one whose supplier has another window size (:func:`unmodeled_window_size`), and
one whose in-memory supplier retains duplicates (:func:`reads_nothing_back`).

A time-windowed aggregation whose store's supplier keeps less than its windows stay open
(``Materialized.as_(Stores.in_memory_window_store("counts", retention, size, False))`` or
``Stores.persistent_timestamped_window_store(...)`` with a retention below the windows' size plus grace:
Kafka Streams checks only ``Materialized.with_retention`` against the windows, not a supplier's retention).

What Kafka Streams 4.3.1 does with it: ``KStreamWindowAggregate`` reads each window of a record with
``windowStore.fetch(key, windowStart)`` and puts the new aggregate back. Both stores a supplier builds
answer that fetch by their observed time, the largest window start ever put into them (all keys, a put
it drops included): ``InMemoryWindowStore.fetch`` returns nothing for a start at or below ``observed time
- retention`` and its ``put`` drops such a window; ``RocksDBWindowStore.fetch`` goes through
``AbstractRocksDBSegmentedBytesStore.get``, which returns nothing below the same cut, though its ``put``
keeps a window in a segment still live (no read of the aggregation reaches it again: the cut only grows).
With the DSL's retention (size + grace) the cut never reaches a window still open; with less (at least
the size: ``Stores`` checks that), a record late within the grace whose window starts at or below the cut
aggregates from the initializer, the window is forwarded with that aggregate, and its put is not read.

The observed time of a time-windowed aggregation's store is the last window start of the processor's
stream time (:func:`store_time`): the record that set the stream time put its last window (never closed:
its end is past the stream time), and no record puts a later one. So the runner keeps the windows by
it, key by key, with no task-level value (a retention that is not a multiple of the advance cuts a
window the stream time minus the retention would keep). Kafka Streams cuts a record's reads by the
store's time before the record, the runner by the one after it: the same reads, since a record that
moves the time reads only the windows holding its timestamp, which end after it and so start after
either cut (the retention is at least the size). With its own clocks (a cogroup's inputs, one behind a
filter: :mod:`.own_stream_time`) the aggregation keeps the store's time as the largest start written.

A sliding-windowed aggregation whose store's supplier keeps less than its windows stay open (the DSL's
retention: twice the time difference plus the grace), emitting on update, uncached. ``KStreamSlidingWindowAggregate``
reads a record's windows with one ``backwardFetch(key, key, max(0, timestamp - 2 x difference), timestamp + 1)``
(``fetch`` for an early record), which both stores cut as the single fetch above: no window starting at or below
their observed time minus the retention (``InMemoryWindowStore``'s ``minTime``, ``AbstractRocksDBSegmentedBytesStore
.getActualFrom``); then it puts the windows it updates and creates (the left window, a previous record's right
window, its own right window one past its timestamp), forwarding each. That observed time is not a function of the
stream time (which right and left windows exist depends on the records of every key), so the aggregation keeps it as
a task-level value: it is built with its own clocks (:mod:`.own_stream_time`, :func:`keeps_store_clock`), whose
store time is the largest window start written, and keeps the supplier's retention (not the wider one the runner
keeps by stream time otherwise, :mod:`.windows`). The record's fetch is cut by the store's time before the record
(the puts come after it, and none is read again: the cut only grows).

A session-windowed aggregation whose store's supplier keeps less than gap plus grace, emitting on update, uncached.
``KStreamSessionWindowAggregate`` reads a record's sessions with ``findSessions(key, timestamp - gap, timestamp +
gap)``, which both stores cut by their observed time, the largest session end put: no session ending at or below
it minus the retention (``InMemorySessionStore`` drops them from its map, ``AbstractRocksDBSegmentedBytesStore``
starts its range one after). That time is the processor's stream time before the record (only a record that is
not late puts, its session ending at or after its timestamp; a removal does not move it), which the session
aggregation already cuts the key's sessions by (:mod:`.sessions`; with its own clocks, the store's time it keeps).
The merged session is forwarded whether or not its put is kept (:func:`expired_session_put`).

Kafka Streams counts each put a store drops as a dropped record (``TaskMetrics.droppedRecordsSensor``): the
runner counts them with the late records (:func:`expired_puts`, :func:`expired_session_put`).

Not modeled yet, so refused when defined (:mod:`.store_suppliers`), each with why:
:func:`unmodeled_short_retention`, :func:`unmodeled_window_size`.
"""
from __future__ import annotations

from typing import Optional

from dagster_kstreams.processors.aggregations import read_by_user_processor
from dagster_kstreams.processors.window_store import dsl_segment_interval
from dagster_kstreams.topology.emit_strategy import ON_WINDOW_CLOSE
from dagster_kstreams.topology.window_store_settings import windows_minimum_retention
from dagster_kstreams.topology.windows import SlidingWindows, TimeWindows

__all__ = ["store_time", "keeps_store_clock", "expired_puts", "expired_session_put", "reads_nothing_back",
           "unmodeled_use", "unmodeled_short_retention", "unmodeled_window_size", "unmodeled_duplicates"]


def store_time(windows, stream_time: Optional[int]) -> Optional[int]:
    """The observed time of the store of an aggregation over ``windows`` whose processor's stream time is
    ``stream_time`` (None: no record yet): time windows', the last window start of it; sliding windows', the
    stream time itself (their runner keeps a wider retention, :mod:`.windows`; kept short by a supplier, they keep
    the store's own time instead: :func:`keeps_store_clock`)."""
    if stream_time is None or not isinstance(windows, TimeWindows):
        return stream_time
    return stream_time // windows.advance_ms * windows.advance_ms


def keeps_store_clock(windows, store, emit_strategy) -> bool:
    """Whether an aggregation over ``windows`` is built with its own clocks for its ``store``'s sake: a sliding one
    emitting on update whose supplier keeps less than its windows stay open (its reads are cut by the store's
    observed time, a task-level value that :mod:`.own_stream_time` keeps)."""
    supplier = None if store is None else store.supplier
    return (isinstance(windows, SlidingWindows) and emit_strategy != ON_WINDOW_CLOSE and supplier is not None
            and supplier.retention_ms < windows_minimum_retention(windows))


def expired_puts(aggregate, updates, time: Optional[int]) -> int:
    """How many of a record's ``updates`` (``(start, ...)``) of the windowed ``aggregate`` its store drops, ``time``
    being the store's time (time windows': the last window start of the stream time after the record; sliding
    windows': the largest start put before it, each put then moving it): in memory, a window starting at or before
    ``time - retention``; in RocksDB, one in a segment before the segment of ``time - retention``
    (``AbstractSegments.getOrCreateSegmentIfLive``). None with the DSL's retention (an open window starts after the
    cut; a sliding one's put starts after the stream time minus the grace and the difference, above the cut of the
    wider retention the runner keeps by the stream time); not counted where the store's time is kept otherwise
    (emitting on window close, a store a processor names: :mod:`.user_dsl_window_store`)."""
    if time is None or aggregate.emit_on_close or aggregate.observes_store_time:
        return 0
    sliding = isinstance(aggregate.windows, SlidingWindows)
    if not (sliding or isinstance(aggregate.windows, TimeWindows)):
        return 0
    interval = dsl_segment_interval(aggregate.retention)  # Stores.persistent*WindowStore's, as the DSL's own
    dropped = 0
    for start, *_ in updates:
        time = max(time, start) if sliding else time  # a sliding record's right window may move it
        cut = time - aggregate.retention
        if aggregate.store_in_memory:
            dropped += start <= cut
        else:
            dropped += start // interval < _java_division(cut, interval)
    return dropped


def expired_session_put(aggregate, end: int, time: int) -> int:
    """Whether (1) or not (0) the store of the session-windowed ``aggregate`` drops the put of the session a record
    merged into, ending at ``end``, ``time`` being the store's time before it (the largest session end put): it takes
    ``end`` as its time if larger, then in memory drops a session ending at or before its time minus the retention
    (``InMemorySessionStore.put``), in RocksDB one in a segment before that cut's (by end). Not counted where the
    store's time is kept otherwise (emitting on window close, a store a processor names) nor with the record cache
    (its flush puts the session later, by the store's time then)."""
    if aggregate.emit_on_close or aggregate.observes_store_time or aggregate.cached:
        return 0
    cut = max(time, end) - aggregate.retention
    if aggregate.store_in_memory:
        return int(end <= cut)
    interval = dsl_segment_interval(aggregate.retention)  # Stores.persistentSessionStore's, as the DSL's own
    return int(end // interval < _java_division(cut, interval))


def _java_division(dividend: int, divisor: int) -> int:
    """``dividend / divisor`` as Java's long division (towards zero; a cut before 0 is segment 0)."""
    return -(-dividend // divisor) if dividend < 0 else dividend // divisor


_NOT_COMPARED = ": not compared with Kafka Streams yet"


def unmodeled_use(factory, store, subtopology, cached: bool, cache: str = _NOT_COMPARED,
                   on_close: str = _NOT_COMPARED, read: str = _NOT_COMPARED) -> Optional[str]:
    """The first use of a supplier's store that the runner models for none of its shapes (None: no such use):
    with the record cache on, emitting on window close, as a cogroup's store, read by a user processor;
    ``cache``, ``on_close`` and ``read`` say why, for the shape that asks (the plain RocksDB store's too,
    :mod:`.plain_window_store`)."""
    if cached:
        return "with the record cache on" + cache
    if factory.params.get("emit_strategy") == ON_WINDOW_CLOSE:
        return "emitting on window close" + on_close
    if factory.params.get("cogroup"):
        return "as a cogroup's store" + _NOT_COMPARED
    if read_by_user_processor(subtopology, store.name):
        return "read by a user processor" + read
    return None


def unmodeled_short_retention(factory, store, subtopology, cached: bool) -> Optional[str]:
    """Why the runner does not model ``factory``'s aggregation over a store that keeps less than its windows
    stay open (None: it does)."""
    return unmodeled_use(factory, store, subtopology, cached, cache=(
        ": Kafka Streams' caching store returns a window from its cache whatever its store dropped, until the "
        "cache evicts it (by size: not modeled)"))


def unmodeled_window_size(factory, store, subtopology, cached: bool) -> Optional[str]:
    """Why the runner does not model ``factory``'s aggregation over a supplier's store whose window size is not
    the windows' (None: it does). Kafka Streams' stores use their size only to make ``Windowed`` keys of what
    their iterators return (``WindowStoreIteratorWrapper``, ``InMemoryWindowStore``) and of what their cache
    flushes (``MeteredWindowStore.setFlushListener``); a time-windowed aggregation emitting on update reads
    and writes one window at a time and forwards, uncached, its own window: nothing shows the store's size."""
    if not isinstance(factory.params["windows"], TimeWindows):
        return "for sliding windows" + _NOT_COMPARED
    return unmodeled_use(
        factory, store, subtopology, cached,
        cache=" (its flush forwards windows ending at their start plus the store's size)",
        on_close=" (it forwards the windows the store's fetchAll makes, of the store's size)",
        read=" (its ranges' windows end at their start plus the store's size)")


def reads_nothing_back(store) -> bool:
    """Whether a windowed aggregation's ``store`` returns none of its windows to the aggregation: an in-memory
    supplier's that retains duplicates. ``InMemoryWindowStore.put`` then stores each window under its key and
    a sequence number, and ``fetch(key, start)`` looks it up under the bare key: each record's windows aggregate
    from the initializer (the puts still move the store's time and, below its cut, are dropped and counted)."""
    supplier = store.supplier
    return supplier is not None and supplier.retain_duplicates and not supplier.persistent


def unmodeled_duplicates(factory, store, subtopology, cached: bool) -> Optional[str]:
    """Why the runner does not model ``factory``'s aggregation over a supplier's store that retains duplicates
    (None: it does)."""
    if store.supplier.persistent:
        return ("in RocksDB (RocksDBWindowStore.fetch looks a window up under the sequence number of the store's "
                "last put, of any key: not modeled)")
    if not isinstance(factory.params["windows"], TimeWindows):
        return "for sliding windows" + _NOT_COMPARED
    return unmodeled_use(factory, store, subtopology, cached)
