"""Chained table-table joins on Spark against Kafka Streams itself.

One topology (tests/chained_join_topology.py; Java twin ChainedJoinExamples): a table-table join
without a store joined again (inner then left; left then outer, the joined table on the other side
of the second join), a materialized one joined again (outer then inner), a stream left-joined with
a joined table through ``map_values``, a joined table re-grouped and counted, and filtered tables
(issue 14: Kafka Streams' ``KTableFilter`` drops an update whose new and old values both fail
the predicate when it sends old values, and forwards it as a tombstone when not) left- and
outer-joined, turned into streams, materialized. Every store runs
without the record cache, so every single update reaches the outputs. Kafka Streams 4.3.1 runs the
whole input once, in the background while our side runs (``max.task.idle.ms``: its timestamp
merge of the four inputs of a task).

Input on 2 partitions: updates and tombstones on every table (tombstones for keys a table never
held too), stream records with null values (dropped), about one record in six out of order within
its partition, no two records with one timestamp. Our side runs it clean, the whole input in one
micro-batch per task.

Compared: describe() of the very topology run; per output topic and partition the whole sequence
of (key, value, timestamp) records for the joins (one task writes each partition, in its processing
order); the counts' final value per key with its record's timestamp (the re-grouping's repartition
topic interleaves what the two upstream tasks wrote in whatever order they wrote it, in Kafka
Streams as here; an aggregate's stamp, the largest of its updates', does not depend on that order).
Timestamps: the ones the records were written with; each value names its input records.
"""

from __future__ import annotations

import random
import time

import pytest
from pyspark import cloudpickle

import chained_join_topology
from chained_join_topology import INPUTS, OUTPUTS, chained_join_examples
from equivalence_io import (KafkaStreamsInBackground, final_values_and_times, output_topics, produce_strings,
                            with_unique_timestamps, written_time)
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(chained_join_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) * 1000  # recent: older records may fall to the broker's retention
KEYS = tuple(f"k{i}" for i in range(10))
SEQUENCES = tuple(name for name in OUTPUTS if name != "out-counts")


def _input(seed: int = 14) -> dict[str, list[tuple]]:
    """``{topic: [(key, value, partition, timestamp)]}`` in production order."""
    rng = random.Random(seed)
    events = ["a"] * 160 + ["b"] * 160 + ["c"] * 120 + ["s"] * 160
    rng.shuffle(events)
    records: dict[str, list[tuple]] = {name: [] for name in INPUTS}
    for i, topic in enumerate(events):
        timestamp = T0 + i * 100
        if rng.random() < 1 / 6:
            timestamp -= rng.randint(1, 40) * 100 - 7
        key = rng.choice(KEYS)
        value = None if rng.random() < (0.05 if topic == "s" else 0.25) else f"{topic}{i}"
        records[topic].append((key, value, default_partition(key.encode(), PARTITIONS), timestamp))
    (records,) = with_unique_timestamps([records], INPUTS)
    return records


def _produce(bootstrap: str, topics: dict[str, str], records: dict[str, list[tuple]]) -> None:
    for name in INPUTS:
        produce_strings(bootstrap, topics[name], records[name])


def _results(bootstrap: str, topics: dict[str, str]) -> dict:
    """``{(output, partition): [(key, value, timestamp)] in offset order}`` for the joins, the counts' final
    ``{key: (value, timestamp)}`` (timestamps: the ones the records were written with)."""
    results: dict = {}
    for name in SEQUENCES:
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            value = None if record.value is None else record.value.decode()
            results.setdefault((name, record.partition), []).append((record.key.decode(), value, written_time(record)))
    results["out-counts"] = final_values_and_times(read_topic(bootstrap, topics["out-counts"]), bytes.decode,
                                                   bytes.decode)
    return results


@pytest.fixture(scope="module")
def records():
    return _input()


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory, records):
    run = KafkaStreamsInBackground(
        "kstreams.oracle.ChainedJoinExamples", "chained", kafka_bootstrap, kafka_admin, unique_topic,
        tmp_path_factory.mktemp("ks-chained-state"), INPUTS, OUTPUTS, PARTITIONS,
        lambda inputs: _produce(kafka_bootstrap, inputs, records), _results)
    yield run
    run.close()


def _assert_reference_exercises_it(expected: dict) -> None:
    """Every join output on both partitions, with tombstones; null sides in the left and outer joins."""
    assert set(expected) == {(name, p) for name in SEQUENCES for p in range(PARTITIONS)} | {"out-counts"}
    for name in SEQUENCES:
        values = [value for p in range(PARTITIONS) for _, value, _ in expected[name, p]]
        assert len(values) > 40, name
        if name != "out-stream":
            assert None in values, name  # tombstones forwarded by the chained join
    assert any(v is not None and v.endswith("*null") for p in range(PARTITIONS) for _, v, _ in expected["out-left", p])
    assert any(v is not None and v.startswith("null%") for p in range(PARTITIONS) for _, v, _ in expected["out-outer", p])
    assert any(v.endswith("|null") for p in range(PARTITIONS) for _, v, _ in expected["out-stream", p])
    assert any(v != "0" for v, _ in expected["out-counts"].values())
    # A filter that sends old values forwards no tombstone after a tombstone (KTableFilter drops the
    # update: neither value passes); one that does not, does.
    assert not _tombstones_in_a_row(expected, "out-filter-stream")
    assert not _tombstones_in_a_row(expected, "out-s-kept")
    assert _tombstones_in_a_row(expected, "out-s-dropped")


def _tombstones_in_a_row(results: dict, name: str) -> bool:
    """Whether some key of output ``name`` gets a tombstone right after a tombstone."""
    for p in range(PARTITIONS):
        last: dict = {}
        for key, value, _ in results[name, p]:
            if value is None and key in last and last[key] is None:
                return True
            last[key] = value
    return False


def test_chained_table_joins_in_a_clean_run_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, records, spark, tmp_path
):
    inputs = {name: unique_topic(f"clean-chained-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))
    _produce(kafka_bootstrap, inputs, records)
    runner = TaskRunner(chained_join_examples(topics), unique_topic("clean-chained"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    runner.run_all()

    expected = kafka_streams_run.result()["results"]
    _assert_reference_exercises_it(expected)
    actual = _results(kafka_bootstrap, topics)
    for key in sorted(expected, key=str):
        assert actual.get(key) == expected[key], key
    assert set(actual) == set(expected)


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    ours = chained_join_examples(kafka_streams_run.topics).build().describe()
    assert str(ours) == kafka_streams_run.result()["describe"]
