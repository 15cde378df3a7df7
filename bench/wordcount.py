"""Word count over a repartition, four ways on the same data (issue 4 benchmark).

    .venv/bin/python -m bench.wordcount --records 1000000 [--bootstrap HOST:PORT] [--master local[*]]

Measures, in one run and on one input topic:

  (d) ceiling      confluent-kafka reading every input record from the broker
  (c) kafka-streams  Kafka Streams 4.3.1 (tests/oracle StreamsApp), 1 stream thread and one per core
  (b) spark-handwritten  a Structured Streaming job: read Kafka, split, groupBy(word).count(),
                   availableNow, write to Kafka (JVM expressions only, Spark's shuffle)
  (a) dagster-kstreams   our TaskRunner.run_all(): sub-topology 0 (split, repartition topic)
                   and sub-topology 1 (count, store), every task at once, pipelined, on the
                   same SparkSession; twice: with Python functions (as assets/word_count.py)
                   and with PySpark Column expressions (runs entirely in the JVM)

Rate = input records / wall-clock seconds of that system's run (start to drained). Without
--bootstrap a LocalBroker is started on ports 39100/39101 and stopped at the end. Results go to
bench/results/wordcount-<date>.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
import uuid
from pathlib import Path

import pyspark
from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import functions as F

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the Kafka Streams harness and the topology twins live there

import equivalence_topologies as eq  # noqa: E402
import oracle_harness  # noqa: E402

from bench.common import bench_workspace, log, wait_for_group_coordinator  # noqa: E402
from dagster_kstreams import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder  # noqa: E402
from dagster_kstreams.kafka.admin import KafkaAdmin  # noqa: E402
from dagster_kstreams.kafka.records import produce  # noqa: E402
from dagster_kstreams.spark.session import build_spark_session  # noqa: E402
from dagster_kstreams.spark.strategies import strategy_for  # noqa: E402
from dagster_kstreams.spark.task_runner import TaskRunner  # noqa: E402

PARTITIONS = 4
OURS = "dagster-kstreams TaskRunner (all tasks)"
OURS_COLUMNS = "dagster-kstreams, Column expressions"


def word_count_columns(input_topic: str, output_topic: str):
    """The word count of ``eq.word_count`` with PySpark Column expressions instead of Python
    functions: the text after the first comma, split on spaces, grouped by word."""
    builder = StreamsBuilder()
    builder.stream(input_topic, Consumed.with_(Serdes.String(), Serdes.String())) \
        .flat_map_values(F.split(F.expr("substring(value, instr(value, ',') + 1)"), " ")) \
        .group_by(F.col("value"), Grouped.with_(Serdes.String(), Serdes.String())) \
        .count(Materialized.as_(eq.WORD_COUNT_STORE).with_key_serde(Serdes.String()).with_value_serde(Serdes.Long())) \
        .to_stream().to(output_topic, Produced.with_(Serdes.String(), Serdes.Long()))
    return builder.build()


def read_ceiling(bootstrap: str, topic: str, ends: dict) -> dict:
    """(d) confluent-kafka consuming every record of ``topic`` (values touched, nothing parsed)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-ceiling-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "fetch.max.bytes": 52428800})
    remaining = {tp.partition: end for tp, end in ends.items() if end > 0}
    consumer.assign([TopicPartition(topic, p, 0) for p in remaining])
    count = 0
    nbytes = 0
    started = time.perf_counter()
    last = {p: -1 for p in remaining}
    while any(last[p] < remaining[p] - 1 for p in remaining):
        for message in consumer.consume(10_000, timeout=1.0):
            if message.error() is not None:
                continue
            count += 1
            nbytes += len(message.value() or b"")
            last[message.partition()] = message.offset()
    seconds = time.perf_counter() - started
    consumer.close()
    return {"records": count, "seconds": round(seconds, 3), "records_per_second": round(count / seconds, 1),
            "megabytes": round(nbytes / 1e6, 1)}


