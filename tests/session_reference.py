"""A plain reference of Kafka Streams' session-windowed aggregation over one task's records, for
tests (independent of dagster_kstreams.processors.sessions: sessions as lists of accepted records).

``run(records, gap, grace, ...)``: ``records`` are ``(key, value, timestamp)`` in the task's
processing order. Returns ``(final, dropped, ambiguous)``: the final aggregate per ``(key, start,
end)``, the number of late records, and the number of records that met a session the store had
already expired (with Kafka Streams' record cache such a session may still be merged until the
next commit: inputs compared with a cached Kafka Streams run must have none).
"""

from __future__ import annotations


def run(records, gap, grace, initializer, aggregator, merger, retention=None, skip_ambiguous=None,
        commit_every=None):
    """``skip_ambiguous``: a list; the indexes of ambiguous records are appended to it and those
    records are left out (as if they were not in the input). ``commit_every``: with the record cache,
    committing before every that many records (``CachingSessionStore``: the sessions put since the last
    commit are returned whatever the time; the rest by the stream time at that commit, the time of the
    store below the cache)."""
    retention = gap + grace if retention is None else retention
    sessions: dict = {}  # key -> list of [start, end, agg]
    stream_time = -1
    dropped = ambiguous = 0
    flushed, cached = -1, set()  # with the cache: the store's time at the last commit; sessions put since
    for index, (key, value, timestamp) in enumerate(records):
        if commit_every is not None and index and index % commit_every == 0:
            flushed, cached = stream_time, set()
        if key is None:
            continue
        before = stream_time if commit_every is None else flushed
        own = sessions.setdefault(key, [])
        candidates = [s for s in own if s[1] >= timestamp - gap and s[0] <= timestamp + gap]
        found = [s for s in candidates if s[1] > before - retention or (key, s[0], s[1]) in cached]
        if len(found) != len(candidates):
            ambiguous += 1
            if skip_ambiguous is not None:
                skip_ambiguous.append(index)
                continue
        stream_time = max(stream_time, timestamp)
        found.sort(key=lambda s: (s[1], s[0]))
        agg = initializer()
        start = end = timestamp
        for s in found:
            agg = merger(key, agg, s[2])
            start, end = min(start, s[0]), max(end, s[1])
        if end < stream_time - grace - gap:
            dropped += 1
            continue
        for s in found:
            own.remove(s)
        own.append([start, end, aggregator(key, value, agg)])
        if commit_every is not None:
            cached.add((key, start, end))
    final = {(key, s[0], s[1]): s[2] for key, own in sessions.items() for s in own if s[2] is not None}
    return final, dropped, ambiguous


def count(records, gap, grace, retention=None, commit_every=None):
    return run(records, gap, grace, lambda: 0, lambda k, v, a: a + 1, lambda k, a, b: a + b, retention,
               commit_every=commit_every)
