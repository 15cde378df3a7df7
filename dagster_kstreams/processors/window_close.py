"""``EmitStrategy.on_window_close()`` of a time-windowed aggregation: which windows Kafka Streams
4.3.1 forwards, and when (``AbstractKStreamTimeWindowAggregateProcessor.maybeForwardFinalResult``
with ``KStreamWindowAggregate``'s emit range, over its time-ordered window store).

After every record with a key (late or not), with ``close = stream time - grace``:

* nothing happens unless ``close`` moved past the close time of the last emission
  (``last_emit``; Kafka Streams keeps it in its committed processor metadata, the runner in the
  task's state);
* the emit range of window starts is ``[lower, upper]`` with ``upper = close - size`` (skipped
  when negative) and ``lower = 0`` on the first emission, else ``max(0, last_emit - size) + 1``.
  When the windows containing ``upper`` are those containing ``lower - 1`` no new window closed:
  nothing is emitted and ``last_emit`` stays;
* otherwise every stored window whose start lies in the range is forwarded, in the store's order
  (start, then the serialized key's bytes), and ``last_emit = close``. The store only returns
  windows whose start is at least its own observed time (the largest window start ever put into
  it, all keys) minus its retention: a window that stream time jumped over by more than that
  before it closed is never emitted, as in Kafka Streams. A store kept in memory (a supplier's,
  ``with_store_type("in_memory")``, ``default.dsl.store=in_memory``: Kafka Streams' in-memory DSL
  suppliers ignore the emit strategy, so the emit fetches from a plain ``InMemoryWindowStore``) returns
  the same windows in the same order but one start less: from its observed time minus the retention
  plus 1 (``fetchAll`` adds one, as records expire exactly a retention after they are created), so a
  window closing just as the store's time reaches its start plus the retention is never emitted.
  A RocksDB supplier's store (``Materialized.as_(Stores.persistent_[timestamped_]window_store(...))``:
  Kafka Streams emits from the supplier's ``RocksDBWindowStore``, not the time-ordered one) returns the
  same windows as the in-memory one (``AbstractRocksDBSegmentedBytesStore.fetchAll`` starts at its
  observed time minus the retention plus 1 too; a segment expires whole only below that) in its own
  order: segment by segment (``start // segment interval``; ``Stores``' ``max(retention / 2, 60 s)``),
  and within a segment by the bytes of its store key (``WindowKeySchema``: serialized key, 8-byte
  start, 4-byte sequence number), so by key, then start.

Sliding windows (``KStreamSlidingWindowAggregate``) follow the same steps with their own range
and trigger: the check runs only after a record that was aggregated (a key and a value, not late:
``timestamp + difference >= close``, and not early: ``timestamp >= difference``; Kafka Streams
returns before the check for the others), and the range is ``[lower, upper]`` with
``upper = close - difference - 1`` (skipped when negative) and ``lower = 0`` on the first emission,
else ``max(0, last_emit - difference)``, fetched whatever it holds.

Kafka Streams throttles this check to once per ``emit.interval.ms.kstreams.windowed.aggregation``
of wall-clock time (1 s by default, an internal setting): the runner checks after every record,
which is Kafka Streams with that interval set to 0 (README, "Semantics that differ").

:class:`ClosedWindows` is the task-level state behind it: the windows not emitted yet (an index
of the per-key window stores, which keep the aggregates) and the two times. A user processor's writes
to the store reach it too (``windows._WindowAggregate.write_window``), so the emit fetches what the
processor wrote, as Kafka Streams' does from the one store. Pure logic.
"""

from __future__ import annotations

from typing import Any, Optional

from dagster_kstreams.topology.windows import TimeWindows

__all__ = ["ClosedWindows", "supplier_segment_interval"]

_SEQNUM = b"\x00\x00\x00\x00"  # a window store key's sequence number (no duplicates kept)


def supplier_segment_interval(store) -> Optional[int]:
    """The segment interval of ``store``'s RocksDB supplier (a ``StateStoreSpec``), whose segmented
    store the emit then fetches from; None: the time-ordered store or one kept in memory."""
    supplier = store.supplier
    return supplier.segment_interval_ms if supplier is not None and supplier.persistent else None


