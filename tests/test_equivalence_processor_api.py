"""The Processor API on Spark against Kafka Streams itself: ``process`` with two key-value stores
and a stream-time punctuator, then ``process_values``, and on the same source a ``process`` with a
persistent and an in-memory window store, one with a persistent and an in-memory session store,
one with a persistent and an in-memory window store that retain duplicates, and one with a versioned
store (puts in and out of order, within and beyond its history; deletes; reads as of several times),
and one reading a versioned table's updates through its ``to_stream`` (out of order and tombstones)
and writing and reading the table's own store (puts ahead, deletes behind), and one putting windows
that start near 0, before it too, into a persistent window store and reading them back (a key's
negative starts; from 0 on, every key's), and what the punctuator and the records forwarded sent
on through ``process_values`` to a topic the record context picks (a punctuator's: no topic)
(tests/processor_api_topology.py; Java twin ProcessorApiExamples). Kafka Streams 4.3.1 runs it once.

Our tasks run the twin in a ``dagster-kstreams run`` process, one task after another in batches
of 120 records, SIGKILLed once the second task (0_1) has committed its first batch; a rerun in
another process (this one) continues every task from its checkpoint: the stores, the task's
stream time and the punctuation schedule come back from it.

The same processors wired with the low-level ``Topology()`` run once more, to the end, on the same
input, and give the same output (but the versioned table's, a DSL table it has no wiring of).

Input (2 partitions): out-of-order timestamps (within a bucket and beyond), repeated values, null
keys and null values. Every value the processors forward names its task's partition; compared,
per task, the whole sequence of (key, value, timestamp) records forwarded for a record, and the
whole sequence the punctuator forwarded (Kafka Streams runs its punctuators after a varying number
of records, so only the interleaving of the two differs from run to run), and describe().
"""

from __future__ import annotations

import json
import random
import re
import time

import pytest
from pyspark import cloudpickle

import processor_api_topology
from equivalence_io import output_topics, produce_strings, run_kafka_streams, written_time
from killed_runs import kill_and_rerun
from processor_api_topology import processor_api_examples, processor_api_low_level
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the processors by value.
cloudpickle.register_pickle_by_value(processor_api_topology)

PARTITIONS = 2
# processed / punctuated: where PunctuatedOrNot sends what BucketCounter and StampValues forwarded
OUTPUTS = {"out": 1, "processed": 1, "punctuated": 1}
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute


def _input(seed: int = 14) -> list[tuple]:
    """``[(key, value, partition, timestamp)]`` in production order."""
    rng = random.Random(seed)
    events = []
    for i in range(600):
        partition = i % PARTITIONS
        timestamp = T0 + i * 150 + i % 7
        roll = rng.random()
        if roll < 0.15:
            timestamp -= rng.randint(100, 3_000)     # out of order, mostly within its bucket
        elif roll < 0.22:
            timestamp -= rng.randint(10_000, 30_000)  # late: its bucket has ended
        key = None if rng.random() < 0.04 else f"{'ab'[partition]}{rng.randint(1, 4)}"
        value = None if rng.random() < 0.05 else f"v{rng.randint(1, 3)}"
        events.append((key, value, partition, timestamp))
    return events


def _routed(bootstrap: str, topics: dict[str, str]) -> dict[str, dict]:
    """:func:`_results` of each topic PunctuatedOrNot picks."""
    return {name: _results(bootstrap, topics[name]) for name in ("processed", "punctuated")}


def _results(bootstrap: str, topic: str) -> dict[tuple[str, str], list]:
    """``{(task partition tag, "record" | "punctuation"): [(key, value, timestamp)]}`` in offset order."""
    results: dict[tuple[str, str], list] = {}
    for record in sorted(read_topic(bootstrap, topic), key=lambda r: (r.partition, r.offset)):
        value = record.value.decode()
        tag, kind = value.split("|")[:2]
        source = "punctuation" if kind == "count" else "record"
        key = None if record.key is None else record.key.decode()
        results.setdefault((tag, source), []).append((key, value, written_time(record)))
    return results


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {"events": unique_topic("papi-events")}
    kafka_admin.create_topics({inputs["events"]: PARTITIONS})
    records = _input()
    produce_strings(kafka_bootstrap, inputs["events"], records)
    topics, stdout = run_kafka_streams("kstreams.oracle.ProcessorApiExamples", "papi", kafka_bootstrap, kafka_admin,
                                       unique_topic, tmp_path_factory, inputs, OUTPUTS)
    return {"inputs": inputs, "records": records, "describe": json.loads(stdout)["describe"],
            "results": _results(kafka_bootstrap, topics["out"]), "routed": _routed(kafka_bootstrap, topics),
            "topics": topics}


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    ours = processor_api_examples(kafka_streams_run["topics"]).build().describe()
    assert str(ours) == kafka_streams_run["describe"]


