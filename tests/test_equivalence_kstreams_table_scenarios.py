"""Kafka Streams' own table, cogroup and Processor API scenarios, on Spark against Kafka Streams itself.

One topology (tests/kstreams_table_scenarios_topology.py, whose docstring names the Kafka Streams test
each output follows; Java twin TableScenarioExamples), run once by Kafka Streams 4.3.1 (record cache
off: ``statestore.cache.max.bytes`` 0) and once by our runner, on the same input topics.

Input (2 partitions each): keys ``a*`` in partition 0 and ``b*`` in partition 1, so that each key
family is one task's. The tables' rows follow Kafka Streams' tests' sequences (a value written
twice, an out-of-order update, rows a filter drops and restores, tombstones of rows present and
never written, null keys), then more of the same at random; the streams carry null keys and
values and out-of-order timestamps. No two records share a timestamp.

Run twice by our runner: once whole, and once as a ``dagster-kstreams run`` SIGKILLed part way then
rerun in another process (this one) from its checkpoints. Compared: describe() of the very topology
run, and each output's records per partition and key family (the records one task wrote there, in
offset order, each with the timestamp it was written with; every value carries its record's
timestamp too); the store a transform_values keeps its results in, as an interactive query reads
it; and the rows' sub-topology's outputs (a transformer's store among its state) once more, killed
part way in another process and rerun from the checkpoints. A record with a null key goes to a
partition Kafka's producer picks: those are compared per source partition (named in the value),
whatever partition they went to, as multisets.

A re-grouped table's aggregate is stamped, as by Kafka Streams, with the larger of its record's time
and the aggregate's previous stamp: compared exactly like the rest. Both run with
``statestore.cache.max.bytes`` 0: the one store the topology leaves unnamed (the prices table's) is
uncached by that setting alone, in both.
"""

from __future__ import annotations

import json
import random
import re
import time

import pytest
from pyspark import cloudpickle

import kstreams_table_scenarios_topology
from equivalence_io import (KafkaStreamsReference, output_topics, produce_inputs, start_kafka_streams,
                            with_unique_timestamps, written_time)
from killed_runs import kill_and_rerun
from kstreams_table_scenarios_topology import CALL_COUNTED, INPUTS, OUTPUTS, table_scenarios
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's functions by value.
cloudpickle.register_pickle_by_value(kstreams_table_scenarios_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) * 1000  # recent, in ms: records older than the broker's 7-day retention may be deleted mid-test
FAMILIES = ("a", "b")  # the keys of partition 0, of partition 1

# Kafka Streams' own table scenarios, per key family (KTableSourceTest, KTableFilterTest): (key, value,
# time offset); "{f}" is the family. A value written twice, an out-of-order update, a row dropped by
# the filter twice then restored, then dropped again, tombstones of a row present and of rows never
# written, a row deleted twice.
SCRIPTED_ROWS = (("{f}1", "acc1", 10), ("{f}2", "rej1", 11), ("{f}1", "acc1", 12), ("{f}2", "rej2", 13),
                 ("{f}3", None, 14), ("{f}1", "acc2", 15), ("{f}1", "acc3", 9), ("{f}2", "acc4", 16),
                 ("{f}2", "rej5", 17), (None, "acc6", 18), ("{f}1", None, 19), ("{f}1", None, 20),
                 ("{f}4", "acc7", 21), ("{f}4", "acc7", 22), ("{f}4", "acc7", 8), ("{f}2", "rej5", 23))


