"""Windowed aggregations with their own stream time on Spark against Kafka Streams itself.

One topology (tests/filtered_window_topology.py; Java twin FilteredWindowExamples): in the
sub-topology of the events, a hopping-windowed aggregate after a filter, a session count after a
``filter_not``, a sliding reduce after a ``flat_map_values`` (two records for each value, none for a
null one), a tumbling count without grace on one branch of a split and a tumbling count straight on
the events; the sub-topology also merges the clicks (a second source, reaching no aggregation) into
a sink; in a sub-topology of their own, a sliding reduce and a tumbling count straight on the
slides; in a third, PySpark Column expressions in front of a hopping count (a Column filter) and
its suppression until the windows close, a tumbling reduce (a Column ``filter_not`` and
``map_values``), a session count (a Column ``map_values``) and its suppression by a time limit, a
sliding reduce (a Column filter) and a hopping reduce of each value's words (a Column
``flat_map_values`` splitting at spaces; the values hold one word to three, empty ones too, and
each update is stamped with its timestamp), a tumbling cogroup of a Column filter's records and a
Column ``map_values``'s (each update stamped) and a session cogroup of a Column ``filter_not``'s records
and the same ``map_values``'s (each update stamped), their records handed over from the JVM plan
(spark/column_hand_off.py), and beside them, no Column in front, a hopping count with grace straight
on the source and a tumbling reduce behind a Python ``map_values`` (each update stamped with its
timestamp), built with their own clocks too: the records ahead reach them, a null key's do not
(the task's stream time counts those); some of those jump seconds ahead with a value one Column filter
drops ("...x": not the hopping count's, nor the cogroup's filtered input's; "...y": not the tumbling or
sliding reduce's). Kafka Streams keeps
each windowed processor's stream time over the records that reach it, so the input makes those clocks differ from one another and from the task's: some events jump
seconds ahead with a value one filter drops ("...x": not the hopping windows'; "...y": not the
sessions'; null: neither the hopping nor the sliding windows'), clicks jump further ahead (no
aggregation sees them), and slides with a null value jump ahead (the sliding windows skip them, the
tumbling count's stream time, the task's, counts them). Records also come out of order within grace and beyond it, with null keys
and null values, on two partitions. Every store is uncached, so the output is fixed by the input.

Kafka Streams 4.3.1 runs the whole input once (``max.task.idle.ms``: each task merges its two
inputs by timestamp). Our side runs it clean (the whole input, many micro-batches per task: the
clocks carried from batch to batch in the task's state), and killed: the input in two halves,
every record of the second after every record of the first in the timestamp merge; a ``dagster-kstreams
run`` process takes the first half and is SIGKILLed once a task has committed it; then the second
half is produced and a rerun in another process (this one) continues each task from its checkpoint.

Compared: describe() of the very topology run; per output topic and partition the whole sequence
of (key, value, timestamp) records (for the merged sink in the clean run, whose micro-batches cut the two
inputs where Kafka Streams' one pass does not, as a multiset: README, "Order across co-partitioned
inputs"); the late records (ours, per record and closed window, equal Kafka Streams'
dropped-records-total less the records its windowed processors skip for a null key, or sliding
windows for a null value).
"""

from __future__ import annotations

import random
import struct
import time

import pytest
from pyspark import cloudpickle

import filtered_window_topology
from equivalence_io import (KafkaStreamsInBackground, output_topics, produce_strings, windowed_key_reader,
                            with_unique_timestamps, written_time)
