"""The single-store self-join (``topology.optimization=single.store.self.join``: Kafka Streams 4.3.1's
``KStreamKStreamSelfJoin``, which :mod:`dagster_kstreams.topology.self_join` puts in place of a
stream-stream join of a stream with itself).

One processor, named as the join's merge, below the join's left ``JOIN_WINDOW`` (which forwards the
record first, then buffers it: the record is not in the buffer yet when it is joined). For each record
with a key and a value (others are skipped and do not move its stream time), in this order:

1. the record as the left side with every buffered record of its key over
   ``[max(0, t - before), max(0, t + after)]`` (``joiner(key, record, buffered)``);
2. every buffered record of its key over ``[max(0, t - after), max(0, t + before)]`` as the left side
   with the record (``joiner(key, buffered, record)``), and, just before the first of them later than
   the record, the record joined with itself;
3. the record joined with itself, if step 2 did not emit it.

Each joined record is stamped ``max(t, t_buffered)``, the self-joined one ``t``. The record joins
itself only when ``t > stream time - retention + 1`` (``retention = before + after + grace``; the
processor's own stream time, including this record). The lookups see what the window store keeps,
as a two-store join's do (:func:`~.join_buffers.visible`). Kafka Streams rewrites left and outer
self-joins the same way, so they join as this inner one.

The processor's stream time is kept in the task's state (Kafka Streams keeps it in memory and starts
it again after a restart), as the two-store join's ``TimeTracker`` is (:mod:`.stream_joins`).
"""

from __future__ import annotations

import dataclasses

from dagster_kstreams.processors.base import Processor, register
from dagster_kstreams.processors.join_buffers import visible
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.stream_joins import observed_store_time
from dagster_kstreams.processors.task_state import task_state_of
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.windows import join_store_retention_ms

__all__ = ["StreamStreamSelfJoin", "self_join_pairs", "emits_self", "BUILDERS"]

# Task-level value (TaskState.values): each self-join's stream time, by processor name.
_STREAM_TIMES = "stream_self_join.stream_times"


def emits_self(timestamp: int, stream_time: int, retention: int) -> bool:
    """Whether a record at ``timestamp`` joins itself: it is not expired at the processor's stream time
    (which already includes it)."""
    return timestamp > stream_time - retention + 1


def self_join_pairs(buffer, timestamp: int, value, before: int, after: int, store_time: int, retention: int,
                    emit_self: bool) -> list[tuple]:
    """The ``(left, right, timestamp)`` joins of a record at ``timestamp`` with ``value``, in
    ``KStreamKStreamSelfJoin.process``'s order, against its key's ``buffer`` (``(timestamp, value)`` in
    store order, without the record) of a window store whose observed stream time is ``store_time``."""
    pairs = [(value, other, max(timestamp, other_time))
             for other_time, other in visible(buffer, timestamp, before, after, store_time, retention)]
    emitted_self = False
    for other_time, other in visible(buffer, timestamp, after, before, store_time, retention):
        if timestamp < other_time and not emitted_self and emit_self:
            emitted_self = True
            pairs.append((value, value, timestamp))
        pairs.append((other, value, max(timestamp, other_time)))
    if not emitted_self and emit_self:
        pairs.append((value, value, timestamp))
    return pairs


@register
class StreamStreamSelfJoin(Processor):
    """``KStreamKStreamSelfJoin``: joins the record with its key's buffered records of one window store
    (:func:`self_join_pairs`)."""

    kind = "stream_stream_self_join"
    uses_stream_time = True
    task_grouped = True

    def __init__(self, name: str, joiner, before: int, after: int, retention: int, window_store: str):
        super().__init__(name)
        self.fn = joiner
        self.before, self.after, self.retention = before, after, retention
        self.window_store = window_store
        self._slot = -1

    def init(self, program) -> None:
        super().init(program)
        self._slot = program.store_slots[self.window_store]

    def process(self, key, value, context, out, state) -> None:
        if key is None or value is None:
            return  # skipped before the stream time moves (StreamStreamJoinUtil.skipRecord)
        timestamp = context.timestamp
        if timestamp is None:
            raise ValueError(f"processor {self.name} needs record timestamps")
        task = task_state_of(self, state)
        times = task.values.get(_STREAM_TIMES)
        if times is None:
            times = task.values[_STREAM_TIMES] = {}
        stream_time = times[self.name] = max(times.get(self.name, -1), timestamp)
        buffer = state.values[self._slot]
        buffer = [] if buffer is ABSENT else buffer
        pairs = self_join_pairs(buffer, timestamp, value, self.before, self.after,
                                observed_store_time(task, self.window_store), self.retention,
                                emits_self(timestamp, stream_time, self.retention))
        for left, right, joined_timestamp in pairs:
            joined = self.call(context, self.fn, key, left, right)
            self.forward(key, joined, dataclasses.replace(context, timestamp=joined_timestamp), out, state)


def _self_join(factory, ctx) -> StreamStreamSelfJoin:
    params = factory.params
    windows = params["windows"]
    retention = join_store_retention_ms(windows)
    joiner = ctx.function(factory, params["joiner"]).as_joiner()
    return StreamStreamSelfJoin(factory.name, joiner, windows.before_ms, windows.after_ms, retention,
                                params["this_store_name"])


BUILDERS = {NodeKind.STREAM_STREAM_SELF_JOIN: _self_join}
