"""A session aggregation's store as a user processor sees it: ``process(supplier, "sessions")`` on the
store of ``windowed_by(SessionWindows...).count(Materialized.as_("sessions"))`` (Kafka Streams 4.3.1's
``SessionStore`` behind ``SessionStoreReadWriteDecorator``, over the RocksDB session store the DSL
builds: ``persistentSessionStore``, segments of ``max(retention / 2, 60 s)``).

The view reads and writes the aggregation's own sessions, not a copy: a key's sessions are the
aggregation's slot of the key's group in the task's state (``((start, end, aggregate), ...)``,
:mod:`.sessions`; a sub-topology with a user processor runs task-grouped), so what a processor puts
is what the key's next record merges with, within a batch, across batches and after a rerun from the
checkpoint. Retention as the store's: its observed time is the largest session end ever put into or
removed from it, by the aggregation or a processor, kept in the task's state once a processor names
the store (``SessionWindowAggregate.observes_store_time``; an uncached in-memory store's ``remove``
leaves it); a session whose end is at most ``observed time - retention`` is gone: no read returns it,
a put of it is skipped. A store kept in memory (its supplier's, ``with_store_type("in_memory")`` or
``default.dsl.store=in_memory``: ``InMemorySessionStore``) reads by end, then key, then start
*descending*, and has ``find_sessions(earliest_end, latest_end)``. A cogroup's inputs
share the key's slot and that observed time (:mod:`.own_stream_time`); the view writes through the
first input's processor.

Emitting on window close, the aggregation's store is Kafka Streams' time-ordered session store
(``RocksDBTimeOrderedSessionStore``), whose key index reads as the persistent store does (same order,
same cut); its observed time is :class:`~.session_close.ClosedSessions`' (the owner's ``store_time``),
and a processor's puts and removes are what the window-close emit then fetches. Kept in memory, it is a
plain ``InMemorySessionStore`` (in-memory order, ``find_sessions(earliest_end, latest_end)``, and a
``remove`` that leaves its time, for the emit as for the reads); a processor beside the aggregation
only (one it forwards to is refused when defined: :mod:`.store_suppliers`).

Values are the aggregates themselves (a session store keeps no timestamps: a session's is its end);
reads give a copy made through the store's value serde, writes store one. The reads and their order
are a persistent user session store's (:class:`~.user_session_store.SessionStoreReads`). A write goes
through the aggregation's own :meth:`~.sessions.SessionWindowAggregate.write_session`: uncached, it
forwards nothing (Kafka Streams' store, written by another processor, forwards nothing); cached, the
session's final value is forwarded at the batch's flush as the aggregation's own update.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.user_dsl_view import DslStoreView
from dagster_kstreams.processors.user_session_store import SessionStoreReads
from dagster_kstreams.processors.user_time_store import StoreEntry
from dagster_kstreams.topology.serdes import Window, Windowed

__all__ = ["AggregationSessionStore"]

_MIN_SEGMENT_INTERVAL_MS = 60_000  # RocksDbSessionBytesStoreSupplier's segment interval floor


class AggregationSessionStore(DslStoreView, SessionStoreReads):
    """A user processor's view of a session aggregation's store (:class:`~.user_dsl_view.DslStoreView`;
    ``owner``: the aggregation, its slot, retention and :meth:`write_session`)."""

    kind = "session store"

    # -- writes ----------------------------------------------------------------------------
    def put(self, session_key: Windowed, aggregate) -> None:
        """Store ``aggregate`` for the session (None removes it)."""
        key, start, end = self._session(session_key, "put")
        self._owner.write_session(key, start, end, None if aggregate is None else self._copy(aggregate),
                                  self._write_context(None), self._group(key))

    def remove(self, session_key: Windowed) -> None:
        """Remove the session; an uncached in-memory store's observed time does not take its end
        (``InMemorySessionStore.remove``; a cache's flush puts a null, which does)."""
        key, start, end = self._session(session_key, "remove")
        observes = self._owner.cached or not self._owner.store_in_memory
        self._owner.write_session(key, start, end, None, self._write_context(None), self._group(key), observes)

    # -- what SessionStoreReads asks -------------------------------------------------------
    def _time(self) -> int:
        return self._owner.store_time(self._task)

    @property
    def _retention(self) -> int:
        return self._owner.retention

    @property
    def _persistent(self) -> bool:
        return not self._owner.store_in_memory

    @property
    def _segment_interval(self) -> int:
        return max(self._owner.retention // 2, _MIN_SEGMENT_INTERVAL_MS)

    def _candidates(self, low: Optional[bytes], high: Optional[bytes]) -> Iterable[tuple]:
        if low is not None and low == high:  # one key: its group only
            key = self._key_serde.deserialize(low)
            return [((end, low, start), (key, aggregate)) for start, end, aggregate in self._sessions_of(low)]
        found = []
        for raw_group_key, sessions in self._task.slot_entries(self._owner.state_slot):
            key = self._store_key_serde.deserialize(raw_group_key)
            raw = self._key_serde.serialize(key)
            found += [((end, raw, start), (key, aggregate)) for start, end, aggregate in sessions]
        return found

    def _get(self, end: int, raw: bytes, start: int) -> Any:
        session = next((s for s in self._sessions_of(raw) if s[:2] == (start, end)), None)
        return None if session is None else self._copy(session[2])

    def _entry(self, raw: bytes, start: int, end: int, stored) -> StoreEntry:
        key, aggregate = stored
        return StoreEntry(Windowed(key, Window(start, end)), self._copy(aggregate))

    # -- internals -----------------------------------------------------------------------------
    def _session(self, session_key: Windowed, operation: str) -> tuple:
        if not isinstance(session_key, Windowed) or session_key.window is None:
            raise TypeError(f"session store {self.name}: {operation}() takes Windowed(key, Window(start, end)), "
                            f"got {session_key!r}")
        self._raw_key(session_key.key)  # a null key fails here, naming the store
        return session_key.key, int(session_key.window.start), int(session_key.window.end)

    def _sessions_of(self, raw: bytes):
        """The stored sessions of the key the store's key serde wrote as ``raw``."""
        sessions = self._group(self._key_serde.deserialize(raw)).values[self._owner.state_slot]
        return () if sessions is ABSENT else sessions