def test_processor_api_killed_part_way_and_rerun_matches_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    expected = kafka_streams_run["results"]
    _assert_reference_exercises_it(expected)
    _assert_routed_by_the_punctuators_context(kafka_streams_run["routed"], expected)

    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS)
    rerun = kill_and_rerun(tmp_path, processor_api_examples, topics, app_id=unique_topic("spark-papi"),
                           bootstrap=kafka_bootstrap, spark=spark, kill_when=lambda line: line.startswith("task 0_1 batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", "120"))
    runner = rerun.runner
    on_partition_1 = sum(1 for record in kafka_streams_run["records"] if record[2] == 1)
    assert 0 < rerun.by_task["0_1"].records_in < on_partition_1  # task 0_1 continued from its checkpoint

    ours = _results(kafka_bootstrap, topics["out"])
    assert set(ours) == set(expected)
    for task_and_source, sequence in expected.items():
        assert ours[task_and_source] == sequence, task_and_source
    # A topic picked by the record context: a punctuator's forwards (no topic, partition or offset)
    # through StampValues to one, what records forwarded to the other.
    assert _routed(kafka_bootstrap, topics) == kafka_streams_run["routed"]
    # The deduplicator's store after the rerun: each key's last value (read from the checkpoints).
    last_values = {key: value for key, value, _, _ in kafka_streams_run["records"] if key is not None and value}
    assert runner.read_store("seen") == last_values
    # A session store reads as a DSL one does (Windowed keys); both kinds hold the same sessions.
    sessions = runner.read_store("sessions")
    assert sessions and sessions == runner.read_store("sessions-memory")
    # A versioned store reads as its keys' latest values (those whose latest version is no tombstone).
    versions = runner.read_store("versions")
    assert versions and set(versions.values()) <= {"v1", "v2", "v3"}


def test_the_low_level_topology_of_the_same_processors_matches_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    """``Topology().add_source(...).add_processor(...)...`` wires the graph ``process`` builds, under
    names of its own (describe() checked against Kafka Streams in test_describe_oracle.py): the
    runner gives it Kafka Streams' output of that graph."""
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], {"out": 1})
    runner = TaskRunner(processor_api_low_level(topics), unique_topic("spark-papi-low"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    assert {r.task_id for r in runner.run_all()} == {"0_0", "0_1"}
    expected = {task_and_source: [record for record in sequence if "|tab|" not in record[1] and "|near|" not in record[1]]
                for task_and_source, sequence in kafka_streams_run["results"].items()}
    assert _results(kafka_bootstrap, topics["out"]) == expected


def _assert_reference_exercises_it(expected: dict) -> None:
    """Kafka Streams' output shows what the test is about: both tasks, repeats, late records,
    null keys and values, and counts forwarded by the punctuator."""
    assert set(expected) == {(f"p{p}", source) for p in range(PARTITIONS) for source in ("record", "punctuation")}
    for partition in range(PARTITIONS):
        kinds = [value.split("|")[1] for _, value, _ in expected[(f"p{partition}", "record")]]
        assert {"new", "repeat", "late", "null", "win", "ses", "dup"} <= set(kinds)
        sessions = [value for _, value, _ in expected[(f"p{partition}", "record")] if "|ses|" in value]
        assert any(value.split("|")[2].count("=") > 1 for value in sessions)  # merged more than one session
        assert any(value.split("|")[4] for value in sessions)  # in-memory find_sessions(earliest_end, latest_end)
        duplicates = [value for _, value, _ in expected[(f"p{partition}", "record")] if "|dup|" in value]
        assert any(value.split("|")[2].split("/")[2] == "null" for value in duplicates)  # fetch(key, start) quirk
        versions = [value.split("|") for _, value, _ in expected[(f"p{partition}", "record")] if "|ver|" in value]
        written = [part for fields in versions for part in fields[2].split(",")]
        assert {"put=-1", "put=-9223372036854775808", "tomb=-9223372036854775808"} <= set(written)  # latest, expired
        assert any(part.startswith(("put=", "tomb=")) and int(part.split("=")[1]) > 0 for part in written)  # validTo
        assert any(part.startswith("del=") and part != "del=null" for part in written)
        assert any(fields[5] != "null" for fields in versions)  # a version from the history
        assert any(fields[6] != "null" for fields in versions)  # past the history: an old enough latest version
        updates = [value.split("|") for _, value, _ in expected[(f"p{partition}", "record")] if "|tab|" in value]
        times = [int(fields[3][1:]) for fields in updates]
        assert any(later < earlier for earlier, later in zip(times, times[1:]))  # out of order, forwarded
        assert any(fields[2] == "null" for fields in updates)  # a tombstone
        assert any(fields[4] == "put=-1" for fields in updates) and any(fields[4].startswith("put=1") for fields in updates)
        assert any(fields[4].startswith("del=") and fields[4] != "del=null" for fields in updates)
        assert any(fields[5].startswith("w@") for fields in updates)  # the table's latest: the processor's put
        # windows near 0: a key's negative starts read back in order (those retained), none from 0 on
        near = [value.split("|")[2].split("/") for _, value, _ in expected[(f"p{partition}", "record")]
                if "|near|" in value]
        assert any(re.match(r"-100001=[^,]*,(.*,)?-5=", before) for before, _ in near)
        assert all("@-" not in every for _, every in near) and any("@10=" in every for _, every in near)
        counts = expected[(f"p{partition}", "punctuation")]
        assert len(counts) > 20 and any(int(value.split("|")[3]) > 1 for _, value, _ in counts)
        # init() and a punctuator see a record context with no topic, partition or offset, not none
        assert {tuple(value.split("|")[4:6]) for _, value, _ in counts} == {("null/-1/-1", "null/-1/-1")}


def _assert_routed_by_the_punctuators_context(routed: dict, expected: dict) -> None:
    """Kafka Streams sent what the punctuator forwarded, and only that, to ``punctuated``."""
    assert routed["punctuated"] == {task: sequence for task, sequence in expected.items() if task[1] == "punctuation"}
    counter = {task: [record for record in sequence if record[1].split("|")[1] in ("new", "repeat", "late", "null")]
               for task, sequence in expected.items() if task[1] == "record"}
    assert routed["processed"] == counter
