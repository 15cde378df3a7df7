"""Autoscaling under a burst: the lag sensor's elastic workers versus one fixed worker (issues 7, 13).

    .venv/bin/python -m bench.autoscaling [--rate 200] [--burst-factor 40] [--burst-seconds 60]
        [--duration 300] [--partitions 4] [--max-workers 2] [--modes autoscale,standby,fixed]
        [--bootstrap HOST:PORT] [--output STEM]

Everything is the real thing: a Kafka broker (a LocalBroker on ports 29100/29101 unless
--bootstrap), a Dagster instance with ``dagster-daemon run`` (sensor daemon, queued run
coordinator, default run launcher), the library's lag sensor deciding with its policy
(``decide_tick``) every ``--sensor-interval`` seconds, and worker runs that are subprocesses,
each with its own SparkSession (``local[1]``: a worker is one core).

The application is the word-count example (``assets/word_count.py``: split lines, repartition
by word, count) over a ``--partitions``-partition input topic, fed by the library's generator
(``text-lines``: 3-14 words per line). Each mode runs alone, one after the other:

* ``autoscale``: ``min_workers=1, max_workers=--max-workers``;
* ``standby``: the same, with one warm standby worker (``standby_workers=1``): scale-up grants
  tasks to it first, then launches a new standby;
* ``fixed``: ``min_workers=max_workers=1``, the same sensor (it only replaces a dead worker).

The default burst (200 x 40 = 8,000 lines/s, about 70,000 words/s through the repartition topic)
is more than one ``local[1]`` worker absorbs, so that a second worker has work to take.

A second worker needs a core to add (``--pin-workers``, on by default with 2+ CPUs,
``bench/cpu_pinning.py``): the bench, its broker, the daemon and the first worker run on CPU 0,
every worker run after the first on the other CPUs, as a worker the sensor adds on a cluster lands
on a machine of its own. Unpinned, on 2 cores, a second worker only shares the cores the first
one, the broker and the generator already fill.

Per mode: once the first worker beats (its SparkSession is up), a few lines give every task its
cold first run; then the generator writes ``--rate`` lines/s, and once every task has run twice
more and one worker is live, the measurement starts (t=0): ``--steady-seconds`` at the steady rate, then
``--burst-seconds`` at ``rate x burst-factor``, then the steady rate until ``--duration``. Every
second the bench reads the application's lag (input and repartition topics, what the sensor sees)
and the worker runs. Reported:

* recovery: seconds from the end of the burst until the lag is back under the target (the
  highest lag of the steady phase before the burst, or ``--lag-target``); also from its start;
* peak lag after the burst began;
* scaling decisions: sensor ticks within the window whose desired worker count differed from the
  running count (from the sensor's lag observations), and worker runs launched;
* worker-seconds: the sum over worker runs of their time alive (created by the sensor until they
  ended, or the end of the window) within the window; a standby's time counts;
* for each elastic mode, whether it beat the fixed worker (issue 13's bar): back under the target
  sooner after the burst and a lower peak lag, at no more than twice the fixed worker's
  worker-seconds.

Results: ``bench/results/autoscaling-<date>.json`` and ``.md`` (a table; ``--output STEM`` names
them), and the table on stdout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from bench.common import bench_workspace, log, wait_for_group_coordinator
from bench.cpu_pinning import descendants, pin_process_tree, pin_self, split_cpus

REPO = Path(__file__).resolve().parent.parent
BROKER_PORT = 29100

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
DAGSTER_YAML = (Path(__file__).resolve().parents[1] / "deploy" / "dagster.yaml").read_text()


# --- pure parts: the schedule and the figures (tests/test_bench_autoscaling.py) ---------------


class OneBurst:
    """The generator's rate: steady, then one burst once :meth:`start` says when (seconds since the
    generator started). Duck-types :class:`dagster_kstreams.generator.BurstSchedule`."""

    def __init__(self, rate: float, factor: float, burst_seconds: float):
        self.rate, self.factor, self.burst_seconds = rate, factor, burst_seconds
        self.burst_from: Optional[float] = None

    def start(self, at: float) -> None:
        self.burst_from = at

    def rate_at(self, t: float) -> float:
        if self.burst_from is not None and self.burst_from <= t < self.burst_from + self.burst_seconds:
            return self.rate * self.factor
        return self.rate


@dataclass
class Sample:
    t: float  # seconds since the measurement started
    lag: int  # input + repartition topics (what the sensor sees)
    input_lag: int
    workers: int  # live worker runs (queued, starting or running)


@dataclass
class Tick:
    t: float
    workers: int
    desired: int
    capacity: float  # what the sensor planned with for sub-topology 0 (lines/s; the words have their own)
    measured: bool = False  # ... measured from the workers' reports, not the default


@dataclass
class WorkerRun:
    worker: str
    created: float  # seconds since the measurement started
    ended: Optional[float]
    status: str


@dataclass
class Figures:
    lag_target: int
    recovery_after_burst_s: Optional[float]
    recovery_from_burst_start_s: Optional[float]
    peak_lag: int
    scaling_decisions: int
    runs_launched: int
    max_workers_seen: int
    worker_seconds: float
    capacity_measured_at_s: Optional[float] = None  # first tick planning with a measured capacity
    extra: dict = field(default_factory=dict)


def lag_target(samples: Sequence[Sample], burst_start: float, given: Optional[int] = None) -> int:
    """The given target, else the highest lag of the steady phase before the burst (at least 1)."""
    if given is not None:
        return given
    return max([s.lag for s in samples if 0 <= s.t < burst_start] + [1])


def recovery_seconds(samples: Sequence[Sample], burst_end: float, target: int) -> Optional[float]:
    """Seconds from ``burst_end`` until the first sample at or after it with lag <= target."""
    for sample in sorted(samples, key=lambda s: s.t):
        if sample.t >= burst_end and sample.lag <= target:
            return sample.t - burst_end
    return None


def scaling_decisions(ticks: Sequence[Tick], start: float, end: float, standbys: int = 0) -> int:
    """Ticks in ``[start, end]`` that changed the fleet: desired active workers plus ``standbys``
    (the sensor's plotted ``workers`` counts them) differs from running."""
    return sum(1 for tick in ticks if start <= tick.t <= end and tick.desired + standbys != tick.workers)


def worker_seconds(runs: Sequence[WorkerRun], start: float, end: float) -> float:
    """Time alive of every worker run, clipped to ``[start, end]``."""
    total = 0.0
    for run in runs:
        alive_to = end if run.ended is None else min(run.ended, end)
        total += max(0.0, alive_to - max(run.created, start))
    return total


def figures(samples: Sequence[Sample], ticks: Sequence[Tick], runs: Sequence[WorkerRun], *, burst_start: float,
            burst_seconds: float, end: float, given_target: Optional[int] = None, standbys: int = 0) -> Figures:
    target = lag_target(samples, burst_start, given_target)
    burst_end = burst_start + burst_seconds
    after = recovery_seconds(samples, burst_end, target)
    return Figures(
        lag_target=target,
        recovery_after_burst_s=after,
        recovery_from_burst_start_s=None if after is None else after + burst_seconds,
        peak_lag=max([s.lag for s in samples if s.t >= burst_start] + [0]),
        scaling_decisions=scaling_decisions(ticks, 0.0, end, standbys),
        runs_launched=sum(1 for run in runs if 0.0 <= run.created <= end),
        max_workers_seen=max([s.workers for s in samples] + [0]),
        worker_seconds=round(worker_seconds(runs, 0.0, end), 1),
        capacity_measured_at_s=next((tick.t for tick in sorted(ticks, key=lambda tick: tick.t)
                                     if tick.measured and tick.t >= 0), None),
    )


def verdicts(modes: dict) -> dict:
    """For each elastic mode, issue 13's bar against the fixed worker (module docstring)."""
    if "fixed" not in modes:
        return {}
    fixed = modes["fixed"]["figures"]
    result = {}
    for name, mode in modes.items():
        if name == "fixed":
            continue
        own = mode["figures"]
        sooner = (own["recovery_after_burst_s"] is not None and (fixed["recovery_after_burst_s"] is None
                  or own["recovery_after_burst_s"] < fixed["recovery_after_burst_s"]))
        lower_peak = own["peak_lag"] < fixed["peak_lag"]
        cost = own["worker_seconds"] / fixed["worker_seconds"] if fixed["worker_seconds"] else None
        result[name] = {"back_under_target_sooner": sooner, "lower_peak_lag": lower_peak,
                        "worker_seconds_over_fixed": None if cost is None else round(cost, 2),
                        "beats_fixed": bool(sooner and lower_peak and cost is not None and cost <= 2.0)}
    return result


def table(modes: dict) -> str:
    def cell(value, unit=""):
        return "not within the run" if value is None else f"{value:,.0f}{unit}" if isinstance(value, float) \
            else f"{value:,}{unit}"

    rows = [
        ("time until lag is back under target, from the burst's end", "recovery_after_burst_s", " s"),
        ("... from the burst's start", "recovery_from_burst_start_s", " s"),
        ("lag target (steady-phase peak)", "lag_target", ""),
        ("peak lag", "peak_lag", ""),
        ("scaling decisions (sensor ticks that changed the count)", "scaling_decisions", ""),
        ("worker runs launched", "runs_launched", ""),
        ("most workers at once", "max_workers_seen", ""),
        ("worker-seconds", "worker_seconds", ""),
        ("capacity first measured (sub-topology 0), from the start", "capacity_measured_at_s", " s"),
    ]
    names = list(modes)
    lines = ["| | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label, key, unit in rows:
        lines.append(f"| {label} | " + " | ".join(cell(modes[name]["figures"][key], unit) for name in names) + " |")
    return "\n".join(lines)


# --- the run -------------------------------------------------------------------------------


def run_mode(mode: str, args, bootstrap: str, work: Path) -> dict:
    import dagster as dg

    from dagster_kstreams.generator import BurstSchedule, generate
    from dagster_kstreams.kafka.admin import KafkaAdmin
    from dagster_kstreams.local.daemon import DagsterDaemon
    from dagster_kstreams.orchestration.protocol import read_heartbeats, read_processes

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


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=200.0, help="steady input, lines/s (3-14 words each)")
    parser.add_argument("--burst-factor", type=float, default=40.0)
    parser.add_argument("--burst-seconds", type=float, default=60.0)
    parser.add_argument("--steady-seconds", type=float, default=30.0, help="steady phase before the burst")
    parser.add_argument("--duration", type=float, default=300.0, help="measurement window per mode, seconds")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--max-workers", type=int, default=2)
    parser.add_argument("--lag-target", type=int, default=None, help="default: the steady phase's peak lag")
    parser.add_argument("--sensor-interval", type=int, default=5)
    parser.add_argument("--catch-up-seconds", type=float, default=30.0)
    parser.add_argument("--stabilization-seconds", type=float, default=120.0,
                        help="scale-down window; longer than a worker's start (about a minute)")
    parser.add_argument("--default-capacity", type=float, default=3000.0,
                        help="records/s per worker until measured (one local[1] worker drained ~4,600/s here)")
    parser.add_argument("--min-sample-seconds", type=float, default=10.0,
                        help="worker time (backlogged tasks' shares) before capacity counts as measured")
    parser.add_argument("--warmup-timeout", type=float, default=420.0)
    parser.add_argument("--modes", default="autoscale,standby,fixed")
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting one")
    parser.add_argument("--pin-workers", action=argparse.BooleanOptionalAction, default=len(split_cpus()[1]) > 0,
                        help="the bench, its broker, the daemon and the first worker on CPU 0, every other worker "
                             "on the rest (default: on with 2+ CPUs)")
    parser.add_argument("--output-dir", default=str(REPO / "bench" / "results"))
    parser.add_argument("--output", default=None, help="result stem (default OUTPUT_DIR/autoscaling-<date>)")
    args = parser.parse_args(argv)
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    if not set(modes) <= {"autoscale", "standby", "fixed"}:
        parser.error("--modes: any of autoscale, standby, fixed")

    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True,
                           text=True).stdout.strip()
    code_version = head.strip() + ("+uncommitted changes" if dirty else "")
    started = dt.datetime.now(dt.timezone.utc)
    load_before = os.getloadavg()
    if args.pin_workers:
        first_cpu, spare = split_cpus()  # before pinning this process, which then sees only its first
        pin_self(first_cpu)
        args.cpus = (first_cpu, sorted(spare))
        log(f"CPU {first_cpu}: this process, its broker, the daemon and the first worker; CPUs {sorted(spare)}: "
            "the others")
    results = {}
    with bench_workspace("bench-autoscaling-", args.bootstrap, BROKER_PORT) as (bootstrap, work):
        for mode in modes:
            results[mode] = run_mode(mode, args, bootstrap, work)
            log(f"{mode}: {results[mode]['figures']}")
    report = {
        "started": started.isoformat(timespec="seconds"),
        "finished": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "arguments": {k: v for k, v in vars(args).items() if k not in ("output_dir",)},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_before": load_before, "load_after": os.getloadavg()},
        "code_version": code_version,
        "modes": results,
        "verdicts": verdicts(results),
    }
    output = Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    stem = Path(args.output) if args.output else output / f"autoscaling-{started.date()}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    markdown = (f"Elastic workers vs one fixed worker: {args.rate:g} lines/s, burst x{args.burst_factor:g} for "
                f"{args.burst_seconds:g} s after {args.steady_seconds:g} s, {args.duration:g} s window, "
                f"{args.partitions} partitions, max {args.max_workers} workers"
                f"{'; added workers on CPUs of their own' if args.pin_workers else ''}; {report['started']}, "
                f"{os.cpu_count()} CPUs, load {load_before[0]:.1f} before / {os.getloadavg()[0]:.1f} after.\n\n"
                + table(results) + "\n"
                + "".join(f"\n{name} beats the fixed worker (sooner, lower peak, <= 2x worker-seconds): "
                          f"{verdict['beats_fixed']} ({verdict})" for name, verdict in report["verdicts"].items()) + "\n")
    stem.with_suffix(".md").write_text(markdown)
    print(markdown)
    print(f"written to {stem}.json and {stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
