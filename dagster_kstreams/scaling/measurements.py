"""What the lag sensor measures before it decides: end and committed offsets (:class:`LagSnapshot`),
input rates from them, and each sub-topology's capacity from the workers' reports
(:class:`ThroughputSample`). The rules for what counts are in :mod:`.policy`'s docstring."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .config import ScalingConfig
from .ids import subtopology_of


@dataclass(frozen=True)
class TaskOffsets:
    """One task's input partition: the log end offset and the group's committed offset."""

    end_offset: int
    committed_offset: int

    @property
    def lag(self) -> int:
        # A committed offset past the end (topic recreated, retention) is no negative backlog.
        return max(0, self.end_offset - self.committed_offset)


@dataclass(frozen=True)
class LagSnapshot:
    """End and committed offsets of every task at one moment (``time`` in epoch seconds)."""

    time: float
    tasks: Mapping[str, TaskOffsets] = field(default_factory=dict)

    @classmethod
    def from_offsets(
        cls,
        time: float,
        end_offsets: Mapping[str, int],
        committed_offsets: Mapping[str, int | None],
        beginning_offsets: Mapping[str, int] | None = None,
    ) -> LagSnapshot:
        """Build from per-task offsets; a task with nothing committed yet counts from its
        beginning offset (``auto.offset.reset=earliest``), or from 0 if that is not given."""
        beginning_offsets = beginning_offsets or {}
        tasks = {}
        for task, end in end_offsets.items():
            committed = committed_offsets.get(task)
            if committed is None:
                committed = beginning_offsets.get(task, 0)
            tasks[task] = TaskOffsets(end_offset=end, committed_offset=committed)
        return cls(time=time, tasks=tasks)

    def lags(self) -> dict[str, int]:
        return {task: offsets.lag for task, offsets in self.tasks.items()}

    @property
    def total_lag(self) -> int:
        return sum(offsets.lag for offsets in self.tasks.values())

    def to_dict(self) -> dict:
        return {
            "time": self.time,
            "tasks": {task: [o.end_offset, o.committed_offset] for task, o in self.tasks.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> LagSnapshot:
        return cls(
            time=float(data["time"]),
            tasks={task: TaskOffsets(int(end), int(committed)) for task, (end, committed) in data["tasks"].items()},
        )


def input_rates(earlier: LagSnapshot | None, later: LagSnapshot) -> dict[str, float]:
    """Records per second arriving on each task between two snapshots.

    Only tasks in both snapshots get a rate; a shrinking end offset (topic recreated) counts
    as no input rather than a negative one. No earlier snapshot, or no time between them,
    means no rate is known: an empty mapping.
    """
    if earlier is None:
        return {}
    elapsed = later.time - earlier.time
    if elapsed <= 0:
        return {}
    return {
        task: max(0, offsets.end_offset - earlier.tasks[task].end_offset) / elapsed
        for task, offsets in later.tasks.items()
        if task in earlier.tasks
    }


def smoothed_rates(previous: Mapping[str, float], measured: Mapping[str, float], elapsed: float,
                   config: ScalingConfig, weight: float = 0.0) -> tuple[dict[str, float], float]:
    """Each sub-topology's input rate averaged exponentially over time, and the average's new weight.

    The rate ``measured`` over the last ``elapsed`` seconds counts ``1 - exp(-elapsed /
    rate_smoothing_seconds)``; the average before it (``previous``) counts what is left of its
    ``weight``. The weight starts at 0 and nears 1 once the average spans about
    ``rate_smoothing_seconds``, so the first ticks average what they have seen (no start from
    zero, nor from a first reading that caught the offsets mid-step)."""
    if config.rate_smoothing_seconds == 0 or elapsed <= 0:
        return dict(measured), 1.0
    fresh = 1 - math.exp(-elapsed / config.rate_smoothing_seconds)
    kept = weight * (1 - fresh)
    total = kept + fresh
    rates = {sub: rate if sub not in previous or kept == 0 else (kept * previous[sub] + fresh * rate) / total
             for sub, rate in measured.items()}
    return rates, total


# How far behind a task must be for its report to measure capacity (ThroughputSample.backlogged).
# In `make demo` on a loaded machine, counting tasks 1-2 reports behind measured 13-60 records/s
# (batches of a few records, each mostly Spark's fixed cost) and scaled a steady 80 records/s to 4 workers.
BACKLOG_REPORTS = 4


@dataclass(frozen=True)
class ThroughputSample:
    """What was reported for one task: records processed in ``seconds`` of its batches' time.

    ``task_batch``: which run (or report) of this task in the reporting process it was (1 = the
    first, cold one); None when unknown, which counts as warm. A worker's report of a task it keeps
    running also gives ``worker_seconds``, the task's share of the worker's time (tasks run at
    once share it), and ``lag_left``, the records still waiting for the task when it reported.
    ``records_out``: the records it wrote to topics that other sub-topologies of the app read, by the
    reading sub-topology's id (None when the report does not say; :mod:`.selectivity`).
    """

    time: float
    worker_id: str
    task_id: str
    records: int
    seconds: float
    task_batch: int | None = None
    worker_seconds: float | None = None
    lag_left: int | None = None
    records_out: Mapping[str, int] | None = None

    def is_warm(self, config: ScalingConfig) -> bool:
        """Past the process's start-up and the task's state restore (``warmup_batches``)."""
        return self.task_batch is None or self.task_batch > config.warmup_batches

    @property
    def is_worker_report(self) -> bool:
        return self.worker_seconds is not None

    @property
    def backlogged(self) -> bool:
        """At least :data:`BACKLOG_REPORTS` times as many records still waiting as the report
        processed: the task's batches took all they could and will for a while, so the fixed cost
        of a batch is a small part of its time. A task that keeps up, or is behind by about one
        batch (a batch that is slow because the machine is busy leaves about one batch's worth of
        input waiting), processes what arrives in batches that are mostly fixed cost: its rate
        says what arrived, not what the worker can do."""
        return self.lag_left is not None and self.lag_left >= BACKLOG_REPORTS * self.records


def measured_capacity(samples: Iterable[ThroughputSample], now: float, config: ScalingConfig) -> float | None:
    """Records per second one worker processes while busy (DS2's true processing rate), if measured.

    Total records over total seconds of the warm samples within the throughput window that
    processed something; weighting by volume lets long stretches, where fixed costs matter
    least, dominate. A run on its own (a drain) counts its batches' time if it ran at least
    ``min_sample_seconds``. A worker's report counts the task's share of the worker's time, if the
    task was backlogged, and only once such reports add up to ``min_sample_seconds``: four tasks
    busy at once on one worker each processed a quarter of what the worker did. None when
    nothing qualifies.
    """
    oldest = now - config.throughput_window_seconds
    drained = [0, 0.0]  # records, seconds
    reported = [0, 0.0]
    for sample in samples:
        if sample.time < oldest or sample.records <= 0 or not sample.is_warm(config):
            continue
        if sample.is_worker_report:
            if sample.backlogged and sample.worker_seconds > 0:
                reported[0] += sample.records
                reported[1] += sample.worker_seconds
        elif sample.seconds > 0 and sample.seconds >= config.min_sample_seconds:
            drained[0] += sample.records
            drained[1] += sample.seconds
    if reported[1] < config.min_sample_seconds:
        reported = [0, 0.0]
    records, seconds = drained[0] + reported[0], drained[1] + reported[1]
    return records / seconds if records else None


def measured_capacities(samples: Iterable[ThroughputSample], now: float,
                        config: ScalingConfig) -> dict[str, float]:
    """:func:`measured_capacity` of each sub-topology's tasks, for those measured."""
    by_subtopology: dict[str, list[ThroughputSample]] = {}
    for sample in samples:
        by_subtopology.setdefault(subtopology_of(sample.task_id), []).append(sample)
    capacities = {sub: measured_capacity(group, now, config) for sub, group in by_subtopology.items()}
    return {sub: capacity for sub, capacity in capacities.items() if capacity is not None}


def capacity_floor(samples: Iterable[ThroughputSample], now: float, config: ScalingConfig) -> float | None:
    """Records per second of worker time the warm worker reports within the throughput window
    show, backlogged or not, once their shares add up to ``min_sample_seconds``; else None.

    A lower bound on capacity: a worker that keeps up runs small batches, mostly fixed cost, so
    it could do at least this much. It never lowers what the policy plans with (the feedback
    :func:`measured_capacity` avoids), only lifts a default or measurement below it: a fleet
    sized on a too-low default never falls behind, so it would never be measured otherwise."""
    oldest = now - config.throughput_window_seconds
    records, seconds = 0, 0.0
    for sample in samples:
        if (sample.time >= oldest and sample.is_worker_report and sample.is_warm(config)
                and sample.records > 0 and sample.worker_seconds > 0):
            records += sample.records
            seconds += sample.worker_seconds
    return records / seconds if seconds >= config.min_sample_seconds else None


def capacity_floors(samples: Iterable[ThroughputSample], now: float, config: ScalingConfig) -> dict[str, float]:
    """:func:`capacity_floor` of each sub-topology's tasks, for those with one."""
    by_subtopology: dict[str, list[ThroughputSample]] = {}
    for sample in samples:
        by_subtopology.setdefault(subtopology_of(sample.task_id), []).append(sample)
    floors = {sub: capacity_floor(group, now, config) for sub, group in by_subtopology.items()}
    return {sub: floor for sub, floor in floors.items() if floor is not None}


def capacity_to_plan_with(measured: float | None, last_measured: float | None, config: ScalingConfig,
                          floor: float | None = None) -> float:
    """Measured now, else measured before (the sensor keeps it), else the configured default;
    raised to ``floor`` (:func:`capacity_floor`) when that is higher."""
    capacity = config.default_worker_records_per_second
    for candidate in (measured, last_measured):
        if candidate is not None and candidate > 0:
            capacity = candidate
            break
    return max(capacity, floor or 0.0)
