"""What sending a micro-batch's records costs: librdkafka through Python against a Java producer.

    .venv/bin/python -m bench.producer_paths [--records 1000000] [--rounds 3] [--master local[2]]
        [--bootstrap HOST:PORT] [--output FILE.json]

Under exactly-once a task's writer collects each micro-batch to the driver as Arrow and sends it,
one ``produce()`` call per record, inside the task's transaction
(:mod:`dagster_kstreams.spark.transactional_writer`); a repartition record costs a Python call.
The alternative issue 12 names is a Java producer in the driver JVM, the rows never leaving it.
This measures both on the same rows before anything is built: ``--records`` word-count
repartition records (``topic, key, value, timestamp_ms``, 5,000 distinct words), materialized
once, then sent in one transaction per round by

* ``python-librdkafka``: today's path (``toArrow``, :class:`~dagster_kstreams.kafka.table_producer.RecordColumns`,
  :func:`~dagster_kstreams.kafka.table_producer.produce_columns`);
* ``java-rows``: ``bench/jvm/BatchProducer.java`` through Spark's public API (``collectAsList``);
* ``java-internal-rows``: the same loop over Spark's internal rows (``executeCollect``), as Spark's
  own Kafka sink reads them.

Printed per path and round: wall seconds and the CPU seconds of the driver's Python, the driver
JVM and the broker (its own broker only). The Java class is compiled with ``javac`` (a JDK) against
pyspark's jars and the connector's. Without --bootstrap a broker is started on 39500/39501.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import time
import zipfile
from pathlib import Path
from typing import Callable, Optional

import pyspark
from confluent_kafka import Producer
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.common import bench_workspace, log
from dagster_kstreams.base.jars import jar_paths
from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.kafka.fencing import TRANSACTIONAL_PRODUCER_DEFAULTS
from dagster_kstreams.kafka.table_producer import RecordColumns, produce_columns
from dagster_kstreams.local.broker import LocalBroker
from dagster_kstreams.spark.session import build_spark_session

JAVA_SOURCE = Path(__file__).with_name("jvm") / "BatchProducer.java"
JAVA_CLASS = "dagster_kstreams.bench.BatchProducer"
TOPIC = "producer-paths"
PARTITIONS = 4
WORDS = 5000
PATHS = ("python-librdkafka", "java-rows", "java-internal-rows")
_TICKS = os.sysconf("SC_CLK_TCK")
# The Java producer as Spark's sink and the task's librdkafka producer are set up (bench/README.md).
JAVA_PRODUCER = {"linger.ms": "20", "batch.size": "262144",
                 "key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
                 "value.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer"}


def compile_java(work: Path) -> Path:
    """``bench/jvm/BatchProducer.java`` compiled into a jar under ``work``."""
    classes = work / "classes"
    classpath = os.pathsep.join([str(Path(pyspark.__file__).parent / "jars" / "*"),
                                 *(str(jar) for jar in jar_paths("spark-kafka"))])
    subprocess.run(["javac", "-d", str(classes), "-cp", classpath, str(JAVA_SOURCE)], check=True)
    jar = work / "bench-producer.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        for path in classes.rglob("*.class"):
            archive.write(path, path.relative_to(classes))
    return jar


def process_cpu(pid: Optional[int]) -> float:
    """User and system CPU seconds of process ``pid`` (0 without one)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def repartition_records(spark: SparkSession, records: int) -> DataFrame:
    """``records`` rows as a word count's upstream writes them (key and value the word), materialized."""
    word = F.concat(F.lit("word"), (F.col("id") % WORDS).cast("string")).cast("binary")
    rows = spark.range(records).select(F.lit(TOPIC).alias("topic"), word.alias("key"), word.alias("value"),
                                       (F.lit(int(time.time() * 1000)) + F.col("id") % 1000).alias("timestamp_ms"))
    rows = rows.localCheckpoint()
    rows.count()
    return rows


