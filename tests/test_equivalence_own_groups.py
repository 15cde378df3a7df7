"""Stores after processors that forward records of other keys, on Spark against Kafka Streams itself.

One sub-topology on the events (tests/own_groups_topology.py; Java twin OwnGroupExamples): a
``process_values`` whose punctuator forwards each key's ended 2 s bucket into a ``reduce``; a table
suppressed until a 1 s time limit into a ``count``; a 2 s windowed count whose stream, grouped again
by the windowed key, goes into a ``reduce``; a session count whose stream, grouped again by the
session key, goes into a ``count``. Each forwarder forwards records of other keys than the
record being processed (or windowed keys), which the stores after it must keep under their own keys
(dagster_kstreams/processors/own_groups.py). Six stream-stream joins read them too: the
punctuator's buckets left-joined with the events, the suppression's evictions left-joined with the
events, the windowed count's stream outer-joined with its own counts times ten; the session count's
stream (each update stamped with its second), a sliding count emitting on window close and a windowed
cogroup, each outer-joined with its own later updates. Each pairs a forwarded record with the other
side's records of the forwarded record's own key (window); a session left alone leaves the
outer-join store in the session serde's order (key, end, start: own_groups_topology).

Input (2 partitions): out-of-order timestamps (within the grace and beyond it), tombstones, null
keys, null values. Kafka Streams 4.3.1 runs it once. Ours runs it clean (the whole input, in micro-batches of 90
records per task: the state carried from batch to batch), and killed: a ``dagster-kstreams run``
process SIGKILLed once task 0_1 has committed its first batch, then a rerun in another process
(this one) continues each task from its checkpoint.

Compared: describe() of the very topology run; per output topic and partition the whole sequence of
(key, value, timestamp) records (the timestamp each was written with), with the timestamp the
joins' values carry too (own_groups_topology.StampValues: the record's timestamp in the processor),
every store being uncached, so the output is fixed by the input.
"""

from __future__ import annotations

import json
import random
import struct
import time

import pytest
from pyspark import cloudpickle

