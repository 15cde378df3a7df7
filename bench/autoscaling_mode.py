"""One mode of the autoscaling bench, run for real: its code location and Dagster instance,
``dagster-daemon run``, the generator's steady input and its burst, and every second the
application's lag and live worker runs; then the sensor's ticks, the worker runs and the task
reports read back from the instance (``bench/autoscaling.py``'s docstring)."""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import dagster as dg

from bench.autoscaling_figures import OneBurst, Sample, Tick, WorkerRun, figures
from bench.common import log, wait_for_group_coordinator
from bench.cpu_pinning import descendants, pin_process_tree
from dagster_kstreams.generator import BurstSchedule, generate
from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.local.daemon import DagsterDaemon
from dagster_kstreams.orchestration.protocol import read_heartbeats, read_processes

REPO = Path(__file__).resolve().parent.parent

CODE_LOCATION = '''
import dagster as dg

from assets.word_count import build_topology
from dagster_kstreams.orchestration.definitions import build_kstreams_definitions
from dagster_kstreams.orchestration.resources import KafkaResource, KStreamsSparkResource
from dagster_kstreams.orchestration.workers import ElasticWorkers
from dagster_kstreams.scaling import ScalingConfig

S = {settings!r}

defs = build_kstreams_definitions(
    topology=build_topology(S["source"], S["sink"]),
    app_id=S["app_id"],
    topic_partitions={{S["source"]: S["partitions"], S["sink"]: S["partitions"]}},
    state_location=S["state"],
    create_sink_topics=True,
    elastic_workers=ElasticWorkers(
        scaling=ScalingConfig(min_workers=1, max_workers=S["max_workers"], standby_workers=S["standby_workers"],
                              catch_up_seconds=S["catch_up_seconds"],
                              scale_down_stabilization_seconds=S["stabilization_seconds"],
                              default_worker_records_per_second=S["default_capacity"],
                              min_sample_seconds=S["min_sample_seconds"],
                              warmup_batches=1),
        sensor_interval_seconds=S["sensor_interval"],
        default_status=dg.DefaultSensorStatus.RUNNING,
        heartbeat_interval_seconds=2,
        heartbeat_timeout_seconds=60,
        startup_timeout_seconds=300,
    ),
    resources={{
        "kafka": KafkaResource(bootstrap_servers=S["bootstrap"]),
        "pyspark": KStreamsSparkResource(master="local[1]", spark_config={{
            "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
            "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
            "spark.driver.memory": "768m"}}),
    }},
)
'''

# The instance settings `make demo` uses (QueuedRunCoordinator, one run per worker id).
DAGSTER_YAML = (REPO / "deploy" / "dagster.yaml").read_text()