def handwritten_job(spark, bootstrap: str, topic: str, output: str, checkpoint: str, shuffle_partitions: int) -> float:
    """(b) The word count a Spark user would write by hand; returns wall seconds."""
    session = spark.newSession()
    session.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
    session.conf.set("spark.sql.streaming.stateStore.providerClass",
                     "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    session.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    lines = (session.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest").load())
    # value is "country,word word ...": the words follow the first comma.
    counts = (lines.select(F.explode(F.split(F.expr("substr(cast(value as string), "
                                                     "instr(cast(value as string), ',') + 1)"), " ")).alias("word"))
              .groupBy("word").count())
    # Values as 8-byte big-endian longs, as Serdes.Long() (and Kafka Streams) write them.
    out = counts.select(F.col("word").alias("key"),
                        F.unhex(F.lpad(F.hex(F.col("count")), 16, "0")).alias("value"))
    started = time.perf_counter()
    query = (out.writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", output)
             .option("checkpointLocation", checkpoint).outputMode("update").trigger(availableNow=True).start())
    query.awaitTermination()
    return time.perf_counter() - started


def spark_settings(args: argparse.Namespace) -> dict[str, str]:
    settings = {}
    for setting in args.spark_conf:
        key, separator, value = setting.partition("=")
        if not separator:
            raise SystemExit(f"--spark-conf {setting!r}: expected KEY=VALUE")
        settings[key] = value
    return settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting one")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--max-records-per-batch", type=int, default=200_000, help="our runner's batch bound")
    parser.add_argument("--processing-guarantee", action="append", default=[],
                        choices=["at_least_once", "exactly_once_v2"],
                        help="our runs' guarantee (repeatable; default: both, one after the other)")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for the session of the Spark runs (repeatable)")
    parser.add_argument("--warm-up-records", type=int, default=0,
                        help="before each measured run, the same system processes this many records of "
                             "another topic in the same process (JVM, SparkSession): steady-state rates "
                             "rather than a cold start's (default 0: cold, as a fresh process)")
    parser.add_argument("--output", default=None, help="result JSON (default bench/results/wordcount-<date>.json)")
    parser.add_argument("--skip", action="append", default=[],
                        choices=["ceiling", "kafka-streams", "spark-handwritten", "dagster-kstreams"])
    args = parser.parse_args(argv)

    with bench_workspace("bench-wordcount-", args.bootstrap, 39100) as (bootstrap, work):
        result = run(args, bootstrap, work)
    output = Path(args.output) if args.output else REPO / "bench" / "results" / f"wordcount-{dt.date.today()}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    print(f"\nwritten to {output}")
    return 0


