"""Stream-stream joins on Spark against Kafka Streams itself: same input, same joined records.

Seven outputs (tests/oracle, StreamJoinExamples.java; our twin stream_join_examples). Inner: a
symmetric 10 s window without grace, an asymmetric window (5 s before, 30 s after) with a 20 s
grace and a joiner that reads the key, and a join whose left side is re-keyed (a repartition
topic, whose records keep their timestamps) joined from the right side (before 8 s, after 3 s,
grace 5 s). Left: an asymmetric window (3 s before, 6 s after) without grace. Outer: a symmetric
4 s window with a 5 s grace and a joiner that reads the key (null keys with a value are joined
with null at once on outer sides, KIP-962). A chain in one sub-topology: an inner join (5 s, 2 s
grace) whose result is left-joined with a third stream (3 s before, 6 s after, 4 s grace), each join
with its own stores and stream time. Joins fed by tables, in one sub-topology of two partitions: a
table's to_stream (the table not materialized, filtered and mapped) outer-joined (4 s before, 6 s
after, 3 s grace) with a stream left-joined with another table (materialized, uncached). Inputs: two
partitions (one for the re-keyed join and
the left/outer joins, whose tasks are many records long), records out of order within a partition,
duplicate keys within a window, null keys, null values, records that never find a partner,
partners arriving late within the grace period, records late beyond it (stored but never joined
again) and late beyond the store's live segments (dropped and counted by both). Pending
left/outer records of a key are mostly emitted when records of other keys (the next round)
advance the join's stream time.

The input comes in rounds a minute apart: in a round every record's timestamp lies within 3 s
of the round's start (late records aside). The partitions of a join do not advance together:
each join store expires records by its own observed stream time, as in Kafka Streams.

Compared: every join output as a multiset of (value, timestamp) per key (and the partition it went
to, for non-null keys: a null key goes to a partition of the producer's choosing), the chain's output
(one partition) as the whole sequence of (key, value, timestamp) in Kafka Streams' order, the
table-fed join's output as the whole sequence of each partition (its non-null keys), and the number
of records dropped as late. A joined pair has the larger of its records' timestamps, a record
joined with null its own.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections import Counter, defaultdict

import pytest
from pyspark import cloudpickle

import stream_join_topology
from equivalence_io import KafkaStreamsReference, output_topics, produce_strings, start_kafka_streams, written_time
from killed_runs import kill_after_first_batch_at_least_once, kill_and_rerun
from stream_join_topology import CHAIN_INPUTS, stream_join_examples, table_fed_join_examples
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(stream_join_topology)

PARTITIONS = {"a1": 2, "b1": 2, "a2": 2, "b2": 2, "a3": 1, "b3": 1, "a4": 1, "b4": 1, "a5": 1, "b5": 1,
              "a6": 1, "b6": 1, "c6": 1, "a7": 2, "b7": 2, "c7": 2}
INPUTS = tuple(PARTITIONS)
FED_INPUTS = ("a7", "b7", "c7")  # the table, the stream left-joined with it, the table turned into a stream
OUTPUTS = ("out1", "out2", "out3", "out4", "out5", "out6", "out7")
OUTPUT_PARTITIONS = {"out1": 2, "out2": 2, "out3": 1, "out4": 1, "out5": 1, "out6": 1, "out7": 2}
CHAIN_OUTPUT = "out6"
FED_OUTPUT = "out7"
RE_KEYED = {"b3"}  # keys "r…": the other side's "k…" keys become "r…" by select_key
ROUND_MS = 60_000
BASE = ((int(time.time()) - 3600) * 1000) // ROUND_MS * ROUND_MS  # recent: the broker keeps 7 days


def _input() -> dict[str, list[tuple]]:
    """Every input topic's records: the pairs' and the chain's (drawn apart, so that adding the
    chain left the pairs' records as they were)."""
    # The chain's topics get 10 records a round each (every kind of late record every round), for
    # 4 rounds: the killed run's batches of 60 offsets then take two whole rounds of each of its
    # three topics, cutting where Kafka Streams' order is kept (README, "Order across co-partitioned
    # inputs"), and the chain's task runs in two batches (killed after the first).
    pairs = tuple(name for name in INPUTS if name not in CHAIN_INPUTS + FED_INPUTS)
    return {**_drawn(pairs, seed=5), **_drawn(CHAIN_INPUTS, seed=6, rounds=4, in_time=7, late_chance=1.0),
            **_drawn_per_partition(FED_INPUTS, seed=7)}


