"""Session-windowed aggregations, as Kafka Streams'
``KStreamSessionWindowAggregate`` (4.3.1) over its persistent session store.

Per record with a non-null key (null keys are skipped and do not advance stream time), with
``t`` the record's timestamp and ``ST`` the stream time after it:

* close time = ``ST - grace - gap``;
* the key's sessions that overlap ``[t - gap, t + gap]`` (``end >= t - gap`` and
  ``start <= t + gap``, the store's ``findSessions``), in store order (by end, then start), are
  merged with ``[t, t]``: the aggregate starts from ``initializer()`` and takes
  ``merger(key, agg, session_agg)`` for each;
* if the merged session ends before the close time the record is late: dropped and counted
  (a row on :data:`~dagster_kstreams.processors.records.DROPPED_LATE_TOPIC`), nothing changes;
* otherwise the merged-away sessions are removed, the aggregate takes
  ``aggregator(key, value, agg)`` (null values included: count counts them) and is stored
  under the merged window.

Store retention: the session store hides (and eventually drops) sessions whose end is at most
``observedStreamTime - retention`` (retention = ``gap + grace`` unless ``Materialized``
sets it). Its stream time is the largest session end written to it, which is the stream time
before the record. Such sessions are never found again, so the key's state drops them: state
stays bounded.

Emit: with the record cache (the default) each changed windowed key forwards its final state once
per micro-batch, all keys' sessions in the order of their last updates: the session's value, or a
tombstone for a session that existed at the start of the batch and was merged away (one created and
merged away within the batch was never forwarded, as Kafka Streams' cache flush skips it). Without
caching every update is forwarded: a tombstone for each merged-away session, then the new session's
value. Downstream sees the key as ``Windowed(key, Window(start, end))`` with an inclusive end, and
the record timestamp is the window end.

A store a user processor names (:mod:`.user_dsl_session_store`) keeps Kafka Streams' own time (the
largest session end written, whoever wrote it) instead, and a record's sessions are removed, put
and forwarded one after the other, as the processor then reads them.

With ``emit_strategy(EmitStrategy.on_window_close())`` nothing is forwarded on update: each
session goes out once, when it closes, in the order of :mod:`.session_close`; the store then has
no record cache and the sub-topology runs task-grouped (a record of one key closes the sessions
of all keys). A processor's writes to the store (:meth:`write_session`) are what the emit sends.

Reduce and count are aggregations with Kafka Streams' own functions: count is
``initializer=0``, ``aggregator=agg + 1``, ``merger=a + b``; reduce is ``initializer=None``,
``aggregator = value if agg is None else reducer(agg, value)``, ``merger(a, b) =
aggregator(b, a)``.

Stream time: the task's, which is the processor's own when every record of the task reaches it
once (:func:`reads_task_stream_time`); otherwise it is built with its own clocks
(:mod:`.own_stream_time`) and its sub-topology runs task-grouped.
"""

from __future__ import annotations

import functools
from typing import Callable, Optional

from dagster_kstreams.processors.aggregations import read_by_user_processor
from dagster_kstreams.processors.base import reachable, register
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.processors.session_close import ClosedSessions
from dagster_kstreams.processors.session_store import SessionStore, context_at, session_functions
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.supplier_shape import expired_session_put
from dagster_kstreams.processors.task_state import task_state_of
from dagster_kstreams.processors.user_dsl_window_store import observed_time_key
from dagster_kstreams.processors.user_time_store import NO_TIME
from dagster_kstreams.processors.windowed_tables import WindowedTable, keeps_state_downstream
from dagster_kstreams.topology.emit_strategy import ON_WINDOW_CLOSE, ON_WINDOW_UPDATE
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.serdes import Window
from dagster_kstreams.topology.windows import SessionWindows

__all__ = ["KIND", "SessionWindowAggregate", "handles", "reads_task_stream_time", "build"]

KIND = "session_aggregate"


