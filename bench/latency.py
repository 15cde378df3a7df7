"""End-to-end latency at a steady rate: dagster-kstreams (one worker under dagster-daemon) and
Kafka Streams 4.3.1 on the users-per-country topology (issue 12).

    .venv/bin/python -m bench.latency [--rate 1000] [--seconds 120] [--warmup-seconds 30]
        [--systems dagster-kstreams,kafka-streams] [--partitions 2] [--bootstrap HOST:PORT]

The application is the users-per-country example (``assets/users_per_country.py``: ``users`` ->
``group_by(country)`` -> ``count`` -> ``users-per-country``; two sub-topologies joined by a
repartition topic). Each system gets its own fresh input topic (2 partitions, or ``--partitions``), output
topic (as many) and application id, and runs alone, one after the other, on one broker (a
LocalBroker on ports 29300/29301 unless --bootstrap):

* ``dagster-kstreams``: a code location written to a temp dir (``build_defs`` of the example,
  ``ElasticWorkers(min_workers=1, max_workers=1)``, sensor RUNNING, ``KStreamsSparkResource``
  with ``--master``), a Dagster instance (``deploy/dagster.yaml``) and ``dagster-daemon run``;
  the lag sensor launches the one worker run.
* ``kafka-streams``: ``kstreams.oracle.LatencyApp`` (tests/oracle), the same topology in Java,
  record cache off (``statestore.cache.max.bytes=0``), at_least_once, one stream thread,
  ``commit.interval.ms`` = ``--ks-commit-interval-ms`` (100 by default).

Per system: start it; write one probe record per country and wait until the output shows them all
(the system is up end to end: JVM, SparkSession, worker run, first queries); then write records at
``--rate`` for ``--warmup-seconds`` + ``--seconds``; then wait (at most ``--drain-timeout``) until
every record is reflected in the output; stop the system.

What is measured, per input record: its produce time is the wall clock (``time.time()``) just
before ``Producer.produce`` (also written as the record's timestamp). Its output time is the
broker's log-append timestamp of the first output record (``country -> count``) whose count
includes it: the output topics are created with ``message.timestamp.type=LogAppendTime`` (both
systems would otherwise copy the input record's timestamp), so the output time is when the
broker appended the result, independent of the bench's consumer. The consumer's receive time is
recorded too (``latency_by_receive_time`` in the JSON). Same machine, same clock.

"Includes it": the bench writes every record of one country to the same input partition (an
explicit partition per country; the key stays the user id), so a country's records are counted
in the order they were produced, and record k of country c (k-th produced) is reflected by the
first output record of c with count >= k. A record never reflected when the system is stopped is
*missing*. Counts above the records produced (duplicates: at-least-once replays) are reported as
``overcounted``; they would make latencies look shorter, so they must be 0 as well.

Reported over the records produced after the warm-up: p50, p99 (nearest rank) and max, in ms.
Results: ``bench/results/latency-<date>.json`` and the table on stdout, with the 1-minute load
average before and after.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
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
from dagster_kstreams.local.code_location_server import CodeLocationServer
from dagster_kstreams.local.daemon import DagsterDaemon
from dagster_kstreams.spark.session import DEFAULT_MASTER

REPO = Path(__file__).resolve().parent.parent
BROKER_PORT = 29300
PARTITIONS = 2  # as assets/users_per_country.py TOPIC_PARTITIONS (--partitions for another count)
DAGSTER = "dagster-kstreams"
KAFKA_STREAMS = "kafka-streams"
SYSTEMS = (DAGSTER, KAFKA_STREAMS)

# The generator's countries and skew (dagster_kstreams/generator.py), each pinned to one input
# partition (alternating down the weights, which balances them roughly).
COUNTRY_WEIGHTS = {"fr": 8, "de": 6, "us": 5, "it": 3, "es": 3, "pt": 1, "nl": 1, "be": 1, "pl": 1, "se": 1,
                   "jp": 1}


def country_partitions(partitions: int) -> dict[str, int]:
    return {country: index % partitions for index, country in enumerate(COUNTRY_WEIGHTS)}


CODE_LOCATION = '''
import dagster as dg

from assets.users_per_country import build_defs
from dagster_kstreams.orchestration.resources import KafkaResource, KStreamsSparkResource
from dagster_kstreams.orchestration.workers import ElasticWorkers
from dagster_kstreams.scaling import ScalingConfig

S = {settings!r}

defs = build_defs(
    app_id=S["app_id"],
    users=S["source"],
    users_per_country=S["sink"],
    state_location=S["state"],
    processing_guarantee=S["processing_guarantee"],
    partitions=S["partitions"],
    elastic_workers=ElasticWorkers(
        scaling=ScalingConfig(min_workers=1, max_workers=1),
        sensor_interval_seconds=S["sensor_interval"],
        default_status=dg.DefaultSensorStatus.RUNNING,
        heartbeat_interval_seconds=2,
        heartbeat_timeout_seconds=60,
        startup_timeout_seconds=300,
        **S["worker_options"],
    ),
    resources={{
        "kafka": KafkaResource(bootstrap_servers=S["bootstrap"]),
        "pyspark": KStreamsSparkResource(master=S["master"], spark_config=S["spark_config"]),
    }},
)
'''

SPARK_CONFIG = {
    "spark.ui.enabled": "false", "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
    "spark.driver.memory": "1g",
}

DAGSTER_YAML = (REPO / "deploy" / "dagster.yaml").read_text()


# --- pure parts: matching outputs to inputs, and the figures --------------------------------


@dataclass
class Produced:
    country: str
    seq: int  # k: this is the k-th record of its country (from 1)
    at: float  # wall-clock seconds, just before produce()
    measured: bool  # produced after the warm-up


@dataclass
class Output:
    country: str
    count: int
    appended: float  # broker log-append time, seconds
    received: float  # the bench consumer's wall clock when it got the record, seconds
    partition: int
    offset: int


@dataclass
class Match:
    by_append_ms: list = field(default_factory=list)
    by_receive_ms: list = field(default_factory=list)
    produced_at: list = field(default_factory=list)  # wall clock of each measured record's produce()
    missing: int = 0
    overcounted: dict = field(default_factory=dict)  # country -> highest count - records produced


def match(produced: Sequence[Produced], outputs: Sequence[Output]) -> Match:
    """Latency of every measured record: first output of its country, in log order, whose count
    is at least the record's rank in its country."""
    first_reflecting: dict[str, list] = {}  # country -> [(appended, received)] indexed by count - 1
    for output in sorted(outputs, key=lambda o: (o.partition, o.offset)):
        seen = first_reflecting.setdefault(output.country, [])
        while len(seen) < output.count:
            seen.append((output.appended, output.received))
    result = Match()
    produced_per_country: dict[str, int] = {}
    for record in produced:
        produced_per_country[record.country] = max(produced_per_country.get(record.country, 0), record.seq)
        if not record.measured:
            continue
        seen = first_reflecting.get(record.country, [])
        if record.seq > len(seen):
            result.missing += 1
            continue
        appended, received = seen[record.seq - 1]
        result.by_append_ms.append((appended - record.at) * 1000.0)
        result.by_receive_ms.append((received - record.at) * 1000.0)
        result.produced_at.append(record.at)
    for country, seen in first_reflecting.items():
        extra = len(seen) - produced_per_country.get(country, 0)
        if extra > 0:
            result.overcounted[country] = extra
    return result


