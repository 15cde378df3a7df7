"""Session-windowed aggregations on Spark against Kafka Streams itself: same input, same results.

One topology (tests/oracle SessionExamples.java; its Python twin session_examples below) holds a
session count (gap 10 s, grace 0, no record cache), a session aggregate with a merger whose
argument order shows (gap 10 s, grace 30 s, cached) and a session reduce behind group_by (a
repartition topic: the timestamps travel in a header). The input is on two partitions, with
out-of-order timestamps (some bridge two sessions of a key into one), very late records, null
keys and null values.

Compared: the final value per windowed key of each output topic with its record's timestamp (raw
key bytes: Kafka Streams' SessionWindowedSerializer layout; tombstones delete), the plain reference
(tests/session_reference.py), and the late records counted.
"""

from __future__ import annotations

import json
import random
import sys
import time
from datetime import timedelta

import pytest
from pyspark import cloudpickle

from equivalence_io import (KafkaStreamsReference, java_string, output_topics, produce_strings, start_kafka_streams,
                            written_time)
from killed_runs import kill_and_rerun
import session_reference
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import SessionWindows

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])

PARTITIONS = 2
T0 = (int(time.time()) - 3600) * 1000
OUTPUTS = ("out-count", "out-aggregate", "out-reduce")
GAP, GRACE_AGGREGATE = 10_000, 30_000


