"""A user processor's session store (``Stores.persistent_session_store`` / ``in_memory_session_store``)
as Kafka Streams 4.3.1's ``RocksDBSessionStore`` (over its segmented bytes store) and
``InMemorySessionStore`` behave:

* the store's observed time is the largest session end ever put into it (a put of None included;
  ``remove`` too in the RocksDB store, not in the in-memory one); a session whose end is at most
  ``observed time - retention`` is gone: a put of it is skipped, and no read returns it;
* ``put(Windowed(key, Window(start, end)), value)`` stores the session, a value of None deletes it,
  as ``remove`` does;
* ``find_sessions(key, earliest_end, latest_start)`` returns the key's sessions with ``end >=
  earliest_end`` and ``start <= latest_start`` (and a key range with 4 arguments; ``fetch(key)``
  and ``fetch(key_from, key_to)`` are the same with no bound on time, None meaning unbounded), in
  the store's own order: the RocksDB store's by segment (``end // segment interval``) then the
  bytes of its store key (serialized key + 8-byte end + 8-byte start), the in-memory store's by end,
  then serialized key, then start *descending*; ``backward_*`` reverse that order;
* ``find_sessions(earliest_end, latest_end)`` (sessions of every key ending in that range) exists in
  the in-memory store only, as in Kafka Streams.

Reads return a snapshot (a list iterator): a write while iterating does not show in it. The content
is a task-level value of the task's state, ``{"time": observed time, "sessions": {(end, serialized
key, start): serialized value}}``, which survives a crash with the task's checkpoint; sessions that
can never be read again are dropped from it when the observed time moves.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Optional

from dagster_kstreams.processors.user_time_store import StoreEntry, TimeOrderedStore
from dagster_kstreams.topology.serdes import Window, Windowed

__all__ = ["SessionStore", "SessionStoreReads", "in_memory_session_order"]

_FOREVER = 2**63 - 1  # Long.MAX_VALUE


def in_memory_session_order(end: int, raw: bytes, start: int) -> tuple:
    """Where ``InMemorySessionStore`` returns a session (its maps: by end, then the serialized key's bytes,
    then start *descending*): the order of its reads, and of a window-close emit's fetch from it."""
    return end, raw, -start