def percentile(values: Sequence[float], p: float) -> Optional[float]:
    """Nearest-rank percentile (p in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100.0 * len(ordered)) - 1)]


def summary(values: Sequence[float]) -> dict:
    def rounded(value):
        return None if value is None else round(value, 1)

    return {"p50_ms": rounded(percentile(values, 50)), "p99_ms": rounded(percentile(values, 99)),
            "max_ms": rounded(max(values) if values else None), "min_ms": rounded(min(values) if values else None),
            "records": len(values)}


def per_second(produced_at: Sequence[float], latencies_ms: Sequence[float]) -> list[dict]:
    """p50, p99 and max of the records produced in each second of the measured part, in order:
    whether a p99 comes from steady batches or from stalls (a GC, a report, the JIT) shows here."""
    if not produced_at:
        return []
    start = min(produced_at)
    buckets: dict[int, list[float]] = {}
    for at, latency in zip(produced_at, latencies_ms):
        buckets.setdefault(int(at - start), []).append(latency)
    return [{"second": second, "records": len(values), **{key: value for key, value in summary(values).items()
                                                          if key in ("p50_ms", "p99_ms", "max_ms")}}
            for second, values in sorted(buckets.items())]


def table(results: dict) -> str:
    def ms(value):
        return "-" if value is None else f"{value:,.0f} ms"

    header = f"{'system':<48}{'p50':>12}{'p99':>12}{'max':>12}{'records':>10}{'missing':>9}"
    lines = [header, "-" * len(header)]
    for name, result in results.items():
        if "error" in result:
            lines.append(f"{name:<48}  failed: {result['error'][:120]}")
            continue
        figures = result["latency"]
        lines.append(f"{result['label']:<48}{ms(figures['p50_ms']):>12}{ms(figures['p99_ms']):>12}"
                     f"{ms(figures['max_ms']):>12}{figures['records']:>10,}{result['missing']:>9,}")
    return "\n".join(lines)


# --- Kafka plumbing (confluent-kafka only: the bench does not rely on the library's internals) ---


def create_topics(bootstrap: str, topics: dict[str, dict], partitions: int) -> None:
    """Create each topic with ``partitions`` partitions and the given configs."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=config) for name, config in topics.items()])
    for future in futures.values():
        future.result(timeout=60)


