"""The lag sensor tick by tick on a real broker and a real (temporary) Dagster instance: what it
launches, how it hands a task over (only once the old worker reports it released), what it
records, and how it retires. The worker side is played by the calls a worker run makes
(``report_held``); the daemon-driven end-to-end test is test_elastic_workers.py."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import dagster as dg
import pytest
from dagster._core.remote_origin import InProcessCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

from sensor_ticks import tick_sensor
from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.records import produce
from dagster_kstreams.orchestration.definitions import build_kstreams_definitions
from dagster_kstreams.orchestration.resources import KafkaResource, KStreamsSparkResource
from dagster_kstreams.orchestration.protocol import (
    TAG_ASSIGNED,
    TAG_STATE,
    TAG_TASKS,
    TAG_WORKER,
    parse_tasks,
    report_heartbeat,
    report_held,
)
from dagster_kstreams.orchestration.workers import ElasticWorkers
from dagster_kstreams.scaling import ScalingConfig, ScalingState
from dagster_kstreams.topology import StreamsBuilder

pytestmark = pytest.mark.integration

ALL = {"0_0", "0_1", "0_2", "0_3"}


@pytest.fixture
def setup(kafka_bootstrap, kafka_admin, unique_topic, tmp_path):
    # Ticks seconds apart stand for minutes: no input-rate averaging, no scale-down delay. The lag
    # counts at the default capacity (no worker here ever processes: waiting for a measurement would
    # keep one worker).
    elastic = ElasticWorkers(scaling=ScalingConfig(min_workers=1, max_workers=2, catch_up_seconds=1,
                                                   default_worker_records_per_second=100,
                                                   scale_down_stabilization_seconds=0, rate_smoothing_seconds=0,
                                                   lag_waits_for_measured_capacity=False))
    yield from _setup(kafka_bootstrap, kafka_admin, unique_topic, tmp_path, elastic)


def _setup(kafka_bootstrap, kafka_admin, unique_topic, tmp_path, elastic):
    source, sink, app_id = unique_topic("sensor-in"), unique_topic("sensor-out"), unique_topic("sensor-app")
    kafka_admin.create_topics({source: 4})
    builder = StreamsBuilder()
    builder.stream(source).group_by_key().count().to_stream().to(sink)
    defs = build_kstreams_definitions(
        topology=builder, app_id=app_id, topic_partitions={source: 4, sink: 4}, create_sink_topics=True,
        state_location=str(tmp_path / "state"), elastic_workers=elastic,
        resources={"kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
                   "pyspark": KStreamsSparkResource(master="local[1]")})
    with dg.instance_for_test() as instance:
        yield defs, instance, source, app_id



def _submit(defs, instance, requests, status=dg.DagsterRunStatus.STARTED) -> list[dg.DagsterRun]:
    """What the daemons do with the run requests: create the runs and (by default) start them;
    ``QUEUED``: submit them to the run queue, where they wait."""
    job = defs.get_repository_def().get_job(defs.jobs[0].name)
    if status is not dg.DagsterRunStatus.QUEUED:
        return [instance.create_run_for_job(job, tags=request.tags, status=status) for request in requests]
    # A queued run must say where its code is (the dequeuer launches it from there).
    origin = RemoteJobOrigin(RemoteRepositoryOrigin(InProcessCodeLocationOrigin(
        LoadableTargetOrigin(python_file=__file__)), "__repository__"), job.name)
    runs = [instance.create_run_for_job(job, tags=request.tags, status=status, remote_job_origin=origin)
            for request in requests]
    assert all(instance.get_run_by_id(run.run_id).status is dg.DagsterRunStatus.QUEUED for run in runs)
    return runs


def _observations(result) -> list[dg.AssetObservation]:
    return [event for event in result.asset_events if isinstance(event, dg.AssetObservation)]


def _health(result) -> dict[str, dg.AssetCheckEvaluation]:
    """The sensor's check evaluations, by check name (one sub-topology here)."""
    return {event.check_name: event for event in result.asset_events if isinstance(event, dg.AssetCheckEvaluation)}


def _tags(instance, run):
    return instance.get_run_by_id(run.run_id).tags


