"""PySpark Column expressions after state on Spark against Kafka Streams itself
(tests/after_state_topology.py; Java twin ColumnsAfterStateExamples, whose lambdas do what the
Columns do).

The Columns after an uncached count (a ``map_values``; a ``filter`` and a ``map_values``), after an
uncached reduce (a ``flat_map_values``: two records of each update, one after the other), after a
user processor (a ``filter``: the events' sub-topology runs task-grouped) and after a table's stream
(a ``filter_not`` and a ``map_values`` of tombstones too, to a repartition topic, which keeps the
records' timestamps: stamped behind it) run in the JVM on the state's output rows
(spark/column_hand_back.py). Kafka Streams 4.3.1 runs the whole input once.

Input (2 partitions): events and table updates keyed by user (three users in each partition), null
keys (skipped by the count, the reduce and the table), null values (the reduce skips them; table
tombstones), values ending in "x" (the table's Column ``filter_not`` drops them), out-of-order
timestamps, and a header on each record naming it (Kafka Streams forwards a record's headers with
every update it causes). Our side runs it in micro-batches of 40 records, killed in another process
once task 0_0 has committed its first batch, and rerun here.

Compared: describe() of the very topology run; per output topic and partition the whole sequence of
(key, value, headers, timestamp) records (the timestamp each was written with), less the runner's own
``__dagster_kstreams.*`` headers (the table's values with their timestamps too, stamped behind the
repartition topic); a null key's records of an output, which
the producer places in any partition, as one multiset.
"""

from __future__ import annotations

import random
import time

import pytest
from pyspark import cloudpickle

import after_state_topology
from after_state_topology import INPUTS, OUTPUTS, after_state_examples
from equivalence_io import KafkaStreamsInBackground, output_topics, written_time
from killed_runs import kill_and_rerun
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import produce, read_topic
from dagster_kstreams.kafka.timestamp_header import INTERNAL_HEADER_PREFIX
from dagster_kstreams.spark.column_hand_back import ColumnsAfterState
from dagster_kstreams.spark.strategies import KeyedState, TaskGroupedState, strategy_for
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(after_state_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute
USERS = ("u1", "u2", "u3", "u5", "u11", "u15")  # three in each partition (murmur2)
SIZES = {"events": 160, "table": 120}


def _records(rng: random.Random, topic: str) -> list[tuple]:
    """``[(key, value, partition, timestamp, headers)]`` (bytes) of one input, in production order."""
    records = []
    for i in range(SIZES[topic]):
        key = None if rng.random() < 0.06 else rng.choice(USERS)
        roll = rng.random()
        value = None if roll < 0.1 else f"{topic[0]}{i}" + ("x" if roll > 0.85 else "")
        timestamp = T0 + i * 100 - (rng.randint(100, 5_000) if rng.random() < 0.2 else 0)
        partition = default_partition(key.encode(), PARTITIONS) if key is not None else rng.randrange(PARTITIONS)
        records.append((None if key is None else key.encode(), None if value is None else value.encode(),
                        partition, timestamp, [("n", f"{topic[0]}{i}".encode())]))
    return records


def _input(seed: int = 24) -> dict[str, list[tuple]]:
    rng = random.Random(seed)
    return {topic: _records(rng, topic) for topic in INPUTS}


def _produce(bootstrap: str, topics: dict[str, str], records: dict[str, list[tuple]]) -> None:
    for name in INPUTS:
        produce(bootstrap, topics[name], records[name])


def _results(bootstrap: str, topics: dict[str, str]) -> dict[tuple, list]:
    """``{(output, partition): [(key, value, headers, timestamp)]}`` in offset order, strings; a null
    key's records of an output, which the producer places in any partition (Kafka Streams' and ours
    alike), as ``{(output, None): sorted [(None, value, headers, timestamp)]}``."""
    results: dict[tuple, list] = {}
    for name in OUTPUTS:
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            headers = tuple((header, None if data is None else data.decode()) for header, data in record.headers
                            if not header.startswith(INTERNAL_HEADER_PREFIX))
            key = None if record.key is None else record.key.decode()
            results.setdefault((name, None if key is None else record.partition), []).append(
                (key, None if record.value is None else record.value.decode(), headers, written_time(record)))
    return {group: sorted(sequence, key=repr) if group[1] is None else sequence for group, sequence in results.items()}


@pytest.fixture(scope="module")
def records():
    return _input()


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory, records):
    run = KafkaStreamsInBackground(
        "kstreams.oracle.ColumnsAfterStateExamples", "after-state", kafka_bootstrap, kafka_admin, unique_topic,
        tmp_path_factory.mktemp("ks-after-state"), INPUTS, OUTPUTS, PARTITIONS,
        lambda inputs: _produce(kafka_bootstrap, inputs, records), _results)
    yield run
    run.close()


