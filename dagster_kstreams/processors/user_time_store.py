"""What a user processor's window store and session store share (:mod:`.user_window_store`,
:mod:`.user_session_store`): their serdes and supplier, a content dict holding the store's observed
time, and the retention that drops what no read can return any more.

Both stores keep their entries in ``content[entries]`` under tuple keys whose first element is the
entry's time (a window's start, a session's end); the observed time is the largest time put, and
an entry whose time is at most ``observed time - retention`` is gone, as in Kafka Streams' segmented
and in-memory stores. The content is a task-level value of the task's state (it survives a crash
with the task's checkpoint), so a store is only a view over it.
"""

from __future__ import annotations

from typing import Any, Iterator, NamedTuple, Optional

__all__ = ["NO_TIME", "StoreEntry", "TimeOrderedStore", "WindowStoreReads"]

NO_TIME = -1  # the observed time of a store nothing was put into


class StoreEntry(NamedTuple):
    """A ``KeyValue`` of a range read: ``(Windowed(key, window), value)``, or ``(start, value)``."""
    key: Any
    value: Any


class TimeOrderedStore:
    """The shared constructor and retention of the user window and session stores.

    ``kind`` names the store in its errors (``"window store <name>: ..."``); ``entries`` is the
    content's field that holds the entries.
    """

    kind = "store"
    entries = "entries"

    def __init__(self, name: str, key_serde, value_serde, supplier, content: dict):
        self.name = name
        self._key_serde, self._value_serde = key_serde, value_serde
        self._supplier = supplier
        content.setdefault("time", NO_TIME)
        content.setdefault(self.entries, {})
        self._content = content

    def _raw_key(self, key) -> bytes:
        if key is None:
            raise ValueError(f"{self.kind} {self.name}: the key cannot be null")
        return self._key_serde.serialize(key)

    def _observe(self, time: int) -> None:
        """Take ``time`` as observed; drop the entries no read can return any more (bounded state)."""
        if time > self._content["time"]:
            self._content["time"] = time
            low = time - self._supplier.retention_ms
            stored_entries = self._content[self.entries]
            for stored in [stored for stored in stored_entries if stored[0] <= low]:
                del stored_entries[stored]


class WindowStoreReads:
    """Kafka Streams' ``ReadOnlyWindowStore`` reads, the same over a user window store and a
    windowed aggregation's store (:mod:`.user_window_store`, :mod:`.user_dsl_window_store`): each
    gives one window (``_fetch_window``), one key's windows in time order (``_single_key``) and a
    key range's (``_ranged``, the store's own order), as sorted lists; the backward forms reverse them."""

    name: str

    def _fetch_window(self, key, start: int) -> Any:
        raise NotImplementedError

    def _single_key(self, key, time_from: int, time_to: int) -> list[StoreEntry]:
        raise NotImplementedError

    def _ranged(self, key_from, key_to, time_from: int, time_to: Optional[int]) -> list[StoreEntry]:
        raise NotImplementedError

    def _key_range(self, key_from, key_to, time_from: int, time_to: int) -> list[StoreEntry]:
        """What ``fetch`` with four arguments reads: :meth:`_ranged`, unless the store answers key
        ranges through a key index of its own, in that index's order."""
        return self._ranged(key_from, key_to, time_from, time_to)

    def fetch(self, *args):
        """``fetch(key, start)`` -> the window's value; ``fetch(key, time_from, time_to)`` -> ``(start,
        value)`` entries; ``fetch(key_from, key_to, time_from, time_to)`` -> ``(Windowed(key), value)`` entries."""
        if len(args) == 2:
            return self._fetch_window(*args)
        if len(args) == 3:
            return iter(self._single_key(*args))
        if len(args) == 4:
            return iter(self._key_range(*args))
        raise TypeError(f"window store {self.name}: fetch() takes 2, 3 or 4 arguments, got {len(args)}")

    def backward_fetch(self, *args):
        if len(args) == 3:
            return iter(self._single_key(*args)[::-1])
        if len(args) == 4:
            return iter(self._key_range(*args)[::-1])
        raise TypeError(f"window store {self.name}: backward_fetch() takes 3 or 4 arguments, got {len(args)}")

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[StoreEntry]:
        return iter(self._ranged(None, None, time_from, time_to))

    def backward_fetch_all(self, time_from: int, time_to: int) -> Iterator[StoreEntry]:
        return iter(self._ranged(None, None, time_from, time_to)[::-1])

    def all(self) -> Iterator[StoreEntry]:
        return iter(self._ranged(None, None, 0, None))

    def backward_all(self) -> Iterator[StoreEntry]:
        return iter(self._ranged(None, None, 0, None)[::-1])