def _input(seed: int = 26) -> dict[str, list[tuple]]:
    """``{topic: [(key, value, partition, timestamp)]}`` in production order; a stream value names
    its partition (``e1x37``: partition 1)."""
    rng = random.Random(seed)
    records: dict[str, list[tuple]] = {name: [] for name in INPUTS}
    for partition, family in enumerate(FAMILIES):
        for key, value, offset in SCRIPTED_ROWS:
            records["rows"].append((key and key.format(f=family), value, partition, T0 + offset * 100 + partition))
    for i in range(300):
        partition = i % PARTITIONS
        timestamp = T0 + 3_000 + i * 50 - (rng.randint(100, 2_000) if rng.random() < 0.15 else 0)
        key = None if rng.random() < 0.03 else f"{FAMILIES[partition]}{rng.randint(1, 5)}"
        roll = rng.random()
        value = None if roll < 0.12 else (f"acc{i}" if roll < 0.55 else f"rej{i}")
        records["rows"].append((key, value, partition, timestamp))
        roll = rng.random()
        value = None if roll < 0.12 else (f"x{i}" if roll < 0.4 else f"p{i}")
        key = None if rng.random() < 0.03 else f"{FAMILIES[partition]}{rng.randint(1, 5)}"
        records["prices"].append((key, value, partition, timestamp + 7))
    for i in range(240):  # keys a6/b6 have no price: the joins' transformer gets no row (None)
        partition = i % PARTITIONS
        timestamp = T0 + 2_900 + i * 70 - (rng.randint(100, 2_000) if rng.random() < 0.15 else 0)
        key = None if rng.random() < 0.04 else f"{FAMILIES[partition]}{rng.randint(1, 6)}"
        value = None if key is not None and rng.random() < 0.06 else f"l{partition}x{i}"
        records["lookups"].append((key, value, partition, timestamp + 5))
    for name, count in (("events", 500), ("clicks", 250)):
        for i in range(count):
            partition = i % PARTITIONS
            timestamp = T0 + i * 40 * (500 // count) - (rng.randint(100, 3_000) if rng.random() < 0.15 else 0)
            key = None if rng.random() < 0.03 else f"{FAMILIES[partition]}{rng.randint(1, 4)}"
            # the digit after the letter: the source partition; the last digit routes the record
            value = None if key is not None and rng.random() < 0.06 else f"{name[0]}{partition}x{rng.randint(0, 99)}"
            records[name].append((key, value, partition, timestamp + 3))
    return with_unique_timestamps([records], INPUTS)[0]


def _family(key, value) -> str:
    """The key family, or for a null key or one made of it ("null~") the source partition's."""
    if key is not None and key[0] in FAMILIES:
        return key[0]
    partition = re.match(r"[a-zA-Z](\d)", value).group(1)
    return f"null{partition}"


def _results(bootstrap: str, topics: dict[str, str]) -> dict[tuple, list]:
    """``{(output, partition or None for null keys, family): [(key, value, timestamp)] in offset order}``."""
    results: dict[tuple, list] = {}
    for name in OUTPUTS:
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            key = None if record.key is None else record.key.decode()
            value = None if record.value is None else record.value.decode()
            partition = None if key is None else record.partition
            results.setdefault((name, partition, _family(key, value)), []).append((key, value, written_time(record)))
    return results


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"scenarios-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = _input()
    produce_inputs(kafka_bootstrap, inputs, records, INPUTS)
    # In the background: our run, the first test, goes on meanwhile.
    topics, main = start_kafka_streams("kstreams.oracle.TableScenarioExamples", "scenarios", kafka_bootstrap,
                                       kafka_admin, unique_topic, tmp_path_factory, inputs,
                                       dict.fromkeys(OUTPUTS, PARTITIONS))
    reference = KafkaStreamsReference(main, {"inputs": inputs, "records": records, "topics": topics}, lambda stdout: {
        "describe": json.loads(stdout.strip().splitlines()[-1])["describe"],
        "rows-keyed": json.loads(stdout.strip().splitlines()[-1])["rows-keyed"],
        "results": _results(kafka_bootstrap, topics)})
    yield reference
    reference.close()


@pytest.fixture(scope="module")
def our_run(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path_factory, kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, PARTITIONS))
    runner = TaskRunner(table_scenarios(topics), unique_topic("spark-scenarios"), kafka_bootstrap,
                        state_location=str(tmp_path_factory.mktemp("scenarios-state")), spark=spark,
                        statestore_cache_max_bytes=0)  # as the Java twin
    runner.run_all()
    return {"results": _results(kafka_bootstrap, topics), "rows-keyed": runner.read_store("rows-keyed")}


@pytest.mark.parametrize("output", OUTPUTS)
def test_scenario_output_matches_kafka_streams(output, our_run, kafka_streams_run):
    _assert_output_matches(output, our_run["results"], kafka_streams_run["results"])


def test_transformers_own_store_matches_kafka_streams_interactive_query(our_run, kafka_streams_run):
    """The store transform_values keeps its results in, as Kafka Streams' interactive query reads it."""
    assert our_run["rows-keyed"] == kafka_streams_run["rows-keyed"]


def test_killed_part_way_and_rerun_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                                         kafka_streams_run):
    """A ``dagster-kstreams run --statestore-cache-max-bytes 0`` SIGKILLed once task 0_1 (the rows' second
    partition) has committed its first batch of 60, then every task rerun here from the checkpoints (the
    transformer's store, like the tables', goes on from what the checkpoint kept)."""
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, PARTITIONS))
    rerun = kill_and_rerun(tmp_path, table_scenarios, topics, app_id=unique_topic("spark-scenarios-killed"),
                           bootstrap=kafka_bootstrap, spark=spark,
                           kill_when=lambda line: line.startswith("task 0_1 batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", "60",
                                        "--statestore-cache-max-bytes", "0"),
                           statestore_cache_max_bytes=0)
    rows_on_partition_1 = sum(1 for record in kafka_streams_run["records"]["rows"] if record[2] == 1)
    assert 0 < rerun.by_task["0_1"].records_in < rows_on_partition_1  # task 0_1 continued from its checkpoint
    ours = _results(kafka_bootstrap, topics)
    for output in OUTPUTS:
        if output in CALL_COUNTED:  # a transformer's calls counted by an instance a kill ends (CALL_COUNTED)
            _assert_output_matches(output, _uncounted(ours), _uncounted(kafka_streams_run["results"]))
        else:
            _assert_output_matches(output, ours, kafka_streams_run["results"])
    assert rerun.runner.read_store("rows-keyed") == kafka_streams_run["rows-keyed"]


