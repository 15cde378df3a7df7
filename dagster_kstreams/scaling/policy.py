"""How many workers an application needs, from consumer lag, input rate and measured throughput.

The count follows the Flink Kubernetes autoscaler and DS2, per sub-topology ``s``::

    required rate(s) = input rate(s) / target utilization + lag(s) / catch-up duration
    workers          = ceil(sum over s of required rate(s) / capacity(s))

With the default target utilization (0.9) and scale-up dead band (0.1), a backlog that one worker
at its measured capacity drains within the catch-up duration keeps one worker (the sum is at most
``1 + (1 - target utilization)`` workers then); with a band below ``1 - target utilization`` it may
not. ``catch_up_at_full_capacity`` (off) keeps the headroom for the input alone,
``max(input / utilization, input + lag / catch-up)``, which keeps that worker whatever the bands,
at a cost in lag measured in ``bench/README.md``, "Simulated again (session 15)".

where ``capacity(s)`` is the *true processing rate* workers reached on the tasks of ``s``
(records per second of busy time, from their materializations), else the last such
measurement, else a configured default. Sub-topologies process different records at different
costs (a line of text, the words it was split into), so their lags only add up as work time,
never as records: DS2 sizes each operator by its own rate for the same reason. Like KEDA's
Kafka scaler the count is capped at the number of tasks, since a task is never split between
workers, and it is clamped to ``[min_workers, max_workers]``.

Only work long enough for processing to outweigh a batch's fixed cost (Spark job start-up)
measures capacity: a drain of at least ``min_sample_seconds``, or a worker's reports of tasks
that were far behind (four reports' worth of records still waiting), each charged its share
of the worker's time since tasks run at once. Short batches would otherwise feed back: more
workers mean smaller batches per worker, a lower measured rate, and so yet more workers.
What every warm worker report shows (records per second of worker time, behind or not) is a
lower bound instead (:func:`~.measurements.capacity_floor`): it only lifts a capacity below it,
so a fleet sized on a too-low default, which never falls behind, still learns better.

Lag adds workers only on a capacity that is known (``lag_waits_for_measured_capacity``): measured,
remembered, or a lower bound from warm reports. On the bare default nobody has seen a worker
process a record of that sub-topology, and the lag that piles up while the first worker starts
(its JVM, SparkSession and first queries: three minutes on a loaded laptop in ``make demo``) says
nothing about whether it will keep up: counted at the demo's default of 500 records/s, a steady
200 records/s got a second worker at 9,940 records of lag and a third at 31,901, all before the
first had processed a record. So until the first measurement the count follows the input rate (a
burst still scales up on its rate), and the lag waits for the first worker's warm reports, which
measure the capacity within ``min_sample_seconds`` of its work.

A sub-topology fed only by others reads what they write, so while they drain a backlog its input
arrives at their catch-up pace. Its rate is capped at their own input rate times their measured
selectivity (``bound_downstream_rates``, :mod:`.selectivity`, as DS2 derives an operator's rate
from its upstream's): what arrives beyond that is backlog, drained through the lag term.

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
therefore never retires workers that the next burst would need again. A burst's *end* does not wait
out the window (``burst_end_window_seconds``, :func:`stabilize`): once every count of the last 120 s
is at most a third of the window's highest, the count falls to their highest. Held for the whole
window, a fleet sized for 10x the input stayed 300 s after the input fell back (``bench/README.md``,
"Simulated again (session 26)").

Three refinements make a scale-down one step rather than a staircase (measured in
``bench/README.md``, "Simulated again (sessions 10 and 17)"):

* what the window remembers of a tick is the count at the *latest* input rate (over the last
  interval) when that is below the averaged one (``scale_down_follows_latest_rate``). A rate that
  has fallen shows in the latest reading at once, while the average decays over
  ``rate_smoothing_seconds``: remembering the average, the window's highest recommendation fell
  tick by tick with that decay after a burst (21, 6, 3, 2 workers). One low reading cannot retire
  workers on its own: the window keeps the highest of all its ticks, and scale-up still follows
  the average;
* while a backlog is being drained (its catch-up term still adds workers to the count the input
  alone needs, and the lag fell since the last tick) no scale-down is made, and the window remembers
  the tick at the input's count (``scale_down_after_backlog_drains``, :mod:`.backlog`): the count
  sized for the backlog drains it, then falls to the input's count in one step. Remembered with its
  catch-up term, the shrinking lag brought it down a step per window (``bench/README.md``,
  "Simulated again (session 17)"). A tick that scales up is remembered as it scaled;
* a scale-down smaller than ``scale_down_dead_band`` of the current count (rounded up to whole
  workers, at least 1) is not made: the catch-up term draining within a burst (21 workers, then
  20, then 19) is not worth moving tasks for, and the count falls once, when the burst is over.

A count may be of whole tasks (``whole_task_workers``, off by default, :mod:`.granularity`): when the busiest worker
would hold tasks whose lightest input alone exceeds one worker, the count rises to the fewest
workers whose busiest holds few enough (63 workers for 256 tasks of 500 records/s leave four of
them 5 tasks, beyond 2,431.6 records/s: 64). That count passes the scale-up dead band like any
other (it must exceed the current count by more than the band): a shortfall of a few percent is
within a reading's error. And it is left only once the busiest would be below ``1 / (1 + band)``
of a worker for a whole window (the window keeps the count at the loads times ``1 + band``):
without that hysteresis a steady stream read with noise, its busiest worker at 98%, flapped.

And no scale-down is made on a tick whose input rate over the last interval is above the averaged
one (``scale_down_waits_while_rate_rises``): the average lags a rising rate, so a count sized on it
is already short of the next tick's, and a scale-down then is undone by the rise (the flap in
``bench/README.md``'s 256-partition ramp: 8 workers down to 7 thirty seconds into the ramp, up
to 9 a minute later). The tick is still remembered; the scale-down waits for a tick whose rate
is not rising. On a steady stream read with noise about every other tick reads above the
average, so a scale-down waits a tick or two longer.

And one keeps a steady stream from flapping: a scale-up needs more than ``scale_up_dead_band`` of
the current count beyond it (``required_workers > current x (1 + band)``). End offsets read a few
percent off between ticks (producers send in batches); a stream needing 5.1 workers, read 20% high
once, would otherwise get a seventh worker, lose it a window later and get it back on the next high
reading. A real shortfall still scales up: the lag it leaves adds its catch-up rate until the count
clears the band. Below the lower bound (no worker at all) there is no band.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from .backlog import backlog_is_draining
from .config import ScalingConfig
from .demand import SubtopologyDemand, required_rate, subtopology_demands
from .granularity import workers_for_whole_tasks
from .ids import subtopology_of
from .measurements import LagSnapshot, ThroughputSample, capacity_floors, input_rates, measured_capacities
from .selectivity import measured_selectivities, offset_selectivities


def worker_bounds(task_count: int, has_work: bool, config: ScalingConfig) -> tuple[int, int]:
    """The ``(lower, upper)`` limits on the worker count (see the module docstring)."""
    upper = min(config.max_workers, task_count)
    lower = min(config.min_workers, upper)
    if has_work and upper >= 1:
        lower = max(lower, 1)
    return lower, upper


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


def task_loads(snapshot: LagSnapshot, previous_snapshot: LagSnapshot | None,
               demands: Mapping[str, SubtopologyDemand], *, at_latest: bool = False) -> list[float]:
    """Each task's input in workers (its rate over its sub-topology's capacity, no headroom, no lag):
    the sub-topology's averaged rate (with ``at_latest``, the lower of it and the latest) shared among
    its tasks as the last interval's input was (evenly when none arrived)."""
    latest = input_rates(previous_snapshot, snapshot)
    by_sub: dict[str, list[str]] = {}
    for task in snapshot.tasks:
        by_sub.setdefault(subtopology_of(task), []).append(task)
    loads = []
    for sub, tasks in by_sub.items():
        demand = demands[sub]
        rate = min(demand.input_rate, demand.latest_input_rate) if at_latest else demand.input_rate
        arrived = sum(latest.get(task, 0.0) for task in tasks)
        for task in tasks:
            share = latest.get(task, 0.0) / arrived if arrived > 0 else 1 / len(tasks)
            loads.append(rate * share / demand.capacity)
    return loads


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
    remembered: int | None = None,
    may_scale_down: bool = True,
) -> tuple[int, StabilizationState]:
    """The worker count to act on: up at once, down only as far as the window allows.

    ``remembered`` is what the window keeps of this tick (``recommended`` when None; the count at
    the latest input rate, at most ``recommended``, see the module docstring). A scale-down goes to
    the highest count the window keeps, never below it, and only when it retires at least
    ``scale_down_dead_band`` of the current count (:func:`scale_down_step`).
    ``may_scale_down`` False (the input rate is rising) holds the current count on this tick; the
    tick is still remembered.
    ``ceiling`` (the current upper bound) is a hard limit: when ``max_workers`` is lowered
    or tasks disappear, surplus workers go without waiting.
    """
    window = config.scale_down_stabilization_seconds
    observed_since = now if state.observed_since is None else min(state.observed_since, now)
    recent = tuple((t, n) for t, n in state.recommendations if now - window < t <= now)
    kept = recommended if remembered is None else min(recommended, remembered)
    history = recent + ((now, kept),)
    if recommended >= current:
        decided = recommended
    elif observed_since > now - window or not may_scale_down:
        decided = current
    else:
        target = min(current, _scale_down_target(kept, history, now, config))
        decided = target if current - target >= scale_down_step(current, config) else current
    if ceiling is not None:
        decided = min(decided, ceiling)
    return decided, StabilizationState(recommendations=history, observed_since=observed_since)


