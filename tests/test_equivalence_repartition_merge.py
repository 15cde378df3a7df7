"""``topology.optimization=all``'s merged repartition topic on Spark against Kafka Streams itself
(tests/oracle, RepartitionMergeExamples.java; our twin repartition_merge_topology.py).

Kafka Streams' ``RepartitionOptimizingTest`` topology: one stream re-keyed by ``map`` (the key
upper-cased), then filtered and written out, counted, aggregated, reduced behind a filter and a
peek, and joined with its own counts (5 s, no grace). Optimized, the count, the aggregate, the
reduce and the join all read one repartition topic, ``count-groupByKey-repartition``, in the second
sub-topology, and the reduce's filter and peek and the join's filter run there, after it. Stores
uncached; every output value stamped with its record's timestamp.

Input (2 partitions): rounds of records of six keys, out of order within 3 s, null keys (dropped
before the repartition topic) and null values (which the aggregations skip). Each key is written to
the partition its upper-cased key has in the repartition topic, so that each repartition partition
is written by one upstream task, in its order (across upstream tasks, records interleave as the
tasks run). Compared: ``describe()``, the repartition topics each side created (one), and each
output partition's whole sequence of ``(key, value, timestamp)`` (the timestamp each record was
written with), on a clean run and on a run killed part-way
and rerun from its checkpoints in another process.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections import defaultdict

import pytest
from pyspark import cloudpickle

import repartition_merge_topology
from equivalence_io import KafkaStreamsReference, output_topics, produce_strings, start_kafka_streams, written_time
from killed_runs import kill_after_first_batch_at_least_once
from repartition_merge_topology import INPUTS, OUTPUTS, repartition_optimizing_test
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(repartition_merge_topology)

PARTITIONS = 2
PARTITION_COUNTS = dict.fromkeys(OUTPUTS, PARTITIONS)
KEYS = ("a", "b", "c", "d", "e", "f")
T0 = (int(time.time()) - 3600) * 1000  # recent: the broker keeps 7 days
MERGED_TOPIC = "count-groupByKey-repartition"


def _input(seed: int = 27) -> list[tuple]:
    """``[(key, value, partition, timestamp)]`` in production order: 320 records, a key every 400 ms
    give or take 3 s (so out of order), about one key in twenty null and one value in fourteen."""
    rng = random.Random(seed)
    records = []
    for i in range(320):
        key = None if rng.random() < 0.05 else rng.choice(KEYS)
        value = None if rng.random() < 0.07 else f"v{i}" + "x" * rng.randrange(4)
        partition = rng.randrange(PARTITIONS) if key is None else default_partition(key.upper().encode(), PARTITIONS)
        records.append((key, value, partition, T0 + i * 400 + rng.randint(-3000, 3000)))
    return records


def _results(bootstrap: str, topics: dict[str, str]) -> dict[str, dict[int, list[tuple[str, str, int]]]]:
    """Each output, partition by partition, as its sequence of ``(key, value, timestamp)``."""
    results: dict = {}
    for name in OUTPUTS:
        sequences: dict[int, list] = defaultdict(list)
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            sequences[record.partition].append((record.key.decode(), record.value.decode(), written_time(record)))
        results[name] = dict(sequences)
    return results


def _repartition_topics(kafka_admin, app_id: str) -> list[str]:
    return sorted(topic for topic in kafka_admin.list_topics()
                  if topic.startswith(f"{app_id}-") and topic.endswith("-repartition"))


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"repmerge-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = _input()
    produce_strings(kafka_bootstrap, inputs["input"], records)
    app_id = unique_topic("ks-repmerge")
    # In the background: our clean run, the first test, goes on meanwhile.
    topics, main = start_kafka_streams("kstreams.oracle.RepartitionMergeExamples", "repmerge", kafka_bootstrap,
                                       kafka_admin, unique_topic, tmp_path_factory, inputs, PARTITION_COUNTS,
                                       app_id=app_id)
    reference = KafkaStreamsReference(main, {"inputs": inputs, "topics": topics, "records": records}, lambda stdout: {
        "describe": json.loads(stdout.strip().splitlines()[-1])["describe"],
        "repartition_topics": _repartition_topics(kafka_admin, app_id),
        "results": _results(kafka_bootstrap, topics)})
    yield reference
    reference.close()


def test_clean_run_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                         kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], PARTITION_COUNTS, "spark-repmerge")
    app_id = unique_topic("spark-repmerge")
    runner = TaskRunner(repartition_optimizing_test(topics), app_id, kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    assert {r.task_id for r in runner.run_all()} == {"0_0", "0_1", "1_0", "1_1"}
    assert _repartition_topics(kafka_admin, app_id) == [f"{app_id}-{MERGED_TOPIC}"]
    assert _results(kafka_bootstrap, topics) == kafka_streams_run["results"]


def test_reference_reads_one_repartition_topic(kafka_streams_run):
    """Kafka Streams created the one merged topic, and its output shows what the test is about on
    both partitions: counts, aggregates, reduces and join pairs of keys re-keyed upper-case."""
    app_id_prefix = kafka_streams_run["repartition_topics"][0].rsplit(MERGED_TOPIC, 1)[0]
    assert kafka_streams_run["repartition_topics"] == [app_id_prefix + MERGED_TOPIC]
    results = kafka_streams_run["results"]
    for name in ("counts", "aggregates", "reduced", "joined"):
        assert sorted(results[name]) == [0, 1], name
        assert {key for sequence in results[name].values() for key, _, _ in sequence} <= {k.upper() for k in KEYS}
    assert {key for sequence in results["joined"].values() for key, _, _ in sequence} == {"A", "E"}
    assert {key for sequence in results["processed"].values() for key, _, _ in sequence} == {"B"}


def test_describe_matches_kafka_streams(kafka_streams_run):
    ours = repartition_optimizing_test(kafka_streams_run["topics"]).describe()
    assert str(ours) == kafka_streams_run["describe"]


def test_killed_part_way_and_rerun_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                                         kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], PARTITION_COUNTS, "spark-repmerge")
    # Killed once task 0_0 has committed its first batch of 60 records (the re-keying's: the merged
    # topic partly written, the count, aggregate, reduce and join buffers not begun).
    rerun = kill_after_first_batch_at_least_once(tmp_path, repartition_optimizing_test, topics,
                                                 app_id=unique_topic("spark-repmerge-kill"),
                                                 bootstrap=kafka_bootstrap, spark=spark)
    task_records = sum(row[2] == 0 for row in kafka_streams_run["records"])
    assert 0 < rerun.by_task["0_0"].records_in < task_records, rerun.by_task
    assert _results(kafka_bootstrap, topics) == kafka_streams_run["results"]
