"""Kafka Streams' own join test scenarios on Spark against Kafka Streams itself.

The scenarios (tests/join_scenarios_topology.py, which names the Kafka Streams test each follows; Java
twin JoinScenarioExamples, both built with ``topology.optimization=single.store.self.join``): three
single-store self-joins (one of them asymmetric, one a left join), a stream joined twice with another, chains of three streams
inner-inner, left-left and outer-outer (the last two emitting unjoined records late), a pair of
streams joined inner, left and outer at the windows' edges (nothing after, nothing before), a stream
joined and left-joined with a table, two tables joined and joined again with the right one
inner-inner, left-left and outer-outer, two versioned tables outer-joined, a stream joined with a global
table, and left and outer joins by the deprecated ``JoinWindows.of`` (no spurious-result fix). Their inputs
(tests/join_scenario_inputs.py) are the tests' own sequences (nulls, tombstones, records out of
order, null keys) played for four keys on two partitions. Kafka Streams 4.3.1 runs them all in one
app without the record cache (``statestore.cache.max.bytes`` 0, every store uncached on our side
too), in the background while our clean run goes on. The self-joins alone are also run killed part way
and rerun from the checkpoints.

Compared: describe() of the very topology run, and every output partition's whole sequence of
``(key, value|t<timestamp>, headers)`` records with a key (one task writes each partition, in its
processing order; every input record has a header naming it); the records with a null key, which go
to the partition the producer picks (in Kafka Streams as here), as a sorted list per output.
"""

from __future__ import annotations

import json
import sys
import time

import pytest
from pyspark import cloudpickle

import join_scenarios_topology
from equivalence_io import KafkaStreamsReference, output_topics, produce_inputs, start_kafka_streams, written_time
from join_scenario_inputs import PARTITIONS, scenario_inputs
from join_scenarios_topology import INPUTS, OUTPUTS, join_scenario_examples, self_join_scenarios
from killed_runs import kill_and_rerun
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(join_scenarios_topology)

BASE = (int(time.time()) - 3600) * 1000 // 60_000 * 60_000  # recent: the broker keeps 7 days


def _results(bootstrap: str, topics: dict[str, str]) -> dict:
    """Per ``(output, partition)`` the ``(key, value, headers, timestamp)`` records with a key in offset
    order; per output the null-keyed ones' ``(value, headers, timestamp)`` sorted."""
    keyed: dict[tuple[str, int], list] = {}
    null_keyed: dict[str, list] = {}
    for output in OUTPUTS:
        for record in sorted(read_topic(bootstrap, topics[output]), key=lambda r: (r.partition, r.offset)):
            value = None if record.value is None else record.value.decode()
            headers = tuple((name, None if data is None else data.decode()) for name, data in record.headers)
            if record.key is None:
                null_keyed.setdefault(output, []).append((value, headers, written_time(record)))
            else:
                keyed.setdefault((output, record.partition), []).append(
                    (record.key.decode(), value, headers, written_time(record)))
    return {"keyed": keyed, "null-keyed": {output: sorted(values) for output, values in null_keyed.items()}}


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"kjs-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = scenario_inputs(BASE)
    produce_inputs(kafka_bootstrap, inputs, records, INPUTS)
    # In the background: our clean run, the first test, goes on meanwhile.
    topics, main = start_kafka_streams("kstreams.oracle.JoinScenarioExamples", "kjs", kafka_bootstrap, kafka_admin,
                                       unique_topic, tmp_path_factory, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))

    def finish(stdout: str) -> dict:
        return {"describe": json.loads(stdout.strip().splitlines()[-1])["describe"],
                "results": _results(kafka_bootstrap, topics)}

    reference = KafkaStreamsReference(main, {"inputs": inputs, "topics": topics, "records": records}, finish)
    yield reference
    reference.close()