class OutputReader:
    """Reads the output topic from the beginning in a thread; keeps every record with its
    log-append time and receive time, and the highest count seen per country."""

    def __init__(self, bootstrap: str, topic: str, partitions: int):
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.outputs: list[Output] = []
        self.highest: dict[str, int] = {}
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"read-{topic}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def highest_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self.highest)

    def _run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_LOG_APPEND_TIME, Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "enable.auto.commit": False,
                             "group.id": f"bench-latency-reader-{uuid.uuid4().hex}",  # assign() only; never joins
                             "fetch.wait.max.ms": 10, "fetch.min.bytes": 1})
        consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)])
        try:
            while not self._stop.is_set():
                messages = consumer.consume(num_messages=10_000, timeout=0.05)
                received = time.time()
                batch = []
                for message in messages:
                    if message.error():
                        self.errors.append(str(message.error()))
                        continue
                    kind, stamp = message.timestamp()
                    if kind != TIMESTAMP_LOG_APPEND_TIME:
                        self.errors.append(f"output record without log-append time (type {kind})")
                    value = message.value()
                    count = int.from_bytes(value, "big", signed=True) if value is not None and len(value) == 8 \
                        else int(value.decode()) if value else 0
                    batch.append(Output(message.key().decode(), count, stamp / 1000.0, received,
                                        message.partition(), message.offset()))
                if batch:
                    with self._lock:
                        self.outputs.extend(batch)
                        for output in batch:
                            if output.count > self.highest.get(output.country, 0):
                                self.highest[output.country] = output.count
        finally:
            consumer.close()


