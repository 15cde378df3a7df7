"""A key's windows as Kafka Streams' window store holds them, and the two algorithms that update
them: ``KStreamWindowAggregate`` (time windows) and ``KStreamSlidingWindowAggregate`` (sliding
windows, the reverse-iterator path Kafka Streams takes with its RocksDB and in-memory stores).

Pure functions over one key's store ``{window_start: (aggregate, timestamp)}`` (the aggregate
and the largest timestamp of the records in it); :mod:`dagster_kstreams.processors.windows` runs
them record by record.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from dagster_kstreams.topology.serdes import Window, Windowed
from dagster_kstreams.topology.windows import SlidingWindows, TimeWindows

__all__ = ["Update", "expire", "process_time_windows", "process_sliding_windows", "aggregation_functions",
           "store_entries", "dsl_segment_interval", "RemovalCut"]

_MIN_SEGMENT_INTERVAL_MS = 60_000  # Stores.persistentWindowStore's default segment interval floor

# An update: (window_start, window_end, new aggregate or None (deleted), new timestamp, old aggregate),
# the old aggregate being the one Kafka Streams sends with it when asked to send old values: the one
# the aggregator was applied to (the initializer's for a new time window), or None.
Update = tuple


def dsl_segment_interval(retention_ms: int) -> int:
    """The segment interval of the RocksDB window store the DSL builds for a windowed aggregation
    (``Stores.persistentTimestampedWindowStore``: ``max(retention / 2, 60 s)``)."""
    return max(retention_ms // 2, _MIN_SEGMENT_INTERVAL_MS)


def expire(store: dict, stream_time: Optional[int], retention_ms: int) -> None:
    """Forget the windows Kafka Streams' store no longer returns (start <= stream time - retention)."""
    if stream_time is None or not store:
        return
    horizon = stream_time - retention_ms
    for start in [start for start in store if start <= horizon]:
        del store[start]


def process_time_windows(windows: TimeWindows, store: dict, key, value, timestamp: int, stream_time: int,
                         initializer: Callable, aggregator: Callable,
                         on_update: Optional[Callable[[Update], None]] = None) -> tuple[list[Update], int]:
    """One record through ``KStreamWindowAggregate``: updates ``store`` (``{start: (agg, ts)}``),
    returns the updates in order and the number of closed windows the record was dropped from.
    ``on_update(update)`` runs after each window is stored, before the next is read (Kafka Streams
    forwards each window as it puts it)."""
    close_time = stream_time - windows.grace_ms
    updates, dropped = [], 0
    for start, end in windows.windows_for(timestamp):
        if end > close_time:
            old = store.get(start)
            if old is None:
                base, new_timestamp = initializer(), timestamp
            else:
                base, new_timestamp = old[0], max(timestamp, old[1])
            new = aggregator(key, value, base)
            _put(store, start, new, new_timestamp)
            updates.append((start, end, new, new_timestamp, base))
            if on_update is not None:
                on_update(updates[-1])
        else:
            dropped += 1
    return updates, dropped


def _put(store: dict, start: int, value, timestamp: int) -> None:
    if value is None:  # ValueTimestamp.make(null, ...) is null: the window is deleted
        store.pop(start, None)
    else:
        store[start] = (value, timestamp)


def _make(value, timestamp: int):
    return None if value is None else (value, timestamp)


class RemovalCut:
    """Where ``InMemoryWindowStore.removeExpiredSegments`` last cut the store's live map: every operation on
    the store (a fetch, a read, a put before the put's start is observed) drops the windows starting before
    its observed time minus the retention plus 1, and an iterator still open reads that live map (a sliding
    record's, while the windows it updated are forwarded to a processor that reads and writes the store)."""

    def __init__(self):
        self.first_kept = -(2 ** 63)  # nothing cut yet

    def note(self, first_kept: int) -> None:
        self.first_kept = first_kept