def _drawn(inputs: tuple[str, ...], seed: int, rounds: int = 8, in_time: int = 6,
           late_chance: float = 0.45) -> dict[str, list[tuple]]:
    """``{topic: [(key, value, partition, timestamp)]}`` in production order (see the module
    docstring): per round and topic ``in_time`` records, then each kind of late record with
    ``late_chance``. Timestamps are distinct (Kafka Streams breaks ties between partitions by its
    queue order, which the runner does not model)."""
    rng = random.Random(seed)
    records: dict[str, list[tuple]] = {name: [] for name in inputs}
    for r in range(2, 2 + rounds):
        start = BASE + r * ROUND_MS
        normal_offsets = iter(rng.sample(range(0, 3000, 2), in_time * len(inputs)))
        late_offsets = iter(rng.sample(range(1, 3000, 2), 3 * len(inputs)))
        for topic in inputs:
            prefix = "r" if topic in RE_KEYED else "k"
            block = []
            for i in range(in_time):
                key = f"{prefix}{rng.randrange(5)}"
                if rng.random() < 0.06:
                    key = None
                value = None if rng.random() < 0.08 else f"{topic}.{r}.{i}"
                block.append((key, value, start + next(normal_offsets)))
            late = []
            for lateness in ("grace", "round", "segment"):
                if rng.random() < late_chance:
                    # the key of a record of this round: the late record comes after it
                    key = rng.choice([b[0] for b in block if b[0] is not None])
                    offset = next(late_offsets)
                    timestamp = {"grace": start - 15_000 + offset, "round": start - ROUND_MS + offset,
                                 "segment": start - 2 * ROUND_MS + 3000 + offset}[lateness]
                    late.append((key, f"{topic}.{r}.late-{lateness}", timestamp))
            rng.shuffle(block)  # out of order within the partition
            for key, value, timestamp in block + late:
                partitions = PARTITIONS[topic]
                if key is None:
                    partition = rng.randrange(partitions)
                else:
                    partition = default_partition(key.encode(), partitions)
                records[topic].append((key, value, partition, timestamp))
    return records


def _drawn_per_partition(inputs: tuple[str, ...], seed: int, rounds: int = 4, in_time: int = 7,
                         partitions: int = 2) -> dict[str, list[tuple]]:
    """As :func:`_drawn`, but each partition of each input gets the same records a round: ``in_time``
    records of the partition's keys (or null keys), then one late record of each kind. A killed run's
    batches of 60 offsets then take two whole rounds of each of a task's three input partitions,
    cutting where Kafka Streams' order is kept (README, "Order across co-partitioned inputs")."""
    rng = random.Random(seed)
    keys = {p: [k for k in (f"k{i}" for i in range(6)) if default_partition(k.encode(), partitions) == p]
            for p in range(partitions)}
    records: dict[str, list[tuple]] = {name: [] for name in inputs}
    for r in range(2, 2 + rounds):
        start = BASE + r * ROUND_MS
        normal_offsets = iter(rng.sample(range(0, 3000, 2), in_time * len(inputs) * partitions))
        late_offsets = iter(rng.sample(range(1, 3000, 2), 3 * len(inputs) * partitions))
        for topic in inputs:
            for partition in range(partitions):
                block = []
                for i in range(in_time):
                    key = None if rng.random() < 0.06 else rng.choice(keys[partition])
                    value = None if rng.random() < 0.08 else f"{topic}.{r}.{partition}{i}"
                    block.append((key, value, start + next(normal_offsets)))
                late = []
                for lateness in ("grace", "round", "segment"):
                    key = rng.choice([b[0] for b in block if b[0] is not None] or keys[partition])
                    offset = next(late_offsets)
                    timestamp = {"grace": start - 15_000 + offset, "round": start - ROUND_MS + offset,
                                 "segment": start - 2 * ROUND_MS + 3000 + offset}[lateness]
                    late.append((key, f"{topic}.{r}.{partition}-late-{lateness}", timestamp))
                rng.shuffle(block)  # out of order within the partition
                records[topic] += [(key, value, partition, timestamp) for key, value, timestamp in block + late]
    return records


