"""Record order across keys and topics on Spark against Kafka Streams itself (issue 17).

One topology (tests/oracle OrderExamples.java; Python twin order_examples) holds: a merge of
four topics reduced to one key with no record cache (every update: the reduce's value is the
order itself), a stateless chain after that merge (every record mapped to one key), an uncached
count whose every update is re-keyed to one key, a stream-table join over two partitions
whose sides interleave in time, and a merge of three topics to one key written with Column
expressions (run in the JVM), that merge also placed by a partitioner after a Column
``map_values`` (the JVM's plan, then the partitioner in one Python pass), and sent to a topic a
Python function picks per record, with and without a partitioner, and that merge through a Python
``flat_map``, Columns and a Python ``map`` in the same plan (Python segments, in Arrow batches of 4). All timestamps are
distinct and interleaved across topics.
Custom stream partitioners too: a sink placed by the value (a copy to every partition, none, the
default partitioner, tombstones and null keys), the same on a sink whose topic a function picks
between two topics of different partition counts, and a repartition placed by the key feeding an
uncached count, whose updates go out placed by the key (one writing task per output partition).
Kafka Streams 4.3.1 runs it once on the broker; our tasks run the twin, at least once and exactly once.

Compared: the WHOLE sequence of records of every output partition, not only final values per key,
each record as ``(key, value, timestamp)`` (the timestamp it was written with).
"""

from __future__ import annotations

import random
import sys
import time

import pytest
from pyspark import cloudpickle
from pyspark.sql import functions as F

import oracle_harness
from equivalence_io import output_topics, produce_strings, written_time
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.strategies import ColumnPlan, strategy_for
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.grouped_repartitioned import Repartitioned
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])

T0 = (int(time.time()) - 3600) * 1000  # recent (broker retention)
MERGED = ("a", "b", "c", "d")
COLUMN_MERGED = ("e", "f", "g")
INPUTS = {**dict.fromkeys(MERGED, 1), "counted": 1, "orders": 2, "customers": 2,
          **dict.fromkeys(COLUMN_MERGED, 1), "placed": 1}  # name: partitions
OUTPUTS = {"out-reduce": 1, "out-mapped": 1, "out-counts": 2, "out-joined": 2, "out-columns": 1,
           "out-placed": 3, "out-placed-counts": 2, "out-picked-a": 3, "out-picked-b": 2, "out-columns-placed": 3,
           "out-columns-picked-a": 3, "out-columns-picked-b": 2, "out-columns-routed-a": 1, "out-columns-routed-b": 2,
           "out-mixed": 1}


class ByValue:
    """OrderExamples.BY_VALUE (KIP-837 ``partitions``): "drop..." to none, "all..." to every
    partition, a length that is a multiple of 4 to the default partitioner, else length modulo n."""

    def partitions(self, topic, key, value, num_partitions):
        if value is None:
            return {2 % num_partitions}
        if value.startswith("drop"):
            return set()
        if value.startswith("all"):
            return set(range(num_partitions))
        return None if len(value) % 4 == 0 else {len(value) % num_partitions}


class ByKey:
    """OrderExamples.byKey(): "k<n>" to n modulo the partition count; "k0" and no key to the default."""

    def partition(self, topic, key, value, num_partitions):
        return None if key is None or key.endswith("0") else int(key[1:]) % num_partitions