def _scale_down_target(kept: int, history: tuple[tuple[float, int], ...], now: float,
                       config: ScalingConfig) -> int:
    """The highest count the window keeps; or, once a burst has ended (the counts of the last
    ``burst_end_window_seconds``, this tick's too, are all at most the window's highest over
    ``burst_end_fall``), the highest of those: the fleet sized for the burst goes without waiting
    out the whole window, which is there to hold a fleet through a dip, not after a fall."""
    highest = max(n for _, n in history)
    if config.burst_end_window_seconds and kept * config.burst_end_fall <= highest:
        since_fall = max(n for t, n in history if now - t < config.burst_end_window_seconds)
        if since_fall * config.burst_end_fall <= highest:
            return since_fall
    return highest


def scale_down_step(current: int, config: ScalingConfig) -> int:
    """The fewest workers a scale-down from ``current`` retires: ``scale_down_dead_band`` of them,
    rounded up, at least 1."""
    return max(1, math.ceil(config.scale_down_dead_band * current - _WHOLE_WORKER_SLACK))


def rate_is_rising(demands: Iterable[SubtopologyDemand]) -> bool:
    """Whether the input rate of the last interval is above the averaged one, counted in the work it
    brings (each sub-topology's rate over its capacity): the average lags a rising rate."""
    return sum((demand.latest_input_rate - demand.input_rate) / demand.capacity
               for demand in demands) > _WHOLE_WORKER_SLACK