def _results(bootstrap: str, topics: dict[str, str]) -> dict:
    """Each output as ``{key: (partitions, Counter of (value, timestamp))}``; the chain's also as its
    whole sequence of ``(key, value, timestamp)`` (under ``"chain"``), the table-fed join's as each
    partition's sequence of its records with a key (under ``"fed"``)."""
    chain = read_topic(bootstrap, topics[CHAIN_OUTPUT])
    result: dict = {"chain": [(None if r.key is None else r.key.decode(), r.value.decode(), written_time(r))
                              for r in chain],
                    "fed": _fed_sequences(bootstrap, topics)}
    for name in OUTPUTS:
        result[name] = _per_key(bootstrap, topics[name])
    return result


def _per_key(bootstrap: str, topic: str) -> dict:
    """``{key: (partitions, Counter of (value, timestamp))}`` of one output."""
    per_key: dict = defaultdict(Counter)
    partitions: dict = defaultdict(set)
    for record in read_topic(bootstrap, topic):
        key = None if record.key is None else record.key.decode()
        per_key[key][record.value.decode(), written_time(record)] += 1
        partitions[key].add(record.partition)
    # a null key goes to a partition of the producer's choosing
    return {key: (sorted(partitions[key]) if key is not None else None, dict(values))
            for key, values in per_key.items()}


def _fed_sequences(bootstrap: str, topics: dict[str, str]) -> dict[int, list[tuple[str, str]]]:
    """The table-fed join's output, partition by partition, as the sequence of ``(key, value,
    timestamp)`` of its records with a key (each partition is written by one task, in its processing
    order)."""
    sequences: dict[int, list] = defaultdict(list)
    for record in read_topic(bootstrap, topics[FED_OUTPUT]):
        if record.key is not None:
            sequences[record.partition].append((record.key.decode(), record.value.decode(), written_time(record)))
    return dict(sequences)


# Input topics read by a side of a left/outer join that joins a record without partner with null.
OUTER_SIDES = {"a4", "a5", "b5"}
# Inputs re-keyed before their join (null keys stop at the repartition filter of an inner join).
RE_KEYED_INNER = {"a3"}


def _skipped(records: dict[str, list[tuple]]) -> int:
    """Records the join processors skip for a null key or value (Kafka Streams counts them as
    dropped); an outer side joins a null key with a value (KIP-962)."""
    skipped = 0
    for topic, rows in records.items():
        for key, value, _, _ in rows:
            if topic == "a7":  # a table's source drops a null key
                skipped += key is None
            elif topic == "b7":  # the left stream-table join drops a null value, joins a null key
                skipped += value is None
            elif topic == "c7":  # the source drops a null key; the join skips the filter's tombstones
                skipped += key is None or value is None or value.endswith("0")
            elif topic in RE_KEYED_INNER:
                skipped += key is not None and value is None
            elif topic in OUTER_SIDES:
                skipped += value is None
            else:
                skipped += key is None or value is None
    return skipped


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    """Kafka Streams' side, run in the background from the module's start while our clean run goes on."""
    inputs = {name: unique_topic(f"sjoin-{name}") for name in INPUTS}
    kafka_admin.create_topics({inputs[name]: PARTITIONS[name] for name in INPUTS})
    records = _input()
    for name in INPUTS:
        produce_strings(kafka_bootstrap, inputs[name], records[name])
    topics, main = start_kafka_streams("kstreams.oracle.StreamJoinExamples", "sjoins", kafka_bootstrap, kafka_admin,
                                       unique_topic, tmp_path_factory, inputs, OUTPUT_PARTITIONS, prefix="ks-sjoin")
    reference = KafkaStreamsReference(main, {"inputs": inputs, "records": records}, lambda stdout: {
        "results": _results(kafka_bootstrap, topics),
        "dropped_late": json.loads(stdout.strip().splitlines()[-1])["dropped-records-total"] - _skipped(records)})
    yield reference
    reference.close()


