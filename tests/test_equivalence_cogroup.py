"""``cogroup`` on Spark against Kafka Streams itself.

One topology (tests/cogroup_topology.py; Java twin CogroupExamples): a plain cogroup of refunds,
orders re-keyed by their user (a repartition topic) and visits, and on clicks, views and the orders
a hopping-windowed cogroup (also suppressed until its windows close, directly and after a filter,
whose old values decide which updates reach the suppression), and on clicks and views a
sliding-windowed and a session-windowed one (the latter also suppressed until a time limit in
``max_bytes(600)``, emitted early: each buffered record counts its update's old aggregate and its
topic's name, so Kafka Streams' input topics are named as long as ours); visits keyed by the user's number written as a Long
(read as the user by their source's serde: Kafka Streams' one store merges them with the other
inputs' records of the user, and the runner groups that state by the store's key bytes); in a
sub-topology of their own, calls (String keys) merged with texts (Long keys, as visits) then a count
and a tumbling-windowed aggregate of the merged stream, with no cogroup (issue 14: the stores write
every key with the default serde, so both inputs update one aggregate of the user);
and beside the other cogroups of clicks and views, a tumbling and a session cogroup whose stores user
processors read (every fetch form) and edit (resetting, deleting, putting sessions ahead), each input's
next record going on from the edit; every aggregate a string of its latest contributions (so the order
of the updates shows), every store uncached (so the output is fixed by the input). Kafka Streams 4.3.1 runs the whole input
once, waiting for its repartition topics (``max.task.idle.ms``) so that each task merges its
inputs by timestamp.

Our run gets the input in two halves, every record of the second half (its out-of-order ones
included) after every record of the first in the timestamp merge, so that running the halves one
after the other is Kafka Streams' order: a ``dagster-kstreams run`` process takes the first half
(one batch per task, sub-topology after sub-topology) and is SIGKILLed once the first merged task
(3_0, the last sub-topology) has committed; then the second half is produced and a rerun in another process (this
one) continues every task from its checkpoint: the stores, each cogrouped processor's stream time
and the store's come back from it.

Input (2 partitions each, keys placed by murmur2 as the repartition topic places the users; all
orders in partition 0, so that one upstream task fills the repartition topics, in one order):
null keys, null values, records out of order within grace and beyond it. Output topics have one
partition: the records of the keys of one input partition are one task's, in its order.

Compared: describe() of the very topology run, and per output topic and task the whole sequence of
(key, value, timestamp) records (the timestamp each was written with); for the merged sub-topology
and the edited cogroups also in a clean run (the whole input at once, no kill). Kafka Streams runs in
the background meanwhile (on its own input topics).
"""

from __future__ import annotations

import random
import struct
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from pyspark import cloudpickle

