"""A discrete-time model of an application's elastic workers, for ``bench/simulate_scaling.py``.

The model stands in for Kafka, Dagster and Spark; everything the lag sensor decides is left to the
library (``dagster_kstreams.scaling``): a rule (``bench/scaling_rules.py``) sees what the real
sensor sees (a :class:`LagSnapshot`, the fleet as :class:`Worker` values with their tags, what they
hold and whether they are ready, and the workers' reports as :class:`ThroughputSample` values) and
returns a :class:`ReconciliationPlan`, which the model applies as the sensor would (launch, retag,
retire, cancel).

One sub-topology of ``partitions`` tasks (``0_<p>``); input spread evenly over the partitions. With
a ``selectivity``, a pipeline of two: sub-topology 1 (``1_<p>``, as many tasks) reads a repartition
topic that sub-topology 0 writes ``selectivity`` records to per record it processes, spread evenly
over the partitions, so an upstream that drains a backlog feeds the downstream at its catch-up pace;
a record of either costs a worker the same. ``backlog``: records waiting for sub-topology 0 at t=0.
Each step of ``step_seconds``:

* every task's end offset grows by its share of the workload's rate;
* every live worker reads its tags (a revoked task is released, a granted one starts), then spends
  its step: first what a fresh SparkSession owes (``session_warmup_seconds``), then each newly
  started task's start (``task_start_seconds``), then the rest at ``worker_capacity`` records/s
  shared among its tasks, each taking at most its backlog (water-filling: one core per worker);
* every ``report_interval_seconds`` each worker reports each task it holds (records, its share of
  the worker's time, lag left, which report of the task on this worker it is, and for an upstream
  task the records it wrote for sub-topology 1), as the worker run's materializations do.

What is guaranteed, and checked on every step (:class:`ModelInvariantError` otherwise): records are
conserved (processed + lag = produced, per task; the repartition topic holds the upstream's processed
records times the selectivity), no task is processed by two workers in one step,
and no worker processes before it is ready (its SparkSession up). The sensor's view of a worker
whose process died is the real one: it looks alive, holding what it held, until
``heartbeat_timeout_seconds`` have passed, then failed.

Parameters (defaults, each from ``bench/README.md`` and ``bench/results/``):

* ``worker_capacity`` 2,431.6 records/s per worker (one core, ``local[1]``): the capacity the lag
  sensor measured from the workers' reports in "Autoscaling under a burst", session 8
  (``autoscaling-2026-11-24-b.json``, mode ``standby``, tick at t=76.8 s; sub-topology 0 of the
  word count, lines split into words);
* ``cold_ready_seconds`` 6.1 s: a new worker run from the sensor's decision (``created``) to
  ``worker_ready`` (beating, SparkSession up), mean of 6.45, 6.00 and 5.91 s in
  ``worker-start-2026-11-24-b/-c/-d.json`` ("A worker's start, stage by stage");
* ``task_start_seconds`` 0.65 s per task on a warm session: a warm standby's four tasks committing
  2.6 s after their grant (failover on a quiet machine: granted 3.9 s, committing 6.5 s after the
  kill), the task's state store opened included;
* ``session_warmup_seconds`` 5.9 s: what a fresh session's first queries cost beyond that:
  ``tasks_granted -> first_batch`` of a cold worker's four tasks, 8.3-8.8 s (mean 8.5 s), minus
  the warm 2.6 s. A standby pays it during its warm-up, before it is promoted;
* ``heartbeat_timeout_seconds`` 60 s and ``report_interval_seconds`` 5 s: ``ElasticWorkers``'
  defaults.

Not modelled: the state restore of a large store (the figures above restore small ones), CPU
contention between workers (each has its own core), a run queue, and a zombie that keeps processing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from dagster_kstreams.scaling import (LagSnapshot, ReconciliationPlan, TaskOffsets, ThroughputSample, Worker,
                                      WorkerRetag, WorkerState)


class ModelInvariantError(AssertionError):
    """The model broke one of its guarantees (a bug in the model or in the plan it applied)."""


@dataclass(frozen=True)
class ModelParameters:
    """The measured figures the model runs on (module docstring: where each comes from)."""

    worker_capacity: float = 2431.6
    cold_ready_seconds: float = 6.1
    session_warmup_seconds: float = 5.9
    task_start_seconds: float = 0.65
    heartbeat_timeout_seconds: float = 60.0
    report_interval_seconds: float = 5.0
    step_seconds: float = 1.0


@dataclass
class SimWorker:
    """One worker run: its tags as the sensor wrote them and what its process is doing."""

    worker_id: str
    run_id: str
    launched_at: float
    ready_at: float
    state: WorkerState
    tags: frozenset[str] = frozenset()
    assigned: frozenset[str] = frozenset()
    held: set[str] = field(default_factory=set)
    warmup_left: float = 0.0
    start_left: dict[str, float] = field(default_factory=dict)
    alive: bool = True
    ended_at: float | None = None  # process exited (retired) or died
    died_at: float | None = None
    reports: dict[str, int] = field(default_factory=dict)  # task -> reports sent for it
    since_report: dict[str, list[float]] = field(default_factory=dict)  # task -> [records, worker seconds]

    def is_ready(self, now: float) -> bool:
        return now >= self.ready_at


def water_fill(budget: float, lags: list[float]) -> list[float]:
    """Share ``budget`` records among tasks equally, none taking more than its lag; what one
    task cannot use goes to the others. Returns each task's records, summing to at most ``budget``."""
    taken = [0.0] * len(lags)
    left = budget
    order = sorted(range(len(lags)), key=lambda i: lags[i])
    for rank, i in enumerate(order):
        share = left / (len(order) - rank)
        taken[i] = min(lags[i], share)
        left -= taken[i]
    return taken


