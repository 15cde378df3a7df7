"""Old values carried through materialized tables and suppressions, on Spark against Kafka Streams itself.

One topology (tests/table_old_values_topology.py; Java twin TableOldValuesExamples): a tumbling count
through a materialized filter then a filter that sends old values (both read the filter's store:
Kafka Streams' KTableFilter with a queryable store), through a materialized map_values into a buffer
bounded in bytes (which counts that store's old value), and through a suppression into a buffer
bounded in bytes (which counts the old value the first suppression emits; both with values of 30
or 40 characters, so that an old value counted or not changes which records go out early); a session count through a
materialized filter into a buffer bounded in bytes; a prices table (tombstones) through a
suppression and a filter into a buffer bounded in bytes. Every store is uncached, so what reaches
each processor, and so its output, is fixed by the input. Kafka Streams 4.3.1 runs it once.

Our side runs it clean (batches of 150 records), and killed: a ``dagster-kstreams run`` process,
one task after another in batches of 150 records, SIGKILLed once the second task (0_1) has committed
its first batch; a rerun in this process continues every task from its checkpoint (the filters'
stores and the suppression buffers come back from it).

Input (2 partitions each): keys ``a*`` in partition 0 and ``b*`` in partition 1, so that each key
family is one task's; null keys, null values and tombstones, out-of-order timestamps (within grace
and beyond), and jumps of stream time. Every output topic has one partition: the records of one key
family there are one task's output, in its order.

Compared: describe() of the very topology run, and per output topic and key family the whole
sequence of (key, value, timestamp) records (the timestamp each was written with).
"""

from __future__ import annotations

import json
import random
import time

import pytest
from pyspark import cloudpickle

import oracle_harness
import table_old_values_topology
from equivalence_io import output_topics, produce_strings, windowed_key_reader, written_time
from killed_runs import run_until_killed
from table_old_values_topology import INPUTS, LONG_VALUED, OUTPUT_KEYS, OUTPUTS, table_old_values_examples
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(table_old_values_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute
FAMILIES = ("a", "b")  # the keys of partition 0, of partition 1


def _input(seed: int = 19) -> dict[str, list[tuple]]:
    """``{topic: [(key, value, partition, timestamp)]}`` in production order."""
    rng = random.Random(seed)
    events, base = [], T0
    for i in range(600):
        if i in (200, 420):
            base += 25_000  # a jump of stream time: every window and session before it is closed
        partition = i % PARTITIONS
        timestamp = base + i * 120 + i % 7
        roll = rng.random()
        if roll < 0.12:
            timestamp -= rng.randint(100, 4_500)    # late, mostly within the grace periods
        elif roll < 0.17:
            timestamp -= rng.randint(6_000, 20_000)  # late beyond every grace
        key = None if rng.random() < 0.03 else f"{FAMILIES[partition]}{rng.randint(1, 3)}"
        value = None if rng.random() < 0.05 else f"e{i}"
        events.append((key, value, partition, timestamp))
    prices = []
    for i in range(400):
        partition = i % PARTITIONS
        timestamp = T0 + i * 400 + i % 5
        if rng.random() < 0.15:
            timestamp -= rng.randint(100, 5_000)
        key = None if rng.random() < 0.03 else f"{FAMILIES[partition]}{rng.randint(1, 6)}"
        roll = rng.random()
        value = None if roll < 0.12 else (f"x{i}" if roll < 0.35 else f"p{i}")
        prices.append((key, value, partition, timestamp))
    return {"events": events, "prices": prices}


def _results(bootstrap: str, topics: dict[str, str]) -> dict[tuple[str, str], list]:
    """``{(output, key family): [(key, value, timestamp)] in offset order}``."""
    results: dict[tuple[str, str], list] = {}
    for name in OUTPUTS:
        key_of = windowed_key_reader(OUTPUT_KEYS[name])
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            key = key_of(record.key)
            value = None if record.value is None else (
                int.from_bytes(record.value, "big", signed=True) if name in LONG_VALUED else record.value.decode())
            family = (key[0] if isinstance(key, tuple) else key)[0]
            results.setdefault((name, family), []).append((key, value, written_time(record)))
    return results


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"old-values-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = _input()
    for name in INPUTS:
        produce_strings(kafka_bootstrap, inputs[name], records[name])
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, 1), "ks")
    stdout = oracle_harness.run_main(
        "kstreams.oracle.TableOldValuesExamples",
        [kafka_bootstrap, unique_topic("ks-old-values"), str(tmp_path_factory.mktemp("ks-old-values-state")),
         *(topics[name] for name in (*INPUTS, *OUTPUTS))],
        timeout=600,
    )
    return {"inputs": inputs, "records": records, "describe": json.loads(stdout)["describe"],
            "results": _results(kafka_bootstrap, topics), "topics": topics}


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    ours = table_old_values_examples(kafka_streams_run["topics"]).build().describe()
    assert str(ours) == kafka_streams_run["describe"]


