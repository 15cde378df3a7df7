"""Elastic workers end to end: a real Dagster instance with `dagster-daemon run` (sensor daemon,
queued run coordinator, default run launcher: worker runs are subprocesses with their own
SparkSession), a real broker, and the worker runs' Spark on a real standalone cluster (each worker
run its own application, with an executor of one core on the cluster's worker; local mode is
covered by the rest of the suite).

One application counts records per key from a 4-partition topic (4 tasks), with one warm standby.
The lag sensor ticks every 5 s: it starts one worker and a standby. The worker, holding every task,
is SIGKILLed; the standby takes its tasks over at once (the failover time, SIGKILL to its tasks
committing again elsewhere, is printed and recorded as the test's ``failover_seconds`` property)
and a new standby is launched in its place. A burst then makes the sensor scale up, which promotes
that standby (no cold worker is launched) and launches another; the lag drains; after the 20 s
stabilization window it scales back down to one active worker beside the standby. The counts
equal the input exactly, and no offset of any task was processed by two task runs.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.local.daemon import DagsterDaemon, processes_with_home
from dagster_kstreams.orchestration.protocol import (
    TAG_STATE,
    TAG_TASKS,
    TAG_WORKER,
    parse_tasks,
    read_processes,
    read_start_marks,
)
from dagster_kstreams.orchestration.start_timing import describe_start, start_breakdown

pytestmark = pytest.mark.integration

PARTITIONS = 4
KEYS = 200
# In the input before the workers start: the standby's warm-up reads the last of these.
WARM = 400
# Written right after the kill, for the standby to process: too few to ask for a second worker.
AFTER_KILL = 200
BURST = 12_000
# Written while the promoted standby gets ready whenever the lag falls below it, so that the
# sensor keeps asking for two workers until both work.
TOP_UP = 6_000
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
        # The lag counts at that default (lag_waits_for_measured_capacity would hold it until measured).
        scaling=ScalingConfig(min_workers=1, max_workers=2, catch_up_seconds=20, default_worker_records_per_second=100,
                              lag_waits_for_measured_capacity=False,
                              scale_down_stabilization_seconds=20, min_sample_seconds=3600,
                              rate_smoothing_seconds=5,  # the test's time runs fast: short delays all round
                              standby_workers=1),
        sensor_interval_seconds=5,
        default_status=dg.DefaultSensorStatus.RUNNING,
        heartbeat_interval_seconds=1,
        heartbeat_timeout_seconds=12,
        startup_timeout_seconds=300,
        # Slow, steady tasks (200 records a batch, one batch per task every 2 s: about 400/s for
        # four tasks), so that a backlog lasts.
        records_per_task=200,
        trigger_seconds=2.0,
        idle_seconds=0.5,
    ),
    resources={{
        "kafka": KafkaResource(bootstrap_servers=SETTINGS["bootstrap"]),
        "pyspark": KStreamsSparkResource(master=SETTINGS["master"], spark_config={{
            "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
            "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
            "spark.driver.memory": "768m", "spark.executor.memory": "512m",
            # The executors' Python: this one, as an image shared by driver and executors would have.
            "spark.pyspark.python": SETTINGS["python"]}}),
    }},
)
'''

# The instance settings `make demo` uses (QueuedRunCoordinator, one run per worker id).
DAGSTER_YAML = (Path(__file__).resolve().parents[1] / "deploy" / "dagster.yaml").read_text()


@pytest.fixture(params=["standalone-cluster"])
def spark_master(request) -> str:
    """The worker runs' Spark master: ``"local[1]"`` as a param runs the test in local mode instead."""
    return request.getfixturevalue("spark_cluster").master_url if request.param == "standalone-cluster" else request.param


@pytest.fixture
def elastic_app(kafka_bootstrap, kafka_admin, unique_topic, tmp_path, spark_master):
    settings = {"source": unique_topic("elastic-in"), "sink": unique_topic("elastic-out"),
                "app_id": unique_topic("elastic"), "state": str(tmp_path / "state"), "bootstrap": kafka_bootstrap,
                "master": spark_master, "python": sys.executable}
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