def _assert_same(expected: dict, ours: dict) -> None:
    """Per output and key: the same partitions and the same multiset of values."""
    for name in OUTPUTS:
        assert set(ours[name]) == set(expected[name]), name
        for key in expected[name]:
            assert ours[name][key] == expected[name][key], f"{name}, key {key}"
    assert ours["chain"] == expected["chain"]
    assert ours["fed"] == expected["fed"]


def test_stream_joins_on_spark_match_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                                   kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUT_PARTITIONS, "spark-sjoin")
    runner = TaskRunner(stream_join_examples(topics), unique_topic("spark-sjoins"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    results = runner.run_all()  # one micro-batch per task (the killed run below takes several)
    _assert_same(kafka_streams_run["results"], _results(kafka_bootstrap, topics))
    assert sum(r.records_dropped_late for r in results) == kafka_streams_run["dropped_late"]
    # The left join's left buffers (one state row per task): only the last round is still
    # within the 9 s retention of its store's time, for every key (quiet keys pruned too).
    left_store = runner.compiled.program(4).store_names[0]
    buffered = runner.read_store(left_store)
    assert buffered and all(key.startswith("k") for key in buffered), buffered
    assert all(value.startswith("a4.9.") for entries in buffered.values() for _, value in entries), buffered


def test_reference_exercises_the_cases(kafka_streams_run):
    expected = kafka_streams_run["results"]

    def values(name):
        return [v for _, counts in expected[name].values() for v, _ in counts]

    for name in OUTPUTS:
        assert len(values(name)) > 30, name
        # duplicates of a key within a window join each other's partners
        assert any(len(counts) > 1 for key, (_, counts) in expected[name].items() if key is not None), name
    for name in ("out1", "out2", "out3"):
        assert None not in expected[name]  # null keys never join
    out2 = values("out2")
    assert any("late-grace" in v for v in out2)  # late within the grace period, still joined
    # A record a round late still joins while the other side's store lags behind (each store
    # expires by its own observed stream time; the task's stream time is a round ahead).
    assert any("late-round" in v for name in ("out1", "out2", "out3") for v in values(name))
    # left/outer: records without partner (joined with null), on each outer side
    assert any(v.endswith("+null") for v in values("out4"))
    assert not any(v.startswith("null+") for v in values("out4"))  # the right side of a left join
    assert any(":null+" in v for v in values("out5")) and any(v.endswith("+null") for v in values("out5"))
    # joined pairs too, and null keys joined with null at once on outer sides (KIP-962)
    assert any("+" in v and "null" not in v for v in values("out4"))
    for name in ("out4", "out5"):
        assert None in expected[name], name
    assert kafka_streams_run["dropped_late"] > 0
    # timestamps: a joined pair has the larger of its records' (either side's), a record joined with
    # null its own
    stamped = {value: timestamp for rows in kafka_streams_run["records"].values()
               for _, value, _, timestamp in rows if value is not None}
    pairs = [(value.split("+"), timestamp) for _, counts in expected["out1"].values() for value, timestamp in counts]
    assert all(timestamp == max(stamped[left], stamped[right]) for (left, right), timestamp in pairs)
    assert any(stamped[left] > stamped[right] for (left, right), _ in pairs)
    assert any(stamped[left] < stamped[right] for (left, right), _ in pairs)
    unjoined = [(value.split("+")[0], timestamp) for _, counts in expected["out4"].values()
                for value, timestamp in counts if value.endswith("+null")]
    assert unjoined and all(timestamp == stamped[left] for left, timestamp in unjoined)
    # the chain: triples, and first-join results without partner in the third stream (joined with
    # null), keys interleaved; its inputs hold null keys, null values and late records: some still
    # joined (the other side's store lags behind), the others never (beyond what it keeps)
    chain = [value for _, value, _ in kafka_streams_run["results"]["chain"]]
    assert len(chain) > 15
    assert any(v.endswith("/null") for v in chain) and any(not v.endswith("/null") for v in chain)
    assert chain != sorted(chain, key=lambda v: v.split(":")[0])
    chain_inputs = [row for name in CHAIN_INPUTS for row in kafka_streams_run["records"][name]]
    assert any(key is None for key, *_ in chain_inputs) and any(value is None for _, value, *_ in chain_inputs)
    late = [value for _, value, *_ in chain_inputs if value is not None and "late" in value]
    joined_late = [value for value in late if any(value in v for v in chain)]
    assert 0 < len(joined_late) < len(late)
    # the table-fed join: pairs of a table row and a stream record enriched with the other table's
    # row (or with null), each side alone once its window closed, null keys of the stream joined
    # with null at once (a left stream-table join, then an outer side), never a filtered row, and
    # both partitions' sequences
    fed = values(FED_OUTPUT)
    assert any("+" in v and "<a7." in v and not v.split(":")[1].startswith("null") for v in fed)
    assert any("<null>" in v for v in fed) and any(v.endswith("+null") for v in fed)
    assert any(":null+" in v for v in fed) and None in expected[FED_OUTPUT]
    assert not any(v.split(":")[1].split("+")[0].endswith("0") for v in fed)
    assert sorted(kafka_streams_run["results"]["fed"]) == [0, 1]


def test_stream_joins_killed_part_way_and_rerun_still_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUT_PARTITIONS, "spark-sjoin")
    # Kill it once task 6_0 (the chain of two joins, run last: --parallelism 1 runs one sub-topology
    # after another) has committed a batch: mid-way through its input, with both joins' buffers and
    # stream times (and the left join's outer-join store) in its task state. Batches of 60 offsets cut
    # the joins' inputs where Kafka Streams' order is kept (README, "Order across co-partitioned
    # inputs"); under exactly-once the upstream commit markers count as offsets and move those
    # cuts, so this run is at-least-once (the kill under exactly-once:
    # tests/test_runner_kstreams_oracle.py).
    rerun = kill_and_rerun(tmp_path, stream_join_examples, topics, app_id=unique_topic("spark-sjoins-kill"),
                           bootstrap=kafka_bootstrap, spark=spark, kill_when=lambda line: line.startswith("task 6_0 batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", "60",
                                        "--processing-guarantee", "at_least_once"),
                           max_records_per_batch=60, processing_guarantee="at_least_once")
    assert any(line.startswith("task 6_0 batch") for line in rerun.killed_lines), rerun.killed_lines
    # Task 6_0 resumes after its committed batches (its task state restored); the others are done.
    resumed = rerun.by_task
    chain_records = sum(len(kafka_streams_run["records"][name]) for name in CHAIN_INPUTS)
    assert 0 < resumed["6_0"].records_in < chain_records, resumed["6_0"]
    assert all(resumed[task].records_in == 0 for task in ("0_0", "0_1", "1_0", "1_1", "4_0", "5_0")), resumed
    _assert_same(kafka_streams_run["results"], _results(kafka_bootstrap, topics))


def test_joins_fed_by_tables_killed_part_way_and_rerun_still_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], {FED_OUTPUT: 2}, "spark-sjoin-fed")
    # Join 7 alone (sub-topology 0), killed once task 0_0 has committed its first batch (two whole
    # rounds of each of its three input partitions: the table's rows, the join buffers and pending
    # outer records in its task state), at-least-once as above; task 0_1 runs after it.
    rerun = kill_after_first_batch_at_least_once(tmp_path, table_fed_join_examples, topics,
                                                 app_id=unique_topic("spark-sjoin-fed-kill"),
                                                 bootstrap=kafka_bootstrap, spark=spark)
    task_records = sum(row[2] == 0 for name in FED_INPUTS for row in kafka_streams_run["records"][name])
    assert 0 < rerun.by_task["0_0"].records_in < task_records, rerun.by_task
    expected = kafka_streams_run["results"]
    assert _per_key(kafka_bootstrap, topics[FED_OUTPUT]) == expected[FED_OUTPUT]
    assert _fed_sequences(kafka_bootstrap, topics) == expected["fed"]
