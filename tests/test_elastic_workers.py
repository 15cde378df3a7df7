"""Elastic workers end to end: a real Dagster instance with `dagster-daemon run` (sensor daemon,
queued run coordinator, default run launcher: worker runs are subprocesses with their own
SparkSession), a real broker.

One application counts records per key from a 4-partition topic (4 tasks). The lag sensor ticks
every 5 s: it starts one worker; a burst makes it scale up; once the second worker works, a
second burst lands and that worker run is SIGKILLed in the middle of its work; its tasks move to
a replacement; the lag drains; after the 20 s stabilization window it scales back down to one
worker. The counts equal the input exactly, and no offset of any task was processed by two task
runs.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.local.daemon import DagsterDaemon, processes_with_home
from dagster_kstreams.orchestration.protocol import TAG_STATE, TAG_TASKS, TAG_WORKER, parse_tasks, read_processes

pytestmark = pytest.mark.integration

PARTITIONS = 4
KEYS = 200
BURST = 24_000
# Written when the second worker has started: whatever the first one drained meanwhile (worker
# start-up takes long on a loaded machine), the killed worker's tasks then have lag that still
# asks for two workers when its failure is noticed, so it is replaced rather than folded into
# worker-0 (that plan is covered in tests/test_dagster_sensor.py).
SECOND_BURST = 12_000
# Lag that asks for two workers at the configured capacity (100/s per worker, 20 s catch-up).
TWO_WORKERS_LAG = 2 * 100 * 20
LIVE = {dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
        dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING}

CODE_LOCATION = '''
import dagster as dg

from dagster_kstreams.orchestration.definitions import build_kstreams_definitions
from dagster_kstreams.orchestration.resources import KafkaResource, KStreamsSparkResource
from dagster_kstreams.orchestration.workers import ElasticWorkers
from dagster_kstreams.scaling import ScalingConfig
from dagster_kstreams.topology import StreamsBuilder

SETTINGS = {settings!r}

builder = StreamsBuilder()
builder.stream(SETTINGS["source"]).group_by_key().count().to_stream().to(SETTINGS["sink"])

defs = build_kstreams_definitions(
    topology=builder,
    app_id=SETTINGS["app_id"],
    topic_partitions={{SETTINGS["source"]: {partitions}, SETTINGS["sink"]: {partitions}}},
    state_location=SETTINGS["state"],
    create_sink_topics=True,
    elastic_workers=ElasticWorkers(
        # The default capacity (measuring is left out: min_sample_seconds) over the catch-up time
        # asks for more workers than there are for the burst, so the count is max_workers.
        scaling=ScalingConfig(min_workers=1, max_workers=2, catch_up_seconds=20, default_worker_records_per_second=100,
                              scale_down_stabilization_seconds=20, min_sample_seconds=3600,
                              rate_smoothing_seconds=5),  # the test's time runs fast: short delays all round
        sensor_interval_seconds=5,
        default_status=dg.DefaultSensorStatus.RUNNING,
        heartbeat_interval_seconds=1,
        heartbeat_timeout_seconds=12,
        startup_timeout_seconds=300,
        # Slow, steady tasks (200 records a batch, one batch per task every 2 s: about 400/s for
        # four tasks), so the burst outlasts the second worker's start-up even where tasks run fast.
        records_per_task=200,
        trigger_seconds=2.0,
        idle_seconds=0.5,
    ),
    resources={{
        "kafka": KafkaResource(bootstrap_servers=SETTINGS["bootstrap"]),
        "pyspark": KStreamsSparkResource(master="local[1]", spark_config={{
            "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
            "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
            "spark.driver.memory": "768m"}}),
    }},
)
'''

# The instance settings `make demo` uses (QueuedRunCoordinator, one run per worker id).
DAGSTER_YAML = (Path(__file__).resolve().parents[1] / "deploy" / "dagster.yaml").read_text()


@pytest.fixture
def elastic_app(kafka_bootstrap, kafka_admin, unique_topic, tmp_path):
    settings = {"source": unique_topic("elastic-in"), "sink": unique_topic("elastic-out"),
                "app_id": unique_topic("elastic"), "state": str(tmp_path / "state"), "bootstrap": kafka_bootstrap}
    kafka_admin.create_topics({settings["source"]: PARTITIONS, settings["sink"]: PARTITIONS})
    code = tmp_path / "elastic_defs.py"
    code.write_text(CODE_LOCATION.format(settings=settings, partitions=PARTITIONS))
    (tmp_path / "workspace.yaml").write_text(f"load_from:\n  - python_file: {code}\n")
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_YAML)
    log = (tmp_path / "daemon.log").open("wb")
    daemon = DagsterDaemon(home, tmp_path / "workspace.yaml", log)
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            yield settings, instance, daemon, tmp_path
    finally:
        daemon.stop()
        log.close()
        deadline = time.monotonic() + 10
        while processes_with_home(home) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not processes_with_home(home), "processes of the test instance survived"


def _worker_runs(instance, settings):
    app = settings["app_id"].replace("-", "_")
    return instance.get_runs(dg.RunsFilter(job_name=f"{app}_workers"))


def _live(instance, settings) -> dict[str, dg.DagsterRun]:
    return {run.tags[TAG_WORKER]: run for run in _worker_runs(instance, settings) if run.status in LIVE}


def _total_lag(kafka_admin, settings) -> int:
    return sum(kafka_admin.lag(settings["app_id"], [settings["source"]]).values())


def _task_lag(kafka_admin, settings, tasks: frozenset[str]) -> int:
    partitions = {int(task.split("_")[1]) for task in tasks}
    return sum(lag for tp, lag in kafka_admin.lag(settings["app_id"], [settings["source"]]).items()
               if tp.partition in partitions)


def _wait(what, condition, process, tmp_path, timeout):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if process.poll() is not None:
            raise AssertionError(f"dagster-daemon exited: {(tmp_path / 'daemon.log').read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; daemon log: "
                                 f"{(tmp_path / 'daemon.log').read_text()[-3000:]}")
        time.sleep(0.5)


@pytest.mark.timeout(900)
def test_lag_sensor_scales_workers_up_and_down_and_a_killed_workers_tasks_move(elastic_app, kafka_bootstrap,
                                                                               kafka_admin):
    settings, instance, daemon, tmp_path = elastic_app
    started = time.monotonic()
    timeline = []

    def mark(event: str) -> None:
        timeline.append((round(time.monotonic() - started, 1), event))

    # One worker with all four tasks (min_workers), running before there is any input.
    first = _wait("the first worker run", lambda: [run for run in _live(instance, settings).values()
                                                   if run.status is dg.DagsterRunStatus.STARTED],
                  daemon, tmp_path, 150)
    assert [run.tags[TAG_WORKER] for run in first] == ["worker-0"]
    assert parse_tasks(first[0].tags[TAG_TASKS]) == {f"0_{p}" for p in range(PARTITIONS)}
    mark("worker-0 started")

    keys = [f"key-{i:03d}" for i in range(KEYS)]
    records = [(keys[i % KEYS].encode(), b"x") for i in range(BURST)]
    produce(kafka_bootstrap, settings["source"], records)
    mark(f"burst of {BURST} written")

    # Scaled up within a tick or two of the burst (launch + handover of tasks from worker-0).
    _wait("two workers", lambda: len(_live(instance, settings)) == 2, daemon, tmp_path, 45)
    mark("2 workers")

    # A second burst once worker-1 works, then SIGKILL it while it processes its tasks.
    def busy_victim():
        live = _live(instance, settings)
        victim = live.get("worker-1")
        if victim is None or victim.status is not dg.DagsterRunStatus.STARTED or not victim.tags.get(TAG_TASKS):
            return None
        done = instance.get_records_for_run(victim.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records
        return victim if done else None

    victim = _wait("worker-1 processing", busy_victim, daemon, tmp_path, 300)
    victim_tasks = parse_tasks(victim.tags[TAG_TASKS])
    second = [(keys[i % KEYS].encode(), b"x") for i in range(SECOND_BURST)]
    produce(kafka_bootstrap, settings["source"], second)
    records += second
    lag_at_kill = _task_lag(kafka_admin, settings, victim_tasks)
    assert lag_at_kill >= TWO_WORKERS_LAG, f"worker-1's tasks have lag {lag_at_kill} only; make SECOND_BURST bigger"
    process = read_processes(instance, [victim.run_id])[victim.run_id]
    host, pid = process.rsplit(":", 1)
    os.kill(int(pid), signal.SIGKILL)
    mark(f"worker-1 killed (pid {pid}), lag {lag_at_kill}")

    # The sensor notices the silence, fails the run, and a replacement takes its tasks.
    _wait("the killed run marked failed", lambda: instance.get_run_by_id(victim.run_id).status is
          dg.DagsterRunStatus.FAILURE, daemon, tmp_path, 60)
    mark("worker-1 marked failed")
    replacement = _wait("a replacement for worker-1", lambda: next(
        (run for run in _worker_runs(instance, settings)
         if run.tags[TAG_WORKER] == "worker-1" and run.run_id != victim.run_id), None), daemon, tmp_path, 30)
    mark("worker-1 replaced")

    _wait("lag drained", lambda: _total_lag(kafka_admin, settings) == 0, daemon, tmp_path, 240)
    mark("lag 0")
    _wait("scaled down to one worker", lambda: len(_live(instance, settings)) == 1
          and all(run.tags.get(TAG_STATE) != "retiring" for run in _live(instance, settings).values()),
          daemon, tmp_path, 90)
    mark("1 worker")
    print("timeline:", json.dumps(timeline))

    # Retired workers finished their batch and exited cleanly; the one left holds every task.
    runs = _worker_runs(instance, settings)
    assert {run.status for run in runs if run.run_id != victim.run_id} <= LIVE | {dg.DagsterRunStatus.SUCCESS}
    assert any(run.status is dg.DagsterRunStatus.SUCCESS for run in runs), "no worker was retired"
    (survivor,) = _live(instance, settings).values()
    _wait("the last worker holding every task", lambda: parse_tasks(
        instance.get_run_by_id(survivor.run_id).tags[TAG_TASKS]) == {f"0_{p}" for p in range(PARTITIONS)},
        daemon, tmp_path, 30)
    assert replacement.run_id in {run.run_id for run in runs}

    # Exact counts, though a worker died mid-batch.
    output = read_topic(kafka_bootstrap, settings["sink"])
    expected = Counter(key.decode() for key, _ in records)
    assert final_values(output, bytes.decode, lambda v: int.from_bytes(v, "big", signed=True)) == dict(expected)

    # No offset was processed by two task runs: per task, the reported ranges never overlap and
    # reach the end. The killed worker may have committed a batch it did not live to report: a
    # gap, only in a task it held.
    app = settings["app_id"].replace("-", "_")
    key = dg.AssetKey([app, "subtopology_0"])
    ranges: dict[str, list[tuple[int, int]]] = {}
    for record in instance.fetch_materializations(key, limit=10_000).records:
        metadata = record.asset_materialization.metadata
        ranges.setdefault(record.asset_materialization.partition, []).append(
            (metadata["offset_from"].value, metadata["offset_to"].value))
    ends = {tp.partition: end for tp, end in kafka_admin.end_offsets([settings["source"]]).items()}
    for partition, spans in ranges.items():
        spans.sort()
        position = 0
        for start, end in spans:
            assert start >= position, f"task 0_{partition} processed twice: {spans}"
            assert start == position or f"0_{partition}" in victim_tasks, f"task 0_{partition}: {spans}"
            position = end
        assert position == ends[int(partition)]
    assert sorted(ranges) == [str(p) for p in range(PARTITIONS)]

    # Each worker run numbers its runs of a task 1, 2, ... in its materializations: the lag sensor
    # measures capacity only from the later, warm ones.
    numbers: dict[tuple[str, str], list[int]] = {}
    for record in sorted(instance.fetch_materializations(key, limit=10_000).records, key=lambda r: r.storage_id):
        numbers.setdefault((record.run_id, record.asset_materialization.partition), []).append(
            record.asset_materialization.metadata["worker_task_batch"].value)
    assert numbers and all(seen == list(range(1, len(seen) + 1)) for seen in numbers.values()), numbers

    # The sensor recorded the lag as observations of the sub-topology: it rose and fell to 0.
    observations = instance.fetch_observations(key, limit=1000).records
    lags = [record.asset_observation.metadata["lag"].value for record in observations]
    workers = [record.asset_observation.metadata["workers"].value for record in observations]
    assert max(lags) > 0 and lags[0] == 0  # newest first
    assert max(workers) == 2
