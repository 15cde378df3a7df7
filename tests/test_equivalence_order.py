"""Record order across keys and topics on Spark against Kafka Streams itself (issue 17).

One topology (tests/oracle OrderExamples.java; Python twin order_examples) holds: a merge of
four topics reduced to one key with no record cache (every update: the reduce's value is the
order itself), a stateless chain after that merge (every record mapped to one key), an uncached
count whose every update is re-keyed to one key, a stream-table join over two partitions
whose sides interleave in time, and a merge of three topics to one key written with Column
expressions (run in the JVM). All timestamps are distinct and interleaved across topics.
Kafka Streams 4.3.1 runs it once on the broker; our tasks run the twin.

Compared: the WHOLE sequence of records of every output partition, not only final values per key.
"""

from __future__ import annotations

import random
import sys
import time

import pytest
from pyspark import cloudpickle
from pyspark.sql import functions as F

import oracle_harness
from equivalence_io import output_topics, produce_strings
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.strategies import ColumnPlan, strategy_for
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])

T0 = (int(time.time()) - 3600) * 1000  # recent (broker retention)
MERGED = ("a", "b", "c", "d")
COLUMN_MERGED = ("e", "f", "g")
INPUTS = {**dict.fromkeys(MERGED, 1), "counted": 1, "orders": 2, "customers": 2,
          **dict.fromkeys(COLUMN_MERGED, 1)}  # name: partitions
OUTPUTS = {"out-reduce": 1, "out-mapped": 1, "out-counts": 2, "out-joined": 2, "out-columns": 1}


def order_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The Python twin of OrderExamples.orderExamples (Java); keep the two in step."""
    builder = StreamsBuilder()
    merged = builder.stream(topics[MERGED[0]])
    for name in MERGED[1:]:
        merged = merged.merge(builder.stream(topics[name]))
    merged.map(lambda key, value: ("all", f"{key}:{value}")) \
        .map_values(lambda value: value.upper()) \
        .to(topics["out-mapped"])
    merged.group_by(lambda key, value: "all") \
        .reduce(lambda agg, value: f"{agg},{value}", Materialized.as_("merged-reduce").with_caching_disabled()) \
        .to_stream().to(topics["out-reduce"])
    builder.stream(topics["counted"]).group_by_key() \
        .count(Materialized.as_("uncached-count").with_caching_disabled()) \
        .to_stream() \
        .map(lambda key, count: ("all", f"{key}:{count}")) \
        .to(topics["out-counts"], Produced.with_(Serdes.String(), Serdes.String()))
    customers = builder.table(topics["customers"])
    builder.stream(topics["orders"]) \
        .join(customers, lambda order, customer: f"{order}|{customer}") \
        .to(topics["out-joined"])
    columns = builder.stream(topics[COLUMN_MERGED[0]])
    for name in COLUMN_MERGED[1:]:
        columns = columns.merge(builder.stream(topics[name]))
    columns.map((F.lit("all"), F.concat(F.col("key"), F.lit(":"), F.upper(F.col("value"))))).to(topics["out-columns"])
    return builder


def _input(seed: int = 17) -> dict[str, list[tuple]]:
    """``{name: [(key, value, timestamp)]}``: timestamps distinct, rising within each partition,
    interleaved across topics (and across the two partitions of the join's inputs)."""
    rng = random.Random(seed)
    records: dict[str, list[tuple]] = {name: [] for name in INPUTS}
    merged = [rng.choice(MERGED) for _ in range(40)]
    for i, name in enumerate(merged):
        records[name].append((rng.choice("xyz"), f"{name}{i}", T0 + i * 100 + rng.randrange(50)))
    column_merged = [rng.choice(COLUMN_MERGED) for _ in range(30)]
    for i, name in enumerate(column_merged):
        records[name].append((rng.choice("xyz"), f"{name}{i}", T0 + i * 100 + rng.randrange(50)))
    for i in range(30):
        records["counted"].append((str(rng.randint(1, 4)), f"n{i}", T0 + i * 100))
    sides = ["customers"] * 6 + [rng.choice(["orders"] * 3 + ["customers"]) for _ in range(60)]
    for i, name in enumerate(sides):
        key = f"c{rng.randrange(6)}"
        records[name].append((key, f"{'o' if name == 'orders' else 'v'}{i}", T0 + i * 100 + 7))
    return records


def _sequences(bootstrap: str, topics: dict[str, str]) -> dict[str, dict[int, list[tuple[str, str]]]]:
    """Every output partition's records, in offset order."""
    result: dict[str, dict[int, list[tuple[str, str]]]] = {}
    for name in OUTPUTS:
        partitions: dict[int, list[tuple[str, str]]] = {}
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            partitions.setdefault(record.partition, []).append((record.key.decode(), record.value.decode()))
        result[name] = partitions
    return result


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"order-{name}") for name in INPUTS}
    kafka_admin.create_topics({inputs[name]: count for name, count in INPUTS.items()})
    records = _input()
    for name in INPUTS:
        produce_strings(kafka_bootstrap, inputs[name], records[name])
    topics = output_topics(kafka_admin, unique_topic, inputs, OUTPUTS, "ks")
    oracle_harness.run_main(
        "kstreams.oracle.OrderExamples",
        [kafka_bootstrap, unique_topic("ks-order"), str(tmp_path_factory.mktemp("ks-order-state")),
         *(topics[name] for name in INPUTS), *(topics[name] for name in OUTPUTS)],
        timeout=600,
    )
    return {"inputs": inputs, "records": records, "sequences": _sequences(kafka_bootstrap, topics)}


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_record_order_across_keys_and_topics_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic,
                                                                     spark, tmp_path, kafka_streams_run, guarantee):
    expected = kafka_streams_run["sequences"]
    records = kafka_streams_run["records"]
    # The reference exercises what it should: the merge's order is neither topic by topic nor
    # by key, every count update and every join result is there.
    (reduced,) = expected["out-reduce"].values()
    merged_in_time = sorted((t, v) for name in MERGED for _, v, t in records[name])
    assert reduced[-1][1] == ",".join(v for _, v in merged_in_time)
    assert len(reduced) == len(merged_in_time)
    assert sum(len(updates) for updates in expected["out-counts"].values()) == len(records["counted"])
    assert len(expected["out-joined"]) == 2 and all(len(p) > 5 for p in expected["out-joined"].values())

    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS)
    runner = TaskRunner(order_examples(topics), unique_topic("spark-order"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark, processing_guarantee=guarantee)
    application = runner.compiled.application
    (column_subtopology,) = [sub for sub in application.subtopology_ids
                             if topics["e"] in application.source_topics(sub)]
    assert isinstance(strategy_for(runner.compiled.program(column_subtopology)), ColumnPlan)  # no Python pass
    runner.run_all()
    ours = _sequences(kafka_bootstrap, topics)
    assert [name for name in OUTPUTS if ours[name] != expected[name]] == []
