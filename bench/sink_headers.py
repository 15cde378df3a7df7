"""What Kafka headers and producer batching cost Spark's Kafka sink and source (why the runner
writes as few headers as it does, and reads them only when used).

    .venv/bin/python -m bench.sink_headers [--records 500000] [--rounds 2] [--bootstrap HOST:PORT]

One input topic (4 partitions) of ``--records`` word-count lines; each variant is a Spark batch
job (``local[2]``) that splits the lines into words and writes one record per word to a fresh
topic, as the word count's first sub-topology writes its repartition topic: with no header, one
header (the runner's ``written`` header) or two (plus the timestamp header), each with the Java
producer's defaults and with the runner's sink defaults (``batch.size`` 256 KB, ``linger.ms``
20). Then each written topic is read back and counted by key, without and with
``includeHeaders``. Seconds per variant, per round (the first round includes the JVM's warm-up).

Without --bootstrap a LocalBroker is started on ports 39400/39401.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import equivalence_topologies as eq  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from bench.common import bench_workspace  # noqa: E402
from dagster_kstreams.kafka.admin import KafkaAdmin  # noqa: E402
from dagster_kstreams.kafka.records import produce  # noqa: E402
from dagster_kstreams.spark.batch_writer import HEADER_WRITTEN, SINK_PRODUCER_DEFAULTS  # noqa: E402
from dagster_kstreams.spark.event_time import TIMESTAMP_HEADER  # noqa: E402
from dagster_kstreams.spark.session import build_spark_session  # noqa: E402

PARTITIONS = 4


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--bootstrap", default=None)
    args = parser.parse_args(argv)
    with bench_workspace("bench-sink-headers-", args.bootstrap, 39400) as (bootstrap, _work):
        run(args, bootstrap)
    return 0


def run(args, bootstrap: str) -> None:
    admin = KafkaAdmin(bootstrap)
    lines = f"sink-headers-in-{uuid.uuid4().hex[:6]}"
    admin.create_topics({lines: PARTITIONS})
    produce(bootstrap, lines, eq.skewed_records(args.records, PARTITIONS, seed=1),
            {"linger.ms": 50, "batch.num.messages": 10000})
    spark = build_spark_session("local[2]", {"spark.ui.enabled": "false"}, app_name="bench-sink-headers")
    spark.sparkContext.setLogLevel("ERROR")
    kafka = {"kafka.bootstrap.servers": bootstrap}

    def words():
        text = F.expr("substr(cast(value as string), instr(cast(value as string), ',') + 1)")
        source = spark.read.format("kafka").options(**kafka).option("subscribe", lines).load()
        return source.select(F.explode(F.split(text, " ")).alias("word"))

    timestamp = F.struct(F.lit(TIMESTAMP_HEADER).alias("key"),
                         F.lit(b"\x00\x00\x01\x8c\x00\x00\x00\x00").alias("value"))
    written = F.struct(F.lit(HEADER_WRITTEN).alias("key"),
                       F.concat(F.lit(b"bench/0_1@3:"), F.monotonically_increasing_id().cast("string").cast("binary"))
                       .alias("value"))
    headers = {"no header": None, "1 header": F.array(written), "2 headers": F.array(timestamp, written)}
    producers = {"producer defaults": {}, "runner's sink defaults": SINK_PRODUCER_DEFAULTS}
    print(f"{args.records:,} lines, load average {os.getloadavg()[0]:.1f} before")
    for round_ in range(1, args.rounds + 1):
        for name, header in headers.items():
            for producer_name, options in producers.items():
                topic = f"sink-headers-{uuid.uuid4().hex[:6]}"
                admin.create_topics({topic: PARTITIONS})
                columns = [F.col("word").cast("binary").alias("key"), F.col("word").cast("binary").alias("value")]
                if header is not None:
                    columns.append(header.alias("headers"))
                started = time.perf_counter()
                (words().select(*columns).write.format("kafka").options(**kafka).options(**options)
                 .option("topic", topic).save())
                wrote = time.perf_counter() - started
                reads = []
                for include_headers in ("false", "true"):
                    started = time.perf_counter()
                    (spark.read.format("kafka").options(**kafka).option("subscribe", topic)
                     .option("includeHeaders", include_headers).load().groupBy("key").count().count())
                    reads.append(time.perf_counter() - started)
                print(f"round {round_}  {name:9s}  {producer_name:22s}  write {wrote:5.1f}s  "
                      f"read+count {reads[0]:5.1f}s, with includeHeaders {reads[1]:5.1f}s", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} after")
    spark.stop()


if __name__ == "__main__":
    raise SystemExit(main())
