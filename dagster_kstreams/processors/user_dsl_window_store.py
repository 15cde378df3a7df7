"""A time- or sliding-windowed aggregation's store as a user processor sees it: ``process(supplier,
"counts")`` on the store of ``windowed_by(TimeWindows... | SlidingWindows...).count(Materialized.as_(
"counts"))`` (Kafka Streams 4.3.1's ``TimestampedWindowStore`` behind
``TimestampedWindowStoreReadWriteDecorator``, over the RocksDB window store the DSL builds:
``persistentTimestampedWindowStore``; a sliding window's end is its start plus the time difference).

The view reads and writes the aggregation's own windows, not a copy: a key's windows are the
aggregation's slot of the key's group in the task's state (``{start: (aggregate, timestamp)}``,
:mod:`.window_store`; a sub-topology with a user processor runs task-grouped), so what a processor
puts is what the next record of the window aggregates onto, within a batch, across batches and after
a rerun from the checkpoint. Retention as the store's: its observed time is the largest window start
ever put into it, by the aggregation or a processor (a delete included), kept in the task's state
once a processor names the store (``_WindowAggregate.observes_store_time``); a window whose start is
at most ``observed time - retention`` is gone: no read returns it, a put of it is skipped. The
aggregation then keeps the store's own retention too (sliding windows: not the wider one it keeps by
its stream time otherwise), so its reads agree with the processor's. A cogroup's inputs share the
key's slot and that observed time (:mod:`.own_stream_time`), so a write during any input's record is
what every input reads next; the view writes through the first input's processor.

Emitting on window close (``EmitStrategy.on_window_close()``), the aggregation's store is Kafka Streams'
time-ordered one instead (``RocksDBTimeOrderedWindowStore``): its observed time is the same, but a
window starting at ``observed time - retention`` itself is still returned, and ranges come by start,
then key; a sliding aggregation's store also keeps a key index (time windows': none), through which
key ranges (``fetch`` with four arguments) come in the segmented store's order. A processor's write is
what the window-close emit then fetches: a put into a window not closed yet goes out with the put's
value and timestamp when it closes (a new window too), a delete takes the window out of the emit, a
write into a window already emitted is never forwarded (:meth:`~.windows._WindowAggregate.write_window`
notes it in :class:`~.window_close.ClosedWindows`). Emitting on window close from a store kept in memory
(Kafka Streams' in-memory DSL suppliers ignore the emit strategy: a plain ``InMemoryWindowStore``, with no
key index), the reads are the in-memory store's below, and its cut: a window starting at the store's time
minus its retention is neither returned nor kept (``ClosedWindows.in_memory``). Emitting on window close from
a timestamped RocksDB supplier's store (``Stores.persistent_timestamped_window_store``: Kafka Streams keeps the
supplier's segmented ``RocksDBTimestampedWindowStore``, with no key index), the reads are the segmented store's
below with that same cut (``observed time - retention + 1``: ``getActualFrom``; a put below it into a live
segment is kept where no read or emit reaches it), the segments the supplier's (``ClosedWindows.segment_interval``).
The processor is then one beside the aggregation, running between its emits (:mod:`.store_suppliers` refuses
one downstream of it).

Values are :class:`~dagster_kstreams.topology.processor_api.ValueAndTimestamp`; reads give a copy
made through the store's value serde, writes store one. Single-key reads return ``(start, value)``
entries by start; key ranges, ``fetch_all`` and ``all`` return ``(Windowed(key, window), value)`` in
the RocksDB store's order: by segment (``start // segment interval``, the DSL's ``max(retention / 2,
60 s)``), then the bytes of its store key (serialized key + 8-byte start + 4-byte sequence number 0).
``backward_*`` reverse that order. A time-windowed aggregation's store kept in memory (its supplier's,
``with_store_type`` or ``default.dsl.store=in_memory``: ``InMemoryWindowStore``) iterates by start, then
the serialized key, with the same retention cut; a sliding record's own iterator over it is live, so a
window the processor's writes or reads cut from the map while the record's windows are forwarded is not
reached (:meth:`~.window_store._Sliding._live_windows`). A write goes through the aggregation's own
:meth:`~.windows._WindowAggregate.write_window`: uncached, it forwards nothing (Kafka Streams' store,
written by another processor, forwards nothing); cached, the window's final value is forwarded at the
batch's flush as the aggregation's own update.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.user_dsl_view import DslStoreView
from dagster_kstreams.processors.user_time_store import StoreEntry, WindowStoreReads
from dagster_kstreams.processors.window_store import dsl_segment_interval
from dagster_kstreams.topology.processor_api import ValueAndTimestamp
from dagster_kstreams.topology.serdes import Window, Windowed

__all__ = ["TimestampedWindowStore", "observed_time_key"]

def observed_time_key(store: str) -> str:
    """The task-level value that holds the observed time of a windowed DSL store a processor names."""
    return f"dsl.window_time.{store}"


class TimestampedWindowStore(DslStoreView, WindowStoreReads):
    """A user processor's view of a time- or sliding-windowed aggregation's store (:class:`~.user_dsl_view.DslStoreView`;
    ``owner``: the aggregation, its slot, size, retention and :meth:`write_window`)."""

    kind = "window store"

    def __init__(self, name: str, key_serde, value_serde, owner, store_key_serde, task,
                 write_context: Callable[[Optional[int]], Any]):
        super().__init__(name, key_serde, value_serde, owner, store_key_serde, task, write_context)
        # a RocksDB supplier's store emitting on close is the segmented one of its supplier's interval
        self._segment_interval = owner.closed_segment_interval or dsl_segment_interval(owner.retention)

    # -- writes ----------------------------------------------------------------------------
    def put(self, key, value_and_timestamp: Optional[ValueAndTimestamp], window_start_timestamp: int) -> None:
        """Store the window's value with its timestamp (None, or a None value: delete the window)."""
        if value_and_timestamp is not None and not isinstance(value_and_timestamp, ValueAndTimestamp):
            raise TypeError(f"window store {self.name}: put() takes a ValueAndTimestamp (ValueAndTimestamp.make("
                            f"value, timestamp)), got {type(value_and_timestamp).__name__}")
        start = int(window_start_timestamp)
        group = self._group(key)
        self._owner.observe_put(self._task, start)
        if start < self._low():
            return  # Kafka Streams: "Skipping record for expired segment." (or kept where no read finds it)
        value = None if value_and_timestamp is None else value_and_timestamp.value()
        if value is None:
            self._owner.write_window(key, start, None, None, self._write_context(None), group)
        else:
            timestamp = value_and_timestamp.timestamp()
            self._owner.write_window(key, start, self._copy(value), timestamp, self._write_context(timestamp), group)

    # -- reads -----------------------------------------------------------------------------
    def _fetch_window(self, key, start):
        """The window's ``ValueAndTimestamp``, or None."""
        start = int(start)
        if start < self._read_from():
            return None
        window = self._windows(self._group(key)).get(start)
        return None if window is None else self._read(window)

    # -- internals -----------------------------------------------------------------------------
    def _windows(self, group) -> dict:
        windows = group.values[self._owner.state_slot]
        return {} if windows is ABSENT else windows

    def _low(self) -> int:
        """The smallest window start the store still returns."""
        return self._owner.first_returned_start(self._task)

    def _read_from(self) -> int:
        """The smallest window start a read returns; the read is an operation on the store (an in-memory
        one cuts its map: :class:`~.window_store.RemovalCut`, which a sliding record's open iterator sees)."""
        self._owner.note_store_operation(self._task)
        return self._low()

    def _order(self, start: int, raw_key: bytes, key_first: bool) -> tuple:
        """Where a window lies in the store's order; in the RocksDB store: by segment, then the bytes of its store key
        (serialized key + 8-byte start + 4-byte sequence number 0); in the time-ordered store of an
        aggregation emitting on window close (``RocksDBTimeOrderedWindowStore``, whose key puts the start
        first), by start, then serialized key + sequence number, unless ``key_first``: a key range read
        through that store's key index, whose keys are the segmented store's in the same segments; in an
        in-memory store (a supplier's, ``default.dsl.store=in_memory``): by start, then serialized key. A
        timestamped RocksDB supplier's store emitting on close is the segmented store still (no key index)."""
        if self._owner.store_in_memory:  # InMemoryWindowStore (emitting on close too): by start, then key bytes
            return start, raw_key
        time_ordered = self._owner.emit_on_close and self._owner.closed_segment_interval is None
        if time_ordered and not key_first:
            return start, raw_key + bytes(4)
        return start // self._segment_interval, raw_key + start.to_bytes(8, "big", signed=True) + bytes(4)

    def _key_range(self, key_from, key_to, time_from: int, time_to: int) -> list[StoreEntry]:
        """A key range (``fetch``/``backward_fetch`` with four arguments): a sliding aggregation's
        time-ordered store reads it through its key index (``IndexToBaseStoreIterator``: index segment by
        segment, each window's value from the time-first keys, so with the same retention cut)."""
        return self._ranged(key_from, key_to, time_from, time_to, key_first=self._owner.key_indexed_on_close)

    def _read(self, window: tuple) -> ValueAndTimestamp:
        aggregate, timestamp = window
        return ValueAndTimestamp(self._copy(aggregate), timestamp)

    def _single_key(self, key, time_from: int, time_to: int) -> list[StoreEntry]:
        low, high = max(int(time_from), self._read_from()), int(time_to)
        windows = self._windows(self._group(key))
        return [StoreEntry(start, self._read(windows[start])) for start in sorted(windows) if low <= start <= high]

    def _ranged(self, key_from, key_to, time_from: int, time_to: Optional[int],
                key_first: bool = False) -> list[StoreEntry]:
        """A snapshot of the windows of keys in ``[key_from, key_to]`` (None: unbounded) starting in
        ``[time_from, time_to]``, in the RocksDB store's order (``key_first``: :meth:`_order`)."""
        low_key = None if key_from is None else self._key_serde.serialize(key_from)
        high_key = None if key_to is None else self._key_serde.serialize(key_to)
        low = max(int(time_from), self._read_from())
        found = []
        for raw_group_key, windows in self._task.slot_entries(self._owner.state_slot):
            key = self._store_key_serde.deserialize(raw_group_key)
            raw = self._key_serde.serialize(key)
            if (low_key is not None and raw < low_key) or (high_key is not None and raw > high_key):
                continue
            found += [(start, raw, key, window) for start, window in windows.items()
                      if start >= low and (time_to is None or start <= time_to)]
        found.sort(key=lambda entry: self._order(entry[0], entry[1], key_first))
        size = self._owner.size
        return [StoreEntry(Windowed(key, Window(start, start + size)), self._read(window))
                for start, _, key, window in found]