def count_to_remember(demands: Mapping[str, SubtopologyDemand], snapshot: LagSnapshot,
                      previous_snapshot: LagSnapshot | None, has_work: bool, task_count: int, config: ScalingConfig,
                      *, with_lag: bool = True) -> int:
    """The count a tick leaves in the scale-down window: at the latest input rate when it is below the
    averaged one (``scale_down_follows_latest_rate``, else at the averaged), with whole tasks at the
    loads times ``1 + scale_up_dead_band`` (``whole_task_workers``). ``with_lag`` False: the steady
    count, the input's alone."""
    at_latest = config.scale_down_follows_latest_rate
    required = sum(required_rate(demand.counted_lag if with_lag else 0,
                                 min(demand.input_rate, demand.latest_input_rate) if at_latest else demand.input_rate,
                                 config) / demand.capacity for demand in demands.values())
    count = desired_workers(required, has_work, task_count, config)
    if not config.whole_task_workers:
        return count
    _, upper = worker_bounds(task_count, has_work, config)
    margin = 1 + config.scale_up_dead_band
    loads = task_loads(snapshot, previous_snapshot, demands, at_latest=at_latest)
    return workers_for_whole_tasks([load * margin for load in loads], count, upper)


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
    backlog_draining: bool = False  # the count holds for a backlog being drained (.backlog)

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
            return "hold (draining a backlog)" if self.backlog_draining else "hold (scale-down stabilizing)"
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
    upstreams: Mapping[str, Collection[str]] | None = None,
) -> tuple[Recommendation, StabilizationState]:
    """One tick of the policy: the stabilized desired worker count and the next state.

    ``current_workers`` counts workers that are running and not retiring. The input rate
    is measured since ``previous_snapshot`` and averaged with ``last_input_rates`` (the
    averaged rates of the tick before, by sub-topology, and their weight: :func:`smoothed_rates`).
    ``last_measured_capacities``: per sub-topology, the capacity measured on an earlier tick.
    ``upstreams``: for each sub-topology fed only by others of the app, their ids (what bounds its
    input rate: :func:`subtopology_demands`), at their selectivities from the reports, else from the
    offsets (:mod:`.selectivity`).
    """
    throughput = list(throughput)
    upstreams = upstreams or {}
    demands = subtopology_demands(snapshot, config, previous_snapshot=previous_snapshot,
                                  measured=measured_capacities(throughput, snapshot.time, config),
                                  remembered=last_measured_capacities,
                                  floors=capacity_floors(throughput, snapshot.time, config),
                                  previous_rates=last_input_rates,
                                  previous_rate_weight=last_input_rate_weight, upstreams=upstreams,
                                  selectivities={**offset_selectivities(previous_snapshot, snapshot, upstreams),
                                                 **measured_selectivities(throughput, upstreams, snapshot.time,
                                                                          config)})
    rate = sum(demand.input_rate for demand in demands.values())
    total_lag = snapshot.total_lag
    task_count = len(snapshot.tasks)
    has_work = total_lag > 0 or rate > 0
    required = sum(demand.workers for demand in demands.values())
    lower, upper = worker_bounds(task_count, has_work, config)
    total = desired_workers(required, has_work, task_count, config)
    loads = task_loads(snapshot, previous_snapshot, demands) if config.whole_task_workers else []
    unstabilized = workers_for_whole_tasks(loads, total, upper)
    # The band is measured on what is asked for: the total's fraction, or the whole-task count above it.
    asked = unstabilized if unstabilized > total else required
    if lower <= current_workers < unstabilized and asked <= current_workers * (1 + config.scale_up_dead_band):
        unstabilized = current_workers
    margin = 1 + config.scale_up_dead_band
    if unstabilized < current_workers:
        # Hysteresis: a whole-task count is left only once the busiest would be beyond the band of
        # falling behind (up above one worker, down below 1 / (1 + band)), as the total's count is.
        unstabilized = max(unstabilized,
                           min(current_workers, workers_for_whole_tasks([load * margin for load in loads], total,
                                                                        upper)))
    remembered = None
    if config.scale_down_follows_latest_rate:
        remembered = count_to_remember(demands, snapshot, previous_snapshot, has_work, task_count, config)
    may_scale_down = not (config.scale_down_waits_while_rate_rises and rate_is_rising(demands.values()))
    draining = False
    if config.scale_down_after_backlog_drains:
        steady = count_to_remember(demands, snapshot, previous_snapshot, has_work, task_count, config,
                                   with_lag=False)
        with_lag = remembered if remembered is not None else count_to_remember(
            demands, snapshot, previous_snapshot, has_work, task_count, config)
        draining = backlog_is_draining(with_lag, steady, snapshot, previous_snapshot, demands)
        if draining:
            # The count sized for the backlog holds until it is drained; the window remembers what the
            # input alone needs, so the fall comes in one step (.backlog). A scale-up is remembered whole.
            may_scale_down = False
            if unstabilized <= current_workers:
                remembered = steady
    decided, next_state = stabilize(unstabilized, current_workers, snapshot.time, state, config, ceiling=upper,
                                    remembered=remembered, may_scale_down=may_scale_down)
    recommendation = Recommendation(
        desired_workers=decided,
        unstabilized_workers=unstabilized,
        current_workers=current_workers,
        total_lag=total_lag,
        input_rate=rate,
        required_workers=required,
        task_count=task_count,
        demands=demands,
        backlog_draining=draining,
    )
    return recommendation, next_state
