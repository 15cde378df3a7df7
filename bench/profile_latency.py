"""Where a continuous task's micro-batch time goes at a steady rate (issue 12's latency).

    .venv/bin/python -m bench.profile_latency [--rate 1000] [--seconds 45] [--master local[N]]
        [--partitions 2] [--bootstrap HOST:PORT] [--jfr PATH] [--spark-conf KEY=VALUE ...]

The users-per-country example (``assets/users_per_country.py``: two sub-topologies, two tasks
each; ``--partitions N``, N each: with 1, half the queries for the same records) runs with every
task started at once (``TaskRunner.start_task``, trigger 0, as a worker runs them) while records
arrive at ``--rate`` per second. Printed per task, over its last 20 batches
with input: the mean and max of each phase Spark reports for a micro-batch
(``StreamingQueryProgress.durationMs``: ``walCommit`` and ``commitOffsets`` are the offset and
commit log writes, ``addBatch`` the batch itself, i.e. our ``foreachBatch``), the state store's
commit time, and, summed over tasks, our own steps inside ``addBatch`` (fence check, write
intent, offset commit).

``--jfr PATH`` also records the Spark driver JVM with Java Flight Recorder for the middle third of
the run and prints where its samples fall (Spark's per-batch analysis, closure cleaning, code
generation, the Kafka sink ...), by thread kind.

Without --bootstrap a LocalBroker is started on ports 39300/39301.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import threading
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

from confluent_kafka import Producer

from assets.users_per_country import TOPIC_PARTITIONS, build_topology
from bench.common import bench_workspace, log
from bench.profile_wordcount import PHASES, instrument
from dagster_kstreams.base.cli_options import key_value
from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.spark.session import DEFAULT_MASTER, build_spark_session
from dagster_kstreams.spark.task_runner import TaskRunner

COUNTRIES = ("fr", "de", "us", "it", "es", "pt")
# Frames that name where a JFR sample of the driver JVM is spent, first match wins.
JFR_FRAMES = ("ClosureCleaner", "Analyzer", "Optimizer", "CodeGenerator", "GenerateUnsafeProjection",
              "CheckpointFileManager", "HDFSMetadataLog", "RocksDB", "StateStore", "KafkaWriteTask",
              "KafkaProducer", "KafkaConsumer", "PythonArrow", "py4j", "DAGScheduler", "Serializ")


def produce_steadily(bootstrap: str, topic: str, rate: float, partitions: int, stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    started, sent = time.time(), 0
    while not stop.is_set():
        delay = started + sent / rate - time.time()
        if delay > 0:
            time.sleep(delay)
        country = COUNTRIES[sent % len(COUNTRIES)]
        producer.produce(topic, key=f"u{sent}", value=json.dumps({"user_id": f"u{sent}", "country": country}),
                         partition=sent % partitions)
        producer.poll(0)
        sent += 1
    producer.flush()


def batch_phases(running) -> tuple[int, float, dict[str, list[float]]]:
    """(batches, mean input rows, {phase: [ms per batch]}) over a running task's last 20 batches with input."""
    reports = [report for report in running.recent_progress() if report.get("numInputRows", 0) > 0][-20:]
    phases: dict[str, list[float]] = defaultdict(list)
    for report in reports:
        for phase, ms in report["durationMs"].items():
            phases[phase].append(ms)
        for operator in report.get("stateOperators", []):
            phases["stateStore.commitTimeMs"].append(operator.get("commitTimeMs", 0))
    rows = statistics.mean(report["numInputRows"] for report in reports) if reports else 0.0
    return len(reports), rows, phases


def jfr_summary(recording: Path) -> str:
    """JFR execution samples of the driver JVM by thread kind and by the first known frame."""
    text = subprocess.run(["jfr", "print", "--stack-depth", "80", "--events", "jdk.ExecutionSample", str(recording)],
                          capture_output=True, text=True, check=True).stdout
    by_kind: dict[str, Counter] = defaultdict(Counter)
    for event in text.split("jdk.ExecutionSample")[1:]:
        frames = re.findall(r"^\s+([\w$.<>]+)\(", event, re.M)
        kind = "per-query driver threads" if "stream execution thread" in event else "executors and the rest"
        where = next((name for name in JFR_FRAMES if any(name in frame for frame in frames)),
                     f"other ({frames[0] if frames else '?'})")
        by_kind[kind][where] += 1
    lines = []
    for kind, counts in by_kind.items():
        lines.append(f"  {kind}: {sum(counts.values())} samples")
        lines.extend(f"    {count:5d}  {where}" for where, count in counts.most_common(12))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--partitions", type=int, default=TOPIC_PARTITIONS["users"],
                        help="of the input and output topics: the tasks per sub-topology (default: the example's)")
    parser.add_argument("--seconds", type=float, default=45.0)
    parser.add_argument("--master", default=DEFAULT_MASTER)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--jfr", type=Path, default=None, help="record the driver JVM with JFR to this file")
    parser.add_argument("--spark-conf", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                        help="extra spark.* setting (repeatable), e.g. to try a state store option")
    args = parser.parse_args(argv)
    with bench_workspace("bench-profile-latency-", args.bootstrap, 39300) as (bootstrap, work):
        run(args, bootstrap, work)
    return 0


def run(args, bootstrap: str, work: Path) -> None:
    tag = uuid.uuid4().hex[:6]
    users, per_country = f"profile-users-{tag}", f"profile-upc-{tag}"
    KafkaAdmin(bootstrap).create_topics({users: args.partitions, per_country: args.partitions})
    spark = build_spark_session(args.master, {"spark.ui.enabled": "false", **dict(args.spark_conf)},
                                app_name="bench-profile-latency")
    spark.sparkContext.setLogLevel("ERROR")
    instrument()
    runner = TaskRunner(build_topology(users, per_country), f"profile-latency-{tag}", bootstrap,
                        state_location=str(work / "state"), spark=spark)
    stop = threading.Event()
    producer = threading.Thread(target=produce_steadily, args=(bootstrap, users, args.rate, args.partitions, stop),
                                daemon=True)
    producer.start()
    tasks = [runner.start_task(task) for task in runner.tasks()]
    log(f"{len(tasks)} tasks running, {args.rate:.0f} records/s for {args.seconds:.0f} s")
    if args.jfr is not None:
        time.sleep(args.seconds / 3)
        pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
        subprocess.run(["jcmd", str(pid), "JFR.start", f"duration={int(args.seconds / 3)}s",
                        f"filename={args.jfr}", "settings=profile"], check=True, capture_output=True)
        time.sleep(args.seconds * 2 / 3 + 2)
    else:
        time.sleep(args.seconds)
    for running in tasks:
        batches, rows, phases = batch_phases(running)
        print(f"task {running.task}: {batches} batches, {rows:.0f} records per batch")
        for phase, values in sorted(phases.items()):
            print(f"    {phase:26s} mean {statistics.mean(values):7.0f} ms   max {max(values):7.0f} ms")
    print("our steps inside addBatch, summed over tasks:")
    for phase, seconds in sorted(PHASES.items(), key=lambda item: -item[1]):
        print(f"  {seconds:8.1f}s  {phase}")
    stop.set()
    for running in tasks:
        running.stop()
        running.close()
    if args.jfr is not None:
        print(f"driver JVM (JFR, {args.jfr}):")
        print(jfr_summary(args.jfr))
    spark.stop()


if __name__ == "__main__":
    raise SystemExit(main())