import cogroup_topology
import oracle_harness
from cogroup_topology import INPUTS, LONG_VALUED, OUTPUT_KEYS, OUTPUTS, USER_ID_KEYED, UserIdSerde, cogroup_examples
from equivalence_io import output_topics, produce_strings, with_unique_timestamps, written_time
from killed_runs import run_until_killed
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import produce, read_topic
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(cogroup_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute
HALF_MS = 30_000  # each half spans 30 s of timestamps; the second starts 40 s after the first
USERS = ("u1", "u2", "u3", "u5", "u11", "u15")  # three in each partition (murmur2)
SIZES = {"clicks": 120, "views": 120, "orders": 60, "refunds": 50, "visits": 30, "calls": 50, "texts": 40}  # per half
PREFIX = {"clicks": "c", "views": "v", "orders": "o", "refunds": "r", "visits": "s", "calls": "k", "texts": "t"}
USER_ID = UserIdSerde()
MERGED_INPUTS, MERGED_OUTPUTS = ("calls", "texts"), ("out-merged-counts", "out-merged-windowed")
# The cogroups whose stores processors edit (sub-topology 2, beside the other cogroups of clicks and views)
STORE_INPUTS, STORE_OUTPUTS = ("clicks", "views"), ("out-store-windows", "out-store-sessions")


def _partition(key: str) -> int:
    return default_partition(key.encode(), PARTITIONS)


def _half(rng: random.Random, topic: str, start: int) -> list[tuple]:
    """One half of a topic: ``(key, value, partition, timestamp)`` in production order, every
    timestamp within the half's span (late records too): so the second half's records follow the
    first's in the timestamp merge, whichever partition of a repartition topic an order lands in."""
    records = []
    for i, base in enumerate(sorted(rng.randrange(start, start + HALF_MS) for _ in range(SIZES[topic]))):
        user = None if rng.random() < 0.05 else rng.choice(USERS)
        value = None if rng.random() < 0.07 else f"{PREFIX[topic]}{i}"
        if topic == "orders":  # keyed by the order, valued "<user>,<amount>"; the user becomes the key
            key, partition = f"o{start}-{i}", 0
            value = None if value is None or user is None else f"{user},{i}"
        else:
            key = user
            partition = _partition(user) if user is not None else rng.randrange(PARTITIONS)
        timestamp, roll = base, rng.random()
        if roll < 0.12:
            timestamp -= rng.randint(100, 4_000)    # late, mostly within the grace periods
        elif roll < 0.17:
            timestamp -= rng.randint(6_000, 15_000)  # late beyond every grace
        records.append((key, value, partition, max(start, timestamp)))
    return records


def _input(seed: int = 14) -> list[dict[str, list[tuple]]]:
    """The two halves, ``[{topic: records}]``. No two records share a timestamp: Kafka Streams
    breaks a tie between partitions by the order of its internal queue, the runner by topic name
    (README, "Semantics that differ")."""
    rng = random.Random(seed)
    halves = [{topic: _half(rng, topic, T0 + offset) for topic in INPUTS} for offset in (0, HALF_MS + 10_000)]
    return with_unique_timestamps(halves, INPUTS)


def _key_reader(name: str):
    kind = OUTPUT_KEYS[name]
    if kind is None:
        return lambda data: data.decode()
    serde = WindowedSerde(Serdes.String(), session=True) if kind == "session" else WindowedSerde(Serdes.String(), kind)
    return lambda data: (lambda w: (w.key, w.window.start, w.window.end))(serde.deserialize(data))


def _results(bootstrap: str, topics: dict[str, str], outputs=OUTPUTS) -> dict[tuple[str, int], list]:
    """``{(output, task partition): [(key, value, timestamp written with)] in offset order}``."""
    results: dict[tuple[str, int], list] = {}
    for name in outputs:
        key_of = _key_reader(name)
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            key = key_of(record.key)
            user = key[0] if isinstance(key, tuple) else key
            value = None if record.value is None else (
                struct.unpack(">q", record.value)[0] if name in LONG_VALUED else record.value.decode())
            results.setdefault((name, _partition(user)), []).append((key, value, written_time(record)))
    return results


def _produce(bootstrap: str, inputs: dict[str, str], records: dict[str, list[tuple]]) -> None:
    for name in INPUTS:
        if name in USER_ID_KEYED:  # the user's number as a Long, in the partition of the user's string
            produce(bootstrap, inputs[name], [(USER_ID.serialize(key), None if value is None else value.encode(),
                                               partition, timestamp)
                                              for key, value, partition, timestamp in records[name]])
        else:
            produce_strings(bootstrap, inputs[name], records[name])


class _KafkaStreamsRun:
    """Kafka Streams' run, started in the background (it mostly waits: for its group, for its
    repartition topics, for its commits) while our side runs; :meth:`result` waits for it."""

    def __init__(self, bootstrap, kafka_admin, unique_topic, state_dir, halves):
        self.halves = halves
        # As long as our run's input topics (spark-cogroup-...): a buffer bounded in bytes counts the
        # record's topic name.
        inputs = {name: unique_topic(f"kafka-cogroup-{name}") for name in INPUTS}
        kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
        for half in halves:
            _produce(bootstrap, inputs, half)
        self.topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, 1), "ks")
        args = [bootstrap, unique_topic("ks-cogroup"), str(state_dir), *(self.topics[name] for name in INPUTS),
                *(self.topics[name] for name in OUTPUTS)]
        self._main = oracle_harness.BackgroundMain("kstreams.oracle.CogroupExamples", args)
        self._bootstrap = bootstrap
        self._result = None

    def result(self) -> dict:
        """``{"describe": Kafka Streams' describe(), "results": its output (as :func:`_results`)}``."""
        if self._result is None:
            self._result = {"describe": self._main.report()["describe"],
                            "results": _results(self._bootstrap, self.topics)}
        return self._result

    def close(self) -> None:
        self._main.close()


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    run = _KafkaStreamsRun(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory.mktemp("ks-cogroup-state"),
                           _input())
    yield run
    run.close()


