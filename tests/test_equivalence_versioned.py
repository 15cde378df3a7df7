"""Versioned tables on Spark against Kafka Streams itself.

One topology (tests/versioned_topology.py; Java twin VersionedExamples): prices, a table read from
a topic into a versioned store (10 s of history), whose changes go to a topic; rates, a stream made
a table by ``to_table`` into another versioned store (4 s of history); orders joined (inner) with
the prices and left-joined with the rates, each reading the version valid at its own timestamp;
and joined with the prices again with a grace period of 3 s (Kafka Streams' buffer: orders joined
in timestamp order once the buffer's time has passed them by the grace, seeing the prices that came
meanwhile).
Kafka Streams 4.3.1 runs the whole input once (``max.task.idle.ms``: its timestamp merge of the
three inputs of a task).

Input on 2 partitions, keyed by user (three users in each partition): table updates in time, out of
order within the history retention (kept as history, and forwarded: the changes topic shows them),
and older than the history retention (dropped: not stored, not forwarded); tombstones; table records
with a null key (skipped); orders in time, late within the history (they join an older version),
late beyond it (they see only a latest version old enough, else nothing), and with a null value
(skipped). No two records share a timestamp. Our side runs it clean, the whole input in one
micro-batch per task (across a batch boundary the order of two topics may differ: README, "Order
across co-partitioned inputs").

Compared: describe() of the very topology run, and per output topic and partition the whole
sequence of (key, value, timestamp) records; each value names its input record too.
"""

from __future__ import annotations

import random
import time

import pytest
from pyspark import cloudpickle

import versioned_topology
from equivalence_io import (
    KafkaStreamsInBackground, output_topics, partition_sequences, produce_inputs, with_unique_timestamps,
)
from versioned_topology import INPUTS, OUTPUTS, versioned_examples
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(versioned_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute
SPAN_MS = 60_000
USERS = ("u1", "u2", "u3", "u5", "u11", "u15")  # three in each partition (murmur2)
# per input: (records, (share late within the history, its lateness), (share late beyond it, its lateness))
SHAPES = {
    "prices": (120, (0.15, (1_000, 6_000)), (0.08, (12_000, 25_000))),
    "rates": (120, (0.15, (500, 3_000)), (0.08, (6_000, 12_000))),
    "orders": (150, (0.15, (2_000, 8_000)), (0.10, (12_000, 25_000))),
}


def _partition(key: str) -> int:
    return default_partition(key.encode(), PARTITIONS)


def _records(rng: random.Random, topic: str) -> list[tuple]:
    count, (within_share, within), (beyond_share, beyond) = SHAPES[topic]
    records = []
    for i, base in enumerate(sorted(rng.randrange(T0, T0 + SPAN_MS) for _ in range(count))):
        table = topic != "orders"
        key = None if table and rng.random() < 0.03 else rng.choice(USERS)
        value = None if rng.random() < 0.05 else f"{topic[0]}{i}"
        timestamp, roll = base, rng.random()
        if roll < within_share:
            timestamp -= rng.randint(*within)
        elif roll < within_share + beyond_share:
            timestamp -= rng.randint(*beyond)
        partition = _partition(key) if key is not None else rng.randrange(PARTITIONS)
        records.append((key, value, partition, max(T0, timestamp)))
    return records


def _input(seed: int = 16) -> dict[str, list[tuple]]:
    rng = random.Random(seed)
    (records,) = with_unique_timestamps([{topic: _records(rng, topic) for topic in INPUTS}], INPUTS)
    return records


def _produce(bootstrap: str, topics: dict[str, str], records: dict[str, list[tuple]]) -> None:
    produce_inputs(bootstrap, topics, records, INPUTS)


def _results(bootstrap: str, topics: dict[str, str]) -> dict[tuple[str, int], list]:
    return partition_sequences(bootstrap, topics, OUTPUTS)


@pytest.fixture(scope="module")
def records():
    return _input()


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory, records):
    run = KafkaStreamsInBackground(
        "kstreams.oracle.VersionedExamples", "versioned", kafka_bootstrap, kafka_admin, unique_topic,
        tmp_path_factory.mktemp("ks-versioned-state"), INPUTS, OUTPUTS, PARTITIONS,
        lambda inputs: _produce(kafka_bootstrap, inputs, records), _results)
    yield run
    run.close()


def _assert_reference_exercises_it(expected: dict, records: dict[str, list[tuple]]) -> None:
    """Every output on both partitions; the changes hold out-of-order updates and miss the expired
    ones; orders joined an older version than the latest, and found nothing past the history."""
    assert set(expected) == {(name, p) for name in OUTPUTS for p in range(PARTITIONS)}
    changes = [row for p in range(PARTITIONS) for row in expected["out-changes", p]]
    table_records = [r for r in records["prices"] if r[0] is not None]
    assert 0 < len(table_records) - len(changes) < len(table_records) // 4  # the expired puts
    time_of = {value: timestamp for _, value, _, timestamp in table_records if value is not None}
    assert any(time_of[later[1]] < time_of[earlier[1]] for p in range(PARTITIONS)  # out of order, forwarded
               for earlier, later in zip(expected["out-changes", p], expected["out-changes", p][1:])
               if earlier[1] is not None and later[1] is not None)
    left = [value for p in range(PARTITIONS) for _, value, _ in expected["out-left", p]]
    assert any(value.endswith("%null") for value in left) and sum(not v.endswith("%null") for v in left) > 50
    inner = [row for p in range(PARTITIONS) for row in expected["out-inner", p]]
    assert len(inner) > 50
    # with the grace period: another order of emission, and prices that came within the grace
    graced = {value.replace("#", "@") for p in range(PARTITIONS) for _, value, _ in expected["out-grace", p]}
    assert len(graced) > 50 and graced - {value for _, value, _ in inner}


def test_versioned_tables_and_their_joins_in_a_clean_run_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, records, spark, tmp_path
):
    inputs = {name: unique_topic(f"clean-versioned-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))
    _produce(kafka_bootstrap, inputs, records)
    runner = TaskRunner(versioned_examples(topics), unique_topic("clean-versioned"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    results = runner.run_all()
    assert {result.task_id for result in results} == {"0_0", "0_1"}

    expected = kafka_streams_run.result()["results"]
    _assert_reference_exercises_it(expected, records)
    actual = _results(kafka_bootstrap, topics)
    for key in sorted(expected):
        assert actual.get(key) == expected[key], key
    assert set(actual) == set(expected)


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    ours = versioned_examples(kafka_streams_run.topics).build().describe()
    assert str(ours) == kafka_streams_run.result()["describe"]