class _Sliding:
    """One record through ``KStreamSlidingWindowAggregate`` (the reverse-iterator path, which
    Kafka Streams takes with its RocksDB and in-memory window stores)."""

    def __init__(self, difference: int, grace: int, store: dict, key, value, timestamp: int, stream_time: int,
                 initializer: Callable, aggregator: Callable, on_update: Optional[Callable[[Update], None]],
                 segment_interval: Optional[int], live_cut: Optional[RemovalCut] = None):
        self.diff, self.store, self.key, self.value, self.ts = difference, store, key, value, timestamp
        self.close = stream_time - grace
        self.initializer, self.aggregator = initializer, aggregator
        self.on_update, self.segment_interval, self.live_cut = on_update, segment_interval, live_cut
        self.updates: list[Update] = []
        self.dropped = 0

    def run(self) -> None:
        ts, diff = self.ts, self.diff
        if ts + diff < self.close:
            self.dropped += 1
            return
        if ts < diff:
            self._process_early()
            return
        self._process_reverse()

    def _update(self, start: int, current) -> None:
        """updateWindowAndForward: ``current`` is the window's (agg, ts) or None."""
        end = start + self.diff
        if end >= self.close:
            old = None if current is None else current[0]
            new = self.aggregator(self.key, self.value, old)
            new_timestamp = self.ts if old is None else max(self.ts, current[1])
            _put(self.store, start, new, new_timestamp)
            self._stored((start, end, new, new_timestamp, old))
        else:
            self.dropped += 1

    def _right_window(self, right_agg) -> None:
        """createCurrentRecordRightWindow: a copy of the aggregate of the records after this one
        (sent with no old value)."""
        start = self.ts + 1
        self.store[start] = right_agg
        self._stored((start, start + self.diff, right_agg[0], right_agg[1], None))

    def _stored(self, update: Update) -> None:
        self.updates.append(update)
        if self.on_update is not None:
            self.on_update(update)

    def _windows(self, low: int, high: int, backward: bool):
        """``(start, (aggregate, timestamp))`` of the key's windows starting in ``[low, high]``, in the order
        Kafka Streams' segmented store iterates them: segment by segment, each read when the iteration
        reaches it (a RocksDB iterator sees its segment as it was when opened). So a window another
        processor writes while the record's updates are forwarded (``on_update``) is read if its segment
        was not opened yet, not if it was. Without a segment interval nobody else writes: one read. An
        in-memory store's (``live_cut``) is read live: :meth:`_live_windows`."""
        if self.live_cut is not None and backward:
            yield from self._live_windows(low, high)
            return
        interval = self.segment_interval
        if interval is None:
            segments = [None]
        else:
            segments = range(low // interval, high // interval + 1)
            segments = reversed(segments) if backward else segments
        for segment in segments:
            found = [(start, window) for start, window in self.store.items()
                     if low <= start <= high and (segment is None or start // interval == segment)]
            yield from sorted(found, reverse=backward)

    def _live_windows(self, low: int, high: int):
        """``InMemoryWindowStore.backwardFetch``'s iterator over the live map of starts: it holds the next
        start ahead, chosen when the one before it is returned, so each window is chosen while the window two
        before it is forwarded, from the starts the store's last operation did not cut (:class:`RemovalCut`),
        and its value read when it is reached (a window deleted by then is passed over)."""
        def below(start: int) -> Optional[int]:
            first_kept = max(low, self.live_cut.first_kept)
            return max((s for s in self.store if first_kept <= s < start), default=None)

        current = below(high + 1)
        following = None if current is None else below(current)
        while current is not None:
            window = self.store.get(current)
            if window is not None:
                yield current, window
            current = following
            following = None if current is None else below(current)

    def _previous_right_window(self, start: int) -> None:
        self._update(start, _make(self.initializer(), self.ts))

    def _process_reverse(self) -> None:
        ts, diff = self.ts, self.diff
        seen: set[int] = set()
        left_agg = right_agg = None
        left_created = right_created = False
        previous_ts = None
        for start, current in self._windows(max(0, ts - 2 * diff), ts + 1, backward=True):
            seen.add(start)
            end = start + diff
            max_ts = current[1]
            if start == ts + 1:
                right_created = True
            elif end > ts:
                if right_agg is None:
                    right_agg = current
                self._update(start, current)
            elif end == ts:
                left_created = True
                self._update(start, current)
                if max_ts < ts:
                    previous_ts = max_ts
                else:
                    return
            else:
                left_agg = current
                previous_ts = max_ts
                break
        self._create_windows(seen, right_agg, left_agg, left_created, right_created, previous_ts)

    def _create_windows(self, seen, right_agg, left_agg, left_created, right_created, previous_ts) -> None:
        ts, diff = self.ts, self.diff
        if previous_ts is not None:
            previous_right_start = previous_ts + 1
            if previous_right_start not in seen and previous_right_start + diff >= ts:
                self._previous_right_window(previous_right_start)
        if not left_created:
            if previous_ts is not None and ts - diff <= previous_ts:
                current = _make(left_agg[0], ts)
            else:
                current = _make(self.initializer(), ts)
            self._update(ts - diff, current)
        if not right_created and right_agg is not None and right_agg[1] > ts:
            self._right_window(right_agg)

    def _process_early(self) -> None:
        """0 <= timestamp < time difference: the record goes into the window [0, difference]."""
        ts = self.ts
        if ts < 0:
            raise ValueError(f"sliding windows: record timestamp {ts} is negative")
        combined = None
        right_agg = None
        right_created = False
        seen: set[int] = set()
        previous_ts = None
        for start, current in self._windows(0, ts + 1, backward=False):
            seen.add(start)
            if start == 0:
                combined = current
                if current[1] < ts:
                    previous_ts = current[1]
            elif start <= ts:
                right_agg = current
                self._update(start, current)
            else:  # start == ts + 1
                right_created = True
        if right_agg is None and combined is not None and combined[1] > ts:
            right_agg = combined
        if not right_created and right_agg is not None and right_agg[1] > ts:
            self._right_window(right_agg)
        if previous_ts is not None and previous_ts + 1 not in seen:
            self._previous_right_window(previous_ts + 1)
        if combined is None:
            self._update(0, _make(self.initializer(), ts))
        else:
            self._update(0, combined)


def process_sliding_windows(windows: SlidingWindows, store: dict, key, value, timestamp: int, stream_time: int,
                            initializer: Callable, aggregator: Callable,
                            on_update: Optional[Callable[[Update], None]] = None,
                            segment_interval: Optional[int] = None,
                            live_cut: Optional[RemovalCut] = None) -> tuple[list[Update], int]:
    """One record (key and value not null) through ``KStreamSlidingWindowAggregate``; as
    :func:`process_time_windows`. ``segment_interval``: the store's, when ``on_update`` may write
    windows the record has yet to read (a user processor on the store): they are read segment by
    segment, as Kafka Streams reads them; ``live_cut``: an in-memory store's instead, read live."""
    run = _Sliding(windows.time_difference_ms, windows.grace_ms, store, key, value, timestamp, stream_time,
                   initializer, aggregator, on_update, segment_interval, live_cut)
    run.run()
    return run.updates, run.dropped


def aggregation_functions(operation: str, initializer=None, aggregator=None, reducer=None):
    """``(initializer(), aggregator(key, value, aggregate))`` as Kafka Streams builds them."""
    if operation == "count":
        return (lambda: 0), (lambda key, value, aggregate: aggregate + 1)
    if operation == "reduce":
        return (lambda: None), (lambda key, value, aggregate: value if aggregate is None else reducer(aggregate, value))
    return initializer, aggregator


def store_entries(node, key, windows: Any):
    """A key's stored windows as ``(Windowed(key, Window(start, end)), aggregate)`` pairs (read_store);
    ``node`` is the windowed aggregation (its ``size``: the window size or time difference)."""
    size = node.size
    for start in sorted(windows):
        yield Windowed(key, Window(start, start + size)), windows[start][0]
