"""Punctuation of the Processor API and the task's stream time it runs on, as Kafka Streams 4.3.1
keeps them (``PunctuationQueue``, ``PunctuationSchedule``, ``PartitionGroup.streamTime``).

The task's stream time is the largest timestamp of every record the task has taken, null keys and
values included; it is a task-level value of the task state (:mod:`.task_state`), so a killed and
rerun task goes on from it.

Stream time: ``schedule(interval, STREAM_TIME, punctuator)`` is aligned to 0 (the first fires as
soon as a record has been processed, then at each multiple of the interval); after each record has
gone through the sub-topology, every schedule whose time is at most the stream time fires once,
with the stream time as its argument, and is moved to the next multiple of the interval after it
(missed ones are skipped: :meth:`PunctuationSchedule.advance`). Kafka Streams checks after a varying
number of records (its thread's ``numIterations``); checking after every record is the finest it
ever does, and what its ``TopologyTestDriver`` does.

Wall clock: checked against the worker's clock after each record, so it fires no later than the
last record of the batch in which it came due (Kafka Streams: at its thread's next loop); an idle
task (no micro-batch) does not punctuate. Both kinds fire in order of due time across the task's
processors, as Kafka Streams' one queue per task.
"""

from __future__ import annotations

import time
from typing import Callable, Iterable, Optional

from dagster_kstreams.topology.processor_api import PunctuationType

__all__ = ["NO_TIME", "PunctuationSchedule", "advance_stream_time", "current_stream_time", "punctuate",
           "run_between_punctuations", "wall_clock_ms"]

_STREAM_TIME = "papi.stream_time"
NO_TIME = -1  # Kafka's RecordQueue.UNKNOWN


class PunctuationSchedule:
    """One ``schedule(...)`` of a processor: when it is due next, and whether it was cancelled."""

    def __init__(self, due: int, interval: int, kind: PunctuationType, punctuator: Callable[[int], None]):
        self.due, self.interval, self.kind, self.punctuator = due, interval, kind, punctuator
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def advance(self, now: int) -> None:
        """``PunctuationSchedule.next``: the next due time after ``now``, skipping missed ones."""
        due = self.due + self.interval
        if now >= due:
            due = self.due + ((now - self.due) // self.interval + 1) * self.interval
        self.due = due


def punctuate(nodes: list, stream_time: int, context, group) -> None:
    """After the record ``context`` (its key's ``group``) has gone through the sub-topology: fire
    every due schedule of the task's user processors (``nodes``: each with ``schedules()`` and
    ``fire(schedule, now, context, group)``), stream time first, then wall clock, each in order of
    due time across processors (Kafka Streams keeps one ``PunctuationQueue`` per type per task;
    equal times go in the order the schedules were made)."""
    for kind in (PunctuationType.STREAM_TIME, PunctuationType.WALL_CLOCK_TIME):
        now = stream_time if kind is PunctuationType.STREAM_TIME else wall_clock_ms()
        if now == NO_TIME:
            continue  # no record yet: stream time unknown
        while True:
            due = [(schedule.due, rank, node, schedule)
                   for rank, (node, schedule) in enumerate((node, schedule) for node in nodes
                                                           for schedule in node.schedules())
                   if schedule.kind is kind and not schedule.cancelled and schedule.due <= now]
            if not due:
                break
            _, _, node, schedule = min(due, key=lambda entry: entry[:2])
            node.fire(schedule, now, context, group)


def run_between_punctuations(records: Iterable[tuple], task, nodes: list, process: Callable) -> None:
    """Run each record ``(context, raw key, raw value[, hand-off])`` of a task's batch, in processing
    order, by ``process(group, *record)`` with its source key's group of ``task``, the task's stream
    time advanced by it; the due schedules of ``nodes`` fire after each record, once all of its rows
    ran: a record handed over part way in comes as several rows of one position (hand_offs.py), and
    Kafka Streams punctuates only between records."""
    due: Optional[tuple] = None  # (stream time, context, group) of the record last run
    for record in records:
        context, hand_off = record[0], record[3:]
        if due is not None and not (hand_off and context.position == due[1].position):
            punctuate(nodes, *due)
            due = None
        group = task.group(context.raw_key)
        stream_time = advance_stream_time(task, context.timestamp)
        process(group, *record)
        due = (stream_time, context, group)
    if due is not None:
        punctuate(nodes, *due)


def advance_stream_time(task, timestamp: Optional[int]) -> int:
    """The task's stream time after taking a record stamped ``timestamp`` (kept in ``task``)."""
    current = task.values.get(_STREAM_TIME, NO_TIME)
    if timestamp is not None and timestamp > current:
        current = task.values[_STREAM_TIME] = timestamp
    return current


def current_stream_time(task) -> int:
    """The task's stream time (:data:`NO_TIME` before its first record)."""
    return task.values.get(_STREAM_TIME, NO_TIME)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)