def run(args, bootstrap: str, work: Path) -> dict:
    load_before = os.getloadavg()  # other work on the machine skews every rate: recorded with them

    admin = KafkaAdmin(bootstrap)
    tag = uuid.uuid4().hex[:6]
    topic = f"bench-words-{tag}"
    admin.create_topics({topic: PARTITIONS})
    wait_for_group_coordinator(bootstrap, f"bench-ours-{tag}", topic)
    started = time.perf_counter()
    produced = produce(bootstrap, topic, eq.skewed_records(args.records, PARTITIONS, seed=1),
                       {"linger.ms": 50, "batch.num.messages": 10000, "compression.type": "none"})
    log(f"produced {produced} records in {time.perf_counter() - started:.1f}s")
    warm_topic = None
    if args.warm_up_records:
        warm_topic = f"bench-words-warm-{tag}"
        admin.create_topics({warm_topic: PARTITIONS})
        produce(bootstrap, warm_topic, eq.skewed_records(args.warm_up_records, PARTITIONS, seed=2),
                {"linger.ms": 50, "batch.num.messages": 10000, "compression.type": "none"})
    ends = admin.end_offsets(topic)
    records = sum(ends.values())
    systems: dict[str, dict] = {}

    if "ceiling" not in args.skip:
        systems["confluent-kafka read (ceiling)"] = read_ceiling(bootstrap, topic, ends)
        log(f"ceiling: {systems['confluent-kafka read (ceiling)']}")

    ks_counts = None
    if "kafka-streams" not in args.skip:
        cores = os.cpu_count() or 1
        for threads in sorted({1, cores}):
            output = f"bench-ks{threads}-out-{tag}"
            admin.create_topics({output: PARTITIONS})
            runs = [("word_count", f"bench-ks{threads}-{tag}", topic, output)]
            if warm_topic:  # one JVM runs them one after the other: the measured one runs warm
                admin.create_topics({f"{output}-warm": PARTITIONS})
                runs.insert(0, ("word_count", f"bench-ks{threads}-warm-{tag}", warm_topic, f"{output}-warm"))
            run_ = oracle_harness.run_streams_apps(
                bootstrap, str(work / f"ks-state-{threads}"), runs, threads=threads, timeout=3600,
            )[-1]
            ks_counts = run_["stores"][eq.WORD_COUNT_STORE]
            systems[f"Kafka Streams 4.3.1 ({threads} thread{'s' if threads > 1 else ''})"] = {
                "records": run_["records"], "seconds": run_["seconds"],
                "records_per_second": run_["records_per_second"], "distinct_words": len(ks_counts),
            }
            log(f"kafka streams {threads} threads: {run_['seconds']}s")

    spark = None
    if "spark-handwritten" not in args.skip or "dagster-kstreams" not in args.skip:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # read when the session starts
        spark = build_spark_session(args.master, {"spark.ui.enabled": "false", **spark_settings(args)},
                                    app_name="bench-wordcount")
        spark.sparkContext.setLogLevel("ERROR")
    try:
        if "spark-handwritten" not in args.skip:
            output = f"bench-hand-out-{tag}"
            admin.create_topics({output: PARTITIONS})
            if warm_topic:
                admin.create_topics({f"{output}-warm": PARTITIONS})
                handwritten_job(spark, bootstrap, warm_topic, f"{output}-warm", str(work / "hand-checkpoint-warm"),
                                shuffle_partitions=PARTITIONS)
            seconds = handwritten_job(spark, bootstrap, topic, output, str(work / "hand-checkpoint"),
                                      shuffle_partitions=PARTITIONS)
            systems["Spark Structured Streaming, hand-written"] = {
                "records": records, "seconds": round(seconds, 3), "records_per_second": round(records / seconds, 1),
                "shuffle_partitions": PARTITIONS,
            }
            log(f"hand-written: {seconds:.1f}s")

        if "dagster-kstreams" not in args.skip:
            variants = {OURS: eq.word_count, OURS_COLUMNS: word_count_columns}
            for guarantee in guarantees(args):
                for name, build in variants.items():
                    name = f"{name} [{guarantee}]"
                    if warm_topic:
                        run_ours(spark, build, bootstrap, admin, warm_topic, args.warm_up_records, work, args,
                                 f"{tag}-warm", None, guarantee)
                    systems[name] = run_ours(spark, build, bootstrap, admin, topic, records, work, args, tag,
                                             ks_counts, guarantee)
                    log(f"{name}: {systems[name]['seconds']}s")
    finally:
        if spark is not None:
            spark.stop()

    result = {
        "benchmark": "word count (flat_map_values split, group_by word, count, to topic) with a repartition",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "records": records,
        "input_partitions": PARTITIONS,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "pyspark": pyspark.__version__, "spark_master": args.master,
                    "spark_conf": spark_settings(args),
                    "warm_up_records": args.warm_up_records,
                    "load_average_1m_before_after": [round(load_before[0], 1), round(os.getloadavg()[0], 1)]},
        "systems": systems,
    }
    hand = systems.get("Spark Structured Streaming, hand-written")
    ks = [v for k, v in systems.items() if k.startswith("Kafka Streams")]
    best = max(v["records_per_second"] for v in ks) if ks else None
    goals = {}
    for guarantee in guarantees(args):
        ours, columns = systems.get(f"{OURS} [{guarantee}]"), systems.get(f"{OURS_COLUMNS} [{guarantee}]")
        goals[guarantee] = issue_12_goals(ours, columns, hand, best)
    if len(goals) == 2:  # issue 16: exactly-once is the default if it costs at most 20%
        goals["exactly_once_time_over_at_least_once"] = {
            name: round(systems[f"{name} [exactly_once_v2]"]["seconds"] / systems[f"{name} [at_least_once]"]["seconds"], 3)
            for name in (OURS, OURS_COLUMNS)
            if f"{name} [exactly_once_v2]" in systems and f"{name} [at_least_once]" in systems
        }
    result["goals"] = goals
    return result


