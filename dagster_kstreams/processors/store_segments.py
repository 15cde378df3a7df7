"""The segment of a time in Kafka Streams' segmented stores (4.3.1's ``AbstractSegments.segmentId``).

A RocksDB window or session store keeps its entries in segments of ``segment interval`` ms each, and
its range reads go segment by segment, so the segment decides the order of what they return. Java
finds it by ``timestamp / segmentInterval``, a long division that truncates toward zero, where Python's
``//`` floors: the two differ for a negative time. A DSL window never starts before 0
(``TimeWindows.windowsFor`` and the sliding windows clamp at 0) and a session window cannot (``Window``
refuses a negative start), but a user processor's ``WindowStore.put(key, value, window_start)`` takes a
negative start as it comes: Kafka Streams files -5 in segment 0 beside the first positive starts (where
its store key's bytes sort it after them), -100 001 of a 100 000 ms interval in segment -1.
"""

from __future__ import annotations

__all__ = ["segment_id"]


def segment_id(timestamp: int, segment_interval: int) -> int:
    """``timestamp / segment_interval`` as Java divides longs: toward zero."""
    quotient = abs(timestamp) // segment_interval
    return quotient if timestamp >= 0 else -quotient