def test_sensor_launches_hands_over_only_released_tasks_records_lag_and_retires(setup, kafka_bootstrap, kafka_admin):
    defs, instance, source, app_id = setup
    assert [sensor.name for sensor in defs.sensors] == [f"{app_id.replace('-', '_')}_lag_sensor"]

    # Idle: one worker (min_workers) with every task; lag 0 recorded for the sub-topology.
    result = tick_sensor(defs, instance, None)
    (request,) = result.run_requests
    assert request.tags[TAG_WORKER] == "worker-0" and parse_tasks(request.tags[TAG_TASKS]) == ALL
    (observation,) = _observations(result)
    assert observation.metadata["lag"].value == 0 and observation.metadata["desired_workers"].value == 1
    # The catalog's health, from the same lag: within the bound, and fresh (nothing waits).
    health = _health(result)
    assert set(health) == {"lag_within_bound", "freshness"} and all(e.passed for e in health.values())
    for evaluation in health.values():
        instance.report_runless_asset_event(evaluation)  # what the sensor daemon does with asset_events
    ScalingState.from_json(result.cursor)  # the cursor is the scaling state
    (worker0,) = _submit(defs, instance, result.run_requests)
    report_held(instance, worker0.run_id, ALL)  # worker-0 runs and holds every task

    # A burst: a second worker is launched; two tasks are bound for it, but worker-0 keeps
    # processing them until worker-1 is ready (has beaten: its SparkSession is up).
    produce(kafka_bootstrap, source, [(f"k{i}".encode(), b"v") for i in range(400)])
    result = tick_sensor(defs, instance, result.cursor)
    (request,) = result.run_requests
    assert request.tags[TAG_WORKER] == "worker-1"
    assert parse_tasks(request.tags[TAG_TASKS]) == set()  # worker-0 still holds them
    moving = parse_tasks(request.tags[TAG_ASSIGNED])
    assert len(moving) == 2
    assert parse_tasks(_tags(instance, worker0)[TAG_TASKS]) == ALL
    (observation,) = _observations(result)
    assert observation.metadata["lag"].value == 400 and observation.metadata["desired_workers"].value == 2
    # Input waits on tasks that never reported: the freshness check fails (an error, naming them);
    # the lag check's verdict is unchanged (400 <= 10000) and was reported a moment ago: not repeated.
    health = _health(result)
    assert set(health) == {"freshness"}
    freshness = health["freshness"]
    assert not freshness.passed and freshness.severity is dg.AssetCheckSeverity.ERROR
    stale = freshness.metadata["stale_tasks"].value
    assert set(stale) <= ALL and sum(info["lag"] for info in stale.values()) == 400
    assert all(info["seconds_since_report"] is None for info in stale.values())
    assert "never reported" in freshness.description
    # The sub-topology's share: 400 records in the 1 s catch-up time, and the input since the last
    # tick at the target utilization (0.9 by default), at the default 100/s per worker.
    assert observation.metadata["worker_capacity"].value == 100.0
    assert observation.metadata["worker_capacity_measured"].value is False
    input_rate = observation.metadata["input_rate"].value
    assert input_rate > 0
    target = ScalingConfig().target_utilization
    assert observation.metadata["required_workers"].value == pytest.approx((400 + input_rate / target) / 100, abs=0.01)
    (worker1,) = _submit(defs, instance, result.run_requests)
    result = tick_sensor(defs, instance, result.cursor)
    assert parse_tasks(_tags(instance, worker0)[TAG_TASKS]) == ALL
    # Ready: now the two tasks leave worker-0 at once; the tick waits for their release
    # (handover_wait_seconds) and grants them itself, never while worker-0 still holds them.
    report_heartbeat(instance, worker1.run_id)
    with ThreadPoolExecutor(1) as pool:
        ticking = pool.submit(tick_sensor, defs, instance, result.cursor)
        deadline = time.monotonic() + 8
        while parse_tasks(_tags(instance, worker0)[TAG_TASKS]) != ALL - moving and time.monotonic() < deadline:
            time.sleep(0.1)
        assert parse_tasks(_tags(instance, worker0)[TAG_TASKS]) == ALL - moving
        time.sleep(1.5)  # a few of the tick's polls: worker-0 holds them still
        assert parse_tasks(_tags(instance, worker1)[TAG_TASKS]) == set() and not ticking.done()
        report_held(instance, worker0.run_id, ALL - moving)
        result = ticking.result(timeout=30)
    assert parse_tasks(_tags(instance, worker1)[TAG_TASKS]) == moving
    assert not result.run_requests

    # Lag gone (as if processed): with no stabilization window, the surplus worker retires at once.
    ends = kafka_admin.end_offsets([source])
    kafka_admin.commit_offsets(app_id, {TopicPartition(tp.topic, tp.partition): end for tp, end in ends.items()})
    result = tick_sensor(defs, instance, result.cursor)
    retired = _tags(instance, worker1)
    assert retired[TAG_STATE] == "retiring" and parse_tasks(retired[TAG_TASKS]) == set()
    assert _observations(result)[0].metadata["lag"].value == 0
    report_held(instance, worker1.run_id, ())  # it read its emptied tags: its tasks are free
    result = tick_sensor(defs, instance, result.cursor)
    assert parse_tasks(_tags(instance, worker0)[TAG_TASKS]) == ALL