def _uncounted(results: dict) -> dict:
    """``results`` with CallCounter's call counts ("#<n>@") taken out of the values."""
    return {where: [(key, value and re.sub(r"#\d+@", "#@", value), timestamp) for key, value, timestamp in sequence]
            for where, sequence in results.items()}


def _assert_output_matches(output: str, our_results: dict, kafka_streams_results: dict) -> None:
    expected = {where: sequence for where, sequence in kafka_streams_results.items() if where[0] == output}
    ours = {where: sequence for where, sequence in our_results.items() if where[0] == output}
    assert expected, f"Kafka Streams wrote nothing to {output}"
    assert set(ours) == set(expected)
    for where, sequence in expected.items():
        if where[1] is None:  # null keys: partitions the producer picked, in Kafka Streams as here
            assert sorted(ours[where]) == sorted(sequence), where
        else:
            assert ours[where] == sequence, where


def test_kafka_streams_output_exercises_the_scenarios(kafka_streams_run):
    """What the scenarios are about shows in Kafka Streams' own output, on both key families."""
    results = kafka_streams_run["results"]

    def values(output, family):
        return [value for (name, _, kin), sequence in results.items() if name == output and kin == family
                for _, value, _ in sequence]

    for family in FAMILIES:
        assert any(value.startswith("null|") for value in values("out-filter", family))  # a row dropped
        assert any(value.startswith("null|") for value in values("out-to-table", family))  # a tombstone
        assert any("-acc" in value for value in values("out-regrouped", family))  # a row subtracted
        merged = values("out-merged", family)
        assert any(value.startswith("e") for value in merged) and any(value.startswith("c") for value in merged)
        assert any(value.split("|")[0].count(",") >= 2 for value in values("out-prefixed", family))
        assert any("&" in value for value in values("out-cogroup-join", family))
        assert any(value.startswith("null|") or "|null" in value for value in values("out-cogroup-outer", family))
        assert values("out-evens", family) and values("out-routed-sink", family) and values("out-odds", family)
        transformed = values("out-transformed", family)
        assert any(value.startswith("null#") for value in transformed)  # a tombstone through the transformer
        assert any(int(value.split("#")[1].split("@")[0]) >= 3 for value in transformed)  # its store counted
        assert any(":null|" in value for value in values("out-prices-transformed", family))
    for family in FAMILIES:  # the transformer's old value subtracted from its verdict's keys
        assert any("-" in value for value in values("out-rows-keyed-regrouped", family))
    for family in FAMILIES:  # the joins' getter: its own instance's calls, on no row too, the row's time
        joined, left = values("out-lookups-joined", family), values("out-lookups-left", family)
        assert any(">null#" in value and "@-1~p-1o-1|" in value for value in joined)
        assert any(">x" in value and "~p-1o-1|" in value for value in left)
        for (name, _, kin), sequence in results.items():  # one instance per task: its calls go up
            if name == "out-lookups-left" and kin == family:
                calls = [int(value.split("#")[1].split("@")[0]) for _, value, _ in sequence if "#" in value]
                assert calls == sorted(calls) and len(set(calls)) > 1
        assert any("~p-1o-1|" not in value for value in values("out-prices-called", family))  # the processor's
        table_joined = [value for value in values("out-lookups-table-joined", family) if not value.startswith("null|")]
        assert any("~p-1o-1|" in value for value in table_joined)  # a lookup's update, through the getter
        assert any("~p-1o-1|" not in value for value in table_joined)  # a price's, through the processor
    for family in FAMILIES:  # without a store, re-grouped: the old value's call right after the new one's
        calls = [re.findall(r"([+-])[^+-]*?#(\d+)@", value) for value in values("out-prices-recounted", family)]
        assert any(sign == "-" and int(count) == int(after) + 1 and next_sign == "+"
                   for found in calls for (sign, count), (next_sign, after) in zip(found, found[1:]))
        # its filter: a tombstone where the transformed old value passed and the new one does not
        assert any(value.startswith("null|") for value in values("out-recounted-kept", family))
        # its map_values re-grouped: a missing old row, transformed, subtracted from a group never added to
        assert any(value.startswith("null|") for value in values("out-recounted-kind-counts", family))
    kept = kafka_streams_run["rows-keyed"]  # a tombstone transformed into a value is kept, not deleted
    assert all(any(key.startswith(family) and value.endswith(":null") for key, value in kept.items())
               for family in FAMILIES)


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    ours = table_scenarios(kafka_streams_run["topics"]).build().describe()
    assert str(ours) == kafka_streams_run["describe"]