class SessionStoreReads:
    """Kafka Streams' ``ReadOnlySessionStore`` reads, the same over a user session store and a session
    aggregation's store (:mod:`.user_dsl_session_store`): each says its observed time, retention and
    kind (``_time``, ``_retention``, ``_persistent``, ``_segment_interval``), which sessions it holds
    (``_candidates``) and one session's value (``_get``); the selection, retention and order are here."""

    name: str
    kind = "session store"
    _key_serde: Any

    def _time(self) -> int:
        raise NotImplementedError

    @property
    def _retention(self) -> int:
        raise NotImplementedError

    @property
    def _persistent(self) -> bool:
        raise NotImplementedError

    @property
    def _segment_interval(self) -> int:
        raise NotImplementedError

    def _candidates(self, low: Optional[bytes], high: Optional[bytes]) -> Iterable[tuple]:
        """``((end, serialized key, start), stored)`` of the sessions of keys in ``[low, high]`` (None:
        unbounded; a superset will do: the bounds are checked again)."""
        raise NotImplementedError

    def _get(self, end: int, raw: bytes, start: int) -> Any:
        """The session's value, or None."""
        raise NotImplementedError

    def _entry(self, raw: bytes, start: int, end: int, stored) -> StoreEntry:
        """What a read returns for a stored session."""
        raise NotImplementedError

    def _raw_key(self, key) -> bytes:
        if key is None:
            raise ValueError(f"{self.kind} {self.name}: the key cannot be null")
        return self._key_serde.serialize(key)

    def fetch_session(self, key, session_start_time: int, session_end_time: int):
        """The value of the key's session ``[start, end]`` (None: none, or expired)."""
        end = int(session_end_time)
        if end <= self._time() - self._retention:
            return None
        return self._get(end, self._raw_key(key), int(session_start_time))

    def find_sessions(self, *args) -> Iterator[StoreEntry]:
        """``(key, earliest_end, latest_start)``, ``(key_from, key_to, earliest_end, latest_start)``,
        or (in-memory stores) ``(earliest_end, latest_end)``: ``(Windowed(key, window), value)`` entries."""
        return iter(self._find(args, "find_sessions"))

    def backward_find_sessions(self, *args) -> Iterator[StoreEntry]:
        if len(args) == 2:
            raise TypeError(f"{self.kind} {self.name}: backward_find_sessions() takes 3 or 4 arguments")
        return iter(self._find(args, "backward_find_sessions")[::-1])

    def fetch(self, *args) -> Iterator[StoreEntry]:
        """``fetch(key)`` or ``fetch(key_from, key_to)``: every retained session of the key(s)."""
        return iter(self._fetch(args, "fetch"))

    def backward_fetch(self, *args) -> Iterator[StoreEntry]:
        return iter(self._fetch(args, "backward_fetch")[::-1])

    def _fetch(self, args: tuple, operation: str) -> list[StoreEntry]:
        if len(args) == 1:
            raw = self._raw_key(args[0])
            return self._select(raw, raw, 0, _FOREVER)
        if len(args) == 2:
            return self._select(self._bound(args[0]), self._bound(args[1]), 0, _FOREVER)
        raise TypeError(f"{self.kind} {self.name}: {operation}() takes 1 or 2 arguments, got {len(args)}")

    def _find(self, args: tuple, operation: str) -> list[StoreEntry]:
        if len(args) == 3:
            raw = self._raw_key(args[0])
            return self._select(raw, raw, int(args[1]), int(args[2]))
        if len(args) == 4:
            return self._select(self._bound(args[0]), self._bound(args[1]), int(args[2]), int(args[3]))
        if len(args) == 2:
            if self._persistent:
                raise NotImplementedError(f"{self.kind} {self.name}: find_sessions(earliest_end, latest_end) is "
                                          "not supported by a persistent session store (Kafka Streams: "
                                          "UnsupportedOperationException); use an in-memory one")
            return self._select(None, None, int(args[0]), _FOREVER, latest_end=int(args[1]))
        raise TypeError(f"{self.kind} {self.name}: {operation}() takes 2, 3 or 4 arguments, got {len(args)}")

    def _bound(self, key) -> Optional[bytes]:
        return None if key is None else self._key_serde.serialize(key)

    def _select(self, low: Optional[bytes], high: Optional[bytes], earliest_end: int, latest_start: int,
                latest_end: int = _FOREVER) -> list[StoreEntry]:
        """A snapshot of the selected sessions, in the store's order."""
        if low is not None and high is not None and low > high:
            return []  # "Returning empty iterator for fetch with invalid key range: from > to."
        first_end = max(earliest_end, self._time() - self._retention + 1)
        found = [(end, raw, start, stored) for (end, raw, start), stored in self._candidates(low, high)
                 if first_end <= end <= latest_end and start <= latest_start
                 and (low is None or raw >= low) and (high is None or raw <= high)]
        found.sort(key=self._order)
        return [self._entry(raw, start, end, stored) for end, raw, start, stored in found]

    def _order(self, entry) -> tuple:
        end, raw, start, _ = entry
        if not self._persistent:
            return in_memory_session_order(end, raw, start)
        return (end // self._segment_interval,
                raw + end.to_bytes(8, "big", signed=True) + start.to_bytes(8, "big", signed=True))


class SessionStore(SessionStoreReads, TimeOrderedStore):
    kind = "session store"
    entries = "sessions"

    # -- writes ----------------------------------------------------------------------------
    def put(self, session_key: Windowed, aggregate) -> None:
        """Store ``aggregate`` for the session (None deletes it)."""
        end, raw, start = self._store_key(session_key, "put")
        self._observe(end)
        if end <= self._content["time"] - self._supplier.retention_ms:
            return  # "Skipping record for expired segment."
        if aggregate is None:
            self._content["sessions"].pop((end, raw, start), None)
        else:
            self._content["sessions"][(end, raw, start)] = self._value_serde.serialize(aggregate)

    def remove(self, session_key: Windowed) -> None:
        end, raw, start = self._store_key(session_key, "remove")
        if self._supplier.persistent:  # the segmented store takes the time of a delete too
            self._observe(end)
        self._content["sessions"].pop((end, raw, start), None)

    # -- internals -----------------------------------------------------------------------------
    def _store_key(self, session_key: Windowed, operation: str) -> tuple:
        if not isinstance(session_key, Windowed) or session_key.window is None:
            raise TypeError(f"session store {self.name}: {operation}() takes Windowed(key, Window(start, end)), "
                            f"got {session_key!r}")
        window = session_key.window
        return int(window.end), self._raw_key(session_key.key), int(window.start)

    def _time(self) -> int:
        return self._content["time"]

    @property
    def _retention(self) -> int:
        return self._supplier.retention_ms

    @property
    def _persistent(self) -> bool:
        return self._supplier.persistent

    @property
    def _segment_interval(self) -> int:
        return self._supplier.segment_interval_ms

    def _candidates(self, low, high):
        return self._content["sessions"].items()

    def _get(self, end: int, raw: bytes, start: int):
        data = self._content["sessions"].get((end, raw, start))
        return None if data is None else self._value_serde.deserialize(data)

    def _entry(self, raw: bytes, start: int, end: int, stored) -> StoreEntry:
        return StoreEntry(Windowed(self._key_serde.deserialize(raw), Window(start, end)),
                          self._value_serde.deserialize(stored))
