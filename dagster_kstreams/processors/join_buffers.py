"""The stores of a stream-stream join, as Kafka Streams 4.3.1 keeps them: each side's window
store (a buffer of ``(timestamp, value)`` per key, with segments and retention) and the join's
``TimeTracker`` with its shared outer-join store. Pure functions and one dataclass;
:mod:`dagster_kstreams.processors.stream_joins` runs them record by record.
"""

from __future__ import annotations

import dataclasses
import struct

__all__ = ["segment_interval", "segment_live", "stored_when_put", "visible", "expire", "insert", "JoinTracker",
           "LEFT", "RIGHT",
           "LONG_MAX", "jlong", "outer_store_order", "closed_outer_records"]


def segment_interval(retention_ms: int) -> int:
    """``Stores.persistentWindowStore``'s default segment interval."""
    return max(retention_ms // 2, 60_000)


def segment_live(timestamp: int, stream_time: int, retention_ms: int) -> bool:
    """Whether a window store with observed stream time ``stream_time`` (already including
    ``timestamp``) stores a record put at ``timestamp`` (``AbstractSegments.getOrCreateSegmentIfLive``).
    Java's ``long`` division truncates toward zero."""
    interval = segment_interval(retention_ms)
    return _jdiv(timestamp, interval) >= _jdiv(stream_time - retention_ms, interval)


def stored_when_put(timestamp: int, stream_time: int, retention_ms: int, persistent: bool) -> bool:
    """Whether a join's window store stores a record put at ``timestamp`` (else it is dropped and
    counted): the RocksDB store if its segment is live (:func:`segment_live`), the in-memory one
    (``InMemoryWindowStore.put``, a supplier's or ``default.dsl.store=in_memory``) if the record
    itself is within retention: ``timestamp > stream_time - retention``."""
    if persistent:
        return segment_live(timestamp, stream_time, retention_ms)
    return timestamp > stream_time - retention_ms


def _jdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def visible(buffer, timestamp: int, before_ms: int, after_ms: int, stream_time: int, retention_ms: int):
    """The buffered ``(timestamp, value)`` entries a record at ``timestamp`` joins: Kafka Streams'
    ``fetch(key, max(0, t - before), max(0, t + after))`` on a store whose observed stream time
    is ``stream_time`` (nothing older than ``stream_time - retention + 1``), in store order."""
    low = max(0, timestamp - before_ms, stream_time - retention_ms + 1)
    high = max(0, timestamp + after_ms)
    return [entry for entry in buffer if low <= entry[0] <= high]


def expire(buffer, stream_time: int, retention_ms: int):
    """The entries any later lookup can still return (store time only grows)."""
    low = stream_time - retention_ms + 1
    return [entry for entry in buffer if entry[0] >= low]


def insert(buffer, timestamp: int, value) -> list:
    """``buffer`` plus the new entry, in store order: timestamp, then arrival (stable)."""
    position = len(buffer)
    while position and buffer[position - 1][0] > timestamp:
        position -= 1
    return [*buffer[:position], (timestamp, value), *buffer[position:]]


# Java's Long.MAX_VALUE and the join side byte of Kafka Streams' TimestampedKeyAndJoinSide.
LONG_MAX = (1 << 63) - 1
LEFT, RIGHT = 1, 0


def jlong(value: int) -> int:
    """``value`` as a Java ``long`` (two's complement overflow)."""
    return ((value + (1 << 63)) % (1 << 64)) - (1 << 63)


@dataclasses.dataclass
class JoinTracker:
    """Kafka Streams' ``TimeTracker`` of one join in one task, and the join's outer-join store:
    ``outer`` maps ``(timestamp, side, raw key)`` to the list of pending ``(key, value)``."""

    stream_time: int = -1
    min_time: int = LONG_MAX
    outer: dict = dataclasses.field(default_factory=dict)


def outer_store_order(store_key, session_keys: bool = False) -> bytes:
    """The outer-join store's byte order: 8-byte timestamp, side byte, serialized key. A window's key
    (the group of a windowed table's window, ``(key bytes, start)`` or, in a sub-topology with session
    windows, ``(key bytes, start, end)``: own_groups.group_key) is serialized as the join's key serde
    writes it: Kafka Streams' ``TimeWindowedSerializer`` the key's bytes, then the window's 8-byte start;
    its ``SessionWindowedSerializer`` (``session_keys``) the key's bytes, the end, then the start."""
    timestamp, side, raw_key = store_key
    if isinstance(raw_key, tuple):
        if session_keys:
            key_bytes, start, end = raw_key
            raw_key = key_bytes + struct.pack(">qq", end, start)
        else:
            key_bytes, start = raw_key[:2]
            raw_key = key_bytes + struct.pack(">q", start)
    return struct.pack(">q", timestamp) + bytes((side,)) + raw_key


def closed_outer_records(tracker: JoinTracker, this_after_ms: int, before_ms: int, after_ms: int, grace_ms: int,
                         session_keys: bool = False):
    """``emitNonJoinedOuterRecords`` (with no emit interval): the pending entries whose window
    closed, as ``[(timestamp, side, raw key, key, value)]`` in emission order (:func:`outer_store_order`,
    ``session_keys`` as there), removed from ``tracker.outer``; ``tracker.min_time`` updated.
    ``this_after_ms`` is the calling side's ``after`` (the left side's is the windows' ``after``, the
    right side's their ``before``)."""
    if jlong(tracker.min_time + this_after_ms + grace_ms) >= tracker.stream_time:
        return []
    tracker.min_time = LONG_MAX
    emitted = []
    open_sides: set[int] = set()
    previous = None
    finished = False
    for store_key in sorted(tracker.outer, key=lambda entry: outer_store_order(entry, session_keys)):
        timestamp, side, raw_key = store_key
        for key, value in tracker.outer[store_key]:
            tracker.min_time = timestamp
            if len(open_sides) == 2:
                finished = True
                break
            look_back = after_ms if side == LEFT else before_ms
            if jlong(timestamp + look_back + grace_ms) >= tracker.stream_time:
                open_sides.add(side)
                continue
            emitted.append((timestamp, side, raw_key, key, value))
            if previous is not None and previous != store_key:
                del tracker.outer[previous]
            previous = store_key
        if finished:
            break
    if previous is not None:
        del tracker.outer[previous]
    return emitted
