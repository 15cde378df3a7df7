"""Stream-stream joins fed by stream-global-table joins on Spark against Kafka Streams itself.

One topology (tests/global_stream_join_topology.py; Java twin GlobalStreamJoinExamples): orders
left-joined with a global table of profiles (each order mapped to its profile by a key selector on
its value), then outer-joined with payments; and joined (inner) with the profiles, then joined
with the payments: both stream-stream joins in the orders' sub-topology, after the global joins.
Kafka Streams 4.3.1 runs the whole input once (its global store bootstrapped from the whole
profile topic first; outer-join emit interval 0; ``max.task.idle.ms``).

Input: profiles on 2 partitions, written before the streams (updated keys, a tombstone, profiles
the orders name but the table never had); orders and payments on 2 partitions, keyed by user, with
null keys, null values, orders with no profile (``-``), records out of order within the joins'
grace and beyond. Our side runs it clean (the whole input in one micro-batch per task: across a
batch boundary the order of two topics may differ, README "Order across co-partitioned inputs"),
and killed: the input in two halves, every record of the second after every record of the first in
the timestamp merge; a ``dagster-kstreams run`` process takes the first half and is SIGKILLed once a
task has committed it; the second half is produced and a rerun in another process (this one)
continues each task from its checkpoint (the join buffers and stream times; the global table read
again).

Compared: describe() of the very topology run, and per output topic and partition the whole
sequence of (key, value, timestamp) records with a key; the null-keyed orders and payments that the
left and outer joins pass on unjoined (KIP-962) go to the partition the producer picks, in Kafka
Streams as here, so they are compared per task as a sorted list of (value, timestamp).
"""

from __future__ import annotations

import random
import re
import time

import pytest
from pyspark import cloudpickle

