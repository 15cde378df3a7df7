"""How many workers an application needs, from consumer lag, input rate and measured throughput.

The count follows the Flink Kubernetes autoscaler and DS2, per sub-topology ``s``::

    required rate(s) = input rate(s) / target utilization + lag(s) / catch-up duration
    workers          = ceil(sum over s of required rate(s) / capacity(s))

where ``capacity(s)`` is the *true processing rate* workers reached on the tasks of ``s``
(records per second of busy time, from their materializations), else the last such
measurement, else a configured default. Sub-topologies process different records at different
costs (a line of text, the words it was split into), so their lags only add up as work time,
never as records: DS2 sizes each operator by its own rate for the same reason. Like KEDA's
Kafka scaler the count is capped at the number of tasks, since a task is never split between
workers, and it is clamped to ``[min_workers, max_workers]``.

Only work long enough for processing to outweigh a batch's fixed cost (Spark job start-up)
measures capacity: a drain of at least ``min_sample_seconds``, or a worker's reports of tasks
that were backlogged (they had more records waiting than a batch takes), each charged its share
of the worker's time since tasks run at once. Short batches would otherwise feed back: more
workers mean smaller batches per worker, a lower measured rate, and so yet more workers.

Nor do a worker's cold batches: the first ``warmup_batches`` runs of a task in a process pay
for that process's start (JVM, SparkSession, Python workers, code generation) and for
restoring the task's state, not for records. Counting them would make every freshly launched
worker look slow, right when it was launched to help, and push the count up further. Each
sample says which run of its task in its process it was (``task_batch``); the lag sensor fills
it in (a hand materialization, one process per run, is always a first run).

Bounds, decided here once: ``upper = min(max_workers, tasks)`` and
``lower = min(min_workers, upper)``; when there is work (lag or input) and at least one task,
``lower`` is at least 1, because lag cannot drain with no worker. So ``min_workers=0`` means
"scale to zero when idle", and with no tasks the count is 0 whatever ``min_workers`` says.
The count is of active workers (those that hold tasks); warm standbys
(``ScalingConfig.standby_workers``) come on top of it and are not bounded by ``max_workers``.

Scaling up takes effect on the tick that sees the need. Scaling down follows Kubernetes
HPA's downscale stabilization: the count may only fall to the highest recommendation seen
within the stabilization window, and only once the policy has watched for a whole window
(a restarted sensor does not scale down on its first tick). A burst followed by a dip
therefore never retires workers that the next burst would need again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .ids import subtopology_of


@dataclass(frozen=True)
class ScalingConfig:
    """Limits and targets of one application's elastic workers.

    ``default_worker_records_per_second`` stands in for a sub-topology's measured capacity
    until workers have reported a warm batch of one of its tasks (past the first
    ``warmup_batches`` runs of the task in its worker) of at least ``min_sample_seconds``;
    ``throughput_window_seconds`` is how far back measurements count.

    ``restart_backoff_seconds`` / ``max_restart_backoff_seconds``: a worker id whose runs keep
    failing is relaunched after a delay that doubles with each consecutive failure, up to the
    maximum (the first failure is replaced at once); see :mod:`.backoff`.

    ``rate_smoothing_seconds``: the time constant of the input rate's exponential average. End
    offsets move in steps (producers send in batches), so the rate between two ticks a few seconds
    apart swings around the true one; averaged over about this long it does not (0: no averaging).

    ``standby_workers``: warm standbys, worker runs kept up with a SparkSession and no tasks
    (Kafka Streams' idle instances beyond the task count). Scale-up and failover grant tasks to a
    standby first, which starts them at once, and a new standby is launched in its place
    (:mod:`.plan`). ``min_workers`` and ``max_workers`` bound the *active* workers only: standbys
    come on top, so an application runs at most ``max_workers + standby_workers`` worker runs, and
    keeps its standbys even while it has no active worker (``min_workers=0``), which is what makes
    its first scale-up instant. An application with no tasks keeps none.
    """

    min_workers: int = 1
    max_workers: int = 8
    catch_up_seconds: float = 300.0
    target_utilization: float = 0.7
    scale_down_stabilization_seconds: float = 300.0
    default_worker_records_per_second: float = 1000.0
    throughput_window_seconds: float = 900.0
    min_sample_seconds: float = 10.0
    warmup_batches: int = 1
    restart_backoff_seconds: float = 15.0
    max_restart_backoff_seconds: float = 600.0
    backoff_reset_seconds: float = 600.0
    rate_smoothing_seconds: float = 20.0
    standby_workers: int = 0

    def __post_init__(self) -> None:
        if self.min_workers < 0:
            raise ValueError(f"min_workers must be >= 0, got {self.min_workers}")
        if self.max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {self.max_workers}")
        if self.min_workers > self.max_workers:
            raise ValueError(f"min_workers ({self.min_workers}) exceeds max_workers ({self.max_workers})")
        if not self.catch_up_seconds > 0:
            raise ValueError(f"catch_up_seconds must be > 0, got {self.catch_up_seconds}")
        if not 0 < self.target_utilization <= 1:
            raise ValueError(f"target_utilization must be in (0, 1], got {self.target_utilization}")
        if not self.scale_down_stabilization_seconds >= 0:
            raise ValueError(
                f"scale_down_stabilization_seconds must be >= 0, got {self.scale_down_stabilization_seconds}"
            )
        if not self.default_worker_records_per_second > 0:
            raise ValueError(
                f"default_worker_records_per_second must be > 0, got {self.default_worker_records_per_second}"
            )
        if not self.throughput_window_seconds > 0:
            raise ValueError(f"throughput_window_seconds must be > 0, got {self.throughput_window_seconds}")
        if not self.min_sample_seconds >= 0:
            raise ValueError(f"min_sample_seconds must be >= 0, got {self.min_sample_seconds}")
        if self.warmup_batches < 0:
            raise ValueError(f"warmup_batches must be >= 0, got {self.warmup_batches}")
        if not 0 <= self.restart_backoff_seconds <= self.max_restart_backoff_seconds:
            raise ValueError("restart_backoff_seconds must be >= 0 and at most max_restart_backoff_seconds, got "
                             f"{self.restart_backoff_seconds} and {self.max_restart_backoff_seconds}")
        if not self.backoff_reset_seconds > 0:
            raise ValueError(f"backoff_reset_seconds must be > 0, got {self.backoff_reset_seconds}")
        if not self.rate_smoothing_seconds >= 0:
            raise ValueError(f"rate_smoothing_seconds must be >= 0, got {self.rate_smoothing_seconds}")
        if self.standby_workers < 0:
            raise ValueError(f"standby_workers must be >= 0, got {self.standby_workers}")


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


@dataclass(frozen=True)
class ThroughputSample:
    """What was reported for one task: records processed in ``seconds`` of its batches' time.

    ``task_batch``: which run (or report) of this task in the reporting process it was (1 = the
    first, cold one); None when unknown, which counts as warm. A worker's report of a task it keeps
    running also gives ``worker_seconds``, the task's share of the worker's time (tasks run at
    once share it), and ``lag_left``, the records still waiting for the task when it reported.
    """

    time: float
    worker_id: str
    task_id: str
    records: int
    seconds: float
    task_batch: int | None = None
    worker_seconds: float | None = None
    lag_left: int | None = None

    def is_warm(self, config: ScalingConfig) -> bool:
        """Past the process's start-up and the task's state restore (``warmup_batches``)."""
        return self.task_batch is None or self.task_batch > config.warmup_batches

    @property
    def is_worker_report(self) -> bool:
        return self.worker_seconds is not None

    @property
    def backlogged(self) -> bool:
        """At least half as many records still waiting as the report processed: the task worked
        the whole time at its full rate. One that keeps up processes what arrives, in batches that
        are mostly fixed cost: its rate says what arrived, not what the worker can do."""
        return self.lag_left is not None and 2 * self.lag_left >= self.records


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


def capacity_to_plan_with(measured: float | None, last_measured: float | None, config: ScalingConfig) -> float:
    """Measured now, else measured before (the sensor keeps it), else the configured default."""
    for capacity in (measured, last_measured):
        if capacity is not None and capacity > 0:
            return capacity
    return config.default_worker_records_per_second


def worker_bounds(task_count: int, has_work: bool, config: ScalingConfig) -> tuple[int, int]:
    """The ``(lower, upper)`` limits on the worker count (see the module docstring)."""
    upper = min(config.max_workers, task_count)
    lower = min(config.min_workers, upper)
    if has_work and upper >= 1:
        lower = max(lower, 1)
    return lower, upper


def required_rate(total_lag: int, input_rate: float, config: ScalingConfig) -> float:
    """Records per second needed to keep up with input and drain the lag within the catch-up time."""
    return input_rate / config.target_utilization + total_lag / config.catch_up_seconds


@dataclass(frozen=True)
class SubtopologyDemand:
    """One sub-topology's share of the work at a tick.

    ``capacity``: records of this sub-topology one worker processes per second (measured,
    else remembered, else the default); ``workers``: how many workers its required rate keeps
    busy, a fraction.
    """

    lag: int
    input_rate: float
    capacity: float
    capacity_measured: bool
    required_rate: float
    workers: float


def subtopology_demands(
    snapshot: LagSnapshot,
    config: ScalingConfig,
    *,
    previous_snapshot: LagSnapshot | None = None,
    measured: Mapping[str, float] | None = None,
    remembered: Mapping[str, float] | None = None,
    previous_rates: Mapping[str, float] | None = None,
    previous_rate_weight: float = 0.0,
) -> dict[str, SubtopologyDemand]:
    """Each sub-topology's lag, input rate, capacity and the workers it needs, keyed by its id.

    The input rate is measured between ``previous_snapshot`` and ``snapshot`` and averaged with
    ``previous_rates`` (the averaged rates of the tick before, by sub-topology, with their weight:
    :func:`smoothed_rates`)."""
    measured = measured or {}
    remembered = remembered or {}
    rates = input_rates(previous_snapshot, snapshot)
    lags: dict[str, int] = {}
    arriving: dict[str, float] = {}
    for task, offsets in snapshot.tasks.items():
        sub = subtopology_of(task)
        lags[sub] = lags.get(sub, 0) + offsets.lag
        arriving[sub] = arriving.get(sub, 0.0) + rates.get(task, 0.0)
    if previous_snapshot is not None:
        arriving, _ = smoothed_rates(previous_rates or {}, arriving, snapshot.time - previous_snapshot.time, config,
                                     previous_rate_weight)
    demands = {}
    for sub in lags:
        capacity = capacity_to_plan_with(measured.get(sub), remembered.get(sub), config)
        needed = required_rate(lags[sub], arriving[sub], config)
        demands[sub] = SubtopologyDemand(lag=lags[sub], input_rate=arriving[sub], capacity=capacity,
                                         capacity_measured=sub in measured, required_rate=needed,
                                         workers=needed / capacity)
    return demands


# A sum of per-sub-topology fractions that is a whole number may come out a hair above it.
_WHOLE_WORKER_SLACK = 1e-9


def desired_workers(required_workers: float, has_work: bool, task_count: int, config: ScalingConfig) -> int:
    """Workers needed right now (``required_workers``, the sum of the sub-topologies' shares,
    rounded up), within the bounds, before stabilization."""
    if required_workers < 0:
        raise ValueError(f"required_workers must be >= 0, got {required_workers}")
    lower, upper = worker_bounds(task_count, has_work, config)
    needed = math.ceil(required_workers - _WHOLE_WORKER_SLACK)
    return max(lower, min(upper, needed))


@dataclass(frozen=True)
class StabilizationState:
    """Recent recommendations ``(time, workers)`` and when the policy began watching."""

    recommendations: tuple[tuple[float, int], ...] = ()
    observed_since: float | None = None

    def to_dict(self) -> dict:
        return {"recommendations": [list(r) for r in self.recommendations], "observed_since": self.observed_since}

    @classmethod
    def from_dict(cls, data: Mapping) -> StabilizationState:
        since = data.get("observed_since")
        return cls(
            recommendations=tuple((float(t), int(n)) for t, n in data.get("recommendations", ())),
            observed_since=None if since is None else float(since),
        )


def stabilize(
    recommended: int,
    current: int,
    now: float,
    state: StabilizationState,
    config: ScalingConfig,
    *,
    ceiling: int | None = None,
) -> tuple[int, StabilizationState]:
    """The worker count to act on: up at once, down only as far as the window allows.

    ``ceiling`` (the current upper bound) is a hard limit: when ``max_workers`` is lowered
    or tasks disappear, surplus workers go without waiting.
    """
    window = config.scale_down_stabilization_seconds
    observed_since = now if state.observed_since is None else min(state.observed_since, now)
    recent = tuple((t, n) for t, n in state.recommendations if now - window < t <= now)
    history = recent + ((now, recommended),)
    if recommended >= current:
        decided = recommended
    elif observed_since > now - window:
        decided = current
    else:
        decided = min(current, max(n for _, n in history))
    if ceiling is not None:
        decided = min(decided, ceiling)
    return decided, StabilizationState(recommendations=history, observed_since=observed_since)


@dataclass(frozen=True)
class Recommendation:
    """A tick's decision with the figures behind it (for logs and run metadata)."""

    desired_workers: int
    unstabilized_workers: int
    current_workers: int
    total_lag: int
    input_rate: float
    required_workers: float
    task_count: int
    demands: Mapping[str, SubtopologyDemand] = field(default_factory=dict)

    @property
    def measured_capacities(self) -> dict[str, float]:
        """The capacities measured on this tick, by sub-topology (what the sensor remembers)."""
        return {sub: demand.capacity for sub, demand in self.demands.items() if demand.capacity_measured}

    @property
    def action(self) -> str:
        if self.desired_workers > self.current_workers:
            return "scale up"
        if self.desired_workers < self.current_workers:
            return "scale down"
        if self.unstabilized_workers < self.current_workers:
            return "hold (scale-down stabilizing)"
        return "steady"


def recommend(
    snapshot: LagSnapshot,
    current_workers: int,
    config: ScalingConfig,
    *,
    previous_snapshot: LagSnapshot | None = None,
    throughput: Iterable[ThroughputSample] = (),
    state: StabilizationState = StabilizationState(),
    last_measured_capacities: Mapping[str, float] | None = None,
    last_input_rates: Mapping[str, float] | None = None,
    last_input_rate_weight: float = 0.0,
) -> tuple[Recommendation, StabilizationState]:
    """One tick of the policy: the stabilized desired worker count and the next state.

    ``current_workers`` counts workers that are running and not retiring. The input rate
    is measured since ``previous_snapshot`` and averaged with ``last_input_rates`` (the
    averaged rates of the tick before, by sub-topology, and their weight: :func:`smoothed_rates`).
    ``last_measured_capacities``: per sub-topology, the capacity measured on an earlier tick.
    """
    demands = subtopology_demands(snapshot, config, previous_snapshot=previous_snapshot,
                                  measured=measured_capacities(throughput, snapshot.time, config),
                                  remembered=last_measured_capacities, previous_rates=last_input_rates,
                                  previous_rate_weight=last_input_rate_weight)
    rate = sum(demand.input_rate for demand in demands.values())
    total_lag = snapshot.total_lag
    task_count = len(snapshot.tasks)
    has_work = total_lag > 0 or rate > 0
    required = sum(demand.workers for demand in demands.values())
    unstabilized = desired_workers(required, has_work, task_count, config)
    _, upper = worker_bounds(task_count, has_work, config)
    decided, next_state = stabilize(unstabilized, current_workers, snapshot.time, state, config, ceiling=upper)
    recommendation = Recommendation(
        desired_workers=decided,
        unstabilized_workers=unstabilized,
        current_workers=current_workers,
        total_lag=total_lag,
        input_rate=rate,
        required_workers=required,
        task_count=task_count,
        demands=demands,
    )
    return recommendation, next_state
