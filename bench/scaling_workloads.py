"""The workloads of ``bench/simulate_scaling.py`` and one run of a rule on one of them (no plotting).

With ``R0 = 50 records/s x partitions`` (64 partitions: 3,200/s, about 1.3 workers):

* ``burst``: R0, then 10x R0 from t=300 s to t=600 s, then R0 until 1,500 s;
* ``ramp``: R0, rising linearly from t=300 s to 10x R0 at t=1,500 s, held until 2,400 s;
* ``diurnal``: a day compressed into an hour, ``R0 x (5.5 - 4.5 cos(2 pi t / 3600 s))``: R0 at
  t=0 and t=3,600 s, 10x R0 at t=1,800 s;
* ``failure``: 3x R0 throughout; at t=600 s the process of the worker with the most tasks dies
  (host lost): the sensor sees it only after the 60 s heartbeat timeout;
* ``pipeline``: two sub-topologies (``bench/scaling_model.py``), the second reading what the first
  writes, one record out per record in (a ``group_by``, as ``make demo``'s ``users_per_country``);
  a steady R0, and at t=0 a backlog of 600 s of it waiting for the first (its workers were down):
  while the first drains it, the second's topic fills at the first's catch-up pace. Its need is
  counted in both sub-topologies' records (2x R0).

Every run starts with ``ceil(work at t=0 / (0.7 x capacity))`` warm workers (the work: the rate,
twice it for ``pipeline``; 0.7 whatever the configuration's ``target_utilization``) sharing the
tasks (and the standby, for ``ours+standby``), a fresh sensor state and the given configuration. The rule ticks
every ``sensor_interval`` seconds (30 s: the lag sensor's default ``sensor_interval_seconds`` and
KEDA's default polling interval) and its plan is applied at once, as the sensor applies it. Like the
sensor, a rule sees the newest 500 worker reports of the throughput window (with 256 tasks reporting
every 5 s: about the last 10 s of them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

from bench.scaling_metrics import FLAP_WINDOW_SECONDS, RunSummary, summarize
from bench.scaling_model import ModelParameters, ScalingModel
from bench.scaling_rules import FlinkStyleRule, KedaRule, OursRule
from dagster_kstreams.scaling import ScalingConfig, WorkerState, assign_tasks, replan_handovers, worker_id

SENSOR_INTERVAL_SECONDS = 30.0
RULES = ("ours", "ours+standby", "ours-calibrated", "keda", "flink-style")
RECORDS_PER_PARTITION = 50.0
# The lag sensor reads the newest 500 task materializations of each sub-topology within the throughput
# window (``orchestration/sensors.py``: ``throughput_samples``), not all of them.
SENSOR_SAMPLE_LIMIT = 500
# The fleet a run starts with, whatever the configuration: so that a rule's target utilization
# does not change where KEDA (or any other rule) starts.
INITIAL_UTILIZATION = 0.7
HANDOVER_WAIT_SECONDS = 10.0  # ElasticWorkers.handover_wait_seconds' default


@dataclass(frozen=True)
class Workload:
    name: str
    duration: float
    rate_factor: Callable[[float], float]  # multiple of R0 at time t
    events: tuple[float, ...]  # when the workload changes
    kill_at: float | None = None
    selectivity: float | None = None  # a pipeline of two sub-topologies (ScalingModel)
    backlog_seconds: float = 0.0  # of R0, waiting for the first sub-topology at t=0


WORKLOADS = {
    "burst": Workload("burst", 1500.0, lambda t: 10.0 if 300.0 <= t < 600.0 else 1.0, (300.0, 600.0)),
    "ramp": Workload("ramp", 2400.0, lambda t: 1.0 + 9.0 * min(1.0, max(0.0, (t - 300.0) / 1200.0)), (300.0, 1500.0)),
    "diurnal": Workload("diurnal", 3600.0, lambda t: 5.5 - 4.5 * math.cos(2 * math.pi * t / 3600.0), (0.0, 1800.0)),
    "failure": Workload("failure", 1200.0, lambda t: 3.0, (600.0,), kill_at=600.0),
    "pipeline": Workload("pipeline", 1500.0, lambda t: 1.0, (0.0,), selectivity=1.0, backlog_seconds=600.0),
}


def make_rule(name: str, config: ScalingConfig, params: ModelParameters, initial: int,
              sensor_interval: float = SENSOR_INTERVAL_SECONDS,
              upstreams: Mapping[str, tuple[str, ...]] | None = None):
    upstreams = upstreams or {}
    if name == "ours":
        return OursRule(config, upstreams=upstreams)
    if name == "ours-calibrated":
        calibrated = {**asdict(config), "default_worker_records_per_second": params.worker_capacity}
        return OursRule(ScalingConfig(**calibrated), name=name, upstreams=upstreams)
    if name == "ours+standby":
        return OursRule(ScalingConfig(**{**asdict(config), "standby_workers": 1}), name=name, upstreams=upstreams)
    if name == "keda":
        # A replica's lagThreshold: what one worker processes in a polling interval.
        return KedaRule(lag_threshold=params.worker_capacity * sensor_interval, max_workers=config.max_workers,
                        initial_workers=initial)
    if name == "flink-style":
        return FlinkStyleRule(config)
    raise ValueError(f"unknown rule {name!r}")


@dataclass
class Trace:
    times: list[float]
    lags: list[float]
    active: list[int]
    ticks: list[tuple[float, int]]


def simulate(workload: Workload, partitions: int, rule_name: str, config: ScalingConfig,
             params: ModelParameters = ModelParameters(), sensor_interval: float = SENSOR_INTERVAL_SECONDS,
             on_step: Callable[[ScalingModel], None] | None = None) -> tuple[RunSummary, Trace]:
    """One rule on one workload and size, from a warm start to the workload's end. ``on_step`` is
    called with the model after every step (the tests check the invariants there)."""
    base_rate = RECORDS_PER_PARTITION * partitions
    model = ScalingModel(partitions, lambda t: base_rate * workload.rate_factor(t), params,
                         selectivity=workload.selectivity, backlog=base_rate * workload.backlog_seconds)
    initial = math.ceil(model.work_rate(0.0) / (params.worker_capacity * INITIAL_UTILIZATION))
    for member, tasks in assign_tasks(model.tasks, [worker_id(i) for i in range(initial)]).items():
        model.launch(member, tasks, warm=True)
    rule = make_rule(rule_name, config, params, initial, sensor_interval, model.upstreams)
    standbys = getattr(getattr(rule, "config", None), "standby_workers", 0)
    for index in range(initial, initial + standbys):
        model.launch(worker_id(index), state=WorkerState.STANDBY, warm=True)
    trace = Trace([], [], [], [])
    next_tick = sensor_interval
    settle_until: float | None = None
    while model.now < workload.duration - 1e-9:
        if workload.kill_at is not None and abs(model.now - workload.kill_at) < 1e-9:
            model.kill(max((w for w in model.workers.values() if w.alive and w.ended_at is None
                            and w.state is WorkerState.RUNNING), key=lambda w: (len(w.tags), w.worker_id)).worker_id)
        model.step()
        if on_step is not None:
            on_step(model)
        trace.times.append(model.now)
        trace.lags.append(model.total_lag)
        trace.active.append(model.active_workers())
        if model.now >= next_tick - 1e-9:
            samples = model.recent_samples(config.throughput_window_seconds)[-SENSOR_SAMPLE_LIMIT:]
            desired, plan = rule.tick(model.snapshot(), model.sensor_view(), samples)
            model.apply(plan)
            trace.ticks.append((model.now, desired))
            settle_until = model.now + min(HANDOVER_WAIT_SECONDS, sensor_interval / 2) if plan.handovers else None
            next_tick += sensor_interval
        elif settle_until is not None and model.now <= settle_until + 1e-9:
            # The tick waits for its handovers and grants what was released (the sensor's
            # handover_wait_seconds, polled each step here).
            replanned = replan_handovers(model.tasks, model.sensor_view(), plan, task_weights=model.snapshot().lags(),
                                         standby_workers=standbys)
            if replanned is None:
                settle_until = None
            else:
                plan = replanned
                model.apply_retags(plan.running_retags)
    worker_seconds = sum((run.ended_at if run.ended_at is not None else model.now) - run.launched_at
                         for run in model.runs)
    peak_rate = max(model.work_rate(t) for t in trace.times)
    # The fewest workers that keep up from each step on (no headroom): what changes of need count;
    # a step at an event is that event.
    needs = [math.ceil(model.work_rate(t) / params.worker_capacity - 1e-9) for t in trace.times]
    summary = summarize(rule_name, workload.name, partitions, ticks=trace.ticks, initial=initial,
                        events=workload.events, end=workload.duration,
                        window=FLAP_WINDOW_SECONDS, times=trace.times, lags=trace.lags,
                        active=trace.active,
                        step=params.step_seconds, worker_seconds=worker_seconds, tasks_moved=model.tasks_moved,
                        peak_rate=peak_rate, capacity=params.worker_capacity,
                        target_utilization=config.target_utilization, needs=needs)
    return summary, trace


def scaling_settings(assignments: Sequence[str]) -> dict:
    """``--set`` values as ScalingConfig keyword arguments, each parsed as its default's type."""
    defaults = asdict(ScalingConfig())
    parsed = {}
    for assignment in assignments:
        name, _, text = assignment.partition("=")
        if name not in defaults or not text:
            raise SystemExit(f"--set {assignment!r}: expected SETTING=VALUE with a ScalingConfig setting")
        kind = type(defaults[name])
        if kind is bool:
            if text.lower() not in ("true", "false"):
                raise SystemExit(f"--set {assignment!r}: {name} is true or false")
            parsed[name] = text.lower() == "true"
        else:
            try:
                parsed[name] = kind(text)
            except ValueError:
                raise SystemExit(f"--set {assignment!r}: {name} must be {kind.__name__}") from None
    return parsed
