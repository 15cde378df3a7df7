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

from typing import Any, NamedTuple

__all__ = ["NO_TIME", "StoreEntry", "TimeOrderedStore"]

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