from filtered_window_topology import INPUTS, LONG_VALUED, OUTPUT_KEYS, OUTPUTS, filtered_window_examples
from killed_runs import run_until_killed
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(filtered_window_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute
HALF_MS = 60_000  # each half spans 60 s of timestamps (jumps ahead included: under 20 s)
SECOND_HALF = HALF_MS + 20_000  # the second half starts after every timestamp of the first
SIZES = {"events": 400, "clicks": 120, "slides": 200, "columns": 300}  # per half
USERS = ("u1", "u2", "u3", "u5", "u11", "u15")  # three in each partition (murmur2)
# The words of the columns' values, by index (no draw of the generator): one word, several, an
# empty word between two, empty words at both ends.
WORD_SHAPES = ("{}", "{} a", "{} a b", "{}  b", " {} a ")


def _partition(key: str) -> int:
    return default_partition(key.encode(), PARTITIONS)


def _half(rng: random.Random, topic: str, half: int, start: int) -> list[tuple]:
    """One half of a topic: ``(key, value, partition, timestamp)`` in production order."""
    records = []
    prefix = "o" if topic == "columns" else topic[0]
    for i, base in enumerate(sorted(rng.randrange(start, start + HALF_MS - 20_000) for _ in range(SIZES[topic]))):
        key = None if rng.random() < 0.05 else rng.choice(USERS)
        value = f"{prefix}{half}-{i}"
        if topic == "columns":
            value = WORD_SHAPES[i % len(WORD_SHAPES)].format(value)
        timestamp, roll = base, rng.random()
        if topic == "clicks":
            if roll < 0.15:
                timestamp += rng.randint(8_000, 15_000)  # ahead of every aggregation's stream time
        elif roll < 0.08 and topic == "columns":
            # The largest timestamps, each dropped by one Column filter: "...x" not the hopping count's,
            # "...y" not the tumbling reduce's (the session count sees both).
            timestamp, value = timestamp + rng.randint(3_000, 7_000), value + rng.choice("xy")
        elif roll < 0.05 and topic == "slides":
            if key is not None:  # a null value ahead: the sliding windows skip it, the tumbling count does not
                timestamp, value = timestamp + rng.randint(3_000, 7_000), None
        elif roll < 0.05:
            timestamp += rng.randint(3_000, 7_000)  # ahead, for the processors that see it
            value = rng.choice([value + "x", value + "y", None if key is not None else value + "x"])
        elif roll < 0.15:
            timestamp -= rng.randint(100, 2_500)  # late, mostly within the graces
        elif roll < 0.20:
            timestamp -= rng.randint(4_000, 12_000)  # late beyond every grace
        elif roll < 0.27 and key is not None:
            value = None
        elif roll < 0.33:
            value += rng.choice("xy")
        partition = _partition(key) if key is not None else rng.randrange(PARTITIONS)
        records.append((key, value, partition, max(start, timestamp)))
    return records


def _input(seed: int = 15) -> list[dict[str, list[tuple]]]:
    """The two halves, ``[{topic: records}]``; no two records share a timestamp (Kafka Streams breaks
    a tie between partitions by the order of its internal queue, the runner by topic name)."""
    rng = random.Random(seed)
    halves = [{topic: _half(rng, topic, half, T0 + offset) for topic in INPUTS}
              for half, offset in enumerate((0, SECOND_HALF))]
    return with_unique_timestamps(halves, INPUTS)


def _null_skips(halves) -> int:
    """The records Kafka Streams' windowed processors skip (and count as dropped) for a null key:
    of the events, the filtered hopping windows', the sessions', the sliding windows' (two per value)
    and the direct count's (the branch sends none there); of the slides, the tumbling count's and the
    sliding windows' (also for a null value); of the columns, those each aggregation's Column filter lets through,
    each word of a value (Spark's split, as Python's at one space, keeps empty words; a null value has none), and each input of the two cogroups."""
    skips = 0
    for half in halves:
        for key, value, _, _ in half["events"]:
            if key is None:
                skips += (value is not None and not value.endswith("x")) + (value is None or not value.endswith("y"))
                skips += 2 * (value is not None) + 1
        for key, value, _, _ in half["slides"]:
            skips += (key is None) + (key is None or value is None)
        for key, value, _, _ in half["columns"]:
            if key is None:  # the hopping count's, the tumbling reduce's, the session count's, the sliding reduce's
                skips += (value is not None and not value.endswith("x")) + 1
                skips += (value is None or not value.endswith("y")) + (value is not None and not value.endswith("y"))
                skips += 0 if value is None else len(value.split(" "))
                skips += (value is not None and not value.endswith("x")) + 1  # the cogroup's two inputs
                skips += (value is None or not value.endswith("y")) + 1  # the session cogroup's
                skips += 2  # the straight hopping count's, the tumbling reduce's behind a Python map_values
    return skips


def _key_reader(name: str):
    return windowed_key_reader(OUTPUT_KEYS[name])


def _results(bootstrap: str, topics: dict[str, str]) -> dict[tuple[str, int], list]:
    """``{(output, partition): [(key, value, timestamp)] in offset order}``."""
    results: dict[tuple[str, int], list] = {}
    for name in OUTPUTS:
        key_of = _key_reader(name)
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            value = None if record.value is None else (
                struct.unpack(">q", record.value)[0] if name in LONG_VALUED else record.value.decode())
            results.setdefault((name, record.partition), []).append((key_of(record.key), value, written_time(record)))
    return results


def _produce(bootstrap: str, inputs: dict[str, str], records: dict[str, list[tuple]]) -> None:
    for name in INPUTS:
        produce_strings(bootstrap, inputs[name], records[name])


class _KafkaStreamsRun(KafkaStreamsInBackground):
    """Kafka Streams' run on both halves of the input, started in the background while our side runs."""

    def __init__(self, bootstrap, kafka_admin, unique_topic, state_dir, halves):
        self.halves = halves

        def write_inputs(inputs: dict[str, str]) -> None:
            for half in halves:
                _produce(bootstrap, inputs, half)

        super().__init__("kstreams.oracle.FilteredWindowExamples", "filtered", bootstrap, kafka_admin, unique_topic,
                         state_dir, INPUTS, OUTPUTS, PARTITIONS, write_inputs, _results)


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    run = _KafkaStreamsRun(kafka_bootstrap, kafka_admin, unique_topic,
                           tmp_path_factory.mktemp("ks-filtered-state"), _input())
    yield run
    run.close()


def _assert_reference_exercises_it(expected: dict) -> None:
    """Kafka Streams' output shows what the test is about: every output on both partitions, windows
    of several records, sessions merged away (tombstones), late records dropped beyond the null keys."""
    assert set(expected["results"]) == {(name, partition) for name in OUTPUTS for partition in range(PARTITIONS)}
    for partition in range(PARTITIONS):
        results = {name: [(key, value) for key, value, _ in expected["results"][name, partition]] for name in OUTPUTS}
        assert all(len(sequence) > 20 for sequence in results.values())
        assert any(value.count(",") > 3 for _, value in results["out-filtered"])
        assert not any(value.endswith("x") for _, value in results["out-filtered"])
        assert any(value is None for _, value in results["out-sessions"])
        assert any(value > 3 for _, value in results["out-sessions"] if value is not None)
        assert any(value.count("+") > 3 for _, value in results["out-sliding"])
        assert {key[0] for key, _ in results["out-branch"]} <= {"u1", "u11", "u15", "u2"}
        tumbling = [part for _, value in results["out-column-tumbling"] for part in value.split("+")]
        assert not any(part.endswith("Y") for part in tumbling) and any(part.endswith("X") for part in tumbling)
        assert any(value.count("+") > 3 for _, value in results["out-column-tumbling"])
        assert any(value > 3 for _, value in results["out-column-hopping"])
        assert any(value is None for _, value in results["out-column-sessions"])
        # A value's words one after the other (the empty ones too), each update with its timestamp.
        words = [value.rsplit("|t", 1) for _, value in results["out-column-words"]]
        assert any("+a+b|" in value for _, value in results["out-column-words"])
        assert any("++b" in aggregate for aggregate, _ in words) and any("+a+" in aggregate for aggregate, _ in words)
        assert len({int(timestamp) for _, timestamp in words}) > 20
        # The cogroup: both inputs in one window's aggregate, the values jumping ahead through one input only.
        cogrouped = [value.rsplit("|t", 1)[0] for _, value in results["out-column-cogroup"]]
        assert any("f" in value and "m" in value for value in cogrouped)
        assert any("x!" in value for value in cogrouped) and not any(value.endswith("x") for value in cogrouped)
        sessions = [value.rsplit("|t", 1)[0] for _, value in results["out-column-session-cogroup"]]
        assert any("n" in value and "m" in value and "|" in value for value in sessions)
        assert any(value == "null" for value in sessions)  # a session merged away
        for name in ("out-column-straight", "out-column-python"):
            assert len({value.rsplit("|t", 1)[1] for _, value in results[name]}) > 20, name
        assert any(int(value.split("|")[0]) > 3 for _, value in results["out-column-straight"])
        # a value stamped with its update's timestamp is written with it
        for name in ("out-column-words", "out-column-straight", "out-column-python"):
            assert all(value.rsplit("|t", 1)[1] == str(timestamp)
                       for _, value, timestamp in expected["results"][name, partition]), name


def _null_keys_ahead(halves) -> int:
    """The columns' records with a null key more than the graces (2 s) ahead of every record with a
    key before them in their partition: the task's stream time counts them, the windowed processors
    no Column stands before do not, so their windows would close early on the task's stream time."""
    ahead = 0
    for partition in range(PARTITIONS):
        keyed_time = None
        for key, _, record_partition, timestamp in (record for half in halves for record in half["columns"]):
            if record_partition != partition:
                continue
            if key is not None:
                keyed_time = timestamp if keyed_time is None else max(keyed_time, timestamp)
            elif keyed_time is not None and timestamp > keyed_time + 2_000:
                ahead += 1
    return ahead


def test_windowed_aggregations_with_their_own_stream_time_in_a_clean_run_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, spark, tmp_path
):
    inputs = {name: unique_topic(f"clean-filtered-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))
    for half in kafka_streams_run.halves:
        _produce(kafka_bootstrap, inputs, half)
    runner = TaskRunner(filtered_window_examples(topics), unique_topic("clean-filtered"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark, max_records_per_batch=100)
    results = runner.run_all()
    assert min(result.batches for result in results) >= 2  # the clocks went from batch to batch

    expected = kafka_streams_run.result()
    _assert_reference_exercises_it(expected)
    assert _null_keys_ahead(kafka_streams_run.halves) > 0
    ours = _results(kafka_bootstrap, topics)
    assert set(ours) == set(expected["results"])
    for (name, partition), sequence in expected["results"].items():
        if name == "out-merged":
            assert sorted(ours[name, partition], key=repr) == sorted(sequence, key=repr), (name, partition)
        else:
            assert ours[name, partition] == sequence, (name, partition)
    dropped = sum(result.records_dropped_late for result in results)
    assert dropped > 50
    assert dropped == expected["dropped"] - _null_skips(kafka_streams_run.halves)


def test_windowed_aggregations_with_their_own_stream_time_killed_part_way_and_rerun_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, spark, tmp_path
):
    inputs = {name: unique_topic(f"spark-filtered-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))
    first, second = kafka_streams_run.halves
    _produce(kafka_bootstrap, inputs, first)
    app_id = unique_topic("spark-filtered")
    state = tmp_path / "state"
    run_until_killed(tmp_path, "filtered_window_topology:filtered_window_examples", topics, app_id=app_id,
                     bootstrap=kafka_bootstrap, state=state, kill_when=lambda line: line.startswith("task 0_0 batch"),
                     extra_args=("--max-records-per-batch", "5000"))

    _produce(kafka_bootstrap, inputs, second)
    runner = TaskRunner(filtered_window_examples(topics), app_id, kafka_bootstrap, state_location=str(state),
                        spark=spark, max_records_per_batch=5000)
    results = {result.task_id: result for result in runner.run_all()}
    # Task 0_0 continued from its checkpoint: it did not read the first half again.
    assert "0_0" in results and "1_1" in results
    both_halves = sum(1 for half in (first, second) for name in INPUTS for *_, partition, _ in half[name]
                      if partition == 0)
    assert 0 < results["0_0"].records_in < both_halves

    expected = kafka_streams_run.result()
    ours = _results(kafka_bootstrap, topics)
    assert set(ours) == set(expected["results"])
    for output_and_partition, sequence in expected["results"].items():
        assert ours[output_and_partition] == sequence, output_and_partition


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    ours = filtered_window_examples(kafka_streams_run.topics).build().describe()
    assert str(ours) == kafka_streams_run.result()["describe"]