def test_a_started_worker_that_stops_beating_is_marked_failed_and_replaced_with_its_tasks(
    kafka_bootstrap, kafka_admin, unique_topic, tmp_path
):
    # A run whose process vanished without Dagster noticing (host lost) stays "started" forever.
    elastic = ElasticWorkers(heartbeat_interval_seconds=0.2, heartbeat_timeout_seconds=1)
    for defs, instance, _source, _app_id in _setup(kafka_bootstrap, kafka_admin, unique_topic, tmp_path, elastic):
        result = tick_sensor(defs, instance, None)
        (request,) = result.run_requests
        job = defs.get_repository_def().get_job(defs.jobs[0].name)
        worker0 = instance.create_run_for_job(job, tags=request.tags, status=dg.DagsterRunStatus.STARTED)
        report_heartbeat(instance, worker0.run_id)
        report_held(instance, worker0.run_id, ALL)
        result = tick_sensor(defs, instance, result.cursor)
        assert not result.run_requests and instance.get_run_by_id(worker0.run_id).status is dg.DagsterRunStatus.STARTED

        time.sleep(1.5)  # silent past the timeout
        result = tick_sensor(defs, instance, result.cursor)
        assert instance.get_run_by_id(worker0.run_id).status is dg.DagsterRunStatus.FAILURE
        (replacement,) = result.run_requests  # same id, every task at once: a failed worker holds nothing
        assert replacement.tags[TAG_WORKER] == "worker-0" and parse_tasks(replacement.tags[TAG_TASKS]) == ALL


def test_a_worker_retired_while_still_queued_is_cancelled_and_its_tasks_go_at_once(setup, kafka_bootstrap,
                                                                                    kafka_admin):
    defs, instance, source, app_id = setup
    result = tick_sensor(defs, instance, None)
    (worker0,) = _submit(defs, instance, result.run_requests)
    report_held(instance, worker0.run_id, ALL)
    produce(kafka_bootstrap, source, [(f"k{i}".encode(), b"v") for i in range(400)])
    result = tick_sensor(defs, instance, result.cursor)
    # worker-1 waits in the run queue (say, behind a concurrency limit) ...
    (worker1,) = _submit(defs, instance, result.run_requests, status=dg.DagsterRunStatus.QUEUED)
    report_held(instance, worker0.run_id, parse_tasks(_tags(instance, worker0)[TAG_TASKS]))
    # ... when the lag is gone: it is cancelled, not left to start a SparkSession only to exit.
    ends = kafka_admin.end_offsets([source])
    kafka_admin.commit_offsets(app_id, {TopicPartition(tp.topic, tp.partition): end for tp, end in ends.items()})
    result = tick_sensor(defs, instance, result.cursor)
    assert instance.get_run_by_id(worker1.run_id).status is dg.DagsterRunStatus.CANCELED
    assert instance.get_run_by_id(worker0.run_id).status is dg.DagsterRunStatus.STARTED
    assert not result.run_requests
    # A cancelled run held nothing: worker-0 gets every task back on the next tick, and nobody
    # replaces worker-1.
    result = tick_sensor(defs, instance, result.cursor)
    assert parse_tasks(_tags(instance, worker0)[TAG_TASKS]) == ALL and not result.run_requests


