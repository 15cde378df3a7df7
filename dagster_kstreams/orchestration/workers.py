"""The worker job: a Dagster run that owns a set of tasks and keeps them processed until retired.

A worker run opens one SparkSession and loops over batches. Each batch it

1. reads its own run's tags (the lag sensor writes them): ``tasks`` is what it may process;
2. reports the tasks it read as *held* (:func:`~dagster_kstreams.orchestration.protocol.report_held`);
3. reads its tags again;
4. processes only the tasks present both times, each up to ``records_per_task`` records (so a
   batch stays short and a revoked task is released soon), upstream sub-topologies first;
   each task's materialization is logged against its sub-topology asset partition.

This is the contract :mod:`dagster_kstreams.scaling.plan` relies on to hand a task from one
worker to another without both ever processing it. When its tags are empty and its state is
``retiring``, the worker reports nothing held and exits: the run succeeds.

If another process starts one of its tasks anyway (a worker taken for dead that was only
stalled, a manual materialization, ``dagster-kstreams run``), the task's runner is fenced by
Kafka (:class:`~dagster_kstreams.spark.errors.TaskFencedError`): the worker logs that it lost
the task and leaves it alone (:class:`LostTasks`) until the sensor revokes it or
``lost_task_pause_seconds`` pass, instead of failing the run or taking the task straight back.

What the worker and the lag sensor read and write (tags, held tasks, heartbeats) is
:mod:`dagster_kstreams.orchestration.protocol`.
"""

import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

import dagster as dg
from dagster import OpExecutionContext

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.execution import prepare_topics, run_task_and_report, task_runner
from dagster_kstreams.orchestration.protocol import (
    STATE_RETIRING,
    TAG_APP,
    TAG_STATE,
    TAG_TASKS,
    TAG_WORKER,
    app_tag,
    parse_tasks,
    report_heartbeat,
    report_held,
    report_process,
    worker_job_name,
)
from dagster_kstreams.scaling import ScalingConfig
from dagster_kstreams.spark.errors import TaskFencedError
from dagster_kstreams.topology.view import TaskId

__all__ = ["ElasticWorkers", "LostTasks", "kstreams_worker_job"]


@dataclass(frozen=True)
class ElasticWorkers:
    """Elastic workers of one application: the scaling policy, the lag sensor and the worker runs.

    ``sensor_interval_seconds``: how often the lag sensor ticks. ``default_status``: whether the
    sensor runs as soon as the code location loads. ``heartbeat_timeout_seconds``: a started worker
    run silent that long is taken for dead (its process was killed): it is marked failed and its
    tasks move. ``startup_timeout_seconds``: the same for a run that has not beaten yet (starting
    its SparkSession). ``records_per_task``: most records one task processes per batch.
    ``idle_seconds``: pause of a worker between batches that found nothing to do.
    ``lost_task_pause_seconds``: how long a worker leaves a task alone after another process took
    it over (its commit was fenced), unless the sensor revokes the task first.
    """

    scaling: ScalingConfig = ScalingConfig()
    sensor_interval_seconds: int = 30
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED
    heartbeat_interval_seconds: float = 5.0
    heartbeat_timeout_seconds: float = 60.0
    startup_timeout_seconds: float = 300.0
    records_per_task: Optional[int] = 50_000
    idle_seconds: float = 1.0
    lost_task_pause_seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.sensor_interval_seconds < 1:
            raise ValueError(f"sensor_interval_seconds must be >= 1, got {self.sensor_interval_seconds}")
        if not 0 < self.heartbeat_interval_seconds < self.heartbeat_timeout_seconds:
            raise ValueError("heartbeat_interval_seconds must be > 0 and below heartbeat_timeout_seconds")
        if self.records_per_task is not None and self.records_per_task < 1:
            raise ValueError(f"records_per_task must be >= 1 or None, got {self.records_per_task}")
        if self.lost_task_pause_seconds < 0:
            raise ValueError(f"lost_task_pause_seconds must be >= 0, got {self.lost_task_pause_seconds}")


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