def guarantees(args) -> list[str]:
    return args.processing_guarantee or ["at_least_once", "exactly_once_v2"]


def issue_12_goals(ours: dict | None, columns: dict | None, hand: dict | None, best: float | None) -> dict:
    goals = {}
    if best and ours:  # issue 12: Python functions >= 1.0x Kafka Streams' best rate
        goals["python_ratio_to_best_kafka_streams"] = round(ours["records_per_second"] / best, 3)
        goals["python_at_least_kafka_streams"] = ours["records_per_second"] >= best
    if best and columns:  # Column expressions >= 2x Kafka Streams, <= 1.5x the hand-written time
        goals["columns_ratio_to_best_kafka_streams"] = round(columns["records_per_second"] / best, 3)
        goals["columns_at_least_2x_kafka_streams"] = columns["records_per_second"] >= 2 * best
    if hand and columns:
        goals["columns_time_over_handwritten"] = round(columns["seconds"] / hand["seconds"], 3)
        goals["columns_within_1_5x_handwritten"] = columns["seconds"] <= 1.5 * hand["seconds"]
    if hand and ours:
        goals["python_time_over_handwritten"] = round(ours["seconds"] / hand["seconds"], 3)
    return goals


def run_ours(spark, build, bootstrap: str, admin, topic: str, records: int, work: Path, args, tag: str,
             ks_counts, guarantee: str) -> dict:
    variant = uuid.uuid4().hex[:4]
    output = f"bench-ours-out-{tag}-{variant}"
    admin.create_topics({output: PARTITIONS})
    runner = TaskRunner(build(topic, output), f"bench-ours-{tag}-{variant}", bootstrap,
                        state_location=str(work / f"ours-state-{variant}"), spark=spark,
                        max_records_per_batch=args.max_records_per_batch, processing_guarantee=guarantee)
    started = time.perf_counter()
    results = runner.run_all()
    seconds = time.perf_counter() - started
    ours = runner.read_store(eq.WORD_COUNT_STORE)
    per_sub = {}
    for result in results:
        entry = per_sub.setdefault(str(result.subtopology), {"records_in": 0, "task_seconds": 0.0, "batches": 0})
        entry["records_in"] += result.records_in
        entry["task_seconds"] = round(entry["task_seconds"] + result.seconds, 3)
        entry["batches"] += result.batches
    strategies = {str(sub_id): type(strategy_for(runner.compiled.program(sub_id), runner.stateless_on_driver)).__name__
                  for sub_id in runner.application.subtopology_ids}
    return {
        "records": records, "seconds": round(seconds, 3), "records_per_second": round(records / seconds, 1),
        "processing_guarantee": guarantee, "per_subtopology": per_sub, "strategies": strategies, "distinct_words": len(ours),
        "store_equals_kafka_streams": (ours == ks_counts) if ks_counts is not None else None,
    }


def table(result: dict) -> str:
    rows = [("system", "seconds", "records/s")]
    for name, entry in result["systems"].items():
        rows.append((name, f"{entry['seconds']:.1f}", f"{entry['records_per_second']:,.0f}"))
    width = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"word count, {result['records']:,} records, {result['input_partitions']} partitions, "
             f"{result['machine']['cpus']} CPUs, {result['machine']['spark_master']}"]
    for i, row in enumerate(rows):
        lines.append(f"{row[0]:<{width[0]}}  {row[1]:>{width[1]}}  {row[2]:>{width[2]}}")
        if i == 0:
            lines.append("-" * (sum(width) + 4))
    for key, value in result.get("goals", {}).items():
        lines.append(f"{key}: {value}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