class ClosedWindows:
    """What emit-on-window-close needs across the keys of one windowed aggregation in one task."""

    in_memory = False  # an InMemoryWindowStore's: one start less returned (visible_from)
    segment_interval: Optional[int] = None  # a RocksDB supplier's segmented store's: its order, one start less

    def __init__(self, in_memory: bool = False, segment_interval: Optional[int] = None) -> None:
        if in_memory:
            self.in_memory = True
        if segment_interval is not None:
            self.segment_interval = segment_interval
        self.last_emit = -1  # lastEmitWindowCloseTime (ConsumerRecord.NO_TIMESTAMP: none yet)
        self.store_time = -1  # the window store's observed stream time: the largest window start put
        # window start -> {serialized key: (source key bytes, key)}: stored windows not emitted yet
        self.pending: dict[int, dict[bytes, tuple[Optional[bytes], Any]]] = {}

    def visible_from(self, retention_ms: int) -> int:
        """The smallest window start the store still returns (the time-ordered RocksDB store's bound is
        inclusive; ``InMemoryWindowStore`` and the segmented RocksDB store add one)."""
        time_ordered = not self.in_memory and self.segment_interval is None
        return self.store_time - retention_ms + (0 if time_ordered else 1)

    def put(self, start: int, key_bytes: bytes, source_key: Optional[bytes], key, deleted: bool) -> None:
        """A window was written (``deleted``: its aggregate became null, so the store removed it)."""
        self.store_time = max(self.store_time, start)
        if deleted:
            keys = self.pending.get(start)
            if keys is not None:
                keys.pop(key_bytes, None)
                if not keys:
                    del self.pending[start]
        else:
            self.pending.setdefault(start, {})[key_bytes] = (source_key, key)

    def due(self, windows: TimeWindows, close_time: int, retention_ms: int) -> list[tuple[int, Optional[bytes], Any]]:
        """The windows to forward now, in order, as ``(start, source key bytes, key)``; forgets them."""
        last, size = self.last_emit, windows.size_ms
        if last != -1 and last >= close_time:
            return []
        upper = close_time - size
        if upper < 0:
            return []
        lower = 0 if last == -1 else max(0, last - size) + 1
        if last != -1 and windows.windows_for(upper) == windows.windows_for(lower - 1):
            return []
        return self._take(lower, upper, close_time, retention_ms)

    def due_sliding(self, time_difference_ms: int, close_time: int, retention_ms: int
                    ) -> list[tuple[int, Optional[bytes], Any]]:
        """As :meth:`due`, for sliding windows (the caller checks only after an aggregated record)."""
        last = self.last_emit
        if last != -1 and last >= close_time:
            return []
        upper = close_time - time_difference_ms - 1
        if upper < 0:
            return []
        lower = 0 if last == -1 else max(0, last - time_difference_ms)
        return self._take(lower, upper, close_time, retention_ms)

    def _take(self, lower: int, upper: int, close_time: int,
              retention_ms: int) -> list[tuple[int, Optional[bytes], Any]]:
        """The stored windows with a start in ``[lower, upper]`` that the store still returns, in its
        order; forgets every pending window up to ``upper``; ``last_emit = close_time``."""
        first = max(lower, self.visible_from(retention_ms))
        due = []
        for start in [start for start in self.pending if start <= upper]:
            keys = self.pending.pop(start)
            if start >= first:
                due.extend((start, key_bytes, source_key, key) for key_bytes, (source_key, key) in keys.items())
        due.sort(key=self._store_order)
        self.last_emit = close_time
        return [(start, source_key, key) for start, _, source_key, key in due]

    def _store_order(self, window: tuple) -> tuple:
        """Where ``(start, key bytes, ...)`` comes in the store's ``fetchAll``: by start, then key (the
        time-ordered and in-memory stores), or by segment, then the segmented store's key bytes."""
        start, key_bytes = window[0], window[1]
        if self.segment_interval is None:
            return start, key_bytes + _SEQNUM
        return start // self.segment_interval, key_bytes + start.to_bytes(8, "big", signed=True) + _SEQNUM
