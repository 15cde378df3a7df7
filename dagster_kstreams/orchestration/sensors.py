"""The lag sensor: each tick, lag per sub-topology in, worker runs launched, retagged, retired.

Every tick it

* reads the end offsets of the app's input topics and the group's committed offsets, and
  records the lag of each sub-topology as an ``AssetObservation`` of its asset (numeric
  metadata: the UI plots ``lag``, ``workers`` (worker runs up: active and standby),
  ``active_workers``, ``standby_workers``, ``desired_workers`` (active), and the sub-topology's own
  ``input_rate``, ``worker_capacity`` and ``required_workers``, its share of the count), and
  evaluates the health checks of each sub-topology from that lag (:mod:`.checks`: lag bound,
  freshness), reported when a verdict changes and at least every ``HEALTH_REPORT_SECONDS``, so
  the catalog shows a stream falling behind or stalled without a check run;
* builds the fleet from the worker job's runs: the newest run of each worker id, its tags
  (``tasks``, ``assigned``, ``state``: running, standby or retiring), whether it has left the run
  queue and whether it has beaten yet (its SparkSession is up: only then are tasks revoked from
  others for it), what it last reported holding, and for a failed one how many of the id's runs
  in a row have failed; a started run whose heartbeat stopped is marked failed (its process is
  gone) so its tasks move now (with Dagster's default run launcher, the code server marks a run
  whose process died failed within a second, and its tasks move on the next tick);
* takes throughput samples from the task materializations of the last window, each with which
  run of its task in its worker it was (the first is cold: the policy leaves it out) and the records
  it wrote for each sub-topology of the app (``records_out_by_topic`` by reader: the upstream's
  selectivity, which bounds the input rate of a sub-topology fed wholly by others, ``input_rate_bound``);
* calls :func:`dagster_kstreams.scaling.decide_tick` and applies the plan: ``RunRequest`` for
  new workers and standbys (none for an id in restart backoff), ``add_run_tags`` for retagged
  (promoted and demoted included: tasks and state in one write) and retiring ones,
  ``run_coordinator.cancel_run`` for retired ones still queued. The scaling state (input
  rate, scale-down stabilization) lives in the sensor's cursor;
* when it revoked tasks for a ready worker, waits up to ``handover_wait_seconds`` for their
  release and grants them itself (:func:`settle_handovers`), rather than on the next tick.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import dagster as dg

from dagster_kstreams.kafka.task_lag import task_positions
from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.checks import health_evaluations
from dagster_kstreams.orchestration.protocol import (
    STATE_RETIRING,
    STATE_STANDBY,
    TAG_APP,
    TAG_ASSIGNED,
    TAG_STATE,
    TAG_TASKS,
    TAG_WORKER,
    TASK_BATCH_METADATA,
    WORKER_SECONDS_METADATA,
    app_tag,
    new_worker_tags,
    parse_tasks,
    read_heartbeats,
    read_held,
    retiring_tags,
    task_tags,
    worker_job_name,
)
from dagster_kstreams.orchestration.workers import ElasticWorkers
from dagster_kstreams.scaling import (
    LagSnapshot,
    ReconciliationPlan,
    RunOutcome,
    ScalingState,
    ThroughputSample,
    Worker,
    WorkerState,
    decide_tick,
    failure_streak,
    replan_handovers,
    subtopology_of,
    task_sort_key,
)

__all__ = ["HEALTH_REPORT_SECONDS", "current_workers", "due_health_evaluations", "kstreams_lag_sensor",
           "lag_sensor_name", "lag_snapshot", "records_out_by_reader", "settle_handovers", "throughput_samples",
           "upstreams"]

HEALTH_REPORT_SECONDS = 60

_LIVE = {dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
         dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING}
_FAILED = {dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
_NOT_STARTED = {dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED}
_RECENT_RUNS = 200
_HANDOVER_POLL_SECONDS = 0.5


def lag_sensor_name(app: KStreamsApp) -> str:
    return f"{app_tag(app)}_lag_sensor"


def lag_snapshot(app: KStreamsApp, admin: Any) -> LagSnapshot:
    """End offset and position (committed, else where the task would start) of every task, summed
    over its input partitions (:func:`~dagster_kstreams.kafka.task_lag.task_positions`, which
    ``dagster-kstreams lag`` prints too). A topic that does not exist yet (a repartition topic
    before the first run) holds nothing.

    Stamped when the offsets have been read, not when the tick began: input rates are end offsets
    over the time between two reads, and a tick can wait seconds for an admin client or a
    slow broker before it reads."""
    positions = task_positions(app.application, admin)
    read_at = time.time()
    return LagSnapshot.from_offsets(read_at, {str(p.task): p.end for p in positions},
                                    {str(p.task): p.position for p in positions})


def current_workers(instance: dg.DagsterInstance, app: KStreamsApp, elastic: ElasticWorkers, now: float,
                    log: Any = None) -> tuple[list[Worker], dict[str, dg.DagsterRun]]:
    """The newest run of each worker id as a :class:`Worker` (retired ones left out), and the runs
    of the live ones by worker id. Marks started runs without a heartbeat failed."""
    records = instance.get_run_records(
        dg.RunsFilter(job_name=worker_job_name(app), tags={TAG_APP: app_tag(app)}), limit=_RECENT_RUNS)
    newest: dict[str, dg.DagsterRun] = {}
    history: dict[str, list[dg.RunRecord]] = {}
    for record in records:  # newest first
        worker_id = record.dagster_run.tags.get(TAG_WORKER)
        if worker_id:
            newest.setdefault(worker_id, record.dagster_run)
            history.setdefault(worker_id, []).append(record)
    live = {worker_id: run for worker_id, run in newest.items() if run.status in _LIVE}
    beats = read_heartbeats(instance, [run.run_id for run in live.values()])
    for worker_id, run in list(live.items()):
        if run.status is not dg.DagsterRunStatus.STARTED:
            continue
        if run.run_id in beats:
            last, timeout = beats[run.run_id], elastic.heartbeat_timeout_seconds
        else:  # still starting (resources, SparkSession): beats begin once the worker op runs
            start = history[worker_id][0].start_time
            last = start or now
            timeout = elastic.startup_timeout_seconds
        if now - last > timeout:
            # Its process is gone (killed, host lost): Dagster would wait forever; fail the run so
            # that this tick reassigns its tasks.
            message = f"{worker_id} sent no heartbeat for {now - last:.0f}s; marked failed by the lag sensor"
            if log is not None:
                log.warning(message)
            instance.report_run_failed(run, message)
            record = instance.get_run_record_by_id(run.run_id)
            if record is not None:
                history[worker_id][0] = record
                newest[worker_id] = record.dagster_run
            del live[worker_id]
    held = read_held(instance, [run.run_id for run in live.values()])
    workers = []
    for worker_id, run in newest.items():
        failures, failed_at = 0, None
        if run.status in _LIVE:
            retiring = run.tags.get(TAG_STATE) == STATE_RETIRING or run.status is dg.DagsterRunStatus.CANCELING
            standby = run.tags.get(TAG_STATE) == STATE_STANDBY
            state = WorkerState.RETIRING if retiring else WorkerState.STANDBY if standby else WorkerState.RUNNING
            held_tasks = held.get(run.run_id, frozenset())
        elif run.status in _FAILED:
            state, held_tasks = WorkerState.FAILED, frozenset()
            failures, failed_at = _failure_streak(history[worker_id], elastic)
        else:  # succeeded: retired and gone
            continue
        assigned = run.tags.get(TAG_ASSIGNED)
        workers.append(Worker(worker_id, tasks=parse_tasks(run.tags.get(TAG_TASKS)),
                              assigned=None if assigned is None else parse_tasks(assigned),
                              held=held_tasks, state=state, started=run.status not in _NOT_STARTED,
                              ready=run.run_id in beats,
                              failures=failures, failed_at=failed_at))
    return workers, live


def _failure_streak(records: list[dg.RunRecord], elastic: ElasticWorkers) -> tuple[int, float | None]:
    """Consecutive failed runs of one worker id (newest first) and when the newest ended. Only
    failures count: a run cancelled (retired while queued, or by hand) ends the streak."""
    outcomes = []
    for record in records:
        ran = record.end_time - record.start_time if record.start_time and record.end_time else None
        outcomes.append(RunOutcome(failed=record.dagster_run.status is dg.DagsterRunStatus.FAILURE, seconds_run=ran))
    newest = records[0]
    failed_at = newest.end_time or newest.update_timestamp.timestamp()
    return failure_streak(outcomes, elastic.scaling), failed_at


def throughput_samples(instance: dg.DagsterInstance, app: KStreamsApp, since: float) -> list[ThroughputSample]:
    """What tasks reported since ``since`` (epoch seconds): records and seconds per task run."""
    samples = []
    for sub_id in app.application.subtopology_ids:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=app.subtopology_key(sub_id), after_timestamp=since), limit=500).records
        for record in records:
            materialization = record.asset_materialization
            metadata = materialization.metadata if materialization is not None else {}
            if "records_in" not in metadata or "seconds" not in metadata:
                continue
            task = metadata["task"].value if "task" in metadata else f"{sub_id}_{materialization.partition}"
            # Which run of the task in its worker it was; anything else (a hand materialization)
            # ran once in a fresh process: a first, cold run.
            batch = metadata.get(TASK_BATCH_METADATA)
            share = metadata.get(WORKER_SECONDS_METADATA)
            lag_left = metadata.get("lag_left")
            written = metadata.get("records_out_by_topic")
            samples.append(ThroughputSample(time=record.timestamp, worker_id=record.run_id, task_id=str(task),
                                            records=int(metadata["records_in"].value),
                                            seconds=float(metadata["seconds"].value),
                                            task_batch=int(batch.value) if batch is not None else 1,
                                            worker_seconds=float(share.value) if share is not None else None,
                                            lag_left=int(lag_left.value) if lag_left is not None else None,
                                            records_out=records_out_by_reader(app, written.value)
                                            if written is not None else None))
    return samples


def records_out_by_reader(app: KStreamsApp, by_topic: Mapping[str, Any]) -> dict[str, int]:
    """A report's records written per topic as records for each sub-topology that reads them (what
    the policy measures a selectivity from): a topic two sub-topologies read counts for both."""
    out: dict[str, int] = {}
    for topic, count in (by_topic or {}).items():
        for reader in app.application.readers(topic):
            out[str(reader)] = out.get(str(reader), 0) + int(count)
    return out


def upstreams(app: KStreamsApp) -> dict[str, tuple[str, ...]]:
    """Each sub-topology fed wholly by others of the app, and theirs: what bounds its input rate."""
    fed = {sub_id: app.application.upstreams(sub_id) for sub_id in app.application.subtopology_ids}
    return {str(sub_id): tuple(str(up) for up in ups) for sub_id, ups in fed.items() if ups}


def _observations(app: KStreamsApp, snapshot: LagSnapshot, summary: Mapping[str, Any],
                  running: int, standby: int) -> list[dg.AssetObservation]:
    lags = snapshot.lags()
    events = []
    for sub_id in app.application.subtopology_ids:
        mine = {task: lag for task, lag in lags.items() if subtopology_of(task) == str(sub_id)}
        demand = summary["demands"].get(str(sub_id))
        metadata = {
            "lag": dg.MetadataValue.int(sum(mine.values())),
            "max_task_lag": dg.MetadataValue.int(max(mine.values(), default=0)),
            "app_lag": dg.MetadataValue.int(snapshot.total_lag),
            "workers": dg.MetadataValue.int(running + standby),
            "active_workers": dg.MetadataValue.int(running),
            "standby_workers": dg.MetadataValue.int(standby),
            "desired_workers": dg.MetadataValue.int(summary["desired_workers"]),
            "lag_by_task": dg.MetadataValue.json(dict(sorted(mine.items(), key=lambda kv: task_sort_key(kv[0])))),
        }
        if demand is not None:
            metadata.update({
                "input_rate": dg.MetadataValue.float(float(round(demand["input_rate"], 1))),
                "worker_capacity": dg.MetadataValue.float(float(round(demand["capacity"], 1))),
                "worker_capacity_measured": dg.MetadataValue.bool(demand["capacity_measured"]),
                "required_workers": dg.MetadataValue.float(float(round(demand["workers"], 3))),
                "lag_counted": dg.MetadataValue.bool(demand["lag_counted"]),
            })
            if demand["rate_bound"] is not None:  # what its upstreams produce at their own input rate
                metadata["input_rate_bound"] = dg.MetadataValue.float(float(round(demand["rate_bound"], 1)))
        events.append(dg.AssetObservation(app.subtopology_key(sub_id), metadata=metadata))
    return events


def _bound_note(demand: Mapping[str, Any]) -> str:
    bound = demand.get("rate_bound")
    return "" if bound is None else f" (at most {bound:.0f}/s: its upstreams' input rate x selectivity)"


def due_health_evaluations(instance: dg.DagsterInstance, evaluations: list[dg.AssetCheckEvaluation],
                           now: float) -> list[dg.AssetCheckEvaluation]:
    """The evaluations whose verdict (passed, severity) differs from the check's latest one, or
    whose latest is older than ``HEALTH_REPORT_SECONDS``: the rest would only repeat it."""
    keys = [dg.AssetCheckKey(evaluation.asset_key, evaluation.check_name) for evaluation in evaluations]
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
    due = []
    for key, evaluation in zip(keys, evaluations):
        record = latest.get(key)
        event = record.event if record is not None else None
        previous = event.dagster_event.event_specific_data if event is not None and event.dagster_event else None
        if (not isinstance(previous, dg.AssetCheckEvaluation)
                or (previous.passed, previous.severity) != (evaluation.passed, evaluation.severity)
                or now - event.timestamp >= HEALTH_REPORT_SECONDS):
            due.append(evaluation)
    return due


def settle_handovers(instance: dg.DagsterInstance, app: KStreamsApp, elastic: ElasticWorkers,
                     snapshot: LagSnapshot, plan: ReconciliationPlan, log: Any) -> list[str]:
    """Grant, within this tick, the tasks ``plan`` revoked for ready workers as their old workers
    release them (:func:`~dagster_kstreams.scaling.replan_handovers`, polled for at most
    ``handover_wait_seconds`` or half the interval); returns the tasks granted."""
    deadline = time.monotonic() + min(elastic.handover_wait_seconds, elastic.sensor_interval_seconds / 2)
    granted: list[str] = []
    while time.monotonic() < deadline:
        time.sleep(_HANDOVER_POLL_SECONDS)
        workers, live = current_workers(instance, app, elastic, time.time(), log)
        replanned = replan_handovers(snapshot.tasks.keys(), workers, plan, task_weights=snapshot.lags(),
                                     standby_workers=elastic.scaling.standby_workers)
        if replanned is None:
            break
        plan = replanned
        for change in plan.running_retags:
            if change.worker_id in live:
                instance.add_run_tags(live[change.worker_id].run_id,
                                      task_tags(change.tasks, change.assigned, change.state.value))
                granted += sorted(change.granted, key=task_sort_key)
    return granted


def kstreams_lag_sensor(app: KStreamsApp, elastic: ElasticWorkers, worker_job: dg.JobDefinition) -> dg.SensorDefinition:
    """The app's lag sensor: each tick, a :func:`~dagster_kstreams.scaling.decide_tick` plan applied
    to the runs of ``worker_job`` (see the module docstring)."""
    kafka_key = app.kafka_resource_key

    @dg.sensor(
        name=lag_sensor_name(app),
        job=worker_job,
        # Dagster's sensor daemon wakes every 5 s and ticks a sensor whose last tick began at least
        # this long ago; asked for exactly a multiple of 5 s, a tick that began a few milliseconds
        # late makes the next wake skip it (a 5 s interval became 5 or 10 s). One second less
        # ticks on the wake the interval asks for.
        minimum_interval_seconds=max(1, elastic.sensor_interval_seconds - 1),
        default_status=elastic.default_status,
        required_resource_keys={kafka_key},
        description=f"Consumer lag of {app.app_id!r}: launches worker runs when it grows, retires them when it "
                    f"stays low (between {elastic.scaling.min_workers} and {elastic.scaling.max_workers} workers"
                    + (f", and {elastic.scaling.standby_workers} warm standby" if elastic.scaling.standby_workers
                       else "") + ").",
    )
    def lag_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        now = time.time()
        instance = context.instance
        admin = getattr(context.resources, kafka_key).admin()
        snapshot = lag_snapshot(app, admin)
        workers, live = current_workers(instance, app, elastic, now, context.log)
        missing = app.missing_input_topics(admin.list_topics())
        if missing and not live:
            # As Kafka Streams reports a missing source topic instead of running: a worker
            # launched now (a standby too) would only fail on it, again after each backoff.
            return dg.SkipReason(f"waiting for the input topic(s) {', '.join(map(repr, missing))} of "
                                 f"{app.app_id!r}: not on the broker; no worker is launched until they exist")
        throughput = throughput_samples(instance, app, now - elastic.scaling.throughput_window_seconds)
        decision = decide_tick(snapshot, workers, elastic.scaling, ScalingState.from_json(context.cursor), throughput,
                               upstreams=upstreams(app))
        plan = decision.plan
        for worker_id in plan.cancel:  # retired before it left the queue: it never starts
            instance.add_run_tags(live[worker_id].run_id, retiring_tags())
            instance.run_coordinator.cancel_run(live[worker_id].run_id)
        for worker_id in plan.retire:
            instance.add_run_tags(live[worker_id].run_id, retiring_tags())
        for change in plan.retag:
            instance.add_run_tags(live[change.worker_id].run_id,
                                  task_tags(change.tasks, change.assigned, change.state.value))
        granted = settle_handovers(instance, app, elastic, snapshot, plan, context.log) if (
            plan.handovers and elastic.handover_wait_seconds > 0) else []
        requests = [dg.RunRequest(tags=new_worker_tags(app, launch.worker_id, launch.tasks, launch.assigned,
                                                       launch.state.value))
                    for launch in plan.launch]
        summary = decision.summary()
        running = sum(1 for worker in workers if worker.state is WorkerState.RUNNING)
        standby = sum(1 for worker in workers if worker.state is WorkerState.STANDBY)
        demands = [(str(sub_id), summary["demands"].get(str(sub_id))) for sub_id in app.application.subtopology_ids]
        per_subtopology = "; ".join(
            f"{sub}: lag {demand['lag']}, input {demand['input_rate']:.0f}/s{_bound_note(demand)}, "
            f"capacity {demand['capacity']:.0f}/s"
            f"{'' if demand['capacity_measured'] else ' (not measured)'}"
            f"{'' if demand['lag_counted'] else ', lag waits for a measurement'}"
            for sub, demand in demands if demand is not None)
        context.log.info(
            f"lag {snapshot.total_lag} [{per_subtopology}], {summary['required_workers']:.2f} workers' worth of work: "
            f"{summary['action']} ({running} -> {plan.desired_workers} workers, {standby} standby); "
            f"promote {summary['promote']}, launch {summary['launch']}, standby launch {summary['launch_standby']}, "
            f"demote {summary['demote']}, retag {summary['retag']}, retire {summary['retire']}, "
            f"cancel {summary['cancel']}, "
            f"restart backoff {summary['deferred']}, pending handovers {summary['pending_handovers']}"
            + (f", granted once released {granted}" if granted else ""))
        health = due_health_evaluations(instance, health_evaluations(instance, app, snapshot.lags(), now), now)
        return dg.SensorResult(run_requests=requests, cursor=decision.state.to_json(),
                               asset_events=[*_observations(app, snapshot, summary, running, standby), *health])

    return lag_sensor