def run_mode(mode: str, args, bootstrap: str, work: Path) -> dict:
    suffix = uuid.uuid4().hex[:6]
    app_id = f"bench-{mode}-{suffix}"
    settings = {
        "source": f"bench-lines-{mode}-{suffix}", "sink": f"bench-counts-{mode}-{suffix}", "app_id": app_id,
        "state": str(work / mode / "state"), "bootstrap": bootstrap, "partitions": args.partitions,
        "max_workers": 1 if mode == "fixed" else args.max_workers, "standby_workers": int(mode == "standby"),
        "catch_up_seconds": args.catch_up_seconds,
        "stabilization_seconds": args.stabilization_seconds, "default_capacity": args.default_capacity,
        "sensor_interval": args.sensor_interval, "min_sample_seconds": args.min_sample_seconds,
    }
    directory = work / mode
    home = directory / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(DAGSTER_YAML)
    code = directory / "bench_defs.py"
    code.write_text(CODE_LOCATION.format(settings=settings))
    (directory / "workspace.yaml").write_text(f"load_from:\n  - python_file: {code}\n")
    admin = KafkaAdmin(bootstrap)
    admin.create_topics({settings["source"]: args.partitions, settings["sink"]: args.partitions})
    wait_for_group_coordinator(bootstrap, app_id, settings["source"])

    schedule = OneBurst(args.rate, args.burst_factor, args.burst_seconds)
    stop_generating = threading.Event()
    generated: dict = {}

    class Stopped(Exception):
        pass

    def sleep_or_stop(seconds: float) -> None:
        if stop_generating.is_set():
            raise Stopped
        time.sleep(seconds)

    def write() -> None:
        try:
            generate(bootstrap, {"text-lines": settings["source"]}, schedule, duration_s=24 * 3600,
                     sleep=sleep_or_stop, on_second=lambda elapsed, sent, rate: generated.update(lines=sent))
        except Stopped:
            pass
        except Exception as error:  # reported in the result
            generated["error"] = repr(error)

    generator = threading.Thread(target=write, name="generator", daemon=True)

    log_file = (directory / "daemon.log").open("wb")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    daemon = DagsterDaemon(home, directory / "workspace.yaml", log_file, cwd=directory, env=env)
    app_key = app_id.replace("-", "_")
    job_name = f"{app_key}_workers"
    topics = [settings["source"]]
    samples: list[Sample] = []
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            def lag() -> tuple[int, int]:
                existing = admin.list_topics()
                names = topics + sorted(t for t in existing if t.startswith(app_id) and t.endswith("-repartition"))
                lags = admin.lag(app_id, names)
                return sum(lags.values()), sum(v for tp, v in lags.items() if tp.topic == settings["source"])

            def live_workers() -> int:
                live = {dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
                        dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING}
                return sum(1 for run in instance.get_runs(dg.RunsFilter(job_name=job_name)) if run.status in live)

            # Warm-up, the same for both modes: once the first worker beats (its SparkSession is up),
            # a few lines give every task its cold first run; then the steady input starts, and the
            # measurement once every task has run twice more and one worker is live. Starting the
            # input with cold tasks would build a backlog that scales the fleet up before t=0.
            deadline = time.monotonic() + args.warmup_timeout

            pinned: set[str] = set()
            # Once the first worker runs (armed below): the processes under the daemon then, and the
            # first worker's pid. Any other process that appears under the daemon, outside the first
            # worker's tree, is a launched run: it goes to the spare CPUs at once, before it loads
            # Python, Dagster and the code location on CPU 0.
            launches: dict[str, object] = {}

            def pin_added_workers() -> None:
                """Every worker run but the first on the spare CPUs (bench/cpu_pinning.py), from its launch."""
                if not args.pin_workers:
                    return
                _, spare = args.cpus
                if launches:
                    first_worker = set(descendants(launches["first_worker"]))
                    for pid in set(descendants(daemon.process.pid)) - launches["daemon"] - first_worker:
                        pin_process_tree(pid, spare)
                runs = sorted(instance.get_run_records(dg.RunsFilter(job_name=job_name)),
                              key=lambda record: record.create_timestamp)
                added = [record.dagster_run.run_id for record in runs[1:] if not record.dagster_run.is_finished]
                for run_id, process in read_processes(instance, added).items():
                    if pin_process_tree(int(process.rpartition(":")[2]), spare):
                        pinned.add(run_id)

            def check_alive(what: str) -> None:
                pin_added_workers()
                if daemon.poll() is not None:
                    raise RuntimeError(f"dagster-daemon exited: {(directory / 'daemon.log').read_text()[-3000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{mode}: {what} within {args.warmup_timeout}s")

            def task_runs() -> dict[str, int]:
                runs_of: dict[str, int] = {}
                for sub in (0, 1):
                    for record in instance.fetch_materializations(
                            dg.AssetKey([app_key, f"subtopology_{sub}"]), limit=1000).records:
                        task = f"{sub}_{record.asset_materialization.partition}"
                        runs_of[task] = runs_of.get(task, 0) + 1
                return runs_of

            while not read_heartbeats(instance, [run.run_id for run in instance.get_runs(
                    dg.RunsFilter(job_name=job_name))]):
                check_alive("no worker started")
                time.sleep(1)
            generate(bootstrap, {"text-lines": settings["source"]}, BurstSchedule(rate=1000, burst_every_s=0),
                     max_records=50 * args.partitions, seed=1)
            tasks_needed = {f"{sub}_{p}" for sub in (0, 1) for p in range(args.partitions)}
            while not all(task_runs().get(task, 0) >= 1 for task in tasks_needed):
                check_alive(f"not every task ran: {task_runs()}")
                time.sleep(2)
            generator_started = time.monotonic()
            generator.start()
            fleet = 1 + settings["standby_workers"]
            while not (all(task_runs().get(task, 0) >= 3 for task in tasks_needed) and live_workers() == fleet):
                check_alive(f"tasks not warm or not {fleet} workers: {task_runs()}, {live_workers()} workers")
                time.sleep(2)
            if args.pin_workers:
                (first_run,) = [run for run in instance.get_runs(dg.RunsFilter(job_name=job_name))
                                if not run.is_finished][-1:]
                (process,) = read_processes(instance, [first_run.run_id]).values()
                launches.update(first_worker=int(process.rpartition(":")[2]),
                                daemon=set(descendants(daemon.process.pid)))
            t0 = time.monotonic()
            wall0 = time.time()
            warmup_seconds = round(t0 - generator_started, 1)
            schedule.start(t0 - generator_started + args.steady_seconds)
            log(f"{mode}: warm after {warmup_seconds}s; steady {args.steady_seconds}s, burst {args.burst_seconds}s "
                f"at {args.rate * args.burst_factor:.0f} lines/s, window {args.duration}s")
            next_log = 0.0
            while (now := time.monotonic() - t0) < args.duration:
                if daemon.poll() is not None:
                    raise RuntimeError(f"dagster-daemon exited: {(directory / 'daemon.log').read_text()[-3000:]}")
                pin_added_workers()
                total, input_lag = lag()
                samples.append(Sample(round(now, 1), total, input_lag, live_workers()))
                if now >= next_log:
                    log(f"{mode} t={now:5.0f}s lag {total:>8,} (input {input_lag:>7,}) workers {samples[-1].workers}")
                    next_log += 15
                time.sleep(max(0.0, 1.0 - (time.monotonic() - t0 - now)))
            end = time.monotonic() - t0

            ticks = []
            for record in instance.fetch_observations(dg.AssetKey([app_key, "subtopology_0"]), limit=10_000).records:
                metadata = record.asset_observation.metadata
                ticks.append(Tick(round(record.timestamp - wall0, 1), int(metadata["workers"].value),
                                  int(metadata["desired_workers"].value), float(metadata["worker_capacity"].value),
                                  bool(metadata["worker_capacity_measured"].value)))
            ticks.sort(key=lambda tick: tick.t)
            runs = []
            for record in instance.get_run_records(dg.RunsFilter(job_name=job_name)):
                runs.append(WorkerRun(record.dagster_run.tags.get("dagster_kstreams/worker", "?"),
                                      round(record.create_timestamp.timestamp() - wall0, 1),
                                      None if record.end_time is None else round(record.end_time - wall0, 1),
                                      record.dagster_run.status.value))
            runs.sort(key=lambda run: run.created)
            # Which worker ran which task when, and how fast: where a mode's time went.
            worker_of = {record.dagster_run.run_id: record.dagster_run.tags.get("dagster_kstreams/worker", "?")
                         for record in instance.get_run_records(dg.RunsFilter(job_name=job_name))}
            task_reports = []
            for sub in (0, 1):
                for record in instance.fetch_materializations(
                        dg.AssetKey([app_key, f"subtopology_{sub}"]), limit=10_000).records:
                    metadata = record.asset_materialization.metadata
                    task_reports.append({
                        "t": round(record.timestamp - wall0, 1), "worker": worker_of.get(record.run_id, "?"),
                        "task": f"{sub}_{record.asset_materialization.partition}",
                        "records_in": metadata["records_in"].value, "seconds": metadata["seconds"].value,
                        "worker_seconds": metadata["worker_seconds"].value if "worker_seconds" in metadata else None,
                    })
            task_reports.sort(key=lambda report: report["t"])
    finally:
        stop_generating.set()
        daemon.stop()
        log_file.close()
        if generator.is_alive():
            generator.join(timeout=30)

    result = figures(samples, ticks, runs, burst_start=args.steady_seconds, burst_seconds=args.burst_seconds,
                     end=end, given_target=args.lag_target, standbys=settings["standby_workers"])
    return {
        "figures": result.__dict__,
        "settings": {k: v for k, v in settings.items() if k not in ("state", "bootstrap")},
        "warmup_seconds": warmup_seconds,
        "records_generated": generated,
        "samples": [sample.__dict__ for sample in samples],
        "ticks": [tick.__dict__ for tick in ticks if tick.t >= -60],
        "runs": [run.__dict__ for run in runs],
        "worker_runs_on_spare_cpus": len(pinned),
        "task_reports": [report for report in task_reports if report["t"] >= -60],
    }