# -- the processor -----------------------------------------------------------------------------
@register
class SessionWindowAggregate(WindowedTable):
    """``KStreamSessionWindowAggregate``: one key's sessions are one slot of its state row
    (``((start, end, aggregate), ...)`` in store order). Its old values (:mod:`.windowed_tables`):
    a merged-away session's aggregate with its removal, none with the new session's update; with
    the record cache, the session's value at the last flush."""

    kind = KIND
    uses_stream_time = True
    drops_late_records = True
    # Set when a user processor names the store (user_dsl_session_store.py): the store then keeps Kafka
    # Streams' observed time (the largest session end put into or removed from it, by the aggregation or a
    # processor), a task-level value, and returns the sessions that end after it minus the retention; a
    # record's sessions are removed, put and forwarded one after the other (_process_in_steps).
    # store_in_memory: an InMemorySessionStore, whose order a processor reads and the close emit fetches in.
    observes_store_time = store_in_memory = False

    def __init__(self, name: str, store: str, cached: bool, aggregation: str, gap: int, grace: int, retention: int,
                 initializer: Callable, aggregator: Callable, merger: Callable, key_serde=None,
                 emit_on_close: bool = False):
        super().__init__(name, store, cached and not emit_on_close)
        self.aggregation = aggregation
        # on_window_close: the store's key serde orders the sessions of one end; emission spans keys
        self.key_serde, self.emit_on_close = key_serde, emit_on_close
        self.task_grouped = emit_on_close
        self._closed_key = f"sessions.closed.{store}"
        self.gap, self.grace, self.retention = gap, grace, retention
        self.initializer, self.aggregator, self.merger = initializer, aggregator, merger
        self._batch_stream_time: Optional[int] = None  # the task's stream time at its last record here
        self._taken: Optional[tuple] = None  # (topic, partition, offset) of the last record taken

    @property
    def options(self) -> dict:
        """The session windows' settings by name (ms)."""
        return {"gap": self.gap, "grace": self.grace, "retention": self.retention}

    def process(self, key, value, context, out, state) -> None:
        if key is None:
            return  # skipped; does not advance stream time (event_time leaves null keys out of it)
        self.needs_state(state)
        self._taken = (context.topic, context.partition, context.offset)
        slot = self.state_slot
        current = state.values[slot]
        store = SessionStore(self.gap, self.grace, self.retention, () if current is ABSENT else current)
        stream_time = self._batch_stream_time = context.stream_time
        before = self._observed_time(state) if self.observes_store_time else self._store_time(context, state)
        if before is None:  # not given (a test calling the program directly): only the record's own is known
            before = stream_time if context.timestamp < stream_time else stream_time - 1
        changes = self._batch_changes(state, slot, store.sessions)
        if self.observes_store_time and not self.emit_on_close:
            store.expire(before)
            self._process_in_steps(key, value, store, stream_time, context, out, state, changes)
            return
        # Kafka Streams' caching store returns the sessions its cache holds (written since the last flush)
        # whatever the store's time: a record may merge one its underlying store no longer returns
        cached = frozenset(session for session, (agg, _) in changes.items() if agg is not None) \
            if self.cached else frozenset()
        result = store.apply(key, value, context.timestamp, before, stream_time, self.initializer, self.aggregator,
                             self.merger, lambda fn, *args: self.call(context, fn, *args), cached)
        state.values[slot] = tuple(store.sessions) if store.sessions else ABSENT
        state.keys[slot] = key
        state.changed = True
        for _ in range(1 if result is None else expired_session_put(self, result[1][1], before)):
            out.append(DROPPED_LATE_TOPIC, None, None)  # late, or its session's put dropped by the store
        if result is not None:
            self._wrote(result[1][1], state)
        if self.emit_on_close:
            self._emit_closed(key, result, stream_time, context, out, state)
            return
        if result is None:
            return
        removed, (start, end, agg) = result
        if self.cached:
            # each with this record's context: Kafka Streams' cache keeps one per windowed key
            for s_start, s_end, _ in removed:
                _note(changes, (s_start, s_end), None, context)
            _note(changes, (start, end), agg, context)
            state.mark_dirty(slot, context)
            return
        for s_start, s_end, s_agg in removed:
            self._update(key, s_start, s_end, None, s_agg, context, out, state)
        self._update(key, start, end, agg, None, context, out, state)

    def _process_in_steps(self, key, value, store: SessionStore, stream_time: int, context, out, state,
                          changes: dict) -> None:
        """A record, in Kafka Streams' order, for a store a processor reads: each merged-away session is
        removed and (uncached) forwarded before the next, then the new session is put and forwarded. A
        processor reading the store while one is forwarded sees the others as they still are (and not
        yet the new one); what it writes meanwhile stays unless the new session's put overwrites it."""
        def call(fn, *args):
            return self.call(context, fn, *args)

        found = store.merge(key, context.timestamp, stream_time, self.initializer, self.merger, call)
        if found is None:
            out.append(DROPPED_LATE_TOPIC, None, None)
            return
        merged, start, end, agg = found
        if (start, end) != (context.timestamp, context.timestamp):
            for s_start, s_end, s_agg in merged:
                self._put_session(key, s_start, s_end, None, state)
                if self.cached:
                    _note(changes, (s_start, s_end), None, context)
                else:
                    self._update(key, s_start, s_end, None, s_agg, context, out, state)
        agg = call(self.aggregator, key, value, agg)
        self._put_session(key, start, end, agg, state)
        self._wrote(end, state)
        if self.cached:
            _note(changes, (start, end), agg, context)
            state.mark_dirty(self.state_slot, context)
        else:
            self._update(key, start, end, agg, None, context, out, state)

    def write_session(self, key, start: int, end: int, value, context, state, observes: bool = True) -> None:
        """Store ``value`` as the key's session ``[start, end]`` (None: remove it) without forwarding it
        (a user processor's write, :mod:`.user_dsl_session_store`); a cached store forwards the session at
        the flush with ``context``, as Kafka Streams' cache flush listener forwards whoever wrote it.
        ``observes``: whether the store's observed time takes the session's end (an in-memory store's
        ``remove`` does not)."""
        slot = self.state_slot
        current = state.values[slot]
        changes = self._batch_changes(state, slot, () if current is ABSENT else current) if self.cached else None
        self._put_session(key, start, end, value, state, observes)
        if changes is not None:
            _note(changes, (start, end), value, context)
            state.mark_dirty(slot, context)
        if self.emit_on_close:  # what the window-close emit fetches: this session, or not (a session ending
            # before the store's time minus the retention is stored while its segment lives, and emitted)
            self._closed_sessions(state).put(start, end, self.key_serde.serialize(key), key, value, observes)

    def _put_session(self, key, start: int, end: int, value, state, observes: bool = True) -> None:
        """Kafka Streams' ``put`` (``remove``: value None) of the key's session into its slot, which the
        store's observed time follows (a remove's too: the segmented store takes it; ``observes``)."""
        if observes:
            self._observe(state, end)
        slot = self.state_slot
        current = state.values[slot]
        sessions = [session for session in (() if current is ABSENT else current) if session[:2] != (start, end)]
        if value is not None and end > self._observed_time(state) - self.retention:
            sessions.append((start, end, value))  # else: "Skipping record for expired segment."
            sessions.sort(key=lambda session: (session[1], session[0]))
        state.values[slot] = tuple(sessions) if sessions else ABSENT
        state.keys[slot] = key
        state.changed = True

    def store_time(self, task) -> int:
        """The store's observed time (``task``: the task's state): the largest session end put into or
        removed from it; emitting on window close, the time-ordered store's (:class:`ClosedSessions`)."""
        if self.emit_on_close:
            return self._closed_sessions_of(task).store_time
        return task.values.get(observed_time_key(self.store), NO_TIME)

    def store_time_at(self, context) -> int:
        """The store's observed time while the record of ``context`` travels on (a join reading the table,
        :class:`~.session_table_reads.SessionReads`): the task's stream time after that record once this
        aggregation took it (it wrote a session ending at or after it; the newest record is never late),
        before it otherwise."""
        if self._taken == (context.topic, context.partition, context.offset) or context.stream_time_before is None:
            return context.stream_time
        return context.stream_time_before

    def _observed_time(self, state) -> int:
        return self.store_time(task_state_of(self, state))

    def _observe(self, state, end: int) -> None:
        task = task_state_of(self, state)
        if self.emit_on_close:
            closed = self._closed_sessions_of(task)
            closed.store_time = max(closed.store_time, end)
            return
        task.values[observed_time_key(self.store)] = max(task.values.get(observed_time_key(self.store), NO_TIME), end)

    def _closed_sessions(self, state) -> ClosedSessions:
        return self._closed_sessions_of(task_state_of(self, state))

    def _closed_sessions_of(self, task) -> ClosedSessions:
        closed = task.values.get(self._closed_key)
        if closed is None:
            closed = task.values[self._closed_key] = ClosedSessions(self.store_in_memory)
        return closed

    def _update(self, key, start: int, end: int, new, old, context, out, state) -> None:
        """Forward the session's update with its end as the record timestamp."""
        self.forward_update(key, Window(start, end), new, old, context_at(context, end), out, state)

    def _emit_closed(self, key, result, stream_time: int, context, out, state) -> None:
        """Note what the record stored (``result``: None when late), then forward the sessions that
        closed (all keys), each with its end as the record timestamp."""
        closed = self._closed_sessions(state)
        if result is not None:
            removed, (start, end, agg) = result
            key_bytes = self.key_serde.serialize(key)
            for s_start, s_end, _ in removed:
                closed.remove(s_start, s_end, key_bytes)
            closed.put(start, end, key_bytes, key, agg)
        for start, end, session_key, agg in closed.due(stream_time - self.grace - self.gap, self.retention):
            self._update(session_key, start, end, agg, None, context, out, state)

    def _store_time(self, context, state) -> Optional[int]:
        """The store's stream time before the record (the largest session end written to it): the
        task's here, a shared store's own in a cogroup (:mod:`.cogroup`)."""
        return context.stream_time_before

    def _wrote(self, end: int, state) -> None:
        """A session ending at ``end`` was written (or merged away: it ended no later)."""

    @staticmethod
    def _batch_changes(state, slot: int, sessions) -> dict:
        """``{(start, end): (latest aggregate or None (removed), context of that update)}`` for the
        windowed keys changed in this key group (the record cache's dirty entries; a session that expires within the batch is still
        forwarded, as the cache holds it until its flush). The first call also notes the sessions the
        store held (``{(start, end): aggregate}``: what the flush sends as the old values)."""
        entry = state.cache_entry(slot)
        if entry is None:
            entry = state.new_cache_entry(slot, ({(s[0], s[1]): s[2] for s in sessions}, {}))
        return entry[1]

    def end_task_batch(self, task) -> None:
        """Task-grouped: forget every key's sessions the store no longer returns, so the task's state
        stays bounded by the retention (as :meth:`SessionStore.expire` does for the key processed)."""
        stream_time, self._batch_stream_time = self._batch_stream_time, None
        if stream_time is None:
            return
        if self.observes_store_time:
            stream_time = self.store_time(task)
        floor = stream_time - self.retention
        for group in task.all_groups():
            sessions = group.values[self.state_slot]
            if sessions is not ABSENT and sessions[0][1] <= floor:
                kept = tuple(session for session in sessions if session[1] > floor)
                group.values[self.state_slot] = kept if kept else ABSENT

    def flush_entries(self, state, context) -> list:
        """Kafka Streams' cache flush (``CachingSessionStore``, keyed by session): each session changed
        in this key group, once, with its final state and the context of the record that last updated
        it, placed by that record's position among all keys' sessions (``context``, the key's last
        update, places nothing): a merged-away session's removal before the session it merged into."""
        slot = self.state_slot
        entry = state.take_cache_entry(slot)
        if entry is None:
            return []
        initial, changed = entry
        key = state.keys[slot]
        # a session created and merged away within the batch is never forwarded
        return [(update_context.position, functools.partial(
                    self._update_at_flush, key, start, end, value, initial.get((start, end)), update_context, state))
                for (start, end), (value, update_context) in changed.items()
                if value is not None or (start, end) in initial]

    def _update_at_flush(self, key, start: int, end: int, new, old, context, state, out) -> None:
        self._update(key, start, end, new, old, context, out, state)