def senders(spark: SparkSession, bootstrap: str, rows: DataFrame) -> dict[str, Callable[[], None]]:
    """One transactional round per path: begin, send every row, commit."""
    python = Producer({**TRANSACTIONAL_PRODUCER_DEFAULTS, "bootstrap.servers": bootstrap,
                       "partitioner": "murmur2_random", "transactional.id": "bench-producer-paths-python"})
    python.init_transactions()

    def python_round() -> None:
        python.begin_transaction()
        produce_columns(python, RecordColumns.of_table(rows.toArrow()))
        python.commit_transaction()

    jvm = spark._jvm
    properties = jvm.java.util.Properties()
    for key, value in {**JAVA_PRODUCER, "bootstrap.servers": bootstrap,
                       "transactional.id": "bench-producer-paths-java"}.items():
        properties.setProperty(key, value)
    java = jvm.org.apache.kafka.clients.producer.KafkaProducer(properties)
    java.initTransactions()
    batch_producer = getattr(jvm, JAVA_CLASS)

    def java_round(send: Callable) -> Callable[[], None]:
        def run() -> None:
            java.beginTransaction()
            send(rows._jdf, java)
            java.commitTransaction()
        return run

    return {"python-librdkafka": python_round, "java-rows": java_round(batch_producer.sendRows),
            "java-internal-rows": java_round(batch_producer.sendInternalRows)}


def measure(rounds: int, send: dict[str, Callable[[], None]], jvm_pid: int, broker_pid: Optional[int]) -> dict:
    """Every path once per round, in turn, so that each sees the same warm-up and load."""
    results: dict[str, list[dict]] = {path: [] for path in PATHS}
    for round_number in range(rounds):
        for path in PATHS:
            before = (time.perf_counter(), own_cpu(), process_cpu(jvm_pid), process_cpu(broker_pid))
            send[path]()
            after = (time.perf_counter(), own_cpu(), process_cpu(jvm_pid), process_cpu(broker_pid))
            wall, python, jvm, broker = (round(b - a, 2) for a, b in zip(before, after))
            results[path].append({"wall_s": wall, "python_cpu_s": python, "jvm_cpu_s": jvm, "broker_cpu_s": broker})
            log(f"round {round_number + 1} {path:20s} wall {wall:6.2f} s  CPU: Python {python:5.2f}  "
                f"JVM {jvm:5.2f}  broker {broker:5.2f}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--bootstrap")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with bench_workspace("bench-producer-paths-", args.bootstrap, 39500) as (bootstrap, work):
        broker_pid = LocalBroker(state_dir=work / "broker").running_pid() if args.bootstrap is None else None
        KafkaAdmin(bootstrap).create_topics({TOPIC: PARTITIONS})
        spark = build_spark_session(args.master, {"spark.jars": str(compile_java(work)), "spark.ui.enabled": "false"})
        rows = repartition_records(spark, args.records)
        results = measure(args.rounds, senders(spark, bootstrap, rows), spark._jvm.ProcessHandle.current().pid(),
                          broker_pid)
        spark.stop()
    summary = {}
    for path, runs in results.items():
        later = runs[1:] or runs  # the first round warms each path's code up
        client = [run["python_cpu_s"] + run["jvm_cpu_s"] for run in later]
        summary[path] = {"wall_s_median": statistics.median(run["wall_s"] for run in later),
                         "client_cpu_s_median": round(statistics.median(client), 2),
                         "client_cpu_us_per_record": round(statistics.median(client) / args.records * 1e6, 2)}
        log(f"{path:20s} median after the first round: wall {summary[path]['wall_s_median']:.2f} s, client CPU "
            f"{summary[path]['client_cpu_s_median']:.2f} s ({summary[path]['client_cpu_us_per_record']} us a record)")
    report = {"benchmark": "sending a micro-batch's records: librdkafka through Python vs a Java producer",
              "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "records": args.records, "master": args.master,
              "machine": {"cpus": os.cpu_count(), "load_average_1m_before_after": [round(load_before, 1),
                                                                                  round(os.getloadavg()[0], 1)]},
              "rounds": results, "summary": summary}
    if args.output:
        args.output.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
