"""Stores that write keys with different serdes, in a sub-topology whose sources read keys with
different serdes, on Spark against Kafka Streams itself (issue 14).

One topology (tests/key_serde_topology.py; Java twin KeySerdeExamples): calls keyed by strings
(``"u7"``, and ``"U7"``: the same user written otherwise) merged with texts keyed by the user's
number as a Long (read as ``"u7"``), grouped by key; an uncached count whose store writes keys with
the String serde (``"U7"`` and ``"u7"`` are two counts, each fed by both topics for ``"u7"``) and an
uncached reduce whose store writes keys in lower case (one aggregate for all three); an uncached
reduce whose store writes keys as the user's number (a Long), and a user processor on the merged
stream connected to the count's store and the Long-keyed one, reading both for each record, adding
100 to the count and replacing the Long-keyed value now and then, deleting the key from both on a
null value. The runner runs it task-grouped, each store keyed by its own serde's bytes, the
processor finding each store's state by the key as that store's serde writes it.

Input: 2 partitions per topic, every form of a user in the partition of ``"u<n>"`` (murmur2), so
task ``p`` sees all of a user's records; null keys, null values, timestamps out of order within a
partition, no two alike (Kafka Streams' timestamp merge and ours then agree). In two halves, every
record of the second after every record of the first in the merge. Kafka Streams 4.3.1 runs the
whole input once. Our side runs it clean (both halves at once, every task from an empty state), and
killed: a ``dagster-kstreams run`` process takes the first half in small batches and is SIGKILLed
after task 0_0's first batch; the second half is produced and a rerun continues every task.

Compared: describe(), and for each output partition and task the whole sequence of records, each
with the timestamp it was written with (outputs have 2 partitions: both tasks write each, so a
partition's records are split by the task that wrote them, each task's in its order).
"""

from __future__ import annotations

import random
import re
import struct
import time

import pytest
from pyspark import cloudpickle

import key_serde_topology
from equivalence_io import (KafkaStreamsInBackground, output_topics, produce_strings, with_unique_timestamps,
                            written_time)
from key_serde_topology import INPUTS, OUTPUTS, UserIdSerde, key_serde_examples
from killed_runs import run_until_killed
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import produce, read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(key_serde_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention)
HALF_MS = 30_000
USERS = (1, 2, 3, 5, 11, 15)
SIZES = {"calls": 90, "texts": 60}  # per half
USER_ID = UserIdSerde()


def _task(user: str) -> int:
    """The task (partition) of every form of a user: that of ``"u<n>"``."""
    return default_partition(user.lower().encode(), PARTITIONS)


def _half(rng: random.Random, topic: str, start: int) -> list[tuple]:
    """``(key, value, partition, timestamp)`` of one half of a topic; calls write a user as "u<n>"
    or "U<n>", texts as "u<n>" (written by UserIdSerde)."""
    records = []
    for i, base in enumerate(sorted(rng.randrange(start, start + HALF_MS) for _ in range(SIZES[topic]))):
        user = None if rng.random() < 0.06 else f"{'U' if topic == 'calls' and rng.random() < 0.4 else 'u'}" \
                                                 f"{rng.choice(USERS)}"
        value = None if rng.random() < 0.07 else f"{topic[0]}{i}."
        partition = _task(user) if user is not None else rng.randrange(PARTITIONS)
        timestamp = base - (rng.randint(100, 5_000) if rng.random() < 0.15 else 0)  # out of order now and then
        records.append((user, value, partition, max(start, timestamp)))
    return records


def _input(seed: int = 19) -> list[dict[str, list[tuple]]]:
    rng = random.Random(seed)
    halves = [{topic: _half(rng, topic, T0 + offset) for topic in INPUTS} for offset in (0, HALF_MS + 10_000)]
    return with_unique_timestamps(halves, INPUTS)


def _produce(bootstrap: str, inputs: dict[str, str], records: dict[str, list[tuple]]) -> None:
    produce_strings(bootstrap, inputs["calls"], records["calls"])
    produce(bootstrap, inputs["texts"], [(USER_ID.serialize(key), None if value is None else value.encode(),
                                          partition, timestamp) for key, value, partition, timestamp in records["texts"]])


