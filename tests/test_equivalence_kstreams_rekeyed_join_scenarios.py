"""Kafka Streams' joins of re-keyed streams on Spark against Kafka Streams itself.

The scenarios (tests/rekeyed_joins_topology.py, which names the Kafka Streams test each follows; Java
twin RekeyedJoinScenarioExamples): a join after a ``map`` on one side, on both sides, after two
``map``s, after ``map_values`` then ``select_key`` on both sides, after a ``flat_map``, with the re-keyed
stream on the right, a left join of two re-keyed streams, a stream re-keyed and joined and left-joined
with a table, a join after ``repartition(Repartitioned...)`` on both sides, and one re-keyed stream
joined with two others, through one repartition topic or (``StreamJoined.with_name``) one each
(``KStreamKStreamJoinTest``). Their inputs
(tests/rekeyed_join_inputs.py): the test's records plus null keys, null values (a null key after the
re-key), tombstones, records out of order and late, on two partitions.

The runner joins once both repartition topics are written (its upstream tasks done); Kafka Streams
is run to see them the same way: a first run fills every repartition topic with every join held back,
then the app runs on all of it, each join task merging its partitions by timestamp (the Java twin's
docstring). Compared: describe() of the very topology run, and every output partition's whole
sequence of ``(key, value|t<timestamp>, headers)`` records, on a clean run and on one killed part-way
and rerun from its checkpoints.
"""

from __future__ import annotations

import json
import sys
import time

import pytest
from pyspark import cloudpickle

import rekeyed_joins_topology
from equivalence_io import KafkaStreamsReference, output_topics, produce_inputs, start_kafka_streams, written_time
from killed_runs import kill_after_first_batch_at_least_once
from rekeyed_join_inputs import PARTITIONS, rekeyed_join_inputs
from rekeyed_joins_topology import INPUTS, OUTPUTS, rekeyed_join_examples
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.kafka.timestamp_header import INTERNAL_HEADER_PREFIX
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(rekeyed_joins_topology)

BASE = (int(time.time()) - 3600) * 1000 // 60_000 * 60_000  # recent: the broker keeps 7 days


def _results(bootstrap: str, topics: dict[str, str]) -> dict[tuple[str, int], list]:
    """Per ``(output, partition)`` the ``(key, value, headers, timestamp)`` records in offset order (every output
    key is a join key, never null), less the runner's own ``__dagster_kstreams.*`` headers (a killed
    run's at-least-once marks)."""
    results: dict[tuple[str, int], list] = {}
    for output in OUTPUTS:
        for record in sorted(read_topic(bootstrap, topics[output]), key=lambda r: (r.partition, r.offset)):
            value = None if record.value is None else record.value.decode()
            headers = tuple((name, None if data is None else data.decode()) for name, data in record.headers
                            if not name.startswith(INTERNAL_HEADER_PREFIX))
            key = None if record.key is None else record.key.decode()
            results.setdefault((output, record.partition), []).append((key, value, headers, written_time(record)))
    return results


def _assert_same(ours: dict, expected: dict) -> None:
    for where in sorted(set(expected) | set(ours)):
        assert ours.get(where) == expected.get(where), where


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"krj-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = rekeyed_join_inputs(BASE)
    produce_inputs(kafka_bootstrap, inputs, records, INPUTS)
    # In the background: our clean run, the first test, goes on meanwhile.
    topics, main = start_kafka_streams("kstreams.oracle.RekeyedJoinScenarioExamples", "krj", kafka_bootstrap,
                                       kafka_admin, unique_topic, tmp_path_factory, inputs,
                                       dict.fromkeys(OUTPUTS, PARTITIONS))

    def finish(stdout: str) -> dict:
        return {"describe": json.loads(stdout.strip().splitlines()[-1])["describe"],
                "results": _results(kafka_bootstrap, topics)}

    reference = KafkaStreamsReference(main, {"inputs": inputs, "topics": topics, "records": records}, finish)
    yield reference
    reference.close()


def test_clean_run_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                         kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, PARTITIONS),
                           "spark-krj")
    runner = TaskRunner(rekeyed_join_examples(topics), unique_topic("spark-krj"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    runner.run_all()
    _assert_same(_results(kafka_bootstrap, topics), kafka_streams_run["results"])


def test_describe_matches_kafka_streams(kafka_streams_run):
    ours = rekeyed_join_examples(kafka_streams_run["topics"]).build().describe()
    assert str(ours) == kafka_streams_run["describe"]


def test_reference_exercises_the_scenarios(kafka_streams_run):
    """Every scenario's output has records on both partitions, and the cases each is for show up in
    Kafka Streams' own output."""
    expected = kafka_streams_run["results"]
    for output in OUTPUTS:
        assert {(output, p) for p in range(PARTITIONS)} <= set(expected), output
    values = {output: [value for (name, _), records in expected.items() if name == output
                       for _, value, _, _ in records] for output in OUTPUTS}
    assert any(v.startswith("1:A|") for v in values["map-both"])  # KStreamRepartitionJoinTest's 1:A
    assert any(v.startswith("A:1|") for v in values["rhs"])
    assert any(v.startswith("1x:") for v in values["flat-map"])  # flat_map's second record joined
    assert any(v.startswith("v1:v") for v in values["mv-select"])  # both values mapped
    assert any(":null|" in v for v in values["left"])  # unjoined, emitted once the window closed
    assert any(":null|" in v for v in values["st-left"])  # no table row (a tombstone's key)
    # one's 2 at 1.5 s, out of order behind its 5 at 5 s, still joined with two's B at 2.2 s
    assert ("2", f"2:B|t{BASE + 2202}", (("h", "left-1:8"),), BASE + 2202) in expected[("left", 0)]
    assert any(v.startswith("A:a|") for v in values["rp-both"])
    # one task joins the shared repartition topic with both streams, into one output
    assert any(v.startswith("1:A|") for v in values["reuse"]) and any(v.startswith("1:a|") for v in values["reuse"])
    assert any(v.startswith("1:A|") for v in values["named-first"])
    assert any(v.startswith("1:a|") for v in values["named-second"])


def test_killed_part_way_and_rerun_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                                         kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, PARTITIONS),
                           "spark-krj-kill")
    # Killed once task 0_0 (map-one's re-keying) committed its first batch; the rest to the rerun here.
    rerun = kill_after_first_batch_at_least_once(tmp_path, rekeyed_join_examples, topics,
                                                 app_id=unique_topic("spark-krj-kill"), bootstrap=kafka_bootstrap,
                                                 spark=spark)
    assert rerun.by_task["0_0"].records_in == 0, rerun.by_task  # its one batch committed before the kill
    assert sum(result.records_in for result in rerun.results) > 0, rerun.by_task  # the rest run here
    _assert_same(_results(kafka_bootstrap, topics), kafka_streams_run["results"])
