"""A source subscribed by a pattern on Spark against Kafka Streams itself (issue 14).

One topology (tests/pattern_topology.py; Java twin PatternExamples): ``builder.stream(pattern)``
over three topics with 3, 2 and 1 partitions (a fourth topic the pattern does not match is
written too, and must never be read), a stateless step (keyed records but those ending in 7,
upper-cased; tombstones pass) and an uncached count by the group the value names after a
repartition. Task ``p`` reads partition ``p`` of each matched topic that has it (3 tasks), and
Kafka Streams merges them by timestamp; timestamps are distinct, interleaved across the topics,
and out of order now and then within a partition.

Keys are chosen so that what task ``p`` writes lands in partition ``p`` of every topic it writes
(murmur2 of the key, 3 partitions): each output partition (and each partition of the repartition
topic) then has one writer, and its WHOLE sequence of records ``(key, value, timestamp)`` is compared
(the timestamp each was written with), which shows the task's processing order across the matched
topics. Kafka Streams 4.3.1 runs it once; our side runs a clean run with the partition counts
declared (as the definitions do, the non-matching topic among them), and a run killed part way in a
``dagster-kstreams run`` process (the pattern matched against the broker's topics) and rerun.
"""

from __future__ import annotations

import json
import random
import time

import pytest
from pyspark import cloudpickle

import oracle_harness
import pattern_topology
from equivalence_io import output_topics, produce_strings, written_time
from killed_runs import run_until_killed
from pattern_topology import OUTPUTS, pattern_examples
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(pattern_topology)

T0 = (int(time.time()) - 3600) * 1000  # recent (broker retention)
MATCHED = {"a": 3, "b": 2, "c": 1}  # suffix: partitions
IGNORED = ("x", 2)  # a topic beside them that the pattern does not match
TASKS = max(MATCHED.values())
# Keys (and groups) whose murmur2 partition among 3 is p: written by task p only, wherever they go.
GROUPS = [[key for key in (f"g{n}" for n in range(60)) if default_partition(key.encode(), TASKS) == p][:3]
          for p in range(TASKS)]


def _input(seed: int = 14) -> dict[str, list[tuple]]:
    """``{suffix: [(key, value, partition, timestamp)]}``: distinct timestamps rising by 100 ms from
    record to record across the topics, about one in six moved back by up to 3 s; null keys (counted
    by their value's group) and tombstones."""
    rng = random.Random(seed)
    records: dict[str, list[tuple]] = {suffix: [] for suffix in [*MATCHED, IGNORED[0]]}
    taken: set[int] = set()
    for i in range(420):
        suffix = rng.choice(["a", "a", "b", "b", "c", IGNORED[0]])
        partition = rng.randrange(MATCHED.get(suffix, IGNORED[1]))
        timestamp = T0 + i * 100 - (rng.randrange(3000) if rng.random() < 1 / 6 else 0)
        while timestamp in taken:
            timestamp += 1
        taken.add(timestamp)
        key = None if rng.random() < 0.05 else rng.choice(GROUPS[partition])
        value = None if rng.random() < 0.08 else f"{rng.choice(GROUPS[partition])}:{suffix}{i}"
        records[suffix].append((key, value, partition, timestamp))
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
    base = unique_topic("pattern-in")
    inputs = {suffix: f"{base}-{suffix}" for suffix in [*MATCHED, IGNORED[0]]}
    kafka_admin.create_topics({inputs[suffix]: count for suffix, count in [*MATCHED.items(), IGNORED]})
    records = _input()
    for suffix, topic in inputs.items():
        produce_strings(kafka_bootstrap, topic, records[suffix])
    pattern = f"{base}-[{''.join(MATCHED)}]"
    topics = output_topics(kafka_admin, unique_topic, {"pattern": pattern}, dict.fromkeys(OUTPUTS, TASKS), "ks")
    app_id = unique_topic("ks-pattern")
    stdout = oracle_harness.run_main(
        "kstreams.oracle.PatternExamples",
        [kafka_bootstrap, app_id, str(tmp_path_factory.mktemp("ks-pattern-state")), pattern,
         *(topics[name] for name in OUTPUTS), *(inputs[suffix] for suffix in MATCHED)],
        timeout=600,
    )
    return {"inputs": inputs, "pattern": pattern, "records": records, "describe": json.loads(stdout)["describe"],
            "sequences": _sequences(kafka_bootstrap, topics),
            "outputs": {name: topics[name] for name in OUTPUTS}}


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    topics = {"pattern": kafka_streams_run["pattern"], **kafka_streams_run["outputs"]}
    assert str(pattern_examples(topics).build().describe()) == kafka_streams_run["describe"]