def _results(bootstrap: str, topics: dict[str, str]) -> dict[tuple[str, int, int], list]:
    """``{(output, output partition, task): [(key, value, timestamp written with)] in offset order}``."""
    results: dict[tuple[str, int, int], list] = {}
    for name in OUTPUTS:
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            key = record.key.decode()
            value = None if record.value is None else (
                struct.unpack(">q", record.value)[0] if name == "out-counts" else record.value.decode())
            results.setdefault((name, record.partition, _task(key)), []).append((key, value, written_time(record)))
    return results


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    halves = _input()

    def write_inputs(inputs):
        for half in halves:
            _produce(kafka_bootstrap, inputs, half)

    run = KafkaStreamsInBackground("kstreams.oracle.KeySerdeExamples", "key-serdes", kafka_bootstrap, kafka_admin,
                                   unique_topic, tmp_path_factory.mktemp("ks-key-serdes-state"), INPUTS, OUTPUTS,
                                   PARTITIONS, write_inputs, _results)
    run.halves = halves
    yield run
    run.close()


def _our_topics(kafka_admin, unique_topic, name: str) -> dict[str, str]:
    inputs = {topic: unique_topic(f"{name}-{topic}") for topic in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    return output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))


def _assert_reference_exercises_it(expected: dict) -> None:
    """Kafka Streams' output shows what the test is about, on both tasks: the count keeps "U<n>" and
    "u<n>" apart, the reduce folds them into one aggregate, and both count a text with the "u<n>" call;
    the processor's writes are what the count goes on from (+100, from 1 again after a delete), and
    it reads through "U<n>" what texts (Long keys) put into the Long-keyed store."""
    assert {task for _, _, task in expected} == set(range(PARTITIONS))
    counts: dict[str, list[int]] = {}
    folded: dict[str, str] = {}
    audits: list[tuple[str, list[str]]] = []
    for (name, _, _), records in expected.items():
        for key, value, _ in records:
            if name == "out-counts":
                counts.setdefault(key, []).append(value)
            elif name == "out-folded":
                folded[key.lower()] = value
            else:
                audits.append((key, value.split("|")))
    assert any(key.startswith("U") for key in counts) and any(key.startswith("u") for key in counts)
    for user, aggregate in folded.items():  # one aggregate of calls of both forms and texts
        assert "c" in aggregate and "t" in aggregate, user
    assert any(len(counts.get(user, [])) + len(counts.get(user.upper(), [])) > 1 and user.upper() in counts
               for user in folded)
    assert any(value > 100 for sequence in counts.values() for value in sequence)  # onto the processor's put
    assert any(1 in sequence[1:] for sequence in counts.values())  # from 1 again after its delete
    actions = {fields[0] for _, fields in audits}
    assert actions == {"read", "reset", "deleted"}, actions
    # a text's value ("t<i>.") read through "U<n>"
    assert any(key.startswith("U") and re.search(r"t\d", fields[3]) for key, fields in audits if fields[0] == "read")


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    ours = key_serde_examples(kafka_streams_run.topics).build().describe()
    assert str(ours) == kafka_streams_run.result()["describe"]


def test_a_clean_run_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, spark,
                                           tmp_path):
    topics = _our_topics(kafka_admin, unique_topic, "clean-key-serdes")
    for half in kafka_streams_run.halves:
        _produce(kafka_bootstrap, topics, half)
    runner = TaskRunner(key_serde_examples(topics), unique_topic("clean-key-serdes"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    assert runner.compiled.program(0).task_grouped
    runner.run_all()
    expected = kafka_streams_run.result()["results"]
    _assert_reference_exercises_it(expected)
    assert _results(kafka_bootstrap, topics) == expected


def test_killed_part_way_and_rerun_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic,
                                                         kafka_streams_run, spark, tmp_path):
    topics = _our_topics(kafka_admin, unique_topic, "killed-key-serdes")
    first, second = kafka_streams_run.halves
    _produce(kafka_bootstrap, topics, first)
    app_id = unique_topic("killed-key-serdes")
    state = tmp_path / "state"
    run_until_killed(tmp_path, "key_serde_topology:key_serde_examples", topics, app_id=app_id,
                     bootstrap=kafka_bootstrap, state=state, kill_when=lambda line: line.startswith("task 0_0 batch"),
                     extra_args=("--parallelism", "1", "--max-records-per-batch", "40"))
    _produce(kafka_bootstrap, topics, second)
    runner = TaskRunner(key_serde_examples(topics), app_id, kafka_bootstrap, state_location=str(state), spark=spark)
    results = {result.task_id: result for result in runner.run_all()}
    # Task 0_0 continued from its checkpoint: it did not read its first batch again.
    both_halves = sum(1 for half in (first, second) for name in INPUTS for _, _, partition, _ in half[name]
                      if partition == 0)
    assert 0 < results["0_0"].records_in < both_halves
    assert _results(kafka_bootstrap, topics) == kafka_streams_run.result()["results"]