def _note(changes: dict, session: tuple, value, context) -> None:
    """A cached session's update: its entry moves to the end (the cache's dirty sessions are kept in
    the order of their last updates: NamedCache)."""
    changes.pop(session, None)
    changes[session] = (value, context)


# -- definition time -------------------------------------------------------------------------
# Processors a record may pass on its way from the sub-topology's source to a session
# aggregation: each forwards every record, once, with its key (Kafka Streams' processor-local
# stream time then sees exactly the records the task's stream time is made of).
_ONE_TO_ONE = {NodeKind.SOURCE, NodeKind.MAP_VALUES, NodeKind.PEEK, NodeKind.MERGE, NodeKind.REPARTITION_FILTER}


def handles(factory) -> bool:
    return factory.kind is NodeKind.WINDOWED_AGGREGATE and isinstance(factory.params.get("windows"), SessionWindows)


def reads_task_stream_time(sub, factory) -> bool:
    """Whether the task's stream time is, at every record reaching the session aggregation
    ``factory`` of sub-topology ``sub``, the processor's own (Kafka Streams'): every source of the
    sub-topology reaches it through one-to-one processors only (``_ONE_TO_ONE``), by exactly one
    path, so that the stream time before a record (the store's) is the processor's too."""
    ancestors = list(reachable(sub, factory.parents, lambda node: node.parents))
    if any(node.kind not in _ONE_TO_ONE for node in ancestors):
        return False
    return all(_paths(sub, source.name, factory.name, {}) == 1 for source in sub.nodes
               if source.kind is NodeKind.SOURCE)


