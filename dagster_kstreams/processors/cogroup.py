"""Cogrouped aggregations: ``KGroupedStream.cogroup(...).aggregate(...)``, plain and windowed, as
Kafka Streams 4.3.1 runs them (``CogroupedStreamAggregateBuilder``): one aggregate processor per
input stream, each with its own aggregator, all reading and writing one store, then a
pass-through (``KTablePassThrough``) whose output is the table.

Plain
    Each input's processor is the grouped stream's :class:`~.aggregations.Aggregate` (operation
    ``aggregate``: null keys and null values skipped); the program gives processors of one store
    one slot of the key's state row (:func:`~.build.build_program`), so every input updates the
    same aggregate, record by record in the task's processing order.

Windowed
    Kafka Streams' windowed processors (``KStreamWindowAggregate``,
    ``KStreamSlidingWindowAggregate``, ``KStreamSessionWindowAggregate``) each keep their own
    stream time, of the records that reach *that* processor: a window closes for one input
    while another may still add to it. Their one store keeps its own stream time too, of every
    write (the largest window start written; sessions: the largest session end), and no longer
    returns what lies before it minus the retention, whichever input asks. The processors here
    are the grouped stream's windowed processors (:mod:`.windows`, :mod:`.sessions`) with those
    two clocks: each processor's stream time decides lateness, the store's decides expiry. Both
    are task-level values, so the sub-topology runs task-grouped
    (:mod:`~dagster_kstreams.processors.task_state`): the task's state is read and written once
    per micro-batch, bounded by the store's retention (expired windows and sessions of every key
    are dropped at each batch's end).

Inputs whose sources read keys with different serdes share the aggregate of the key they are read
as, as in Kafka Streams' one store: the state is then grouped by the key as the store's key serde
writes it (the ``Materialized`` key serde, else ``default.key.serde``: a cogrouped stream has none
of its own), as for every keyed stateful operation (:mod:`.state_key_serde`).

Every record reaches its processor in Kafka Streams' order (the task's timestamp merge of its
input partitions), so each processor's stream time is exactly Kafka Streams'. Unlike the grouped
stream's windowed processors, which take the task's stream time, these need no check of what
reaches them from where (filters, other sources in the sub-topology).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from dagster_kstreams.processors import sessions, windows
from dagster_kstreams.processors.sessions import SessionWindowAggregate
from dagster_kstreams.processors.stateless import Merge
from dagster_kstreams.processors.task_state import task_state_of
from dagster_kstreams.processors.window_store import expire
from dagster_kstreams.processors.windows import SlidingWindowAggregate, TimeWindowAggregate
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["CogroupTimeWindowAggregate", "CogroupSlidingWindowAggregate", "CogroupSessionWindowAggregate",
           "handles", "build_windowed", "BUILDERS"]


class _OwnClocks:
    """A cogrouped windowed processor's stream time (its own records) and its store's (all writes),
    kept in the task's state under the processor's and the store's names."""

    # The task's stream time is not this processor's: it neither reads it nor shapes it (a
    # sliding cogroup's skipped null values must not hold back another aggregation's).
    uses_stream_time = False
    stream_time_skips_null_values = False

    def _clocks_init(self) -> None:
        self.task_grouped = True  # the clocks are task-level values
        self._own_key = f"cogroup.stream_time.{self.name}"
        self._store_key = f"cogroup.store_time.{self.store}"

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

    def _end_batch_at_store_time(self, task) -> None:
        """Expire by the store's stream time, not the processor's (another input may still read)."""
        if self._batch_stream_time is not None:
            self._batch_stream_time = task.values.get(self._store_key)


class _CogroupWindows(_OwnClocks):
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


class CogroupTimeWindowAggregate(_CogroupWindows, TimeWindowAggregate):
    """``KStreamWindowAggregate`` of one cogrouped input (not registered: it runs the time-window kind)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clocks_init()


class CogroupSlidingWindowAggregate(_CogroupWindows, SlidingWindowAggregate):
    """``KStreamSlidingWindowAggregate`` of one cogrouped input."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clocks_init()


class CogroupSessionWindowAggregate(_OwnClocks, SessionWindowAggregate):
    """``KStreamSessionWindowAggregate`` of one cogrouped input."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clocks_init()

    def process(self, key, value, context, out, state) -> None:
        if key is None:
            return
        super().process(key, value, self._advance_own(context, state), out, state)

    def _store_time(self, context, state) -> Optional[int]:
        store_time = self._shared_store_time(state)
        # Nothing written yet: no session to expire (the store is empty, for every key).
        return context.stream_time - 1 if store_time is None else store_time

    def _wrote(self, end: int, state) -> None:
        self._note_store_time(end, state)

    def end_task_batch(self, task) -> None:
        self._end_batch_at_store_time(task)
        super().end_task_batch(task)


# -- definition time -------------------------------------------------------------------------
def handles(factory) -> bool:
    """Whether a windowed aggregation is one input of a cogroup."""
    return bool(factory.params.get("cogroup"))


def build_windowed(factory, ctx):
    if sessions.handles(factory):
        return sessions.build(factory, ctx, CogroupSessionWindowAggregate, own_stream_time=True)
    return windows.build(factory, ctx, (CogroupTimeWindowAggregate, CogroupSlidingWindowAggregate),
                         own_stream_time=True)


def _merge(factory, ctx) -> Merge:
    return Merge(factory.name)


BUILDERS = {NodeKind.COGROUP_MERGE: _merge}
