"""A key's sessions as Kafka Streams' session store holds them, and how a session aggregation reads
and updates them (``KStreamSessionWindowAggregate``): merging the sessions a record's gap reaches,
expiring those past the retention. :mod:`dagster_kstreams.processors.sessions` runs it record by
record; the user processors' view of it is :mod:`.user_dsl_session_store`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dagster_kstreams.topology.serdes import Window, Windowed

__all__ = ["SessionStore", "session_functions", "store_entries", "context_at"]


def session_functions(operation: str, initializer=None, aggregator=None, reducer=None, merger=None):
    """``(initializer(), aggregator(key, value, agg), merger(key, agg1, agg2))`` of a session
    aggregation, as Kafka Streams builds them for count, reduce and aggregate."""
    if operation == "count":
        return (lambda: 0), (lambda key, value, agg: agg + 1), (lambda key, a, b: a + b)
    if operation == "reduce":
        def reduce_aggregator(key, value, agg):
            return value if agg is None else reducer(agg, value)

        return (lambda: None), reduce_aggregator, (lambda key, a, b: reduce_aggregator(key, b, a))
    return initializer, aggregator, merger


def store_entries(key, sessions) -> Any:
    """A key's stored sessions as ``(Windowed(key, Window(start, end)), aggregate)`` pairs, the
    way Kafka Streams' session store returns them (read_store)."""
    for start, end, aggregate in sessions:
        yield Windowed(key, Window(start, end)), aggregate


class SessionStore:
    """One key's sessions: ``[(start, end, agg)]`` in store order (by end, then start).

    Pure logic (no Spark): :meth:`apply` runs one record and says what changed."""

    def __init__(self, gap: int, grace: int, retention: int, sessions=()):
        self.gap, self.grace, self.retention = gap, grace, retention
        self.sessions: list[tuple[int, int, Any]] = sorted(sessions, key=lambda s: (s[1], s[0]))

    def expire(self, store_stream_time: int, cached: frozenset = frozenset()) -> None:
        """Forget the sessions the store no longer returns (end <= its stream time - retention), but those
        ``cached`` (``(start, end)``): a caching store returns what its cache holds whatever that time."""
        floor = store_stream_time - self.retention
        if self.sessions and self.sessions[0][1] <= floor:
            self.sessions = [s for s in self.sessions if s[1] > floor or (s[0], s[1]) in cached]

    def apply(self, key, value, timestamp: int, stream_time_before: int, stream_time: int,
              initializer, aggregator, merger, call=lambda fn, *args: fn(*args), cached: frozenset = frozenset()):
        """Process one record. Returns None when it is late (dropped), else ``(removed, new)``:
        the merged-away sessions ``[(start, end, agg)]`` and the new session ``(start, end, agg)``
        (``cached``: the sessions the record cache holds, :meth:`expire`)."""
        self.expire(stream_time_before, cached)
        found = self.merge(key, timestamp, stream_time, initializer, merger, call)
        if found is None:
            return None
        merged, start, end, agg = found
        if merged and (start, end) != (timestamp, timestamp):
            removed = merged
        else:
            removed = []
        agg = call(aggregator, key, value, agg)
        gone = {(s[0], s[1]) for s in removed}
        kept = [s for s in self.sessions if (s[0], s[1]) not in gone and (s[0], s[1]) != (start, end)]
        # A null aggregate is a delete in Kafka Streams' store (put of null).
        if agg is not None:
            kept.append((start, end, agg))
        self.sessions = sorted(kept, key=lambda s: (s[1], s[0]))
        return removed, (start, end, agg)

    def merge(self, key, timestamp: int, stream_time: int, initializer, merger, call=lambda fn, *args: fn(*args)):
        """The record's merged session before its value is aggregated (Kafka Streams' ``findSessions``
        loop): None when it is late, else ``(merged sessions, start, end, merged aggregate)``."""
        close_time = stream_time - self.grace - self.gap
        agg = call(initializer)
        start = end = timestamp
        merged = []
        for session in self.sessions:
            s_start, s_end, s_agg = session
            if s_end >= timestamp - self.gap and s_start <= timestamp + self.gap:
                merged.append(session)
                agg = call(merger, key, agg, s_agg)
                start, end = min(start, s_start), max(end, s_end)
        if end < close_time:
            return None
        return merged, start, end, agg


def context_at(context, end: int):
    return dataclasses.replace(context, timestamp=end)
