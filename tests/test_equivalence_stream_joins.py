"""Stream-stream joins on Spark against Kafka Streams itself: same input, same joined records.

Three inner joins (tests/oracle, StreamJoinExamples.java; our twin stream_join_examples):
a symmetric 10 s window without grace, an asymmetric window (5 s before, 30 s after) with a
20 s grace and a joiner that reads the key, and a join whose left side is re-keyed (a repartition
topic, whose records keep their timestamps) joined from the right side (before 8 s, after 3 s,
grace 5 s). Inputs: two partitions (one for the re-keyed join), records out of order within a
partition, duplicate keys within a window, null keys, null values, records late within the grace
period, late beyond it (stored but never joined again) and late beyond the store's live segments
(dropped and counted by both).

The input comes in rounds a minute apart: in a round every record's timestamp lies within 3 s
of the round's start (late records aside), and each round opens on every input with its smallest
timestamps, so the task's stream time and each join store's own stream time (which Kafka Streams
keeps per store, see the README) expire the same records.

Compared: every join output as a multiset of values per key (and the partition it went to),
and the number of records dropped as late.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from datetime import timedelta

import pytest
from pyspark import cloudpickle

import oracle_harness
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import produce, read_topic
from dagster_kstreams.spark.runner import TaskRunner
from dagster_kstreams.topology.dsl import StreamsBuilder
from dagster_kstreams.topology.windows import JoinWindows

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])

PARTITIONS = {"a1": 2, "b1": 2, "a2": 2, "b2": 2, "a3": 1, "b3": 1}
INPUTS = tuple(PARTITIONS)
OUTPUTS = ("out1", "out2", "out3")
ROUND_MS = 60_000
BASE = ((int(time.time()) - 3600) * 1000) // ROUND_MS * ROUND_MS  # recent: the broker keeps 7 days


def _s(value) -> str:
    return "null" if value is None else value  # Java's string concatenation of null


def stream_join_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The Python twin of StreamJoinExamples.streamJoinExamples (Java); keep the two in step."""
    builder = StreamsBuilder()
    left1, right1 = builder.stream(topics["a1"]), builder.stream(topics["b1"])
    left1.join(right1, lambda x, y: f"{_s(x)}+{_s(y)}",
               JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=10))).to(topics["out1"])
    left2, right2 = builder.stream(topics["a2"]), builder.stream(topics["b2"])
    left2.join(right2, lambda k, x, y: f"{k}:{_s(x)}+{_s(y)}",
               JoinWindows.of_time_difference_and_grace(timedelta(seconds=5), timedelta(seconds=20))
               .after(timedelta(seconds=30))).to(topics["out2"])
    left3 = builder.stream(topics["a3"]).select_key(lambda k, v: None if k is None else "r" + k[1:])
    right3 = builder.stream(topics["b3"])
    right3.join(left3, lambda x, y: f"{_s(x)}*{_s(y)}",
                JoinWindows.of_time_difference_and_grace(timedelta(seconds=3), timedelta(seconds=5))
                .before(timedelta(seconds=8))).to(topics["out3"])
    return builder


def _input(seed: int = 5, rounds: int = 8) -> dict[str, list[tuple]]:
    """``{topic: [(key, value, partition, timestamp)]}`` in production order (see the module
    docstring). Timestamps are distinct (Kafka Streams breaks ties between partitions by its
    queue order, which the runner does not model)."""
    rng = random.Random(seed)
    records: dict[str, list[tuple]] = {name: [] for name in INPUTS}
    for r in range(2, 2 + rounds):
        start = BASE + r * ROUND_MS
        opening_offsets = iter(rng.sample(range(0, 50, 2), 2 * len(INPUTS)))
        normal_offsets = iter(rng.sample(range(50, 3000, 2), 6 * len(INPUTS)))
        late_offsets = iter(rng.sample(range(1, 3000, 2), 3 * len(INPUTS)))
        for topic in INPUTS:
            prefix = "r" if topic == "b3" else "k"
            # The round opens on every input partition (its smallest timestamps): each side's store
            # time reaches the round before any record of the round that comes after the opening.
            openings = []
            for partition in range(PARTITIONS[topic]):
                keys = [f"{prefix}{k}" for k in range(5)
                        if default_partition(f"{prefix}{k}".encode(), PARTITIONS[topic]) == partition]
                openings.append((rng.choice(keys), f"{topic}.{r}.open{partition}", start + next(opening_offsets)))
            block = []
            for i in range(6):
                key = f"{prefix}{rng.randrange(5)}"
                if rng.random() < 0.06:
                    key = None
                value = None if rng.random() < 0.08 else f"{topic}.{r}.{i}"
                block.append((key, value, start + next(normal_offsets)))
            late = []
            for lateness in ("grace", "round", "segment"):
                if rng.random() < 0.45:
                    # the key of a record of this round past its opening: the late record comes after it
                    key = rng.choice([b[0] for b in block if b[0] is not None])
                    offset = next(late_offsets)
                    timestamp = {"grace": start - 15_000 + offset, "round": start - ROUND_MS + offset,
                                 "segment": start - 2 * ROUND_MS + 3000 + offset}[lateness]
                    late.append((key, f"{topic}.{r}.late-{lateness}", timestamp))
            rng.shuffle(block)  # out of order within the partition
            for key, value, timestamp in openings + block + late:
                partitions = PARTITIONS[topic]
                if key is None:
                    partition = rng.randrange(partitions)
                else:
                    partition = default_partition(key.encode(), partitions)
                records[topic].append((key, value, partition, timestamp))
    return records


def _encoded(records):
    return [(None if k is None else k.encode(), None if v is None else v.encode(), p, t) for k, v, p, t in records]