class UserWriter:
    """Writes user records (the generator's shape: ``{"user_id", "name", "country", "signup_ts"}``,
    keyed by user id) and keeps, per record, its country rank and produce time."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, seed: int = 0):
        import random

        from confluent_kafka import Producer

        self.topic = topic
        self.country_partition = country_partitions(partitions)  # each country pinned to one partition
        self.random = random.Random(seed)
        self.countries = list(COUNTRY_WEIGHTS)
        self.weights = [COUNTRY_WEIGHTS[c] for c in self.countries]
        self.produced: list[Produced] = []
        self.per_country: dict[str, int] = {}
        self.failed = 0
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})

    def _on_delivery(self, error, message) -> None:
        if error is not None:
            self.failed += 1

    def write(self, country: str, measured: bool) -> None:
        user = self.random.randrange(100_000)
        rank = self.per_country.get(country, 0) + 1
        self.per_country[country] = rank
        now = time.time()
        value = json.dumps({"user_id": f"user-{user}", "name": f"user {user}", "country": country,
                            "signup_ts": int(now * 1000)})
        self.producer.produce(self.topic, key=f"user-{user}", value=value, partition=self.country_partition[country],
                              timestamp=int(now * 1000), on_delivery=self._on_delivery)
        self.produced.append(Produced(country, rank, now, measured))
        self.producer.poll(0)

    def write_random(self, measured: bool) -> None:
        self.write(self.random.choices(self.countries, self.weights)[0], measured)

    def steady(self, rate: float, warmup_s: float, seconds: float) -> dict:
        """``rate`` records/s on a fixed schedule; the first ``warmup_s`` seconds unmeasured."""
        total = int(round(rate * (warmup_s + seconds)))
        warm = int(round(rate * warmup_s))
        started = time.monotonic()
        behind = 0.0
        for i in range(total):
            due = started + i / rate
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            else:
                behind = max(behind, -wait)
            self.write_random(measured=i >= warm)
        elapsed = time.monotonic() - started
        self.producer.flush(60)
        return {"records": total, "warmup_records": warm, "seconds": round(elapsed, 2),
                "rate": round(total / elapsed, 1) if elapsed else None, "max_behind_schedule_s": round(behind, 3),
                "delivery_failures": self.failed}

    def flush(self) -> None:
        self.producer.flush(60)


# --- the systems ----------------------------------------------------------------------------


class DagsterSystem:
    label = "dagster-kstreams (1 worker, dagster-daemon)"

    def __init__(self, args, bootstrap: str, directory: Path, names: dict):
        self.args, self.bootstrap, self.directory, self.names = args, bootstrap, directory, names
        self.daemon = None
        self.code_server = None
        self.log_file = None
        self.settings = {
            "source": names["input"], "sink": names["output"], "app_id": names["app_id"],
            "state": str(directory / "state"), "bootstrap": bootstrap, "master": args.master,
            "spark_config": {**SPARK_CONFIG, **json.loads(args.spark_conf or "{}")},
            "sensor_interval": args.sensor_interval, "worker_options": dict(args.worker_option),
            "processing_guarantee": args.processing_guarantee, "partitions": args.partitions,
        }
        self.reads_at_commit = args.processing_guarantee == "exactly_once_v2"
        if self.reads_at_commit:
            self.label = "dagster-kstreams (1 worker, daemon, exactly-once)"

    def start(self) -> None:
        home = self.directory / "dagster_home"
        home.mkdir(parents=True)
        (home / "dagster.yaml").write_text(DAGSTER_YAML)
        code = self.directory / "bench_defs.py"
        code.write_text(CODE_LOCATION.format(settings=self.settings))
        workspace = self.directory / "workspace.yaml"
        self.log_file = (self.directory / "daemon.log").open("wb")
        env = {**os.environ, "DAGSTER_HOME": str(home),
               "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        if self.args.code_location == "server":
            self.code_server = CodeLocationServer(code, "bench", self.log_file, cwd=self.directory, env=env)
            self.code_server.wait_ready()
            self.code_server.write_workspace(workspace)
        else:
            workspace.write_text(f"load_from:\n  - python_file: {code}\n")
        self.daemon = DagsterDaemon(home, workspace, self.log_file, cwd=self.directory, env=env)

    def check(self) -> None:
        if self.daemon is not None and self.daemon.poll() is not None:
            raise RuntimeError(f"dagster-daemon exited: {self.tail()}")

    def tail(self) -> str:
        path = self.directory / "daemon.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> dict:
        info = {"settings": {k: v for k, v in self.settings.items() if k not in ("state", "bootstrap")}}
        try:
            info["worker_runs"] = self._runs()
        except Exception as error:  # informational only
            info["worker_runs"] = repr(error)
        if self.daemon is not None:
            self.daemon.stop()
        if self.code_server is not None:
            self.code_server.stop()
        if self.log_file is not None:
            self.log_file.close()
        return info

    def _runs(self) -> list:
        import dagster as dg

        with dg.DagsterInstance.from_config(str(self.directory / "dagster_home")) as instance:
            return [{"run_id": r.dagster_run.run_id, "status": r.dagster_run.status.value,
                     "worker": r.dagster_run.tags.get("dagster_kstreams/worker", "?")}
                    for r in instance.get_run_records(dg.RunsFilter())]


class KafkaStreamsSystem:
    def __init__(self, args, bootstrap: str, directory: Path, names: dict):
        self.args, self.bootstrap, self.directory, self.names = args, bootstrap, directory, names
        self.label = f"Kafka Streams 4.3.1 (cache off, commit {args.ks_commit_interval_ms} ms)"
        self.reads_at_commit = False
        self.process: Optional[subprocess.Popen] = None
        self.lines: list[str] = []
        self.stderr = None

    def start(self) -> None:
        sys.path.insert(0, str(REPO / "tests"))
        import oracle_harness

        self.stderr = (self.directory / "streams.stderr").open("wb")
        self.process = oracle_harness.start_latency_app(
            self.bootstrap, str(self.directory / "state"), self.names["app_id"], self.names["input"],
            self.names["output"], commit_interval_ms=self.args.ks_commit_interval_ms, stderr=self.stderr)
        reader = threading.Thread(target=self._read_stdout, name="streams-stdout", daemon=True)
        reader.start()

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.strip())

    def check(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"Kafka Streams exited with {self.process.returncode}: {self.tail()}")

    def tail(self) -> str:
        path = self.directory / "streams.stderr"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> dict:
        info: dict = {"commit.interval.ms": self.args.ks_commit_interval_ms}
        if self.process is not None:
            if self.process.poll() is None:
                try:
                    self.process.stdin.write("stop\n")
                    self.process.stdin.close()
                except OSError:
                    pass
                try:
                    self.process.wait(timeout=90)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            time.sleep(0.2)
            for line in self.lines:
                try:
                    parsed = json.loads(line)
                except ValueError:
                    continue
                if parsed.get("stopped"):
                    info.update(parsed)
        if self.stderr is not None:
            self.stderr.close()
        return info


def run_system(name: str, args, bootstrap: str, work: Path) -> dict:
    suffix = uuid.uuid4().hex[:6]
    short = "dk" if name == DAGSTER else "ks"
    names = {"input": f"bench-latency-users-{short}-{suffix}", "output": f"bench-latency-upc-{short}-{suffix}",
             "app_id": f"bench-latency-{short}-{suffix}"}
    directory = work / name
    directory.mkdir(parents=True)
    create_topics(bootstrap, {names["input"]: {}, names["output"]: {"message.timestamp.type": "LogAppendTime"}},
                  args.partitions)
    wait_for_group_coordinator(bootstrap, names["app_id"], names["input"])
    system = DagsterSystem(args, bootstrap, directory, names) if name == DAGSTER \
        else KafkaStreamsSystem(args, bootstrap, directory, names)
    reader = OutputReader(bootstrap, names["output"], args.partitions)
    writer = UserWriter(bootstrap, names["input"], args.partitions, seed=args.seed)
    reader.start()
    load_before = os.getloadavg()
    timings: dict = {}
    produced_summary: dict = {}
    stopped: dict = {}
    drained = False
    started = time.monotonic()
    try:
        system.start()
        log(f"{name}: started; waiting until one probe record per country comes out (at most {args.ready_timeout:g} s)")
        for country in COUNTRY_WEIGHTS:
            writer.write(country, measured=False)
        writer.flush()
        deadline = time.monotonic() + args.ready_timeout
        while not all(reader.highest_counts().get(c, 0) >= writer.per_country[c] for c in COUNTRY_WEIGHTS):
            system.check()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}: probes not reflected within {args.ready_timeout:g} s; "
                                   f"highest counts {reader.highest_counts()}\n{system.tail()}")
            time.sleep(0.5)
        timings["ready_after_s"] = round(time.monotonic() - started, 1)
        log(f"{name}: ready after {timings['ready_after_s']} s; {args.rate:g} records/s for "
            f"{args.warmup_seconds:g} s warm-up + {args.seconds:g} s measured")
        produced_summary = writer.steady(args.rate, args.warmup_seconds, args.seconds)
        system.check()
        log(f"{name}: wrote {produced_summary['records']:,} records in {produced_summary['seconds']} s; draining")
        drain_started = time.monotonic()
        while time.monotonic() - drain_started < args.drain_timeout:
            highest = reader.highest_counts()
            if all(highest.get(c, 0) >= n for c, n in writer.per_country.items()):
                drained = True
                break
            system.check()
            time.sleep(0.2)
        timings["drain_s"] = round(time.monotonic() - drain_started, 1)
        time.sleep(1.0)  # late duplicates, if any, show up as overcounted
    except Exception as error:
        log(f"{name}: failed: {error}")
        return {"label": system.label, "error": str(error), "names": names}
    finally:
        reader.stop()
        stopped = system.stop()
    matched = match(writer.produced, reader.outputs)
    return {
        "label": system.label,
        "names": names,
        # Under exactly-once an output record is appended before its transaction commits and is
        # seen only after: its receive time is the honest one (a few ms of polling later).
        "latency": summary(matched.by_receive_ms if system.reads_at_commit else matched.by_append_ms),
        "latency_by_receive_time": summary(matched.by_receive_ms),
        "latency_per_second": per_second(
            matched.produced_at, matched.by_receive_ms if system.reads_at_commit else matched.by_append_ms),
        "missing": matched.missing,
        "overcounted": matched.overcounted,
        "drained": drained,
        "output_records": len(reader.outputs),
        "reader_errors": reader.errors[:10],
        "produced": produced_summary,
        "timings": timings,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "system": stopped,
    }


def _key_value(text: str) -> tuple[str, object]:
    key, _, value = text.partition("=")
    if not key or not _:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=1000.0, help="input records/s")
    parser.add_argument("--seconds", type=float, default=120.0, help="measured seconds (after the warm-up)")
    parser.add_argument("--warmup-seconds", type=float, default=30.0, help="seconds at --rate not measured")
    parser.add_argument("--drain-timeout", type=float, default=120.0,
                        help="after the last record, wait this long at most for every record to come out")
    parser.add_argument("--ready-timeout", type=float, default=600.0,
                        help="wait this long at most for the probe records (system start)")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--master", default=DEFAULT_MASTER,
                        help=f"the worker's Spark master (default: the resource's, {DEFAULT_MASTER})")
    parser.add_argument("--spark-conf", default=None, help="JSON object of extra spark.* settings for the worker")
    parser.add_argument("--sensor-interval", type=int, default=5)
    parser.add_argument("--code-location", choices=["server", "daemon"], default="server",
                        help="serve the code location from its own gRPC server the daemon connects to, as "
                             "deployments and `dagster dev` do (server), or let the daemon spawn one from the "
                             "Python file, which it replaces every 60 s (daemon)")
    parser.add_argument("--worker-option", type=_key_value, action="append", default=[],
                        help="extra ElasticWorkers field, KEY=VALUE (JSON value), e.g. trigger_seconds=0.1")
    parser.add_argument("--processing-guarantee", default="exactly_once_v2", choices=["at_least_once", "exactly_once_v2"],
                        help="ours (under exactly_once_v2 an output record counts once its transaction commits: "
                             "read the receive-time latency, the log-append time is before the commit)")
    parser.add_argument("--ks-commit-interval-ms", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--partitions", type=int, default=PARTITIONS,
                        help="of the input and output topics, so the tasks per sub-topology (default: the example's)")
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting one")
    parser.add_argument("--output-dir", default=str(REPO / "bench" / "results"))
    args = parser.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if not systems or not set(systems) <= set(SYSTEMS):
        parser.error(f"--systems: some of {', '.join(SYSTEMS)}")

    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True,
                           text=True).stdout.strip()
    code_version = head.strip() + ("+uncommitted changes" if dirty else "")
    started = dt.datetime.now(dt.timezone.utc)
    load_before = os.getloadavg()
    results: dict = {}
    with bench_workspace("bench-latency-", args.bootstrap, BROKER_PORT) as (bootstrap, work):
        for name in systems:
            results[name] = run_system(name, args, bootstrap, work)
            log(f"{name}: {results[name].get('latency', results[name].get('error'))}, "
                f"missing {results[name].get('missing')}")
    load_after = os.getloadavg()
    report = {
        "started": started.isoformat(timespec="seconds"),
        "finished": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "arguments": {k: v for k, v in vars(args).items() if k != "output_dir"},
        "measure": "latency = broker log-append time of the first output record whose count includes the input "
                   "record - wall clock just before the input record's produce(); ms; nearest-rank percentiles "
                   "over the records produced after the warm-up",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_before": load_before, "load_after": load_after},
        "code_version": code_version,
        "systems": results,
    }
    output = Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    path = output / f"latency-{started.date()}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"Latency, produce -> output (broker log-append time), users-per-country, {args.rate:g} records/s, "
          f"{args.seconds:g} s measured after {args.warmup_seconds:g} s warm-up; {os.cpu_count()} CPUs, load average "
          f"(1/5/15 min) {' '.join(f'{x:.2f}' for x in load_before)} before, "
          f"{' '.join(f'{x:.2f}' for x in load_after)} after")
    print(table(results))
    print(f"written to {path}")
    failed = any("error" in r or r["missing"] or r["overcounted"] for r in results.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
