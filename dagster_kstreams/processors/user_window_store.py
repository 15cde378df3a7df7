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

The content is a task-level value of the task's state: ``{"time": observed time, "windows":
{(start, serialized key): serialized value}}``. Duplicates (``retain_duplicates``) are refused at
definition time.
"""

from __future__ import annotations

from typing import Any, Iterator, NamedTuple, Optional

from dagster_kstreams.topology.serdes import Window, Windowed

__all__ = ["WindowStore"]

_NO_TIME = -1
_SEQUENCE_NUMBER = (0).to_bytes(4, "big")  # no duplicates: always 0 (WindowKeySchema.toStoreKeyBinary)


class _Entry(NamedTuple):
    key: Any
    value: Any


class WindowStore:
    def __init__(self, name: str, key_serde, value_serde, supplier, content: dict):
        self.name = name
        self._key_serde, self._value_serde = key_serde, value_serde
        self._supplier = supplier
        content.setdefault("time", _NO_TIME)
        content.setdefault("windows", {})
        self._content = content

    # -- writes ----------------------------------------------------------------------------
    def put(self, key, value, window_start_timestamp: int) -> None:
        raw = self._raw_key(key)
        start = int(window_start_timestamp)
        self._content["time"] = max(self._content["time"], start)
        if start <= self._content["time"] - self._supplier.retention_ms:
            return  # "Skipping record for expired segment."
        windows = self._content["windows"]
        if value is None:
            windows.pop((start, raw), None)
        else:
            windows[(start, raw)] = self._value_serde.serialize(value)

    # -- reads -----------------------------------------------------------------------------
    def fetch(self, *args):
        """``fetch(key, start)`` -> value; ``fetch(key, time_from, time_to)`` -> ``(start, value)``
        entries; ``fetch(key_from, key_to, time_from, time_to)`` -> ``(Windowed(key), value)`` entries."""
        if len(args) == 2:
            key, start = args
            if start <= self._content["time"] - self._supplier.retention_ms:
                return None
            data = self._content["windows"].get((int(start), self._raw_key(key)))
            return None if data is None else self._value_serde.deserialize(data)
        if len(args) == 3:
            return iter(self._single_key(*args))
        if len(args) == 4:
            return iter(self._ranged(*args))
        raise TypeError(f"window store {self.name}: fetch() takes 2, 3 or 4 arguments, got {len(args)}")

    def backward_fetch(self, *args):
        if len(args) == 3:
            return iter(self._single_key(*args)[::-1])
        if len(args) == 4:
            return iter(self._ranged(*args)[::-1])
        raise TypeError(f"window store {self.name}: backward_fetch() takes 3 or 4 arguments, got {len(args)}")

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[_Entry]:
        return iter(self._ranged(None, None, time_from, time_to))

    def backward_fetch_all(self, time_from: int, time_to: int) -> Iterator[_Entry]:
        return iter(self._ranged(None, None, time_from, time_to)[::-1])

    def all(self) -> Iterator[_Entry]:
        return iter(self._ranged(None, None, 0, None))

    def backward_all(self) -> Iterator[_Entry]:
        return iter(self._ranged(None, None, 0, None)[::-1])

    # -- internals -----------------------------------------------------------------------------
    def _raw_key(self, key) -> bytes:
        if key is None:
            raise ValueError(f"window store {self.name}: the key cannot be null")
        return self._key_serde.serialize(key)

    def _visible(self, time_from: int, time_to: Optional[int]):
        """``(start, raw key, data)`` of the windows in ``[time_from, time_to]`` still retained."""
        low = max(int(time_from), self._content["time"] - self._supplier.retention_ms + 1)
        return [(start, raw, data) for (start, raw), data in self._content["windows"].items()
                if start >= low and (time_to is None or start <= time_to)]

    def _single_key(self, key, time_from: int, time_to: int) -> list[_Entry]:
        raw_key = self._raw_key(key)
        found = sorted((start, data) for start, raw, data in self._visible(time_from, time_to) if raw == raw_key)
        return [_Entry(start, self._value_serde.deserialize(data)) for start, data in found]

    def _ranged(self, key_from, key_to, time_from: int, time_to: Optional[int]) -> list[_Entry]:
        low = None if key_from is None else self._raw_key(key_from)
        high = None if key_to is None else self._raw_key(key_to)
        found = [(start, raw, data) for start, raw, data in self._visible(time_from, time_to)
                 if (low is None or raw >= low) and (high is None or raw <= high)]
        found.sort(key=self._order)
        size = self._supplier.window_size_ms
        return [_Entry(Windowed(self._key_serde.deserialize(raw), Window(start, start + size)),
                       self._value_serde.deserialize(data)) for start, raw, data in found]

    def _order(self, entry) -> tuple:
        start, raw, _ = entry
        if not self._supplier.persistent:
            return start, raw  # InMemoryWindowStore: segment map by start, then the key bytes
        return start // self._supplier.segment_interval_ms, raw + start.to_bytes(8, "big", signed=True) + _SEQUENCE_NUMBER
