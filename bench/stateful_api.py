"""Which of Spark's Python stateful APIs runs a keyed state pass fastest (issue 12).

    .venv/bin/python -m bench.stateful_api [--records 300000] [--keys 5000] [--batches 3]
        [--bootstrap HOST:PORT] [--output PATH]

The runner's keyed-state strategy (:class:`dagster_kstreams.spark.strategies.KeyedState`) runs a
sub-topology with state as ``applyInPandasWithState`` grouped by the record key: one pandas frame
per key and batch, one pickled state column per store. Spark 4 added ``transformWithStateInPandas``
(a ``StatefulProcessor`` with typed state variables read and written through a state server) and
the row-based ``transformWithState``. Each one here counts the records per key of the same topic
(``--records`` records over ``--keys`` Zipf-like keys, 4 partitions, ``--batches`` micro-batches
via ``maxOffsetsPerTrigger``, RocksDB state, one state partition as a task has), with the per-key
work each API needs and nothing else, one after the other on one ``local[2]`` session. Reported:
seconds per API (best of ``--repeat`` fresh checkpoints), the ratio to ``applyInPandasWithState``,
and whether each produced the same final counts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Iterator

import pandas as pd
from pyspark.sql import Row
from pyspark.sql.streaming.state import GroupStateTimeout
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import LongType, StringType, StructField, StructType

from bench.common import bench_workspace
from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.kafka.records import produce
from dagster_kstreams.spark.session import build_spark_session
from dagster_kstreams.spark.task_session import ROCKSDB_PROVIDER

BROKER_PORT = 39300
OUTPUT = StructType([StructField("key", StringType()), StructField("count", LongType())])
COUNT_STATE = StructType([StructField("count", LongType())])


def _apply_in_pandas(grouped):
    def count(key, frames: Iterator[pd.DataFrame], state):
        seen = sum(len(frame) for frame in frames)
        total = (state.get[0] if state.exists else 0) + seen
        state.update((total,))
        yield pd.DataFrame({"key": [key[0]], "count": [total]})

    return grouped.applyInPandasWithState(count, OUTPUT, COUNT_STATE, "Update", GroupStateTimeout.NoTimeout)


class _PandasCount(StatefulProcessor):
    def init(self, handle: StatefulProcessorHandle) -> None:
        self.total = handle.getValueState("count", COUNT_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        seen = sum(len(frame) for frame in rows)
        total = (self.total.get()[0] if self.total.exists() else 0) + seen
        self.total.update((total,))
        yield pd.DataFrame({"key": [key[0]], "count": [total]})

    def close(self) -> None:
        pass


class _RowCount(StatefulProcessor):
    def init(self, handle: StatefulProcessorHandle) -> None:
        self.total = handle.getValueState("count", COUNT_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[Row]:
        seen = sum(1 for _ in rows)
        total = (self.total.get()[0] if self.total.exists() else 0) + seen
        self.total.update((total,))
        yield Row(key=key[0], count=total)

    def close(self) -> None:
        pass


APIS = {
    "applyInPandasWithState": _apply_in_pandas,
    "transformWithStateInPandas": lambda grouped: grouped.transformWithStateInPandas(
        _PandasCount(), OUTPUT, "Update", "None"),
    "transformWithState (rows)": lambda grouped: grouped.transformWithState(_RowCount(), OUTPUT, "Update", "None"),
}


def run_api(spark, name: str, bootstrap: str, topic: str, per_batch: int, work: Path) -> tuple[float, dict]:
    checkpoint = work / f"checkpoint-{uuid.uuid4().hex[:6]}"
    source = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", per_batch).load()
              .selectExpr("CAST(key AS STRING) AS key"))
    final: dict[str, int] = {}

    def keep(batch, _batch_id):
        for row in batch.collect():
            final[row.key] = max(final.get(row.key, 0), row["count"])

    started = time.perf_counter()
    query = (APIS[name](source.groupBy("key")).writeStream.outputMode("update").foreachBatch(keep)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    seconds = time.perf_counter() - started
    shutil.rmtree(checkpoint, ignore_errors=True)
    return seconds, final


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--keys", type=int, default=5_000)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--output", default=None)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    results: dict = {}
    with bench_workspace("bench-stateful-api-", args.bootstrap, BROKER_PORT) as (bootstrap, work):
        topic = f"bench-stateful-{uuid.uuid4().hex[:6]}"
        KafkaAdmin(bootstrap).create_topics({topic: 4})
        # Zipf-like keys, as words are: key i with weight 1/(i+1).
        weights = [1.0 / (i + 1) for i in range(args.keys)]
        scale = args.records / sum(weights)
        keys = [f"key{i}" for i, weight in enumerate(weights) for _ in range(max(1, round(weight * scale)))]
        produce(bootstrap, topic, [(key.encode(), b"") for key in keys])
        expected: dict[str, int] = {}
        for key in keys:
            expected[key] = expected.get(key, 0) + 1
        spark = build_spark_session("local[2]", {
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "1",
            "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER})
        spark.sparkContext.setLogLevel("ERROR")
        per_batch = -(-len(keys) // args.batches)
        scratch = Path(tempfile.mkdtemp(prefix="bench-stateful-api-", dir=work))
        for name in APIS:
            best, exact = None, True
            for _ in range(args.repeat):
                seconds, final = run_api(spark, name, bootstrap, topic, per_batch, scratch)
                best = seconds if best is None else min(best, seconds)
                exact = exact and final == expected
            results[name] = {"seconds": round(best, 2), "records_per_second": round(len(keys) / best), "exact": exact}
            print(f"{name:32s} {best:7.2f} s  {len(keys) / best:10,.0f} records/s  exact={exact}", flush=True)
        spark.stop()
    base = results["applyInPandasWithState"]["seconds"]
    for result in results.values():
        result["time_over_apply_in_pandas"] = round(result["seconds"] / base, 2)
    report = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "records": len(keys),
              "keys": args.keys, "batches": args.batches, "repeat": args.repeat,
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                          "load_average_1m_before_after": [round(load_before[0], 1), round(os.getloadavg()[0], 1)]},
              "apis": results}
    output = Path(args.output or Path(__file__).parent / "results" / f"stateful-api-{dt.date.today()}.json")
    output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(results, indent=1))
    print(f"written to {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