def _wait(what, condition, process, tmp_path, timeout, poll=0.5):
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
        time.sleep(poll)


def _committed(kafka_admin, settings, tasks: frozenset[str]) -> dict[int, int]:
    partitions = {int(task.split("_")[1]) for task in tasks}
    committed = kafka_admin.committed_offsets(settings["app_id"], [settings["source"]])
    return {p: committed.get(TopicPartition(settings["source"], p), 0) for p in partitions}


def _workers_in(instance, settings, state: str) -> dict[str, dg.DagsterRun]:
    return {worker: run for worker, run in _live(instance, settings).items() if run.tags.get(TAG_STATE) == state}


@pytest.mark.timeout(900)
def test_a_killed_workers_tasks_go_to_the_standby_at_once_scale_up_promotes_the_next_one_and_it_scales_down(
        elastic_app, kafka_bootstrap, kafka_admin, record_property, spark_master, request):
    settings, instance, daemon, tmp_path = elastic_app
    started = time.monotonic()
    started_epoch_ms = time.time() * 1000
    timeline = []
    all_tasks = {f"0_{p}" for p in range(PARTITIONS)}

    def mark(event: str) -> None:
        timeline.append((round(time.monotonic() - started, 1), event))

    def wait(what, condition, timeout, poll=0.5):
        return _wait(what, condition, daemon, tmp_path, timeout, poll)

    keys = [f"key-{i:03d}" for i in range(KEYS)]
    records = []

    def write(count: int) -> None:
        batch = [(keys[i % KEYS].encode(), b"x") for i in range(len(records), len(records) + count)]
        produce(kafka_bootstrap, settings["source"], batch)
        records.extend(batch)

    def warm(run) -> bool:
        return "warmed_up" in read_start_marks(instance, [run.run_id]).get(run.run_id, {})

    write(WARM)

    # One worker with all four tasks (min_workers) and one standby with none, both launched by the
    # first tick; the worker has processed what was waiting, and the standby is up and warm.
    def both_up():
        live = _live(instance, settings)
        if set(live) != {"worker-0", "worker-1"} or not warm(live["worker-1"]):
            return None
        return live if _total_lag(kafka_admin, settings) == 0 else None

    # Two workers starting at once (CI at a load of 20 on 2 cores: worker-0's first batch 187 s
    # after its run was created); what is timed is the takeover below.
    first = wait("worker-0 and a warm standby", both_up, 420)
    victim, standby = first["worker-0"], first["worker-1"]
    assert (victim.tags[TAG_STATE], parse_tasks(victim.tags[TAG_TASKS])) == ("running", all_tasks)
    assert (standby.tags[TAG_STATE], standby.tags[TAG_TASKS]) == ("standby", "")
    mark("worker-0 and standby worker-1 up")

    # SIGKILL the worker holding every task; records arrive for whoever takes them.
    process = read_processes(instance, [victim.run_id])[victim.run_id]
    host, pid = process.rsplit(":", 1)
    at_kill = _committed(kafka_admin, settings, all_tasks)
    os.kill(int(pid), signal.SIGKILL)
    killed_at = time.monotonic()
    write(AFTER_KILL)
    mark(f"worker-0 killed (pid {pid})")

    # Failover: the standby gets them all (granted at once: a failed run holds nothing) and
    # commits them again: measured from the kill.
    taken = wait("the standby taking worker-0's tasks", lambda: (lambda run: run if parse_tasks(
        run.tags.get(TAG_TASKS)) == all_tasks else None)(instance.get_run_by_id(standby.run_id)), 60, poll=0.1)
    granted_at = time.monotonic()
    assert taken.tags[TAG_STATE] == "running"
    wait("worker-0's tasks committing again", lambda: any(
        offset > at_kill[p] for p, offset in _committed(kafka_admin, settings, all_tasks).items()), 120, poll=0.1)
    failover = time.monotonic() - killed_at
    mark(f"tasks granted to worker-1 after {granted_at - killed_at:.1f}s, committing after {failover:.1f}s")
    record_property("failover_seconds", round(failover, 1))
    assert instance.get_run_by_id(victim.run_id).status is dg.DagsterRunStatus.FAILURE
    # A new standby takes the failed worker's place (and id).
    replacement = wait("a standby in worker-0's place", lambda: _workers_in(instance, settings, "standby").get(
        "worker-0"), 30)
    assert replacement.run_id != victim.run_id and replacement.tags[TAG_TASKS] == ""
    mark("standby worker-0 launched")

    # A burst: scale-up promotes that standby (started or not: it is the closest to ready), and
    # its share of the tasks moves once it is ready; another standby is launched.
    write(BURST)
    mark(f"burst of {BURST} written")
    promoted = wait("the new standby promoted", lambda: (lambda run: run if run.tags.get(TAG_STATE) == "running"
                    else None)(instance.get_run_by_id(replacement.run_id)), 45)
    assert parse_tasks(promoted.tags["dagster_kstreams/assigned"])
    mark("worker-0 promoted")
    wait("another standby", lambda: _workers_in(instance, settings, "standby").get("worker-2"), 30)
    mark("standby worker-2 launched")

    def promoted_works():
        if _total_lag(kafka_admin, settings) < TOP_UP:
            write(TOP_UP)
        return instance.get_records_for_run(promoted.run_id,
                                            of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records

    wait("worker-0 processing its share", promoted_works, 300)
    mark("worker-0 processing")

    wait("lag drained", lambda: _total_lag(kafka_admin, settings) == 0, 240)
    mark("lag 0")
    wait("scaled down to one worker and a standby", lambda: (lambda live: len(live) == 2 and sorted(
        run.tags.get(TAG_STATE) for run in live.values()) == ["running", "standby"])(_live(instance, settings)), 90)
    mark("1 worker + 1 standby")
    failover_start = start_breakdown(instance, standby.run_id)
    print("timeline:", json.dumps(timeline))
    print(f"failover (SIGKILL -> its tasks committing on the standby): {failover:.1f}s")
    print("standby worker-1 start:", describe_start(failover_start))

    # Retired workers finished their batch and exited cleanly; the one left holds every task.
    runs = _worker_runs(instance, settings)
    assert {run.status for run in runs if run.run_id != victim.run_id} <= LIVE | {dg.DagsterRunStatus.SUCCESS}
    assert any(run.status is dg.DagsterRunStatus.SUCCESS for run in runs), "no worker was retired"
    # No cold worker was launched for tasks: the first tick's two runs and two standbys.
    assert sorted(run.tags[TAG_WORKER] for run in runs) == ["worker-0", "worker-0", "worker-1", "worker-2"]
    (survivor,) = _workers_in(instance, settings, "running").values()
    wait("the last worker holding every task", lambda: parse_tasks(
        instance.get_run_by_id(survivor.run_id).tags[TAG_TASKS]) == all_tasks, 30)
    # The standby recorded every stage of its start, its warm-up included.
    assert {"spark_ready", "worker_ready", "warmed_up", "tasks_granted", "first_batch"} <= set(failover_start)

    if spark_master.startswith("spark://"):
        _assert_the_cluster_ran_every_worker_run(request.getfixturevalue("spark_cluster"), started_epoch_ms,
                                                 len(runs), live=2)

    # Exact counts, though a worker died mid-batch.
    output = read_topic(kafka_bootstrap, settings["sink"])
    expected = Counter(key.decode() for key, _ in records)
    assert final_values(output, bytes.decode, lambda v: int.from_bytes(v, "big", signed=True)) == dict(expected)

    # No offset was processed by two task runs: per task, the reported ranges never overlap and
    # reach the end. The killed worker may have committed a batch it did not live to report: a gap.
    # The last batches are reported at the survivor's next report (every report_interval_seconds),
    # and a scale-down can come as soon as the lag is drained: the reports are waited for.
    app = settings["app_id"].replace("-", "_")
    key = dg.AssetKey([app, "subtopology_0"])
    ends = {tp.partition: end for tp, end in kafka_admin.end_offsets([settings["source"]]).items()}

    def reported_ranges() -> dict[str, list[tuple[int, int]]]:
        ranges: dict[str, list[tuple[int, int]]] = {}
        for record in instance.fetch_materializations(key, limit=10_000).records:
            metadata = record.asset_materialization.metadata
            ranges.setdefault(record.asset_materialization.partition, []).append(
                (metadata["offset_from"].value, metadata["offset_to"].value))
        return ranges

    def reported_to_the_end() -> bool:
        ranges = reported_ranges()
        return len(ranges) == PARTITIONS and all(max(end for _, end in ranges[str(p)]) == ends[p] for p in ends)

    try:
        wait("every task's last batch reported", reported_to_the_end, 30)
    except AssertionError:
        pass  # the assertions below say which task's report is missing
    ranges = reported_ranges()
    for partition, spans in ranges.items():
        spans.sort()
        position = 0
        for start, end in spans:
            assert start >= position, f"task 0_{partition} processed twice: {spans}"
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
    # ... and charges each report its share of the worker's time, never more than its own batches took.
    reports = [record.asset_materialization.metadata for record in instance.fetch_materializations(key, limit=10_000).records]
    assert all(0 <= m["worker_seconds"].value <= m["seconds"].value + 0.01 for m in reports if "worker_task_batch" in m)

    # The sensor recorded the lag as observations of the sub-topology: it rose and fell to 0 (at the
    # sensor's next tick after the lag was drained, which a scale-down need not wait for); the
    # plotted workers count the standby (two active and one standby at most).
    def observed_metadata():
        return [record.asset_observation.metadata for record in instance.fetch_observations(key, limit=1000).records]

    try:
        wait("the sensor observing the lag drained",
             lambda: (lambda observed: bool(observed) and observed[0]["lag"].value == 0)(observed_metadata()), 30)
    except AssertionError:
        pass  # the assertion below says what it observed last
    metadata = observed_metadata()
    lags = [m["lag"].value for m in metadata]
    assert max(lags) > 0 and lags[0] == 0, lags[:5]  # newest first
    assert max(m["active_workers"].value for m in metadata) == 2
    assert max(m["workers"].value for m in metadata) == 3
    assert all(m["workers"].value == m["active_workers"].value + m["standby_workers"].value for m in metadata)


def _assert_the_cluster_ran_every_worker_run(cluster, since_ms: float, worker_runs: int, live: int) -> None:
    """Each worker run was its own application with one core (a standby starves nobody), and the
    cluster's executors ran its tasks with the connector jars and the project's zip they fetched."""
    # The master notices an application's driver has exited a moment after the run ended.
    deadline = time.monotonic() + 60
    while True:
        state = cluster.master_state()
        active = [app for app in state["activeapps"] if app["starttime"] >= since_ms]
        if len(active) <= live or time.monotonic() > deadline:
            break
        time.sleep(1)
    apps = [app for app in state["activeapps"] + state["completedapps"] if app["starttime"] >= since_ms]
    assert len(apps) == worker_runs, [(app["id"], app["state"]) for app in apps]
    assert len(active) == live and all(app["cores"] == 1 for app in active), active
    (worker,) = state["workers"]
    with urllib.request.urlopen(f"{worker['webuiaddress']}/json/", timeout=5) as response:
        executors = json.load(response)
    ran = {executor["appid"] for executor in executors["executors"] + executors["finishedexecutors"]}
    assert {app["id"] for app in apps} <= ran
    for app in apps:
        (executor_dir, *_) = sorted((cluster.state_dir / "work" / app["id"]).iterdir())
        fetched = [path.name for path in executor_dir.iterdir()]
        assert any(name.startswith("dagster_kstreams-") and name.endswith(".zip") for name in fetched), fetched
        assert any(name.startswith("spark-sql-kafka-0-10_") for name in fetched), fetched
        assert "Finished task" in (executor_dir / "stderr").read_text(errors="replace"), app["id"]