def test_clean_run_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                         kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, PARTITIONS),
                           "spark-kjs")
    runner = TaskRunner(join_scenario_examples(topics), unique_topic("spark-kjs"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    runner.run_all()
    ours = _results(kafka_bootstrap, topics)
    expected = kafka_streams_run["results"]
    for where in sorted(set(expected["keyed"]) | set(ours["keyed"])):
        assert ours["keyed"].get(where) == expected["keyed"].get(where), where
    assert ours["null-keyed"] == expected["null-keyed"]


def test_self_joins_killed_part_way_and_rerun_match_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark,
                                                                  tmp_path, kafka_streams_run):
    """The single-store self-joins alone (``self_join_scenarios``) in a ``dagster-kstreams run`` SIGKILLed
    once task 0_1 (the second partition of ``self-in``) has committed its first batch of 8, then rerun
    here from the checkpoints: each output partition's whole sequence is Kafka Streams'."""
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, PARTITIONS),
                           "spark-kjs-killed")
    rerun = kill_and_rerun(tmp_path, self_join_scenarios, topics, app_id=unique_topic("spark-kjs-killed"),
                           bootstrap=kafka_bootstrap, spark=spark,
                           kill_when=lambda line: line.startswith("task 0_1 batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", "8"))
    on_partition_1 = sum(1 for record in kafka_streams_run["records"]["self-in"] if record[2] == 1)
    assert 0 < rerun.by_task["0_1"].records_in < on_partition_1  # task 0_1 continued from its checkpoint
    ours, expected = _results(kafka_bootstrap, topics), kafka_streams_run["results"]
    for where in [(output, partition) for output in ("self-asym", "self-left") for partition in range(PARTITIONS)]:
        assert ours["keyed"].get(where) == expected["keyed"].get(where), where


def test_describe_matches_kafka_streams(kafka_streams_run):
    ours = join_scenario_examples(kafka_streams_run["topics"]).describe()
    assert str(ours) == kafka_streams_run["describe"]


def test_reference_exercises_the_scenarios(kafka_streams_run):
    """Every scenario's output has records with a key on both partitions, and the cases each is for
    show up in Kafka Streams' own output."""
    expected = kafka_streams_run["results"]
    for output in OUTPUTS:
        assert {(output, p) for p in range(PARTITIONS)} <= set(expected["keyed"]), output
    values = {output: [value for (name, _), records in expected["keyed"].items() if name == output
                       for _, value, _, _ in records] for output in OUTPUTS}
    assert any(v.startswith("A0-A0|") for v in values["self"])  # a record joined with itself
    # the self-joins: a record behind the asymmetric join's retention does not join itself (it still
    # joins a later-stamped record the store keeps); the left self-join joins as the inner one (no
    # record with null)
    assert not any(v.startswith("E0-E0|") for v in values["self-asym"])
    assert any(v.startswith("B0-E0|") for v in values["self-asym"])
    assert any(v.startswith("E0-E0|") for v in values["self-left"])
    assert not any("null" in v for v in values["self-left"])
    for output in ("left3", "outer3", "edge-left", "edge-outer"):  # unjoined records emitted late
        assert any("-null" in v for v in values[output]), output
    assert any(v.startswith("null-") for v in values["outer3"] + values["edge-outer"])
    # without the spurious-result fix (JoinWindows.of) a left record is joined with null at once, then
    # with a partner that comes later
    unjoined = {v.split("-")[0] for v in values["old-left"] if "-null|" in v}
    assert any(v.split("-")[0] in unjoined and "-null|" not in v for v in values["old-left"])
    assert any(v.startswith("null|") for v in values["tt-outer2"] + values["v-outer"])  # tombstones
    # null keys: inner joins drop them, left and outer sides join them with null at once (KIP-962)
    assert "multi-inner" not in expected["null-keyed"] and "inner3" not in expected["null-keyed"]
    assert expected["null-keyed"]["left3"] and expected["null-keyed"]["outer3"]
    assert expected["null-keyed"]["st-left"] and "st-inner" not in expected["null-keyed"]
    # a global join of a null key by its mapped key (the left join's unmatched too)
    null_keyed_global = [value for value, _, _ in expected["null-keyed"]["gt-inner"]]
    assert null_keyed_global and all(",FKey0-Y0|" in value for value in null_keyed_global), null_keyed_global
