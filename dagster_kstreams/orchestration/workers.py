"""The worker job: a Dagster run that keeps the tasks it owns running until retired.

A worker run opens one SparkSession and keeps each task it holds running as its own long-lived
Spark query (:meth:`TaskRunner.start_task <dagster_kstreams.spark.task_runner.TaskRunner.start_task>`),
all at once on the cores it has: a record is processed about one micro-batch after it arrives.
Every ``idle_seconds`` the worker

1. reads its own run's tags (the lag sensor writes them): ``tasks`` is what it may run;
2. reports as *held* (:func:`~dagster_kstreams.orchestration.protocol.report_held`) the tasks it
   runs and those it read;
3. reads its tags again;
4. stops gracefully every running task not present both times (the batch being written is
   finished and committed), then reports the held tasks again without them: only now may the
   sensor grant them elsewhere;
5. starts the tasks present both times that it does not run yet, at once (upstream sub-topologies submitted first);

and every ``report_interval_seconds`` it logs, per running task, a materialization of its
sub-topology asset partition with what the task processed since the last one (offsets, records
in and out, records per second of busy time, lag left), and of the topic partitions written.

This is the contract :mod:`dagster_kstreams.scaling.plan` relies on to hand a task from one
worker to another without both ever processing it (it reads its tags a second time only when it
is about to start a task, and rewrites what it holds only when that changed). When its tags are
empty and its state is ``retiring``, the worker stops its tasks, reports nothing held and exits:
the run succeeds.

A warm standby is a worker run in state ``standby``: SparkSession up, no tasks. It reads its tags
every ``standby_poll_seconds`` rather than every ``idle_seconds``, so when the lag sensor promotes
it (tasks and state ``running`` in one tag write) it starts the tasks within that time. Meanwhile
it warms its SparkSession up on a thread (:class:`~dagster_kstreams.spark.warm_up.WarmUp`: each
sub-topology's query once over its last ``warm_up_records`` records, nothing committed or written),
abandoned the moment it is promoted: a cold worker's first task takes tens of seconds to its
first batch, a warm one's a few. A running worker whose tags are emptied with state
``standby`` (demoted) stops its tasks and stays up.

Each worker records the stages of its own start (SparkSession, ready, tasks granted, first batch:
:mod:`.start_timing`) and logs the whole breakdown when it is ready and at its first batch.

If another process starts one of its tasks anyway (a worker taken for dead that was only
stalled, a manual materialization, ``dagster-kstreams run``), the task's runner is fenced by
Kafka (:class:`~dagster_kstreams.spark.errors.TaskFencedError`): the worker logs that it lost
the task and leaves it alone (:class:`LostTasks`) until the sensor revokes it or
``lost_task_pause_seconds`` pass, instead of failing the run or taking the task straight back.

What the worker and the lag sensor read and write (tags, held tasks, heartbeats) is
:mod:`dagster_kstreams.orchestration.protocol`; the loop itself, :mod:`.worker_loop`.
"""

import threading
import time
from dataclasses import dataclass
from typing import Any, Optional

import dagster as dg
from dagster import OpExecutionContext

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.execution import (
    prepare_topics,
    task_runner,
)
from dagster_kstreams.orchestration.protocol import (
    STATE_STANDBY,
    TAG_APP,
    TAG_STATE,
    TAG_WORKER,
    app_tag,
    report_heartbeat,
    report_process,
    worker_job_name,
)
from dagster_kstreams.orchestration.start_timing import StartClock
from dagster_kstreams.orchestration.worker_loop import LoopTimes, WorkerLoop, run_tags
from dagster_kstreams.orchestration.worker_tasks import WorkerTasks
from dagster_kstreams.scaling import ScalingConfig
from dagster_kstreams.spark.warm_up import WarmUp

__all__ = ["ElasticWorkers", "kstreams_worker_job"]