def _paths(sub, source: str, name: str, counted: dict) -> int:
    """The number of paths from node ``source`` to node ``name`` of ``sub``."""
    if name == source:
        return 1
    if name not in counted:
        counted[name] = sum(_paths(sub, source, parent, counted) for parent in sub.node(name).parents)
    return counted[name]


def build(factory, ctx, cls: type = SessionWindowAggregate) -> SessionWindowAggregate:
    """The runnable form of a session aggregation: ``cls``, this module's, which reads the task's
    stream time, or the one with its own clocks (:mod:`.own_stream_time`)."""
    params = factory.params
    emit_strategy = params.get("emit_strategy", ON_WINDOW_UPDATE)
    if emit_strategy not in (ON_WINDOW_UPDATE, ON_WINDOW_CLOSE):
        raise UnsupportedTopologyError(f"processor {factory.name} (session-windowed aggregation): emit strategy "
                                       f"{emit_strategy!r} is not supported by the Spark runner")
    windows: SessionWindows = params["windows"]
    store = ctx.topology.state_stores.get(params["store_name"])
    retention = store.retention_ms if store is not None and store.retention_ms is not None else (
        windows.inactivity_gap_ms + windows.grace_ms)
    operation = params["operation"]

    def fn(name):
        user = params.get(name)
        return None if user is None else user.fn

    init, agg, merger = session_functions(operation, fn("initializer"), fn("aggregator"), fn("reducer"), fn("merger"))
    key_serde = (store.key_serde if store is not None else None) or ctx.default_key_serde
    aggregate = cls(factory.name, params["store_name"], ctx.cached(params["store_name"]), operation,
                    windows.inactivity_gap_ms, windows.grace_ms, retention, init, agg, merger,
                    key_serde=key_serde, emit_on_close=emit_strategy == ON_WINDOW_CLOSE)
    # sessions are keys of their own for the stores after it: their groups are the task state's
    aggregate.task_grouped = aggregate.task_grouped or keeps_state_downstream(ctx.subtopology, factory)
    # check_dsl_store admits a processor naming the store of sessions (emitting on update or on close)
    aggregate.observes_store_time = read_by_user_processor(ctx.subtopology, params["store_name"])
    aggregate.store_in_memory = store is not None and store.persistent is False
    return aggregate