def _results(bootstrap: str, topics: dict[str, str]) -> dict:
    """Each output as ``{key: (partitions, Counter of values)}``."""
    result = {}
    for name in OUTPUTS:
        per_key: dict = defaultdict(Counter)
        partitions: dict = defaultdict(set)
        for record in read_topic(bootstrap, topics[name]):
            key = None if record.key is None else record.key.decode()
            per_key[key][record.value.decode()] += 1
            partitions[key].add(record.partition)
        result[name] = {key: (sorted(partitions[key]), dict(values)) for key, values in per_key.items()}
    return result


def _skipped(records: dict[str, list[tuple]]) -> int:
    """Records the join processors skip for a null key or value (Kafka Streams counts them as dropped)."""
    skipped = 0
    for topic, rows in records.items():
        for key, value, _, _ in rows:
            if topic == "a3":
                skipped += key is not None and value is None  # null keys stop at the repartition filter
            else:
                skipped += key is None or value is None
    return skipped


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"sjoin-{name}") for name in INPUTS}
    kafka_admin.create_topics({inputs[name]: PARTITIONS[name] for name in INPUTS})
    records = _input()
    for name in INPUTS:
        produce(kafka_bootstrap, inputs[name], _encoded(records[name]))
    topics = {**inputs, **{name: unique_topic(f"ks-sjoin-{name}") for name in OUTPUTS}}
    kafka_admin.create_topics({topics["out1"]: 2, topics["out2"]: 2, topics["out3"]: 1})
    stdout = oracle_harness.run_main(
        "kstreams.oracle.StreamJoinExamples",
        [kafka_bootstrap, unique_topic("ks-sjoins"), str(tmp_path_factory.mktemp("ks-sjoins-state")),
         *(topics[name] for name in INPUTS), *(topics[name] for name in OUTPUTS)],
        timeout=600,
    )
    metrics = json.loads(stdout.strip().splitlines()[-1])
    return {"inputs": inputs, "records": records, "results": _results(kafka_bootstrap, topics),
            "dropped_late": metrics["dropped-records-total"] - _skipped(records)}


def _our_topics(kafka_admin, unique_topic, inputs) -> dict[str, str]:
    topics = {**inputs, **{name: unique_topic(f"spark-sjoin-{name}") for name in OUTPUTS}}
    kafka_admin.create_topics({topics["out1"]: 2, topics["out2"]: 2, topics["out3"]: 1})
    return topics


def _assert_same(expected: dict, ours: dict) -> None:
    for name in OUTPUTS:
        assert set(ours[name]) == set(expected[name]), name
        for key in expected[name]:
            assert ours[name][key] == expected[name][key], f"{name}, key {key}"


def test_reference_exercises_the_cases(kafka_streams_run):
    expected = kafka_streams_run["results"]
    for name in OUTPUTS:
        values = [v for _, counts in expected[name].values() for v in counts]
        assert len(values) > 30, name
        assert None not in expected[name]  # null keys never join
        # duplicates of a key within a window join each other's partners
        assert any(len(counts) > 1 for _, counts in expected[name].values()), name
    out2 = [v for _, counts in expected["out2"].values() for v in counts]
    assert any("late-grace" in v for v in out2)  # late within the grace period, still joined
    stale = [(name, v) for name in OUTPUTS for _, counts in expected[name].values() for v in counts
             if "late-round" in v or "late-segment" in v]
    assert not stale, stale
    assert kafka_streams_run["dropped_late"] > 0


def test_stream_joins_on_spark_match_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                                   kafka_streams_run):
    topics = _our_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"])
    runner = TaskRunner(stream_join_examples(topics), unique_topic("spark-sjoins"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    results = runner.run_all()  # one micro-batch per task (the killed run below takes several)
    _assert_same(kafka_streams_run["results"], _results(kafka_bootstrap, topics))
    assert sum(r.records_dropped_late for r in results) == kafka_streams_run["dropped_late"]


def test_stream_joins_killed_part_way_and_rerun_still_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    topics = _our_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"])
    module = tmp_path / "stream_join_topology.py"
    module.write_text(
        "from test_equivalence_stream_joins import stream_join_examples\n\n\n"
        f"def build():\n    return stream_join_examples({topics!r})\n"
    )
    app_id = unique_topic("spark-sjoins-kill")
    state = tmp_path / "state"
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    command = [
        sys.executable, "-m", "dagster_kstreams.cli", "run", "stream_join_topology:build", "--app-id", app_id,
        "--all", "--bootstrap-servers", kafka_bootstrap, "--state-location", str(state), "--master", "local[2]",
        "--max-records-per-batch", "60",
    ]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(tmp_path), tests_dir, os.environ.get("PYTHONPATH", "")])}
    victim = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                              start_new_session=True, cwd=str(tmp_path))
    lines = []
    try:
        # Kill it once task 1_0 (a join) has committed a batch: mid-way through its input.
        for line in victim.stdout:
            lines.append(line)
            if line.startswith("task 1_0 batch"):
                break
    finally:
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(timeout=60)
    assert victim.returncode == -signal.SIGKILL
    assert any(line.startswith("task 1_0 batch") for line in lines), lines

    runner = TaskRunner(stream_join_examples(topics), app_id, kafka_bootstrap, state_location=str(state),
                        spark=spark, max_records_per_batch=60)
    results = runner.run_all()
    # Task 1_0 resumes after its committed batches (its buffers and stream time restored).
    resumed = {r.task_id: r for r in results}["1_0"]
    assert 0 < resumed.records_in < sum(1 for t in ("a2", "b2") for row in kafka_streams_run["records"][t]
                                        if row[2] == 0), resumed
    _assert_same(kafka_streams_run["results"], _results(kafka_bootstrap, topics))