@dataclass(frozen=True)
class ElasticWorkers:
    """Elastic workers of one application: the scaling policy, the lag sensor and the worker runs.

    ``sensor_interval_seconds``: how often the lag sensor ticks (Dagster's sensor daemon wakes every
    5 s, so the interval is in effect rounded up to a multiple of 5 s; at 5 s a failed worker's
    tasks move to a standby within about 5 s of its failure). ``default_status``: whether the
    sensor runs as soon as the code location loads. ``heartbeat_timeout_seconds``: a started worker
    run silent that long is taken for dead (its process was killed): it is marked failed and its
    tasks move. ``startup_timeout_seconds``: the same for a run that has not beaten yet (starting
    its SparkSession). ``records_per_task``: most records of one task's micro-batch (a revoked
    task is released after at most one batch). ``trigger_seconds``: a task's micro-batch
    interval (0: the next batch as soon as the last is done and records arrived).
    ``idle_seconds``: how often a worker reads its tags. ``report_interval_seconds``: how
    often it reports each task's progress as a materialization (a task that processed nothing
    since its last report is reported every ``idle_report_seconds`` only).
    ``lost_task_pause_seconds``: how long a worker leaves a task alone after another process took
    it over (its commit was fenced), unless the sensor revokes the task first.
    ``standby_poll_seconds``: how often a standby (``scaling.standby_workers``) reads its tags; the
    time it takes to notice its promotion. ``warm_up_records``: how many records of each
    sub-topology a standby's warm-up reads (0: no warm-up). ``handover_wait_seconds``: how long a
    tick that revoked tasks for a ready worker waits for their release to grant them itself,
    rather than leave them idle until the next tick (at most half the interval; 0: never waits).
    """

    scaling: ScalingConfig = ScalingConfig()
    sensor_interval_seconds: int = 30
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED
    heartbeat_interval_seconds: float = 5.0
    heartbeat_timeout_seconds: float = 60.0
    startup_timeout_seconds: float = 300.0
    records_per_task: Optional[int] = 50_000
    trigger_seconds: float = 0.0
    idle_seconds: float = 1.0
    report_interval_seconds: float = 5.0
    idle_report_seconds: float = 60.0
    lost_task_pause_seconds: float = 60.0
    standby_poll_seconds: float = 0.2
    warm_up_records: int = 100
    handover_wait_seconds: float = 10.0

    def __post_init__(self) -> None:
        if self.sensor_interval_seconds < 1:
            raise ValueError(f"sensor_interval_seconds must be >= 1, got {self.sensor_interval_seconds}")
        if not 0 < self.heartbeat_interval_seconds < self.heartbeat_timeout_seconds:
            raise ValueError("heartbeat_interval_seconds must be > 0 and below heartbeat_timeout_seconds")
        if self.records_per_task is not None and self.records_per_task < 1:
            raise ValueError(f"records_per_task must be >= 1 or None, got {self.records_per_task}")
        if self.trigger_seconds < 0 or self.idle_seconds <= 0 or self.report_interval_seconds <= 0:
            raise ValueError("trigger_seconds must be >= 0, idle_seconds and report_interval_seconds > 0")
        if self.handover_wait_seconds < 0:
            raise ValueError(f"handover_wait_seconds must be >= 0, got {self.handover_wait_seconds}")
        if self.lost_task_pause_seconds < 0:
            raise ValueError(f"lost_task_pause_seconds must be >= 0, got {self.lost_task_pause_seconds}")
        if self.standby_poll_seconds <= 0:
            raise ValueError(f"standby_poll_seconds must be > 0, got {self.standby_poll_seconds}")
        if self.warm_up_records < 0:
            raise ValueError(f"warm_up_records must be >= 0, got {self.warm_up_records}")


class _Heartbeat:
    """Beats from a thread, so a long task batch does not look like a dead worker."""

    def __init__(self, instance: dg.DagsterInstance, run_id: str, interval: float):
        self._instance, self._run_id, self._interval = instance, run_id, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kstreams-heartbeat", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                report_heartbeat(self._instance, self._run_id)
            except Exception:  # a storage hiccup must not kill the worker; the next beat retries
                pass

    def __enter__(self) -> "_Heartbeat":
        report_process(self._instance, self._run_id)
        report_heartbeat(self._instance, self._run_id)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def kstreams_worker_job(app: KStreamsApp, elastic: ElasticWorkers) -> dg.JobDefinition:
    """The app's worker job (one op, in process: one SparkSession per run)."""
    kafka_key, spark_key = app.kafka_resource_key, app.spark_resource_key

    @dg.op(name=f"{app_tag(app)}_worker", required_resource_keys={kafka_key, spark_key})
    def kstreams_worker(context: OpExecutionContext) -> dg.Output:
        instance, run_id = context.instance, context.run_id
        spark_resource = getattr(context.resources, spark_key)
        clock = StartClock(instance, run_id, spark_resource)
        tags = run_tags(instance, run_id)
        worker = tags.get(TAG_WORKER, "?")
        kafka = getattr(context.resources, kafka_key)
        admin = kafka.admin()
        prepare_topics(app, admin, app.application.subtopology_ids, context.log.info)
        runner = task_runner(app, kafka, spark_resource.spark_session)
        runner.ensure_internal_topics()
        # Reports wait out a broker restart as the running tasks do, rather than fail the run.
        tasks = WorkerTasks(app, runner, admin.waiting_out_outages(runner.task_timeout_s), elastic, context.log_event)
        # A standby warms up while it waits; a worker launched with tasks starts them at once.
        warm_up = WarmUp(runner, elastic.warm_up_records) if (
            tags.get(TAG_STATE) == STATE_STANDBY and elastic.warm_up_records) else None
        loop = WorkerLoop(context, app.application.tasks(), worker, tasks, clock, warm_up, LoopTimes(
            elastic.idle_seconds, elastic.standby_poll_seconds, elastic.report_interval_seconds,
            elastic.lost_task_pause_seconds))
        with _Heartbeat(instance, run_id, elastic.heartbeat_interval_seconds):
            clock.reach("worker_ready")
            context.log.info(f"{worker} ready: {clock.describe()}")
            if warm_up is not None:
                warm_up.start()
            try:
                while (pause := loop.step()) is not None:
                    time.sleep(pause)
            finally:
                loop.close()
        context.log.info(f"{worker} retired after {tasks.records} records")
        return dg.Output(None, metadata={"records": tasks.records, "reports": sum(tasks.reports.values()),
                                         **clock.metadata()})

    @dg.job(
        name=worker_job_name(app),
        description=f"A worker of Kafka Streams application {app.app_id!r}: processes the tasks its run tags "
                    "name until retired. Launched and retired by the lag sensor.",
        executor_def=dg.in_process_executor,
        tags={TAG_APP: app_tag(app)},
    )
    def worker_job() -> None:
        kstreams_worker()

    return worker_job