def _assert_reference_exercises_it(expected: dict) -> None:
    """Kafka Streams' output shows what the test is about: the filters drop updates and send
    tombstones, the byte bounds emit a window (key) more than once, tombstones reach the end."""
    assert set(expected) == {(name, family) for name in OUTPUTS for family in FAMILIES}
    for family in FAMILIES:
        kept = expected[("out-kept", family)]
        assert len(kept) > 20 and any(count is None for _, count, _ in kept)
        assert all(count % 4 not in (1, 2) and count % 3 != 2 for _, count, _ in kept if count is not None)
        for name in ("out-padded-bytes", "out-twice-bytes"):  # a window goes out more than once
            sequence = expected[(name, family)]
            assert len(sequence) > 1.5 * len({key for key, _, _ in sequence}) > 20, name
        sessions = expected[("out-sessions-kept", family)]
        assert len(sessions) > 10 and any(count is None for _, count, _ in sessions)
        prices = [value for _, value, _ in expected[("out-prices-twice", family)]]
        assert len(prices) > 20 and None in prices and not any(value and value.startswith("x") for value in prices)


def _assert_same(ours: dict, expected: dict) -> None:
    assert set(ours) == set(expected)
    for output_and_family, sequence in expected.items():
        assert ours[output_and_family] == sequence, output_and_family


def test_old_values_through_tables_in_a_clean_run_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    expected = kafka_streams_run["results"]
    _assert_reference_exercises_it(expected)
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, 1))
    runner = TaskRunner(table_old_values_examples(topics), unique_topic("clean-old-values"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark, max_records_per_batch=150)
    results = runner.run_all()
    assert min(result.batches for result in results) >= 2  # the stores and buffers went from batch to batch
    _assert_same(_results(kafka_bootstrap, topics), expected)


def test_old_values_through_tables_killed_part_way_and_rerun_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, 1))
    app_id = unique_topic("spark-old-values")
    state = tmp_path / "state"
    lines = run_until_killed(tmp_path, "table_old_values_topology:table_old_values_examples", topics, app_id=app_id,
                             bootstrap=kafka_bootstrap, state=state,
                             kill_when=lambda line: line.startswith("task 0_1 batch"),
                             extra_args=("--parallelism", "1", "--max-records-per-batch", "150"))
    assert any(line.startswith("task 0_0 batch") for line in lines)
    on_partition_1 = sum(1 for record in kafka_streams_run["records"]["events"] if record[2] == 1)

    runner = TaskRunner(table_old_values_examples(topics), app_id, kafka_bootstrap, state_location=str(state),
                        spark=spark)
    results = {result.task_id: result for result in runner.run_all()}
    assert 0 < results["0_1"].records_in < on_partition_1  # task 0_1 continued from its checkpoint
    _assert_same(_results(kafka_bootstrap, topics), kafka_streams_run["results"])