import global_stream_join_topology
import oracle_harness
from equivalence_io import output_topics, produce_strings, with_unique_timestamps, written_time
from global_stream_join_topology import INPUTS, OUTPUTS, global_stream_join_examples
from killed_runs import run_until_killed
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(global_stream_join_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute
HALF_MS = 40_000
SECOND_HALF = HALF_MS + 10_000
SIZES = {"orders": 150, "payments": 150}  # per half
USERS = ("u1", "u2", "u3", "u5", "u11", "u15")  # three in each partition (murmur2)
STREAMS = ("orders", "payments")


def _partition(key: str) -> int:
    return default_partition(key.encode(), PARTITIONS)


def _profiles() -> list[tuple]:
    """``(key, value, partition, timestamp)``: p0..p5 (p2 updated, p4 deleted); orders also name p6
    and p7, which the table never had."""
    records = [(f"p{i}", f"P{i}", i % PARTITIONS, T0 - 60_000 + i) for i in range(6)]
    records += [("p2", "P2-new", 0, T0 - 50_000), ("p4", None, 0, T0 - 49_000)]
    return records


def _half(rng: random.Random, topic: str, half: int, start: int) -> list[tuple]:
    records = []
    for i, base in enumerate(sorted(rng.randrange(start, start + HALF_MS) for _ in range(SIZES[topic]))):
        key = None if rng.random() < 0.05 else rng.choice(USERS)
        if topic == "orders":
            profile = "-" if rng.random() < 0.08 else f"p{rng.randint(0, 7)}"
            value = f"{profile},o{half}-{i}"
        else:
            value = f"y{half}-{i}"
        if rng.random() < 0.05:
            value = None
        timestamp, roll = base, rng.random()
        if roll < 0.12:
            timestamp -= rng.randint(100, 1_500)  # late, within the graces
        elif roll < 0.20:
            timestamp -= rng.randint(4_000, 9_000)  # late beyond them
        partition = _partition(key) if key is not None else rng.randrange(PARTITIONS)
        records.append((key, value, partition, max(start, timestamp)))
    return records


def _input(seed: int = 15) -> list[dict[str, list[tuple]]]:
    """The two halves of the streams, ``[{topic: records}]``; no two records share a timestamp."""
    rng = random.Random(seed)
    halves = [{topic: _half(rng, topic, half, T0 + offset) for topic in STREAMS}
              for half, offset in enumerate((0, SECOND_HALF))]
    return with_unique_timestamps(halves, STREAMS)


def _input_partitions(halves) -> dict[str, int]:
    """The input partition of each order and payment, by its id (``o0-3``, ``y1-20``)."""
    return {value.split(",")[-1]: partition for half in halves for name in STREAMS
            for _, value, partition, _ in half[name] if value is not None}


def _results(bootstrap: str, topics: dict[str, str], partitions: dict[str, int]) -> dict[tuple, list]:
    """``{(output, partition): [(key, value, timestamp)] in offset order}`` of the records with a key (in the
    key's partition, as the task's input), and ``{(output, task partition, "null keys"): sorted}``
    of those without: left and outer joins pass a null-keyed order or payment on unjoined (KIP-962),
    to the partition the producer picks, in Kafka Streams as here; each is attributed to the task
    that read it by the id in its value."""
    results: dict[tuple, list] = {}
    for name in OUTPUTS:
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            value = None if record.value is None else record.value.decode()
            if record.key is not None:
                results.setdefault((name, record.partition), []).append(
                    (record.key.decode(), value, written_time(record)))
            else:
                task = partitions[re.search(r"[oy]\d-\d+", value).group()]
                results.setdefault((name, task, "null keys"), []).append((value, written_time(record)))
    return {key: sorted(rows) if len(key) == 3 else rows for key, rows in results.items()}


def _produce_streams(bootstrap: str, inputs: dict[str, str], records: dict[str, list[tuple]]) -> None:
    for name in STREAMS:
        produce_strings(bootstrap, inputs[name], records[name])


def _new_inputs(bootstrap: str, kafka_admin, unique_topic, prefix: str) -> dict[str, str]:
    """New input topics, the profiles written (before any stream record, as both sides read them)."""
    inputs = {name: unique_topic(f"{prefix}-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    produce_strings(bootstrap, inputs["profiles"], _profiles())
    return inputs


class _KafkaStreamsRun:
    """Kafka Streams' run, started in the background while our side runs; :meth:`result` waits for it."""

    def __init__(self, bootstrap, kafka_admin, unique_topic, state_dir, halves):
        self.halves = halves
        inputs = _new_inputs(bootstrap, kafka_admin, unique_topic, "kafka-gsj")
        for half in halves:
            _produce_streams(bootstrap, inputs, half)
        self.topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, PARTITIONS), "ks")
        args = [bootstrap, unique_topic("ks-gsj"), str(state_dir), *(self.topics[name] for name in INPUTS),
                *(self.topics[name] for name in OUTPUTS)]
        self._main = oracle_harness.BackgroundMain("kstreams.oracle.GlobalStreamJoinExamples", args)
        self._bootstrap = bootstrap
        self._result = None

    def result(self) -> dict:
        if self._result is None:
            self._result = {**self._main.report(), "results": _results(self._bootstrap, self.topics,
                                                                       _input_partitions(self.halves))}
        return self._result

    def close(self) -> None:
        self._main.close()


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    run = _KafkaStreamsRun(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory.mktemp("ks-gsj-state"),
                           _input())
    yield run
    run.close()


def _assert_reference_exercises_it(expected: dict) -> None:
    """Both outputs on both partitions; left-joined orders with no profile, outer results with no
    partner on either side, the updated profile and no deleted one in inner results."""
    assert {key for key in expected if len(key) == 2} == {(name, p) for name in OUTPUTS for p in range(PARTITIONS)}
    assert {key for key in expected if len(key) == 3} == {("out-left-outer", p, "null keys") for p in range(PARTITIONS)}
    for partition in range(PARTITIONS):
        outer = [value for _, value, _ in expected["out-left-outer", partition]]
        inner = [value for _, value, _ in expected["out-inner", partition]]
        assert len(outer) > len(inner) > 20
        assert any("|null&y" in value for value in outer) and any(value.endswith("&null") for value in outer)
        assert any(":null&y" in value for value in outer)
        assert not any("|P4&" in value or "|null&" in value for value in inner)
    assert any("|P2-new&" in value for key, rows in expected.items() if key[0] == "out-inner"
               for _, value, _ in rows)


def test_stream_joins_after_global_joins_in_a_clean_run_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, spark, tmp_path
):
    inputs = _new_inputs(kafka_bootstrap, kafka_admin, unique_topic, "clean-gsj")
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))
    for half in kafka_streams_run.halves:
        _produce_streams(kafka_bootstrap, inputs, half)
    runner = TaskRunner(global_stream_join_examples(topics), unique_topic("clean-gsj"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    results = runner.run_all()
    assert {result.task_id for result in results} == {"1_0", "1_1"}  # the global store makes no task

    expected = kafka_streams_run.result()["results"]
    _assert_reference_exercises_it(expected)
    assert _results(kafka_bootstrap, topics, _input_partitions(kafka_streams_run.halves)) == expected


def test_stream_joins_after_global_joins_killed_part_way_and_rerun_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, spark, tmp_path
):
    inputs = _new_inputs(kafka_bootstrap, kafka_admin, unique_topic, "spark-gsj")
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))
    first, second = kafka_streams_run.halves
    _produce_streams(kafka_bootstrap, inputs, first)
    app_id = unique_topic("spark-gsj")
    state = tmp_path / "state"
    run_until_killed(tmp_path, "global_stream_join_topology:global_stream_join_examples", topics, app_id=app_id,
                     bootstrap=kafka_bootstrap, state=state, kill_when=lambda line: line.startswith("task 1_0 batch"),
                     extra_args=("--max-records-per-batch", "5000"))

    _produce_streams(kafka_bootstrap, inputs, second)
    runner = TaskRunner(global_stream_join_examples(topics), app_id, kafka_bootstrap, state_location=str(state),
                        spark=spark, max_records_per_batch=5000)
    results = {result.task_id: result for result in runner.run_all()}
    both_halves = sum(1 for half in (first, second) for name in STREAMS for *_, partition, _ in half[name]
                      if partition == 0)
    assert 0 < results["1_0"].records_in < both_halves  # task 1_0 continued from its checkpoint

    assert _results(kafka_bootstrap, topics, _input_partitions(kafka_streams_run.halves)) == \
        kafka_streams_run.result()["results"]


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    ours = global_stream_join_examples(kafka_streams_run.topics).build().describe()
    assert str(ours) == kafka_streams_run.result()["describe"]