def test_cogroup_killed_part_way_and_rerun_matches_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, spark, tmp_path
):
    inputs = {name: unique_topic(f"spark-cogroup-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, 1))
    first, second = kafka_streams_run.halves
    _produce(kafka_bootstrap, inputs, first)
    app_id = unique_topic("spark-cogroup")
    state = tmp_path / "state"
    run_until_killed(tmp_path, "cogroup_topology:cogroup_examples", topics, app_id=app_id,
                     bootstrap=kafka_bootstrap, state=state, kill_when=lambda line: line.startswith("task 3_0 batch"),
                     extra_args=("--parallelism", "2", "--max-records-per-batch", "5000"))

    _produce(kafka_bootstrap, inputs, second)
    runner = TaskRunner(cogroup_examples(topics), app_id, kafka_bootstrap, state_location=str(state), spark=spark,
                        max_records_per_batch=5000)
    # The re-keying sub-topology first: a task reads its repartition topic whole, as Kafka Streams
    # (waiting for it) merged it with its other inputs; then both cogroups' at once.
    results = {}
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="task") as pool:
        for wave in (("0_0", "0_1"), ("1_0", "1_1", "2_0", "2_1", "3_0", "3_1")):
            for result in [future.result() for future in [pool.submit(runner.run_task, task) for task in wave]]:
                results[result.task_id] = result
    # Tasks 2_0 and 3_0 continued from their checkpoints: they did not read the first half again.
    for task, topics_read in (("2_0", ("clicks", "views")), ("3_0", ("calls", "texts"))):
        both_halves = sum(1 for half in (first, second) for name in topics_read for _, _, partition, _ in half[name]
                          if partition == 0)
        assert 0 < results[task].records_in < both_halves, task

    expected = kafka_streams_run.result()["results"]
    _assert_reference_exercises_it(expected)
    ours = _results(kafka_bootstrap, topics)
    assert set(ours) == set(expected)
    for output_and_task, sequence in expected.items():
        assert ours[output_and_task] == sequence, output_and_task


def test_the_merged_sub_topology_and_the_edited_cogroups_in_one_clean_run_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, spark, tmp_path
):
    """The merge of keys read differently (sub-topology 3) and the cogroups whose stores processors
    edit (sub-topology 2, fed by clicks and views only: the orders reach other cogroups) in one run
    that nobody kills: the whole input of their topics at once, each task in one process from an
    empty state."""
    inputs = {name: unique_topic(f"clean-cogroup-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, 1))
    for half in kafka_streams_run.halves:
        _produce(kafka_bootstrap, inputs, {name: half[name] if name in MERGED_INPUTS + STORE_INPUTS else []
                                           for name in INPUTS})
    runner = TaskRunner(cogroup_examples(topics), unique_topic("clean-cogroup"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    for task in ("2_0", "2_1", "3_0", "3_1"):
        runner.run_task(task)

    expected = kafka_streams_run.result()["results"]
    ours = _results(kafka_bootstrap, topics, MERGED_OUTPUTS + STORE_OUTPUTS)
    assert set(ours) == {key for key in expected if key[0] in MERGED_OUTPUTS + STORE_OUTPUTS}
    for output_and_task, sequence in ours.items():
        assert sequence == expected[output_and_task], output_and_task


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    ours = cogroup_examples(kafka_streams_run.topics).build().describe()
    assert str(ours) == kafka_streams_run.result()["describe"]


def _assert_reference_exercises_it(expected: dict) -> None:
    """Kafka Streams' output shows what the test is about: every input in the aggregates, windows
    and sessions of several records, merged sessions (tombstones), on both tasks; aggregates that
    merge the Long-keyed input with a String-keyed one, in the cogroup and after a merge."""
    assert set(expected) == {(name, partition) for name in OUTPUTS for partition in range(PARTITIONS)}
    for partition in range(PARTITIONS):
        plain = [value for _, value, _ in expected[("out-plain", partition)]]
        assert any("r" in value and "s" in value for value in plain) and any("o" in value for value in plain)
        windowed = "".join(value for _, value, _ in expected[("out-windowed", partition)])
        assert all(letter in windowed for letter in "cvo") and "null" in windowed
        finals = [key for key, _, _ in expected[("out-final", partition)]]
        assert len(finals) == len(set(finals)) > 10  # each window once
        assert any(value and value.count("c") + value.count("v") > 3
                   for _, value, _ in expected[("out-sliding", partition)])
        sessions = expected[("out-sessions", partition)]
        assert any(value is None for _, value, _ in sessions) and any(value and "|" in value for _, value, _ in sessions)
        filtered = expected[("out-final-filtered", partition)]
        assert len(filtered) > 5 and all(len(value) % 3 != 1 for _, value, _ in filtered)
        assert set(filtered) < set(expected[("out-final", partition)])
        session_bytes = expected[("out-session-bytes", partition)]
        assert len(session_bytes) > 20 and any(value is None for _, value, _ in session_bytes)
        # One count per user, of both inputs: each user's counts go 1, 2, 3, ... on one task.
        counts: dict[str, list[int]] = {}
        for key, count, _ in expected[("out-merged-counts", partition)]:
            counts.setdefault(key, []).append(count)
        assert counts and all(sequence == list(range(1, len(sequence) + 1)) for sequence in counts.values())
        # The processors' edits: aggregates reset to R and going on from it until the processor deletes
        # them, merged-away sessions' tombstones, sessions put ahead that later records merged with.
        for name in STORE_OUTPUTS:
            aggregates = [value.split("|")[0] for _, value, _ in expected[(name, partition)]]
            assert any(value.startswith("R,") and value.count(",") == 2 for value in aggregates), name
        sessions = [value.split("|")[0] for _, value, _ in expected[("out-store-sessions", partition)]]
        assert "null" in sessions and any(value.startswith("A,") for value in sessions)
        merged_windows = [value for _, value, _ in expected[("out-merged-windowed", partition)]]
        assert any("k" in value and "t" in value for value in merged_windows) and "null" in "".join(merged_windows)