import own_groups_topology
from equivalence_io import output_topics, produce_strings, run_kafka_streams, windowed_key_reader, written_time
from killed_runs import kill_and_rerun
from own_groups_topology import BUCKET_MS, JOINED, LONG_VALUED, OUTPUT_KEYS, OUTPUTS, own_group_examples
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's classes by value.
cloudpickle.register_pickle_by_value(own_groups_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute
KEYS = ("u1", "u2", "u3", "u5", "u11", "u15")  # three in each partition (murmur2)


# The buckets' join (own_groups_topology): 1 s before a bucket's last millisecond, nothing after, 2 s
# grace. Kafka Streams punctuates after a varying number of records (its thread's numIterations,
# about ten here), the runner after each one: a bucket is released up to that many records after the
# stream time passed its end there. The input keeps the join's output the same either way (the join
# being a left one, an event's only output is a pair with a bucket released before it): no event
# that a bucket's window holds (the bucket's last second) arrives in that while, behind the end of
# a bucket (its own or an earlier one), as the pair would come out before the bucket's release's
# output there and after it here; an out-of-order event lies at most 2.5 s behind the stream time
# (the buckets it may meet are all still held, or released, in both, and within the stores'
# retention) or at least 8.5 s (none); and the bucket's lookup stays within the events' retention
# (the grace covers the delay).
JOIN_BEFORE_MS = 1_000
PUNCTUATION_DELAY_MS = 1_500


def _input(seed: int = 19) -> list[tuple]:
    """``[(key, value, partition, timestamp)]`` in production order."""
    rng = random.Random(seed)
    stream_times: dict[int, int] = {}
    events = []
    for i in range(700):
        key = None if rng.random() < 0.04 else rng.choice(KEYS)
        value = None if rng.random() < 0.08 else f"v{i}"
        partition = rng.randrange(PARTITIONS) if key is None else default_partition(key.encode(), PARTITIONS)
        timestamp, roll, now = T0 + i * 40, rng.random(), stream_times.get(partition)
        if now is not None and roll < 0.12:
            timestamp = _out_of_order(rng, now)     # within the windows' and the joins' grace
        elif now is not None and roll < 0.18:
            timestamp = now - rng.randint(8_500, 10_000)   # late beyond every grace (its bucket released)
        stream_times[partition] = max(timestamp, now or timestamp)
        events.append((key, value, partition, timestamp))
    return events


def _out_of_order(rng: random.Random, now: int) -> int:
    """A timestamp up to 2.5 s behind the stream time ``now``; within the punctuation's delay after a
    bucket's end, not one that an ended bucket's join window holds; ``now`` itself if none is found."""
    last_end = now // BUCKET_MS * BUCKET_MS
    for _ in range(20):
        timestamp = now - rng.randint(50, 2_500)
        next_end = (timestamp // BUCKET_MS + 1) * BUCKET_MS  # the first bucket whose window may hold it
        if now - last_end >= PUNCTUATION_DELAY_MS or next_end > min(last_end, timestamp + JOIN_BEFORE_MS + 1):
            return timestamp
    return now


def _results(bootstrap: str, topics: dict[str, str]) -> dict[tuple[str, int], list]:
    """``{(output, partition): [(key, value, written)] in offset order}`` (``written``: the timestamp the
    record was written with), ``(key, value, timestamp, written)`` for the joins' outputs (``timestamp``:
    the one their values carry)."""
    results: dict[tuple[str, int], list] = {}
    for name in OUTPUTS:
        key_of = windowed_key_reader(OUTPUT_KEYS[name])
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            value = None if record.value is None else (
                struct.unpack(">q", record.value)[0] if name in LONG_VALUED else record.value.decode())
            key = key_of(record.key)
            if name in JOINED:  # "joined|t<timestamp>" (StampValues): the record's timestamp in Kafka Streams
                joined, stamp = value.rsplit("|t", 1)
                entry = (key, joined, int(stamp), written_time(record))
            else:
                entry = (key, value, written_time(record))
            results.setdefault((name, record.partition), []).append(entry)
    return results


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {"events": unique_topic("own-groups-events")}
    kafka_admin.create_topics({inputs["events"]: PARTITIONS})
    records = _input()
    produce_strings(kafka_bootstrap, inputs["events"], records)
    topics, stdout = run_kafka_streams("kstreams.oracle.OwnGroupExamples", "own-groups", kafka_bootstrap, kafka_admin,
                                       unique_topic, tmp_path_factory, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))
    return {"inputs": inputs, "records": records, "describe": json.loads(stdout)["describe"],
            "results": _results(kafka_bootstrap, topics), "topics": topics}


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    assert str(own_group_examples(kafka_streams_run["topics"]).build().describe()) == kafka_streams_run["describe"]


def test_clean_run_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                         kafka_streams_run):
    expected = kafka_streams_run["results"]
    _assert_reference_exercises_it(expected)
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, PARTITIONS))
    runner = TaskRunner(own_group_examples(topics), unique_topic("spark-own-groups"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark, max_records_per_batch=90)
    assert {r.task_id for r in runner.run_all()} == {"0_0", "0_1"}
    _assert_same(_results(kafka_bootstrap, topics), expected)


def test_killed_part_way_and_rerun_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                                         kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, PARTITIONS))
    rerun = kill_and_rerun(tmp_path, own_group_examples, topics, app_id=unique_topic("spark-own-groups-killed"),
                           bootstrap=kafka_bootstrap, spark=spark,
                           kill_when=lambda line: line.startswith("task 0_1 batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", "90"))
    on_partition_1 = sum(1 for record in kafka_streams_run["records"] if record[2] == 1)
    assert 0 < rerun.by_task["0_1"].records_in < on_partition_1  # task 0_1 continued from its checkpoint
    expected = kafka_streams_run["results"]
    _assert_same(_results(kafka_bootstrap, topics), expected)
    # The stores after the forwarders, read from the checkpoints: each key's (window's) last output.
    last = {(name, key): value for (name, _), sequence in expected.items() if name not in JOINED
            for key, value, _ in sequence}
    assert rerun.runner.read_store("eviction-counts") == {k: v for (n, k), v in last.items() if n == "out-suppressed"}
    for store, output in (("window-sums", "out-windowed"), ("session-updates", "out-sessions")):
        content = rerun.runner.read_store(store)
        assert {(w.key, w.window.start, w.window.end): value for w, value in content.items()} == \
            {k: v for (n, k), v in last.items() if n == output}, store


