"""A ``peek`` (before a sink, and before a split) and a ``foreach`` beside Column expressions on a
clean run (real broker, real Spark):
each action sees every record the Column filter lets through exactly once, in each task, at least
once and exactly once (compared with Kafka Streams itself, outputs and ``describe()``, in
tests/test_equivalence_headers.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pyspark import cloudpickle
from pyspark.sql import functions as F

from dagster_kstreams.kafka.records import produce, read_topic
from dagster_kstreams.spark.strategies import ColumnPlan, strategy_for
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import Named, StreamsBuilder

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the actions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

PARTITIONS = 2


class Appender:
    """An action that appends ``<label> <key> <value>`` to a file (Spark's Python workers run it)."""

    def __init__(self, path: Path, label: str):
        self.path, self.label = str(path), label

    def __call__(self, key, value) -> None:
        with open(self.path, "a", encoding="utf-8") as seen:
            seen.write(f"{self.label} {key} {value}\n")


def _topology(source: str, out: str, seen: Path) -> StreamsBuilder:
    builder = StreamsBuilder()
    present = builder.stream(source).filter(F.col("value").isNotNull())
    present.peek(Appender(seen, "peek")).map_values(F.upper(F.col("value"))).to(out)
    present.filter(F.col("value").endswith("0")).foreach(Appender(seen, "foreach"))
    # A peek before a split: one segment, each branch one output (the first branch's read calls it).
    parts = present.peek(Appender(seen, "split")).split(Named.as_("part-")) \
        .branch(lambda k, v: v.endswith("1")).default_branch()
    for name, part in parts.items():
        part.map_values(F.concat(F.lit(f"{name}|"), F.col("value"))).to(out)
    return builder


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_peek_and_foreach_beside_columns_see_every_record_once(kafka_bootstrap, kafka_admin, unique_topic, spark,
                                                               tmp_path, guarantee):
    source, out = unique_topic("actions-in"), unique_topic("actions-out")
    kafka_admin.create_topics({source: PARTITIONS, out: 1})
    records = [(f"k{i % 5}".encode(), None if i % 7 == 3 else f"v{i}".encode(), i % PARTITIONS, 1_000 + i)
               for i in range(60)]
    produce(kafka_bootstrap, source, records)
    seen = tmp_path / "seen.txt"
    runner = TaskRunner(_topology(source, out, seen), unique_topic("spark-actions"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark, processing_guarantee=guarantee,
                        arrow_batch_size=7, max_records_per_batch=20)  # several batches, in several Arrow batches
    assert isinstance(strategy_for(runner.compiled.program(0)), ColumnPlan)
    runner.run_all()
    present = [(key.decode(), value.decode()) for key, value, _, _ in records if value is not None]
    lines = sorted(seen.read_text().splitlines())
    assert lines == sorted([f"{action} {key} {value}" for key, value in present for action in ("peek", "split")]
                           + [f"foreach {key} {value}" for key, value in present if value.endswith("0")])
    # And the records went on: upper-cased after the peek, each to its branch.
    values = sorted(record.value.decode() for record in read_topic(kafka_bootstrap, out))
    assert values == sorted([value.upper() for _, value in present]
                            + [f"part-{'1' if value.endswith('1') else '0'}|{value}" for _, value in present])