def test_a_worker_that_keeps_failing_is_relaunched_after_a_backoff(kafka_bootstrap, kafka_admin, unique_topic,
                                                                    tmp_path):
    backoff = 4
    elastic = ElasticWorkers(scaling=ScalingConfig(min_workers=1, max_workers=1, restart_backoff_seconds=backoff,
                                                   max_restart_backoff_seconds=60))
    for defs, instance, _source, _app_id in _setup(kafka_bootstrap, kafka_admin, unique_topic, tmp_path, elastic):
        result = tick_sensor(defs, instance, None)
        (first,) = _submit(defs, instance, result.run_requests)
        instance.report_run_failed(first, "bad record")  # fails as soon as it starts
        # The first failure is replaced at once (a killed process is no crash loop) ...
        result = tick_sensor(defs, instance, result.cursor)
        (second,) = _submit(defs, instance, result.run_requests)
        assert second.tags[TAG_WORKER] == "worker-0"
        before_failure = time.time()
        instance.report_run_failed(second, "bad record")
        # ... the second waits out the backoff: ticks that end within it launch nothing (the
        # backoff counts from the failure, written after before_failure; a tick on a loaded
        # machine may take seconds, so only those that ended in time are judged) ...
        judged = 0
        while True:
            result = tick_sensor(defs, instance, result.cursor)
            if time.time() >= before_failure + backoff:
                break
            assert not result.run_requests
            judged += 1
        assert judged >= 1
        # ... then it is relaunched with its tasks.
        if not result.run_requests:
            time.sleep(max(0.0, before_failure + backoff + 0.2 - time.time()))
            result = tick_sensor(defs, instance, result.cursor)
        (third,) = result.run_requests
        assert third.tags[TAG_WORKER] == "worker-0" and parse_tasks(third.tags[TAG_TASKS]) == ALL


def test_a_standby_is_launched_beside_the_worker_and_takes_a_failed_workers_tasks_on_the_nexttick(
        kafka_bootstrap, kafka_admin, unique_topic, tmp_path):
    elastic = ElasticWorkers(scaling=ScalingConfig(min_workers=1, max_workers=2, standby_workers=1))
    for defs, instance, _source, _app_id in _setup(kafka_bootstrap, kafka_admin, unique_topic, tmp_path, elastic):
        result = tick_sensor(defs, instance, None)
        assert [(r.tags[TAG_WORKER], r.tags[TAG_STATE], r.tags[TAG_TASKS]) for r in result.run_requests] == [
            ("worker-0", "running", "0_0,0_1,0_2,0_3"), ("worker-1", "standby", "")]
        worker0, standby = _submit(defs, instance, result.run_requests)
        for run in (worker0, standby):
            report_heartbeat(instance, run.run_id)
        report_held(instance, worker0.run_id, ALL)
        result = tick_sensor(defs, instance, result.cursor)
        assert not result.run_requests
        (observation,) = _observations(result)
        assert [observation.metadata[key].value for key in ("workers", "active_workers", "standby_workers")] == [
            2, 1, 1]

        instance.report_run_failed(worker0, "killed")  # what the code server does when its process dies
        result = tick_sensor(defs, instance, result.cursor)
        # The standby holds every task at once (the failed run held nothing) and is running now;
        # a new standby takes the failed worker's id.
        tags = _tags(instance, standby)
        assert (tags[TAG_STATE], parse_tasks(tags[TAG_TASKS])) == ("running", ALL)
        (request,) = result.run_requests
        assert (request.tags[TAG_WORKER], request.tags[TAG_STATE], request.tags[TAG_TASKS]) == (
            "worker-0", "standby", "")


def test_no_worker_is_launched_while_an_input_topic_is_missing_and_the_tick_says_which(
        kafka_bootstrap, kafka_admin, unique_topic, tmp_path):
    elastic = ElasticWorkers(scaling=ScalingConfig(min_workers=1, max_workers=2, standby_workers=1))
    for defs, instance, source, _app_id in _setup(kafka_bootstrap, kafka_admin, unique_topic, tmp_path, elastic):
        kafka_admin.delete_topics([source])
        deadline = time.monotonic() + 30
        while source in kafka_admin.list_topics() and time.monotonic() < deadline:
            time.sleep(0.2)
        result = tick_sensor(defs, instance, None)
        # Neither the worker min_workers asks for nor the standby: each would only fail on the topic.
        assert not result.run_requests
        assert f"waiting for the input topic(s) {source!r}" in result.skip_message
        kafka_admin.create_topics({source: 4})
        result = tick_sensor(defs, instance, result.cursor)
        assert [(r.tags[TAG_WORKER], r.tags[TAG_STATE]) for r in result.run_requests] == [
            ("worker-0", "running"), ("worker-1", "standby")]