def _assert_same(ours: dict, expected: dict) -> None:
    assert set(ours) == set(expected)
    for output_and_partition, sequence in expected.items():
        assert ours[output_and_partition] == sequence, output_and_partition


def _assert_reference_exercises_it(expected: dict) -> None:
    """Kafka Streams' output shows what the test is about, on both partitions: keys whose buckets
    were released several times, keys evicted several times, windows updated several times."""
    for partition in range(PARTITIONS):
        totals = expected[("out-punctuated", partition)]
        keys = [key for key, _, _ in totals]
        assert len(set(keys)) == 3 and all(keys.count(key) > 5 for key in keys)
        assert any("~" in value for _, value, _ in totals)  # a tombstone held in a bucket
        counts = expected[("out-suppressed", partition)]
        assert max(count for _, count, _ in counts) > 5
        sums = expected[("out-windowed", partition)]
        assert any(total >= 6 for _, total, _ in sums)  # 1 + 2 + 3: one window's third update
        sessions = expected[("out-sessions", partition)]
        assert any(end - start > 600 for (_, start, end), _, _ in sessions)  # merged sessions
        assert any(updates > 1 for _, updates, _ in sessions)  # a session updated again (an out-of-order record)
        _assert_joins_exercised(expected, partition)


def _assert_joins_exercised(expected: dict, partition: int) -> None:
    """The joins' output on ``partition`` shows forwarded records joined under their own keys: buckets
    of every key with events of their key (stamped with the later of both: the bucket's last
    millisecond), buckets without a partner; evictions of every key with events, and
    alone; a window's later update with the tenfold count of that window; sessions', sliding and
    cogrouped windows' updates with later ones and alone, a key's sessions alone under one timestamp
    in the session serde's order."""
    held = expected[("out-held-joined", partition)]
    paired = [(key, value, ts) for key, value, ts, _ in held if "|v" in value and not value.startswith("null|")]
    assert len({key for key, _, _ in paired}) == 3 and len(paired) > 30
    assert all(value.split("|")[0].split(":")[0] == str((ts + 1) // BUCKET_MS - 1) for _, value, ts in paired)
    assert any(value.endswith("|null") for _, value, _, _ in held)  # a bucket without events in its last second
    evicted = expected[("out-evicted-joined", partition)]
    assert len({key for key, value, _, _ in evicted if not value.endswith("|null")}) == 3
    assert any(value.endswith("|null") for _, value, _, _ in evicted)
    windows = [value.split("/") for _, value, _, _ in expected[("out-windows-joined", partition)]]
    assert any(count != "null" and int(count) > 1 and tenfold == f"{int(count) * 10}" for count, tenfold in windows)
    for output in ("out-sessions-joined", "out-sliding-joined", "out-cogroup-joined"):
        joined = [(window, value.split("/")) for window, value, _, _ in expected[(output, partition)]]
        assert any("null" not in pair for _, pair in joined), output  # a window's update with a later one
        assert any(pair[1] == "null" for _, pair in joined), output   # one without, from the outer-join store
    # A key's sessions leaving the outer-join store under one timestamp by end, then start: a session
    # after one that starts later (a start order would swap them).
    alone = [(window, ts) for window, value, ts, _ in expected[("out-sessions-joined", partition)]
             if value.endswith("/null")]
    assert any(ts == next_ts and key == next_key and next_start < start and next_end > end
               for ((key, start, end), ts), ((next_key, next_start, next_end), next_ts) in zip(alone, alone[1:]))
