"""``EmitStrategy.on_window_close()`` of a session-windowed aggregation: which sessions Kafka
Streams 4.3.1 forwards, and when (``KStreamSessionWindowAggregate.maybeForwardFinalResult`` over
its time-ordered session store, ``RocksDBTimeOrderedSessionSegmentedBytesStore``).

After every record with a key (late or not), with ``close = stream time - grace - gap``:

* nothing happens unless ``close`` moved past the close time of the last emission
  (``last_emit``; Kafka Streams keeps it in its committed processor metadata, the runner in the
  task's state);
* the emit range of session *ends* is ``[lower, upper]`` with ``upper = close - 1`` (skipped
  when negative) and ``lower = max(0, last_emit)``; skipped when ``upper < lower``;
* otherwise every stored session whose end lies in the range is forwarded, in the store's order
  (end, then start, then the serialized key's bytes), and ``last_emit = close``.

The store returns a session here as long as its segment lives: segments are
``max(retention / 2, 60 s)`` long, and a segment whose id (``end // interval``) is below that of
``store time - retention`` is dropped, ``store time`` being the largest session end ever put (all
keys). Unlike the window store's range fetch, this one does not cut at ``store time - retention``
itself: a session older than that, in a segment still alive, is still emitted.

A store kept in memory (a supplier's, ``with_store_type("in_memory")``, ``default.dsl.store=in_memory``:
Kafka Streams' in-memory DSL suppliers ignore the emit strategy, so the emit fetches from a plain
``InMemorySessionStore``) returns the sessions of the range by end, then the serialized key's bytes,
then start *descending* (its reads' order, :func:`~.user_session_store.in_memory_session_order`), and
only those ending at or after ``store time - retention + 1`` (``findSessions`` first drops the ends
below that): kept the default ``gap + grace``, a session is gone before it closes and nothing is
ever emitted; kept longer, a session that stream time jumped past by the retention or more is never emitted.

Kafka Streams throttles the check to once per ``emit.interval.ms.kstreams.windowed.aggregation``
of wall-clock time (1 s by default): the runner checks after every record, as Kafka Streams with
that interval set to 0 (README, "Semantics that differ").

:class:`ClosedSessions` is the task-level state behind it: the stored sessions not emitted yet
(with their aggregates: a key's own state forgets a session sooner than a live segment does) and
the two times. A user processor's puts and removes reach it too
(``sessions.SessionWindowAggregate.write_session``), and its time is the store's the processor reads
by, so the emit fetches what the processor wrote, as Kafka Streams' does from the one store: a put, of
None too, moves that time; an in-memory store's ``remove`` (``InMemorySessionStore.remove``) leaves it,
where the time-ordered store's takes it: a remove ahead of the store's time cuts closed sessions from
the time-ordered store's emit, never from the in-memory one's. Pure logic.
"""

from __future__ import annotations

from typing import Any

from dagster_kstreams.processors.user_session_store import in_memory_session_order

__all__ = ["ClosedSessions", "segment_interval"]


def segment_interval(retention_ms: int) -> int:
    """The time-ordered session store's segment length (``RocksDbTimeOrderedSessionBytesStoreSupplier``)."""
    return max(retention_ms // 2, 60_000)


class ClosedSessions:
    """What emit-on-window-close needs across the keys of one session aggregation in one task."""

    in_memory = False  # an InMemorySessionStore's: its order, and its cut at the retention (not by segment)

    def __init__(self, in_memory: bool = False) -> None:
        if in_memory:
            self.in_memory = True
        self.last_emit = -1  # lastEmitWindowCloseTime (ConsumerRecord.NO_TIMESTAMP: none yet)
        self.store_time = -1  # the store's observed stream time: the largest session end put
        # (end, start, serialized key) -> (key, aggregate): stored, not emitted yet
        self.pending: dict[tuple[int, int, bytes], tuple[Any, Any]] = {}

    def put(self, start: int, end: int, key_bytes: bytes, key, aggregate, observes: bool = True) -> None:
        """A session was stored (a null aggregate: Kafka Streams' store deletes it). ``observes``: whether
        the store's time takes its end (not for a processor's ``remove`` of an in-memory store: unlike its
        ``put``, ``InMemorySessionStore.remove`` leaves ``observedStreamTime``)."""
        if observes:
            self.store_time = max(self.store_time, end)
        if aggregate is None:
            self.pending.pop((end, start, key_bytes), None)
        else:
            self.pending[(end, start, key_bytes)] = (key, aggregate)

    def remove(self, start: int, end: int, key_bytes: bytes) -> None:
        """A session was merged away."""
        self.pending.pop((end, start, key_bytes), None)

    def due(self, close_time: int, retention_ms: int) -> list[tuple[int, int, Any, Any]]:
        """The sessions to forward now, in order, as ``(start, end, key, aggregate)``; forgets them."""
        last = self.last_emit
        if last != -1 and last >= close_time:
            return []
        upper = close_time - 1
        lower = max(0, last)
        if upper < 0 or upper < lower:
            return []
        closed = [entry for entry in self.pending if entry[0] <= upper]
        if self.in_memory:
            closed.sort(key=lambda entry: in_memory_session_order(entry[0], entry[2], entry[1]))
        else:
            closed.sort()  # the time-ordered store's: end, start, key bytes
        due = []
        for entry in closed:
            key, aggregate = self.pending.pop(entry)
            end, start, _ = entry
            if end >= lower and self._returned(end, retention_ms):
                due.append((start, end, key, aggregate))
        self.last_emit = close_time
        return due

    def _returned(self, end: int, retention_ms: int) -> bool:
        """Whether the store still returns a session ending at ``end``: the in-memory store's drops the ends
        below its time minus the retention plus 1; the time-ordered store's keeps a live segment's."""
        if self.in_memory:
            return end >= self.store_time - retention_ms + 1
        interval = segment_interval(retention_ms)
        return _java_div(end, interval) >= _java_div(self.store_time - retention_ms, interval)


def _java_div(a: int, b: int) -> int:
    """Java's long division (truncates toward zero)."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient
