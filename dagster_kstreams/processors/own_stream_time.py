"""Windowed processors that keep their own stream time, as Kafka Streams' do.

Kafka Streams' windowed processors (``KStreamWindowAggregate``, ``KStreamSlidingWindowAggregate``,
``KStreamSessionWindowAggregate``) each keep their own stream time (``observedStreamTime``): the
largest timestamp of the records that reach *that* processor (with a key; sliding windows: and a
value). It decides which windows have closed. Their store keeps another, of every write (the
largest window start written; sessions: the largest session end), and no longer returns what lies
before it minus the retention, whichever processor asks.

The grouped stream's windowed processors (:mod:`.windows`, :mod:`.sessions`) read the task's
stream time instead (:mod:`dagster_kstreams.spark.event_time`: a running maximum over every record
of the task, carried by Spark's watermark), which lets their sub-topology run key-grouped. That is
the processor's own exactly when every record of the task reaches it, at its place in the task's
order, with its key (and, sliding windows, its value) null or not as at the source
(:func:`.windows.reads_task_stream_time`, :func:`.sessions.reads_task_stream_time`). Where some may
not (a filter, a branch, a ``flat_map`` or ``flat_map_values``, another source of the sub-topology,
another windowed processor that counts other records), and for a cogroup's inputs (several
processors, one store), the classes here are built instead: the same processors with both clocks
kept in the task's state under the processor's and the store's names. Those are task-level values,
so the sub-topology runs task-grouped (:mod:`~dagster_kstreams.processors.task_state`): its state
is read and written once per micro-batch, bounded by the store's retention (expired windows and
sessions of every key are dropped at each batch's end). Every record reaches the processor in
Kafka Streams' order (the task's timestamp merge of its input partitions), so both clocks are
exactly Kafka Streams', and they survive restarts with the task's state (Kafka Streams starts the
processor's over after a restart: README, "Semantics that differ").
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from dagster_kstreams.processors import sessions, windows
from dagster_kstreams.processors.sessions import SessionWindowAggregate
from dagster_kstreams.processors.task_state import task_state_of
from dagster_kstreams.processors.user_dsl_window_store import observed_time_key
from dagster_kstreams.processors.user_time_store import NO_TIME
from dagster_kstreams.processors.window_store import expire
from dagster_kstreams.processors.windows import SlidingWindowAggregate, TimeWindowAggregate

__all__ = ["OwnTimeWindowAggregate", "OwnSlidingWindowAggregate", "OwnSessionWindowAggregate", "build"]


class _OwnClocks:
    """A windowed processor's stream time (its own records) and its store's (all writes), kept in
    the task's state under the processor's and the store's names."""

    # The task's stream time is not this processor's: it neither reads it nor shapes it (skipped
    # null values of a sliding aggregation must not hold back another processor's).
    uses_stream_time = False
    stream_time_skips_null_values = False

    def _clocks_init(self) -> None:
        self.task_grouped = True  # the clocks are task-level values
        # Named as when only cogroups kept them: the task states checkpointed since hold these names.
        self._own_key = f"cogroup.stream_time.{self.name}"

    @property
    def _store_key(self) -> str:
        """Where the store's stream time is kept. A store a user processor names has the one its
        views keep (:mod:`.user_dsl_window_store`), which the processor's writes move too: a cogroup's
        inputs and the processor then share one clock, as they share Kafka Streams' one store."""
        if self.observes_store_time:
            return observed_time_key(self.store)
        return f"cogroup.store_time.{self.store}"

    def _advance_own(self, context, state):
        """The record's context with this processor's stream time after it."""
        values = task_state_of(self, state).values
        own = values.get(self._own_key)
        own = context.timestamp if own is None else max(own, context.timestamp)
        values[self._own_key] = own
        return dataclasses.replace(context, stream_time=own)

    def _shared_store_time(self, state) -> Optional[int]:
        return task_state_of(self, state).values.get(self._store_key)

    def _note_store_time(self, time: int, state) -> Optional[int]:
        values = task_state_of(self, state).values
        current = values.get(self._store_key)
        values[self._store_key] = time if current is None else max(current, time)
        return values[self._store_key]

    @property
    def _flushed_key(self) -> str:
        return f"cogroup.flushed_store_time.{self.store}"

    def _end_batch_at_store_time(self, task) -> None:
        """Expire by the store's stream time, not the processor's (another input may still read). The
        batch's end is a commit: the record cache flushes into the store, whose time then is its own."""
        if self._batch_stream_time is not None:
            self._batch_stream_time = task.values.get(self._store_key)
            task.values[self._flushed_key] = self._batch_stream_time


class _OwnWindows(_OwnClocks):
    def process(self, key, value, context, out, state) -> None:
        if key is None or (value is None and isinstance(self, SlidingWindowAggregate)):
            return  # skipped, as by the grouped stream's processor: its stream time stays
        super().process(key, value, self._advance_own(context, state), out, state)

    def _store_time(self, context, state) -> Optional[int]:
        return self._shared_store_time(state)

    def _wrote(self, updates, store: dict, state) -> None:
        if not updates:
            return
        store_time = self._note_store_time(max(update[0] for update in updates), state)
        expire(store, store_time, self.retention)  # written past the store's horizon: never read again

    def end_task_batch(self, task) -> None:
        self._end_batch_at_store_time(task)
        super().end_task_batch(task)


class OwnTimeWindowAggregate(_OwnWindows, TimeWindowAggregate):
    """``KStreamWindowAggregate`` with its own stream time (not registered: it runs the time-window kind)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clocks_init()


class OwnSlidingWindowAggregate(_OwnWindows, SlidingWindowAggregate):
    """``KStreamSlidingWindowAggregate`` with its own stream time."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clocks_init()


class OwnSessionWindowAggregate(_OwnClocks, SessionWindowAggregate):
    """``KStreamSessionWindowAggregate`` with its own stream time."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clocks_init()

    def process(self, key, value, context, out, state) -> None:
        if key is None:
            return
        super().process(key, value, self._advance_own(context, state), out, state)

    def _store_time(self, context, state) -> Optional[int]:
        if self.cached and not self.observes_store_time:
            # Kafka Streams' caching store: what its cache holds is returned whatever the time (the
            # sessions changed in this micro-batch, SessionStore.expire), the rest by the time of the
            # store below it, which takes the cache's puts at a commit: this batch's start (none: -1).
            flushed = task_state_of(self, state).values.get(self._flushed_key)
            return NO_TIME if flushed is None else flushed
        store_time = self._shared_store_time(state)
        # Nothing written yet: no session to expire (the store is empty, for every key).
        return context.stream_time - 1 if store_time is None else store_time

    def _wrote(self, end: int, state) -> None:
        self._note_store_time(end, state)

    def end_task_batch(self, task) -> None:
        self._end_batch_at_store_time(task)
        super().end_task_batch(task)


# -- definition time -------------------------------------------------------------------------
def build(factory, ctx):
    """The runnable form of a time, sliding or session windowed aggregation with its own clocks."""
    if sessions.handles(factory):
        return sessions.build(factory, ctx, OwnSessionWindowAggregate)
    return windows.build(factory, ctx, (OwnTimeWindowAggregate, OwnSlidingWindowAggregate))