def _assert_reference_exercises_it(kafka_streams_run) -> None:
    """Kafka Streams read the matched topics only, merged each task's partitions by timestamp (not
    topic by topic), and wrote tombstones and counts of null-keyed records."""
    expected, records = kafka_streams_run["sequences"], kafka_streams_run["records"]
    mapped, counts = expected["out-mapped"], expected["out-counts"]
    assert sorted(mapped) == sorted(counts) == list(range(TASKS))
    values = [value for partition in mapped.values() for _, value, _ in partition]
    assert None in values and not any(value and value.endswith("7") for value in values)
    assert not any(f":{IGNORED[0].upper()}" in value for value in values if value)
    matched_values = {value for suffix in MATCHED for _, value, _, _ in records[suffix] if value}
    counted = sum(1 for suffix in MATCHED for _, value, _, _ in records[suffix] if value)
    assert sum(len(partition) for partition in counts.values()) == counted
    assert any(key is None and value in matched_values for suffix in MATCHED for key, value, _, _ in records[suffix])
    # Task 0 reads three topics: its output switches between them many times, and not in offset order.
    topics_in_order = [value.split(":")[1][0] for _, value, _ in mapped[0] if value]
    switches = sum(1 for before, after in zip(topics_in_order, topics_in_order[1:]) if before != after)
    assert set(topics_in_order) == {"A", "B", "C"} and switches > 20


def test_pattern_source_clean_run_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                                        kafka_streams_run):
    _assert_reference_exercises_it(kafka_streams_run)
    inputs = kafka_streams_run["inputs"]
    topics = output_topics(kafka_admin, unique_topic, {"pattern": kafka_streams_run["pattern"]},
                           dict.fromkeys(OUTPUTS, TASKS))
    app_id = unique_topic("spark-pattern")
    # As a worker run is made: the counts the definitions declared (a topic the pattern does not match among them).
    declared = {inputs[suffix]: count for suffix, count in [*MATCHED.items(), IGNORED]}
    runner = TaskRunner(pattern_examples(topics), app_id, kafka_bootstrap, state_location=str(tmp_path / "state"),
                        spark=spark, source_partitions=declared)
    assert runner.application.source_topics(0) == [inputs[suffix] for suffix in MATCHED]
    assert runner.task_ids() == [f"{sub}_{p}" for sub in (0, 1) for p in range(TASKS)]
    runner.run_all()
    assert _sequences(kafka_bootstrap, topics) == kafka_streams_run["sequences"]


def test_pattern_source_killed_part_way_and_rerun_matches_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    topics = output_topics(kafka_admin, unique_topic, {"pattern": kafka_streams_run["pattern"]},
                           dict.fromkeys(OUTPUTS, TASKS))
    app_id = unique_topic("spark-pattern-killed")
    state = tmp_path / "state"
    # --parallelism 1: one task after another (0_0, 0_1, 0_2, then sub-topology 1); killed once task
    # 0_0 (three topics, one batch: the merge holds within a batch) has processed its batch.
    lines = run_until_killed(tmp_path, "pattern_topology:pattern_examples", topics, app_id=app_id,
                             bootstrap=kafka_bootstrap, state=state, kill_when=lambda line: line.startswith("task 0_0 "),
                             grace_seconds=1, extra_args=("--parallelism", "1"))
    assert not any(line.startswith("task 1_") for line in lines), lines
    # The pattern matched against the broker's topics, as the command line did.
    runner = TaskRunner(pattern_examples(topics), app_id, kafka_bootstrap, state_location=str(state), spark=spark)
    results = {result.task_id: result for result in runner.run_all()}
    assert all(results[f"1_{p}"].records_in for p in range(TASKS))
    assert _sequences(kafka_bootstrap, topics) == kafka_streams_run["sequences"]