class LostTasks:
    """Tasks a worker run lost to another process (Kafka fenced its commit).

    A lost task is left alone until the sensor revokes it from the run's tags (a later grant
    starts afresh) or ``pause_seconds`` pass; then the worker takes it again, which fences the
    other process in turn. Pausing rather than retrying at once keeps two holders from taking
    the task from each other batch after batch.
    """

    def __init__(self, pause_seconds: float):
        self.pause_seconds = pause_seconds
        self._since: dict[str, float] = {}

    def lose(self, task_id: str, now: float) -> None:
        self._since[task_id] = now

    def usable(self, tasks: Iterable[str], now: float) -> frozenset[str]:
        """``tasks`` (the run's tags) without those still lost; forgets revoked and expired ones."""
        tasks = frozenset(tasks)
        self._since = {task: since for task, since in self._since.items()
                       if task in tasks and now - since < self.pause_seconds}
        return tasks - self._since.keys()


def _tags(instance: dg.DagsterInstance, run_id: str) -> Mapping[str, str]:
    run = instance.get_run_by_id(run_id)
    if run is None or run.is_finished:
        # The lag sensor took this run for dead (no heartbeat) and gave its tasks away: a worker
        # that was only stalled stops at its next batch instead of competing for them.
        raise dg.Failure(description=f"worker run {run_id} was marked finished while running; its tasks have moved")
    return run.tags


def _tasks_by_order(app: KStreamsApp, tasks: Iterable[str]) -> list[TaskId]:
    """Upstream sub-topologies first, so one batch carries records through repartition topics."""
    rank = {sub_id: i for i, sub_id in enumerate(app.application.execution_order())}
    return sorted((TaskId.parse(task) for task in tasks),
                  key=lambda task: (rank.get(task.subtopology, len(rank)), task))


def _has_backlog(app: KStreamsApp, admin: Any, task: TaskId) -> bool:
    """Whether the group's committed offsets trail the end of the task's input (skip idle tasks:
    starting a Spark query for nothing costs seconds)."""
    existing = admin.list_topics()
    topics = [topic for topic in dict.fromkeys(app.application.source_topics(task.subtopology)) if topic in existing]
    if not topics:
        return False
    lags = admin.lag(app.app_id, topics)
    return any(lag > 0 for tp, lag in lags.items() if tp.partition == task.partition)


def kstreams_worker_job(app: KStreamsApp, elastic: ElasticWorkers) -> dg.JobDefinition:
    """The app's worker job (one op, in process: one SparkSession per run)."""
    kafka_key, spark_key = app.kafka_resource_key, app.spark_resource_key

    @dg.op(name=f"{app_tag(app)}_worker", required_resource_keys={kafka_key, spark_key})
    def kstreams_worker(context: OpExecutionContext) -> dg.Output:
        instance, run_id = context.instance, context.run_id
        worker = _tags(instance, run_id).get(TAG_WORKER, "?")
        kafka = getattr(context.resources, kafka_key)
        admin = kafka.admin()
        spark = getattr(context.resources, spark_key).spark_session
        prepare_topics(app, admin, app.application.subtopology_ids, context.log.info)
        runner = task_runner(app, kafka, spark)
        runner.ensure_internal_topics()
        batches = records = 0
        task_runs: Counter = Counter()  # runs of each task in this process: the first ones are cold
        lost = LostTasks(elastic.lost_task_pause_seconds)
        with _Heartbeat(instance, run_id, elastic.heartbeat_interval_seconds):
            while True:
                first = _tags(instance, run_id)
                held = lost.usable(parse_tasks(first.get(TAG_TASKS)), time.monotonic())
                report_held(instance, run_id, held)
                second = _tags(instance, run_id)
                tagged = parse_tasks(first.get(TAG_TASKS)) & parse_tasks(second.get(TAG_TASKS))
                tasks = tagged & held
                if not tagged and second.get(TAG_STATE) == STATE_RETIRING:
                    report_held(instance, run_id, ())
                    context.log.info(f"{worker} retired after {batches} batches, {records} records")
                    break
                done = 0
                for task in _tasks_by_order(app, tasks):
                    if not _has_backlog(app, admin, task):
                        continue
                    task_runs[task] += 1
                    try:
                        report = run_task_and_report(app, runner, admin, task, max_records=elastic.records_per_task,
                                                     task_batch=task_runs[task])
                    except TaskFencedError as error:
                        # Another process took the task over; its batch was not committed here.
                        lost.lose(str(task), time.monotonic())
                        context.log.warning(f"{worker} lost task {task} (left alone for "
                                            f"{elastic.lost_task_pause_seconds:.0f}s or until revoked): {error}")
                        continue
                    for event in (*report.topic_events, *report.task_events):
                        context.log_event(event)
                    done += report.result.records_in
                batches += 1
                records += done
                if done == 0:
                    time.sleep(elastic.idle_seconds)
        return dg.Output(None, metadata={"batches": batches, "records": records})

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