def _assert_reference_exercises_it(expected: dict) -> None:
    """Every output on both partitions; thirds filtered out of the counts; both records of each
    reduced update; tombstones mapped and values ending in "x" dropped; headers carried."""
    assert {(name, p) for name in OUTPUTS for p in range(PARTITIONS)} <= set(expected)
    assert len(expected["out-stamped", None]) > 2  # null keys through a Column after a user processor
    for partition in range(PARTITIONS):
        counts = [value for _, value, _, _ in expected["out-counts", partition]]
        thirds = [value for _, value, _, _ in expected["out-thirds", partition]]
        assert len(counts) > 20 and 0 < len(thirds) < len(counts) // 2
        twice = [value for _, value, _, _ in expected["out-twice", partition]]
        assert any("," in value for value in twice) and all(a.upper() == b for a, b in zip(twice[::2], twice[1::2]))
        table = [value for _, value, _, _ in expected["out-table", partition]]
        assert any(value.startswith("gone|t") for value in table) and not any("x|t" in value for value in table)
        assert all(headers for name in OUTPUTS for _, _, headers, _ in expected[name, partition])


def test_columns_after_state_killed_part_way_and_rerun_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, records, spark, tmp_path
):
    expected = kafka_streams_run.result()["results"]
    _assert_reference_exercises_it(expected)
    inputs = {name: unique_topic(f"spark-after-state-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))
    _produce(kafka_bootstrap, inputs, records)
    rerun = kill_and_rerun(tmp_path, after_state_examples, topics, app_id=unique_topic("spark-after-state"),
                           bootstrap=kafka_bootstrap, spark=spark,
                           kill_when=lambda line: line.startswith("task 0_0 batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", "40"),
                           max_records_per_batch=40)
    partition_events = sum(1 for record in records["events"] if record[2] == 0)
    assert 0 < rerun.by_task["0_0"].records_in < partition_events  # continued from its checkpoint
    compiled = rerun.runner.compiled
    for subtopology, strategy in ((0, TaskGroupedState), (1, KeyedState)):
        program = compiled.program(subtopology)
        assert isinstance(program.columns_after_state, ColumnsAfterState) and program.column_plan is None
        assert type(strategy_for(program)) is strategy

    ours = _results(kafka_bootstrap, topics)
    assert set(ours) == set(expected)
    for output_and_partition in sorted(expected, key=repr):
        assert ours[output_and_partition] == expected[output_and_partition], output_and_partition


def test_columns_after_state_in_a_clean_run_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, records, spark, tmp_path
):
    inputs = {name: unique_topic(f"clean-after-state-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))
    _produce(kafka_bootstrap, inputs, records)
    runner = TaskRunner(after_state_examples(topics), unique_topic("clean-after-state"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark, max_records_per_batch=40,
                        processing_guarantee="at_least_once")
    results = runner.run_all()
    assert min(result.batches for result in results if result.records_in) >= 2

    expected = kafka_streams_run.result()["results"]
    ours = _results(kafka_bootstrap, topics)
    assert set(ours) == set(expected)
    for output_and_partition in sorted(expected, key=repr):
        assert ours[output_and_partition] == expected[output_and_partition], output_and_partition


def test_describe_of_the_topology_run_is_kafka_streams(spark, kafka_streams_run):  # spark: Columns need it
    ours = after_state_examples(kafka_streams_run.topics).build().describe()
    assert str(ours) == kafka_streams_run.result()["describe"]