class ScalingModel:
    """The fleet, the tasks' offsets and the workers' reports, advanced one step at a time."""

    def __init__(self, partitions: int, rate: Callable[[float], float], params: ModelParameters = ModelParameters(),
                 *, selectivity: float | None = None, backlog: float = 0.0):
        self.params = params
        self.rate = rate
        self.selectivity = selectivity
        self.sources = [f"0_{p}" for p in range(partitions)]
        self.downstream = [] if selectivity is None else [f"1_{p}" for p in range(partitions)]
        self.tasks = self.sources + self.downstream
        # what the lag sensor passes decide_tick: the sub-topology fed wholly by another, and which
        self.upstreams = {} if selectivity is None else {"1": ("0",)}
        self.now = 0.0
        self.produced = {task: backlog / partitions if task in self.sources else 0.0 for task in self.tasks}
        self.processed = {task: 0.0 for task in self.tasks}
        self.workers: dict[str, SimWorker] = {}  # newest run of each worker id
        self.runs: list[SimWorker] = []
        self.samples: list[ThroughputSample] = []
        self.last_run_of: dict[str, str] = {}  # task -> run that last processed it
        self.tasks_moved = 0
        self.processing: dict[str, str] = {}  # task -> run that processed it in the last step
        self._next_report = params.report_interval_seconds

    # --- the fleet -------------------------------------------------------------------------------

    def launch(self, worker_id: str, tasks: Iterable[str] = (), assigned: Iterable[str] | None = None,
               state: WorkerState = WorkerState.RUNNING, warm: bool = False) -> SimWorker:
        """A new run of ``worker_id``; ``warm``: up, warmed and running its tasks already (the fleet a
        run starts with)."""
        tasks = frozenset(tasks)
        ready_at = self.now if warm else self.now + self.params.cold_ready_seconds
        worker = SimWorker(worker_id, f"{worker_id}#{len(self.runs)}", self.now, ready_at, WorkerState(state), tasks,
                           tasks if assigned is None else frozenset(assigned),
                           warmup_left=0.0 if warm else self.params.session_warmup_seconds)
        if warm:  # its tasks running already, past their cold first report
            worker.held = set(tasks)
            worker.start_left = {task: 0.0 for task in tasks}
            worker.reports = {task: 1 for task in tasks}
            worker.since_report = {task: [0.0, 0.0] for task in tasks}
        self.workers[worker_id] = worker
        self.runs.append(worker)
        return worker

    def kill(self, worker_id: str) -> None:
        """The worker's process dies (host lost): it stops at once; the sensor notices after the
        heartbeat timeout."""
        worker = self.workers[worker_id]
        worker.alive = False
        worker.died_at = worker.ended_at = self.now

    def sensor_view(self) -> list[Worker]:
        """The fleet as the lag sensor builds it (``orchestration/sensors.py``: ``current_workers``)."""
        view = []
        for worker in self.workers.values():
            if worker.ended_at is not None and worker.died_at is None:
                continue  # retired and exited
            if worker.died_at is not None and self.now - worker.died_at > self.params.heartbeat_timeout_seconds:
                view.append(Worker(worker.worker_id, tasks=worker.tags, assigned=worker.assigned,
                                   state=WorkerState.FAILED, failures=1,
                                   failed_at=worker.died_at + self.params.heartbeat_timeout_seconds))
                continue
            view.append(Worker(worker.worker_id, tasks=worker.tags, assigned=worker.assigned,
                               held=frozenset(worker.held), state=worker.state, started=True,
                               ready=worker.is_ready(self.now)))
        return view

    def snapshot(self) -> LagSnapshot:
        """End and committed offsets, whole records as Kafka has them (a batch commits its offsets)."""
        return LagSnapshot(self.now, {task: TaskOffsets(math.floor(self.produced[task]),
                                                        math.floor(self.processed[task])) for task in self.tasks})

    def apply(self, plan: ReconciliationPlan) -> None:
        """Apply a tick's plan as the sensor does: cancel, retire, retag, launch."""
        for worker_id in (*plan.cancel, *plan.retire):
            worker = self.workers[worker_id]
            worker.tags = worker.assigned = frozenset()
            worker.state = WorkerState.RETIRING
        self.apply_retags(plan.retag)
        for new in plan.launch:
            self.launch(new.worker_id, new.tasks, new.assigned, new.state)

    def apply_retags(self, retags: Iterable[WorkerRetag]) -> None:
        for change in retags:
            worker = self.workers[change.worker_id]
            worker.tags, worker.assigned, worker.state = change.tasks, change.assigned, change.state

    def active_workers(self) -> int:
        """Running worker runs whose process is up (standbys and retiring ones apart)."""
        return sum(1 for w in self.workers.values()
                   if w.alive and w.ended_at is None and w.state is WorkerState.RUNNING)

    def live_runs(self) -> int:
        """Worker runs whose process is up, standbys and retiring ones included (what costs)."""
        return sum(1 for w in self.runs if w.alive and w.ended_at is None)

    # --- time ------------------------------------------------------------------------------------

    def step(self) -> None:
        """Advance one step: input arrives, workers process, reports go out; invariants checked."""
        dt = self.params.step_seconds
        arriving = self.rate(self.now) * dt / len(self.sources)
        for task in self.sources:
            self.produced[task] += arriving
        processing: dict[str, str] = {}
        for worker in self.runs:
            if worker.alive and worker.ended_at is None:
                self._work(worker, dt, processing)
        self.processing = processing
        self.now += dt
        if self.now + 1e-9 >= self._next_report:
            self._report()
            self._next_report += self.params.report_interval_seconds
        self._check_conservation()

    def _work(self, worker: SimWorker, dt: float, processing: dict[str, str]) -> None:
        if not worker.is_ready(self.now):
            return
        # The worker reads its tags: revoked tasks are released, granted ones start.
        for task in sorted(worker.held - worker.tags):
            worker.held.discard(task)
            worker.start_left.pop(task, None)
        for task in sorted(worker.tags - worker.held):
            worker.held.add(task)
            worker.start_left[task] = self.params.task_start_seconds
            worker.reports[task] = 0
            worker.since_report[task] = [0.0, 0.0]
        if worker.state is WorkerState.RETIRING and not worker.held:
            worker.ended_at = self.now  # reports nothing held, and exits
            return
        time_left = dt
        paid = min(time_left, worker.warmup_left)
        worker.warmup_left -= paid
        time_left -= paid
        started = []
        for task in sorted(worker.held):
            if worker.start_left[task] > 0 and time_left > 0:
                paid = min(time_left, worker.start_left[task])
                worker.start_left[task] -= paid
                worker.since_report[task][1] += paid
                time_left -= paid
            if worker.start_left[task] <= 0:
                started.append(task)
        for task in started:
            if task in processing:
                raise ModelInvariantError(f"task {task} processed by {processing[task]} and {worker.run_id} at once")
            processing[task] = worker.run_id
            if self.last_run_of.get(task, worker.run_id) != worker.run_id:
                self.tasks_moved += 1
            self.last_run_of[task] = worker.run_id
        lags = [self.produced[task] - self.processed[task] for task in started]
        capacity = self.params.worker_capacity
        for task, records in zip(started, water_fill(time_left * capacity, lags)):
            self.processed[task] += records
            worker.since_report[task][0] += records
            worker.since_report[task][1] += records / capacity
            if self.downstream and task in self.sources:
                written = records * self.selectivity / len(self.downstream)
                for downstream in self.downstream:
                    self.produced[downstream] += written

    def _report(self) -> None:
        for worker in self.runs:
            if not worker.alive or worker.ended_at is not None:
                continue
            for task in sorted(worker.held):
                records, seconds = worker.since_report[task]
                if records < 1 and seconds == 0:
                    continue
                worker.reports[task] += 1
                self.samples.append(ThroughputSample(
                    time=self.now, worker_id=worker.run_id, task_id=task, records=int(records),
                    seconds=self.params.report_interval_seconds, task_batch=worker.reports[task],
                    worker_seconds=seconds, lag_left=int(self.produced[task] - self.processed[task]),
                    records_out={"1": int(int(records) * self.selectivity)}
                    if self.downstream and task in self.sources else None))
                # Whole records are reported; the fraction waits for the next report.
                worker.since_report[task] = [records - int(records), 0.0]

    def recent_samples(self, window: float) -> list[ThroughputSample]:
        """The reports of the last ``window`` seconds (older ones are dropped for good)."""
        self.samples = [s for s in self.samples if s.time >= self.now - window]
        return self.samples

    def _check_conservation(self) -> None:
        for task in self.tasks:
            if self.processed[task] > self.produced[task] + 1e-6 or self.processed[task] < 0:
                raise ModelInvariantError(f"task {task}: processed {self.processed[task]} of {self.produced[task]}")
        if self.downstream:
            written = sum(self.produced[task] for task in self.downstream)
            expected = self.selectivity * sum(self.processed[task] for task in self.sources)
            if abs(written - expected) > 1e-6 * max(1.0, expected):
                raise ModelInvariantError(f"the repartition topic holds {written} records, not {expected}")

    def work_rate(self, time: float) -> float:
        """Records per second of both sub-topologies' input at the source's rate (the work to keep up)."""
        return self.rate(time) * (1 + (self.selectivity or 0.0))

    @property
    def total_lag(self) -> float:
        return sum(self.produced[task] - self.processed[task] for task in self.tasks)