def session_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The Python twin of SessionExamples.sessionExamples (Java); keep the two in step."""
    windowed = WindowedSerde(Serdes.String(), session=True)
    builder = StreamsBuilder()
    stream = builder.stream(topics["events"])
    grouped = stream.group_by_key()
    grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(seconds=10))) \
        .count(Materialized.as_("session-count").with_caching_disabled()) \
        .to_stream().to(topics["out-count"], Produced.with_(windowed, Serdes.Long()))
    grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=10), timedelta(seconds=30))) \
        .aggregate(lambda: "", lambda key, value, agg: f"{agg}+{java_string(value)}",
                   lambda key, one, two: f"{one}|{two}", Materialized.as_("session-aggregate")) \
        .to_stream().to(topics["out-aggregate"], Produced.with_(windowed, Serdes.String()))
    stream.group_by(lambda key, value: None if value is None else value[0],
                    Grouped.with_("session-regroup", Serdes.String(), Serdes.String())) \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=5), timedelta(days=1))) \
        .reduce(lambda one, two: one if one >= two else two, Materialized.as_("session-reduce")) \
        .to_stream().to(topics["out-reduce"], Produced.with_(windowed, Serdes.String()))
    return builder


def _aggregate_functions():
    return (lambda: "", lambda key, value, agg: f"{agg}+{java_string(value)}", lambda key, one, two: f"{one}|{two}")


def _input(seed: int = 5) -> list[tuple]:
    """``(key, value, partition, timestamp)`` in production order; keys u0..u9 on partition
    ``n % 2``. Timestamps are distinct. About one record in five is stamped up to 25 s early,
    one in sixty 40-90 s early (late for every grace but the reduce's)."""
    rng = random.Random(seed)
    used: set[int] = set()
    records = []
    for i in range(1600):
        timestamp = T0 + i * 1000 + rng.randrange(1, 999)
        if rng.random() < 0.2:
            timestamp -= rng.randint(1_000, 25_000)
        elif rng.random() < 1 / 60:
            timestamp -= rng.randint(40_000, 90_000)
        if timestamp in used:
            continue
        used.add(timestamp)
        n = rng.randrange(10)
        key = None if rng.random() < 0.02 else f"u{n}"
        value = None if rng.random() < 0.03 else f"{'abcde'[rng.randrange(5)]}{i}"
        records.append((key, value, n % 2, timestamp))
    # Drop the few records for which a cached Kafka Streams run could still merge a session its store
    # had expired (that depends on when Kafka Streams commits), so that its result is deterministic.
    skipped: set = set()
    for partition in range(PARTITIONS):
        indexes = [i for i, record in enumerate(records) if record[2] == partition]
        ambiguous: list = []
        session_reference.run([(records[i][0], records[i][1], records[i][3]) for i in indexes], GAP,
                              GRACE_AGGREGATE, *_aggregate_functions(), skip_ambiguous=ambiguous)
        skipped.update(indexes[i] for i in ambiguous)
    return [record for i, record in enumerate(records) if i not in skipped]


def _expected(records) -> dict:
    """The plain reference: final values per (key, start, end) and late records."""
    expected = {"out-count": {}, "out-aggregate": {}, "dropped": 0}
    for partition in range(PARTITIONS):
        task = [(k, v, t) for k, v, p, t in records if p == partition]
        final, dropped, _ = session_reference.count(task, GAP, 0)
        expected["out-count"].update(final)
        expected["dropped"] += dropped
        final, dropped, ambiguous = session_reference.run(task, GAP, GRACE_AGGREGATE, *_aggregate_functions())
        assert ambiguous == 0
        expected["out-aggregate"].update(final)
        expected["dropped"] += dropped
    # The reduce: no record is late by a day (its grace), so sessions are the runs of timestamps a gap apart.
    regrouped = sorted((v[0], t, v) for k, v, p, t in records if v is not None)
    reduce: dict = {}
    current = None
    for key, timestamp, value in regrouped:
        if current and current[0] == key and timestamp <= current[2] + 5_000:
            current = [key, current[1], timestamp, max(current[3], value)]
        else:
            if current:
                reduce[tuple(current[:3])] = current[3]
            current = [key, timestamp, timestamp, value]
    reduce[tuple(current[:3])] = current[3]
    expected["out-reduce"] = reduce
    return expected


def _results(bootstrap: str, topics: dict[str, str]) -> dict:
    """Final ``(value, timestamp)`` per raw windowed key of each output topic (a tombstone deletes)."""
    results: dict = {}
    for name in OUTPUTS:
        table = results.setdefault(name, {})
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            if record.value is None:
                table.pop(record.key, None)
            else:
                table[record.key] = (record.value, written_time(record))
    return results


def _decoded(results: dict) -> dict:
    serde = WindowedSerde(Serdes.String(), session=True)
    decoded = {}
    for name, table in results.items():
        values = {}
        for key, (value, _) in table.items():
            windowed = serde.deserialize(key)
            values[(windowed.key, windowed.window.start, windowed.window.end)] = (
                Serdes.Long().deserialize(value) if name == "out-count" else value.decode())
        decoded[name] = values
    return decoded


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    events = unique_topic("session-events")
    kafka_admin.create_topics({events: PARTITIONS})
    records = _input()
    produce_strings(kafka_bootstrap, events, records)
    # In the background: our clean run, the first test, goes on meanwhile.
    topics, main = start_kafka_streams("kstreams.oracle.SessionExamples", "sessions", kafka_bootstrap, kafka_admin,
                                       unique_topic, tmp_path_factory, {"events": events},
                                       dict.fromkeys(OUTPUTS, PARTITIONS))
    reference = KafkaStreamsReference(main, {"events": events, "records": records}, lambda stdout: {
        "metrics": json.loads(stdout.strip().splitlines()[-1]), "results": _results(kafka_bootstrap, topics)})
    yield reference
    reference.close()


def _assert_same(kafka_streams_run, ours: dict) -> None:
    expected = kafka_streams_run["results"]
    for name in OUTPUTS:
        assert ours[name] == expected[name], name  # raw bytes: Kafka Streams' windowed keys, values; timestamps


def test_sessions_on_spark_match_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                               kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, {"events": kafka_streams_run["events"]},
                           dict.fromkeys(OUTPUTS, PARTITIONS))
    runner = TaskRunner(session_examples(topics), unique_topic("spark-sessions"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    results = runner.run_all()
    ours = _results(kafka_bootstrap, topics)
    _assert_same(kafka_streams_run, ours)
    assert sum(r.records_dropped_late for r in results) == _expected(kafka_streams_run["records"])["dropped"]

    # The stores read back as Kafka Streams' session stores do: each session still held is a
    # windowed key whose last output is its aggregate.
    final = _decoded(ours)
    for output, store in (("out-count", "session-count"), ("out-aggregate", "session-aggregate"),
                          ("out-reduce", "session-reduce")):
        content = runner.read_store(store)
        assert content, store
        for windowed, aggregate in content.items():
            assert final[output][(windowed.key, windowed.window.start, windowed.window.end)] == aggregate, store


def test_reference_and_kafka_streams_agree(kafka_streams_run):
    records = kafka_streams_run["records"]
    expected = _expected(records)
    decoded = _decoded(kafka_streams_run["results"])
    for name in OUTPUTS:
        assert decoded[name] == expected[name], name
    # A session's update is stamped with the session's end (KStreamSessionWindowAggregate).
    serde = WindowedSerde(Serdes.String(), session=True)
    for name in OUTPUTS:
        assert all(serde.deserialize(key).window.end == timestamp
                   for key, (_, timestamp) in kafka_streams_run["results"][name].items()), name
    # The input exercises what it should: merged sessions, merger order, late records, null keys.
    assert any(start < end for _, start, end in expected["out-count"])
    assert any("|" in value and value.count("|") >= 2 for value in expected["out-aggregate"].values())
    assert expected["dropped"] > 10
    null_keys = sum(1 for k, *_ in records if k is None)
    assert null_keys > 5
    # Kafka Streams' dropped-records: the late ones, and each null key at both keyed aggregations.
    assert kafka_streams_run["metrics"]["dropped"] == expected["dropped"] + 2 * null_keys


def test_sessions_killed_part_way_and_rerun_still_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    topics = output_topics(kafka_admin, unique_topic, {"events": kafka_streams_run["events"]},
                           dict.fromkeys(OUTPUTS, PARTITIONS))
    # Kill it as soon as task 0_0 (two batches) has committed its first: the rerun goes on from
    # that batch's session state and stream time.
    # --parallelism 1: one task after another, so the kill lands in task 0_0.
    rerun = kill_and_rerun(tmp_path, session_examples, topics, app_id=unique_topic("spark-sessions-kill"),
                           bootstrap=kafka_bootstrap, spark=spark, kill_when=lambda line: line.startswith("task 0_0 batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", "500"))
    results = rerun.by_task
    on_partition_0 = sum(1 for record in kafka_streams_run["records"] if record[2] == 0)
    assert 0 < results["0_0"].records_in < on_partition_0
    assert all(results[task].records_in for task in ("0_1", "1_0", "1_1"))
    _assert_same(kafka_streams_run, _results(kafka_bootstrap, topics))
