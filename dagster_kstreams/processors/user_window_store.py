"""A user processor's window store (``Stores.persistent_window_store`` / ``in_memory_window_store``)
as Kafka Streams 4.3.1's ``RocksDBWindowStore`` and ``InMemoryWindowStore`` behave:

* the store's observed time is the largest window start ever put into it (a delete included);
  a window whose start is at most ``observed time - retention`` is gone: a put of it is skipped,
  and no read returns it;
* a put of None deletes the key's window;
* ``fetch(key, from, to)`` returns the key's windows by start; ranges over keys and ``all()``
  return them in the store's own order: the in-memory store's by window start then serialized key,
  the RocksDB store's by segment (``start // segment interval``) then the bytes of its store key
  (serialized key + 8-byte start + 4-byte sequence number), which is not the key order when keys
  differ in length. ``backward_*`` reverse that order.

With ``retain_duplicates`` every put is kept under a sequence number, the store's count of puts
(``(n + 1) & 0x7FFFFFFF``, the first put is 1): a key's values of one window come back in the order
they were put; a put of None changes nothing (the in-memory store still takes its time as observed,
the RocksDB store does not); the RocksDB store numbers every put, an expired one too, the in-memory
store only those it keeps. ``fetch(key, start)`` finds, as in Kafka Streams, only the RocksDB
store's entry under the current sequence number (the in-memory store's: none). The in-memory
store orders a range by window start then serialized key + 4-byte sequence number.

The content is a task-level value of the task's state: ``{"time": observed time, "seqnum": last
sequence number, "windows": {(start, serialized key[, sequence number]): serialized value}}`` (the
sequence number only with duplicates). It survives a crash with the task's checkpoint, sequence
number included: Kafka Streams restarts its count at 0 when it reopens a store (an entry of the same
key, start and number is then overwritten); a rerun here continues as an uninterrupted run does.
Windows that no read can return any more are dropped from it when the observed time moves.
"""

from __future__ import annotations

from typing import Optional

from dagster_kstreams.processors.user_time_store import StoreEntry, TimeOrderedStore, WindowStoreReads
from dagster_kstreams.topology.serdes import Window, Windowed

__all__ = ["WindowStore"]

_MAX_SEQUENCE_NUMBER = 0x7FFFFFFF


class WindowStore(WindowStoreReads, TimeOrderedStore):
    kind = "window store"
    entries = "windows"

    def __init__(self, name: str, key_serde, value_serde, supplier, content: dict):
        super().__init__(name, key_serde, value_serde, supplier, content)
        content.setdefault("seqnum", 0)
        self._duplicates = supplier.retain_duplicates

    # -- writes ----------------------------------------------------------------------------
    def put(self, key, value, window_start_timestamp: int) -> None:
        raw = self._raw_key(key)
        start = int(window_start_timestamp)
        persistent = self._supplier.persistent
        if self._duplicates and value is None:
            if not persistent:  # InMemoryWindowStore takes the time before it skips the no-op delete
                self._observe(start)
            return
        self._observe(start)
        expired = start <= self._content["time"] - self._supplier.retention_ms
        if self._duplicates and (persistent or not expired):
            self._content["seqnum"] = (self._content["seqnum"] + 1) & _MAX_SEQUENCE_NUMBER
        if expired:
            return  # "Skipping record for expired segment."
        windows = self._content["windows"]
        store_key = self._store_key(start, raw, self._content["seqnum"])
        if value is None:
            windows.pop(store_key, None)
        else:
            windows[store_key] = self._value_serde.serialize(value)

    # -- reads -----------------------------------------------------------------------------
    def _fetch_window(self, key, start):
        if start <= self._content["time"] - self._supplier.retention_ms:
            return None
        if self._duplicates and not self._supplier.persistent:
            return None  # InMemoryWindowStore looks the key up without its sequence number
        data = self._content["windows"].get(self._store_key(int(start), self._raw_key(key), self._content["seqnum"]))
        return None if data is None else self._value_serde.deserialize(data)

    # -- internals -----------------------------------------------------------------------------
    def _store_key(self, start: int, raw: bytes, seqnum: int) -> tuple:
        return (start, raw, seqnum) if self._duplicates else (start, raw)

    def _visible(self, time_from: int, time_to: Optional[int]):
        """``(start, raw key, sequence number, data)`` of the windows in ``[time_from, time_to]`` still retained."""
        low = max(int(time_from), self._content["time"] - self._supplier.retention_ms + 1)
        return [(store_key[0], store_key[1], store_key[2] if self._duplicates else 0, data)
                for store_key, data in self._content["windows"].items()
                if store_key[0] >= low and (time_to is None or store_key[0] <= time_to)]

    def _single_key(self, key, time_from: int, time_to: int) -> list[StoreEntry]:
        raw_key = self._raw_key(key)
        found = sorted((start, seqnum, data) for start, raw, seqnum, data in self._visible(time_from, time_to)
                       if raw == raw_key)
        return [StoreEntry(start, self._value_serde.deserialize(data)) for start, _, data in found]

    def _ranged(self, key_from, key_to, time_from: int, time_to: Optional[int]) -> list[StoreEntry]:
        low = None if key_from is None else self._raw_key(key_from)
        high = None if key_to is None else self._raw_key(key_to)
        found = [entry for entry in self._visible(time_from, time_to)
                 if (low is None or entry[1] >= low) and (high is None or entry[1] <= high)]
        if self._duplicates and not self._supplier.persistent:  # the key map's bounds carry sequence numbers
            found = [entry for entry in found
                     if (low is None or entry[1] + _seq(entry[2]) >= low + _seq(0))
                     and (high is None or entry[1] + _seq(entry[2]) <= high + _seq(_MAX_SEQUENCE_NUMBER))]
        found.sort(key=self._order)
        size = self._supplier.window_size_ms
        return [StoreEntry(Windowed(self._key_serde.deserialize(raw), Window(start, start + size)),
                       self._value_serde.deserialize(data)) for start, raw, _, data in found]

    def _order(self, entry) -> tuple:
        # ``//`` floors where Kafka Streams' segmentId divides toward zero: they differ for a negative
        # start only, which no range read returns (its Window is refused) and a key's fetch orders by start.
        start, raw, seqnum, _ = entry
        if not self._supplier.persistent:  # InMemoryWindowStore: segment map by start, then the key bytes
            return start, (raw + _seq(seqnum) if self._duplicates else raw)
        return start // self._supplier.segment_interval_ms, raw + start.to_bytes(8, "big", signed=True) + _seq(seqnum)


def _seq(seqnum: int) -> bytes:
    """A sequence number as Kafka Streams appends it to a key (``putInt``: 4 bytes, big-endian)."""
    return seqnum.to_bytes(4, "big")
