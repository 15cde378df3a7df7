"""A worker run's start, stage by stage: where the time goes from the lag sensor's decision to the
first batch it commits (issue 13).

    .venv/bin/python -m bench.worker_start [--records 2000] [--partitions 4] [--master local[1]]
        [--bootstrap HOST:PORT] [--timeout 300] [--output FILE]
    .venv/bin/python -m bench.worker_start --dagster-home DIR --workspace FILE --job APP_workers
        [--tasks 0_0,0_1] [--location NAME]
    .venv/bin/python -m bench.worker_start --dagster-home DIR --run-id RUN_ID

**Default**: everything real and its own: a broker (a LocalBroker on 29110/29111 unless
``--bootstrap``), a Dagster instance with the settings ``make demo`` uses (``deploy/dagster.yaml``:
queued run coordinator, default run launcher) and ``dagster-daemon run``, an application that counts
records per key over a ``--partitions``-partition topic with ``--records`` records waiting in it,
and its lag sensor (one worker, no standby). The sensor's first tick launches the worker run that
is measured, as in production: a ``RunRequest``, the run queue, the launcher's subprocess, its own
SparkSession. Once the worker's first batch is committed, the breakdown is printed (and written to
``--output`` as JSON) and everything is stopped.

**On a given instance** (``--dagster-home`` with ``--workspace`` and ``--job``): one run of the
app's worker job is submitted through that instance's run coordinator with the tags the sensor
gives a worker, except its worker id, so that the instance's lag sensor leaves it out of its fleet
(its daemon must be running to dequeue it). With no ``--tasks`` it starts as a standby and is
measured up to ``worker_ready``; with tasks it runs them (stop the app's lag sensor first, or its
workers and this run take the tasks from each other), up to its first batch. Then it is retired.

**Any run** (``--dagster-home`` with ``--run-id``): the breakdown of a worker run already there (a
``make demo`` worker; a standby's wait for its tasks is shown apart).

The stages are :mod:`dagster_kstreams.orchestration.start_timing`'s: created (the sensor's
decision), launched (out of the queue), process started, Dagster up in it, code location loaded,
SparkSession building and up, worker ready (it beats), tasks granted, first batch committed.
Run it on a quiet machine: every stage is CPU-bound and a busy machine stretches them all.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Optional

import dagster as dg

from bench.common import bench_workspace, log, wait_for_group_coordinator
from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.kafka.records import produce
from dagster_kstreams.local.daemon import DAEMON, DagsterDaemon
from dagster_kstreams.orchestration.protocol import (
    STATE_RUNNING,
    STATE_STANDBY,
    TAG_APP,
    TAG_ASSIGNED,
    TAG_STATE,
    TAG_TASKS,
    app_id_tag,
    format_tasks,
    parse_tasks,
    retiring_tags,
)
from dagster_kstreams.orchestration.start_timing import STAGES, describe_start, start_breakdown, start_seconds

REPO = Path(__file__).resolve().parent.parent
BROKER_PORT = 29110
DAGSTER_YAML = (REPO / "deploy" / "dagster.yaml").read_text()

CODE_LOCATION = '''
import dagster as dg

from dagster_kstreams.orchestration.definitions import build_kstreams_definitions
from dagster_kstreams.orchestration.resources import KafkaResource, KStreamsSparkResource
from dagster_kstreams.orchestration.workers import ElasticWorkers
from dagster_kstreams.scaling import ScalingConfig
from dagster_kstreams.topology import StreamsBuilder

S = {settings!r}

builder = StreamsBuilder()
builder.stream(S["source"]).group_by_key().count().to_stream().to(S["sink"])

defs = build_kstreams_definitions(
    topology=builder,
    app_id=S["app_id"],
    topic_partitions={{S["source"]: S["partitions"], S["sink"]: S["partitions"]}},
    state_location=S["state"],
    create_sink_topics=True,
    elastic_workers=ElasticWorkers(
        scaling=ScalingConfig(min_workers=1, max_workers=1),
        sensor_interval_seconds=5,
        default_status=dg.DefaultSensorStatus.RUNNING,
    ),
    resources={{
        "kafka": KafkaResource(bootstrap_servers=S["bootstrap"]),
        "pyspark": KStreamsSparkResource(master=S["master"], spark_config={{
            "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
            "spark.driver.memory": "768m"}}),
    }},
)
'''


def print_breakdown(breakdown: dict[str, float]) -> None:
    steps = start_seconds(breakdown)
    created = breakdown.get("created")
    print(f"{'stage':<16} {'+s since created':>17} {'s since previous':>17}")
    for stage in STAGES:
        if stage in breakdown:
            since = "" if created is None else f"{breakdown[stage] - created:.2f}"
            print(f"{stage:<16} {since:>17} {steps[stage]:>17.2f}")
    print(describe_start(breakdown))


def wait_for_stage(instance: dg.DagsterInstance, run_id: str, stage: str, timeout: float,
                   alive=lambda: None) -> dict[str, float]:
    deadline = time.monotonic() + timeout
    while True:
        breakdown = start_breakdown(instance, run_id)
        if stage in breakdown:
            return breakdown
        run = instance.get_run_by_id(run_id)
        if run.is_finished:
            raise SystemExit(f"bench: error: worker run {run_id} ended ({run.status.value}) before {stage}")
        alive()
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: error: worker run {run_id} did not reach {stage} within {timeout:.0f}s "
                             f"(reached: {', '.join(breakdown)})")
        time.sleep(0.5)


def own_stack(args) -> dict[str, float]:
    """The default: a broker, instance, daemon and app of its own; the sensor launches the worker."""
    with bench_workspace("bench-worker-start-", args.bootstrap, BROKER_PORT) as (bootstrap, work):
        suffix = uuid.uuid4().hex[:6]
        settings = {"source": f"bench-start-in-{suffix}", "sink": f"bench-start-out-{suffix}",
                    "app_id": f"bench-start-{suffix}", "state": str(work / "state"), "bootstrap": bootstrap,
                    "partitions": args.partitions, "master": args.master}
        admin = KafkaAdmin(bootstrap)
        admin.create_topics({settings["source"]: args.partitions, settings["sink"]: args.partitions})
        wait_for_group_coordinator(bootstrap, settings["app_id"], settings["source"])
        produce(bootstrap, settings["source"], [(f"key-{i % 200}".encode(), b"x") for i in range(args.records)])
        home = work / "dagster_home"
        home.mkdir()
        (home / "dagster.yaml").write_text(DAGSTER_YAML)
        code = work / "bench_defs.py"
        code.write_text(CODE_LOCATION.format(settings=settings))
        (work / "workspace.yaml").write_text(f"load_from:\n  - python_file: {code}\n")
        env = {**os.environ,
               "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        with (work / "daemon.log").open("wb") as daemon_log:
            daemon = DagsterDaemon(home, work / "workspace.yaml", daemon_log, cwd=work, env=env)

            def alive() -> None:
                if daemon.poll() is not None:
                    log_tail = (work / "daemon.log").read_text()[-2000:]
                    raise SystemExit(f"bench: error: dagster-daemon exited: {log_tail}")

            try:
                with dg.DagsterInstance.from_config(str(home)) as instance:
                    deadline = time.monotonic() + args.timeout
                    log("daemon started; waiting for the lag sensor to launch the worker")
                    app_runs = dg.RunsFilter(tags={TAG_APP: app_id_tag(settings["app_id"])})
                    while not (runs := instance.get_runs(app_runs)):
                        alive()
                        if time.monotonic() > deadline:
                            raise SystemExit(f"bench: error: no worker run within {args.timeout:.0f}s")
                        time.sleep(0.5)
                    run_id = runs[-1].run_id
                    log(f"worker run {run_id} created; waiting for its first batch")
                    return wait_for_stage(instance, run_id, "first_batch", max(1.0, deadline - time.monotonic()),
                                          alive)
            finally:
                daemon.stop()


def given_instance(args) -> dict[str, float]:
    """Submit one worker run on the instance at ``--dagster-home``, measure it, retire it."""
    tasks = parse_tasks(args.tasks)
    job = args.job
    app = job[: -len("_workers")] if job.endswith("_workers") else job
    tags = {TAG_APP: app, TAG_TASKS: format_tasks(tasks), TAG_ASSIGNED: format_tasks(tasks),
            TAG_STATE: STATE_RUNNING if tasks else STATE_STANDBY, "dagster_kstreams/bench": "worker_start"}
    command = [str(Path(DAEMON).with_name("dagster")), "job", "launch", "-w", args.workspace, "-j", job,
               "--tags", json.dumps(tags)]
    if args.location:
        command += ["-l", args.location]
    env = {**os.environ, "DAGSTER_HOME": str(Path(args.dagster_home).resolve())}
    with dg.DagsterInstance.from_config(args.dagster_home) as instance:
        before = {run.run_id for run in instance.get_runs(dg.RunsFilter(job_name=job))}
        launched = subprocess.run(command, env=env, capture_output=True, text=True)
        if launched.returncode != 0:
            raise SystemExit(f"bench: error: dagster job launch failed: {launched.stderr.strip().splitlines()[-1:]}")
        (run,) = [run for run in instance.get_runs(dg.RunsFilter(job_name=job)) if run.run_id not in before]
        log(f"worker run {run.run_id} submitted; waiting for {'its first batch' if tasks else 'it to be ready'}")
        try:
            return wait_for_stage(instance, run.run_id, "first_batch" if tasks else "worker_ready", args.timeout)
        finally:
            instance.add_run_tags(run.run_id, retiring_tags())


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2000, help="records waiting in the input (default mode)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--master", default="local[1]", help="the worker's Spark master (default mode)")
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting one")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--dagster-home", default=None, help="a given instance (with --workspace/--job or --run-id)")
    parser.add_argument("--workspace", default=None)
    parser.add_argument("--job", default=None, help="the app's worker job, <app>_workers")
    parser.add_argument("--location", default=None, help="code location name, if the workspace has several")
    parser.add_argument("--tasks", default="", help="tasks for the run, e.g. 0_0,0_1 (none: a standby)")
    parser.add_argument("--run-id", default=None, help="print the breakdown of this run only")
    parser.add_argument("--output", default=None, help="also write the breakdown here, as JSON")
    args = parser.parse_args(argv)

    if args.dagster_home and args.run_id:
        with dg.DagsterInstance.from_config(args.dagster_home) as instance:
            breakdown = start_breakdown(instance, args.run_id)
    elif args.dagster_home:
        if not (args.workspace and args.job):
            parser.error("--dagster-home needs --run-id, or --workspace and --job")
        breakdown = given_instance(args)
    else:
        breakdown = own_stack(args)
    print_breakdown(breakdown)
    if args.output:
        Path(args.output).write_text(json.dumps({"stages": breakdown, "seconds": start_seconds(breakdown),
                                                 "load": os.getloadavg(), "arguments": vars(args)}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