def partitioner_examples(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    """The Python twin of OrderExamples.partitionerExamples (Java)."""
    stream = builder.stream(topics["placed"])
    stream.to(topics["out-placed"], Produced.stream_partitioner(ByValue()))
    stream.to(lambda key, value: topics["out-picked-a" if key is None or int(key[-1]) % 2 == 0 else "out-picked-b"],
              Produced.stream_partitioner(ByValue()))
    stream.repartition(Repartitioned.stream_partitioner_(ByKey()).with_number_of_partitions(2)) \
        .group_by_key() \
        .count(Materialized.as_("placed-count").with_caching_disabled()) \
        .to_stream() \
        .map_values(lambda key, count: f"{key}={count}") \
        .to(topics["out-placed-counts"], Produced.stream_partitioner(ByKey()))


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
    value = F.col("value")
    column_values = columns.map_values(F.when(value.endswith("0"), F.concat(F.lit("all"), value))
                                       .when(value.endswith("7"), F.concat(F.lit("drop"), value))
                                       .when(value.endswith("3"), F.lit(None).cast("string"))
                                       .when(value.endswith("5"), F.concat(value, F.lit("x")))
                                       .otherwise(value))
    column_values.to(topics["out-columns-placed"], Produced.stream_partitioner(ByValue()))
    column_values.to(lambda key, value: topics["out-columns-picked-a" if value is None or value[-1] in "02468"
                                               else "out-columns-picked-b"], Produced.stream_partitioner(ByValue()))
    columns.map_values(F.upper(value)) \
        .to(lambda key, value: topics["out-columns-routed-a" if key == "x" else "out-columns-routed-b"])
    # Python functions in the same plan (segments, spark/python_segments.py): a flat_map, Columns, a map.
    columns.flat_map(lambda key, value: [] if value.endswith("5") else [(key, value), (key + "2", value + "!")]) \
        .map_values(F.concat(F.upper(value), F.lit("#"))) \
        .map(lambda key, value: ("all", f"{key}:{value}")) \
        .to(topics["out-mixed"])
    partitioner_examples(builder, topics)
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
    for i in range(60):  # out of order now and then; null keys with a length the partitioner places
        roll = rng.random()
        value = (None if roll < 0.05 else f"drop{i}" if roll < 0.12 else f"all{i}" if roll < 0.2
                 else "".join(rng.choice("xyz") for _ in range(rng.randint(1, 9))))
        key = None if rng.random() < 0.05 or i == 20 else f"k{rng.randrange(10)}"
        value = None if i == 10 else value  # a tombstone, at least one
        if key is None and (value is None or len(value) % 4 == 0):
            value = "xyz"
        records["placed"].append((key, value, T0 + i * 100 - (rng.randrange(500) if rng.random() < 0.2 else 0)))
    return records


def _sequences(bootstrap: str, topics: dict[str, str]) -> dict[str, dict[int, list[tuple]]]:
    """Every output partition's records ``(key, value, timestamp)``, in offset order."""
    result: dict[str, dict[int, list[tuple]]] = {}
    for name in OUTPUTS:
        partitions: dict[int, list[tuple]] = {}
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            key, value = (None if data is None else data.decode() for data in (record.key, record.value))
            partitions.setdefault(record.partition, []).append((key, value, written_time(record)))
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
    # Placed by the partitioners: copies to every partition, none dropped ones, defaults, null keys.
    placed = [record for partition in expected["out-placed"].values() for record in partition]
    assert not any(value and value.startswith("drop") for _, value, _ in placed)
    copies = [value for _, value, _ in placed if value and value.startswith("all")]
    assert copies and all(copies.count(value) == 3 for value in copies)
    assert any(key is None for key, _, _ in placed) and any(value is None for _, value, _ in placed)
    # ... also after Column expressions: copies, drops, tombstones, the default (length 4) and the rest.
    column_placed = [value for partition in expected["out-columns-placed"].values() for _, value, _ in partition]
    assert len(expected["out-columns-placed"]) == 3 and not any(value and value.startswith("drop")
                                                                  for value in column_placed)
    assert any(column_placed.count(value) == 3 for value in column_placed if value and value.startswith("all"))
    assert None in column_placed and any(value and len(value) == 4 for value in column_placed)
    assert len(expected["out-placed-counts"]) == 2
    # ... and to a topic picked per record after Column expressions, placed there or not.
    picked_a, picked_b = ([value for partition in expected[name].values() for _, value, _ in partition]
                          for name in ("out-columns-picked-a", "out-columns-picked-b"))
    assert len(expected["out-columns-picked-a"]) == 3 and any(picked_a.count(value) == 3 for value in picked_a)
    assert None in picked_a and picked_b and all(value[-1] not in "02468" for value in picked_b)
    routed = {name: [key for partition in expected[name].values() for key, _, _ in partition]
              for name in ("out-columns-routed-a", "out-columns-routed-b")}
    assert set(routed["out-columns-routed-a"]) == {"x"} and set(routed["out-columns-routed-b"]) == {"y", "z"}
    # Through Python functions and Columns mixed: every record of the three topics, in their merged time order.
    (mixed,) = expected["out-mixed"].values()
    merged_columns = sorted((t, k, v) for name in COLUMN_MERGED for k, v, t in records[name] if not v.endswith("5"))
    assert [value for _, value, _ in mixed[::2]] == [f"{k}:{v.upper()}#" for _, k, v in merged_columns]
    # A topic picked per record, placed with that topic's own partition count (3 and 2): copies to all.
    for name, count in (("out-picked-a", 3), ("out-picked-b", 2)):
        picked = [value for partition in expected[name].values() for _, value, _ in partition]
        assert len(expected[name]) == count and any(picked.count(value) == count for value in picked)

    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS)
    # Small Arrow batches: a task's records cross the Column plan's Python segments in several.
    runner = TaskRunner(order_examples(topics), unique_topic("spark-order"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark, processing_guarantee=guarantee,
                        arrow_batch_size=4)
    application = runner.compiled.application
    (column_subtopology,) = [sub for sub in application.subtopology_ids
                             if topics["e"] in application.source_topics(sub)]
    # In the JVM (its partitioner and topic pickers alone in a Python pass over the plan's output, its
    # Python functions in two segments: the flat_map, the map).
    assert isinstance(strategy_for(runner.compiled.program(column_subtopology)), ColumnPlan)
    assert len(runner.compiled.program(column_subtopology).column_plan.segments) == 2
    runner.run_all()
    ours = _sequences(kafka_bootstrap, topics)
    assert [name for name in OUTPUTS if ours[name] != expected[name]] == []
