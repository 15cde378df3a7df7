"""Record headers on Spark against Kafka Streams itself (tests/header_topology.py; Java twin
HeaderExamples): stateless operations and a sink, a repartition topic read back by a sub-topology
of Column expressions (run in the JVM) mixed with Python functions (segments of the same plan, run
in several Arrow batches per micro-batch: the order a partition's records keep through them shows), a count without the record cache, and a user processor
that reads, removes and adds headers and forwards a record with new ones, and a windowed count
without the record cache with its suppressed final results; and on a second input of sub-topology 0
(the amounts: Long values), Column expressions in front of its state (a filter and ``map_values`` before
an uncached reduce, a ``filter_not`` and ``map_values`` before a join with each key's first event, a
``select_key`` and ``map_values`` before the user processor; run as a
DataFrame plan that hands its records over: spark/column_hand_off.py); and on a third input (lines), a
Column ``flat_map_values`` splitting each line into words in front of an uncached count (through a
``split`` on a Column predicate, its default branch) and an uncached reduce that strings a key's words together, each word down both
before the next; and sinks whose topic an extractor picks from the record context (its topic,
partition, offset, timestamp and headers: ``out`` or ``routed``) after the source, after the user
processor's forwards and behind Columns after the repartition topic. Kafka Streams 4.3.1 runs it
once, skipping malformed records (LogAndContinueExceptionHandler), as our runs do (log_and_continue).

Our tasks run the twin in a ``dagster-kstreams run`` process in batches of 40 records, SIGKILLed
once task 0_1 has committed its first batch; a rerun in another process (this one) continues every
task from its checkpoint. The lines' part, whose tasks that killed run never starts, is run alone once
more (its sub-topologies are its own), killed in the words' task 0_0 after its first batch and rerun.

Input (2 partitions): each record has a ``src`` header naming its partition, and some have
duplicate ``dup`` headers, a header with a null value, a ``drop`` header; null keys and null
values; out-of-order timestamps. The amounts: null keys, null values, malformed 3-byte values,
out-of-order timestamps that never tie with an event's. The lines: several per key in a batch, null
keys, null values, empty lines, doubled and trailing spaces (empty words), timestamps out of order in
each partition (in order per key).
Compared: every output record's key, value, headers (less the runner's own ``__dagster_kstreams.*``
headers) and timestamp, in output order per branch and source partition (per key too after the repartition
topic, whose two writers interleave; per key and with timestamps for the words' count and reduce
together), the reduce's store read back, and describe().
"""

from __future__ import annotations

import json
import random
import time

import pytest
from pyspark import cloudpickle

import header_topology
from equivalence_io import output_topics, run_kafka_streams, written_time
from header_topology import header_examples, rekeyed_examples, word_examples
from killed_runs import kill_and_rerun
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import produce, read_topic
from dagster_kstreams.kafka.timestamp_header import INTERNAL_HEADER_PREFIX
from dagster_kstreams.spark.batch_writer import HEADER_WRITTEN
from dagster_kstreams.spark.column_hand_off import ColumnsBeforeState
from dagster_kstreams.spark.strategies import ColumnPlan, strategy_for
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import StreamsBuilder

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the processor by value.
cloudpickle.register_pickle_by_value(header_topology)

PARTITIONS = 2
OUTPUTS = {"out": 1, "routed": 1}  # routed: where a ContextRouter sends some records (one partition: null keys)
# The branches after the repartition topic, whose two writers interleave: compared per key, together.
REKEYED_BRANCHES = ("rekeyed", "mixmap", "mixa", "mixb", "peek", "pone", "ptwo", "prest", "cthree", "cother", "xrep")
# The branches behind the lines' flat_map_values: compared per key, together, with timestamps.
WORD_BRANCHES = ("wc", "ws")
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute


def _input(seed: int = 9) -> list[tuple]:
    """``[(key, value, partition, timestamp, headers)]`` in production order (bytes)."""
    rng = random.Random(seed)
    optional = [("dup", b"1"), ("dup", None), ("dup", b"2"), ("nullv", None), ("drop", b"x"), ("drop", b"y")]
    events = []
    for i in range(160):
        partition = i % PARTITIONS  # a null key's
        timestamp = T0 + i * 100 - (rng.randint(100, 5_000) if rng.random() < 0.2 else 0)
        key = None if rng.random() < 0.05 else f"k{rng.randint(1, 6)}".encode()
        if key is not None:  # where Kafka's partitioner puts it: the windowed count's repartition keeps it there
            partition = default_partition(key, PARTITIONS)
        value = None if rng.random() < 0.05 else f"v{rng.randint(1, 4)}".encode()
        headers = [("src", f"p{partition}".encode()), *rng.sample(optional, rng.randint(0, 4))]
        rng.shuffle(headers)
        events.append((key, value, partition, timestamp, headers))
    return events


def _amounts(events: list[tuple], seed: int = 21) -> list[tuple]:
    """``[(key, value, partition, timestamp, headers)]`` of the amounts: 8-byte longs (some at most
    10, which the Columns filter out), null values, null keys, malformed values (3 bytes: both sides
    skip them), out-of-order timestamps that never tie with an event's (the join reads the events'
    table as of the task's timestamp merge of both topics)."""
    rng = random.Random(seed)
    taken = {timestamp for *_, timestamp, _ in events}
    amounts = []
    for i in range(48):  # few: each batch of sub-topology 0 costs its task's whole state (task-grouped)
        # After each key's first event (the join's table), out of order now and then.
        timestamp = T0 + 8_000 + i * 330 + 37 - (rng.randint(100, 4_000) if rng.random() < 0.2 else 0)
        while timestamp in taken:
            timestamp += 1
        taken.add(timestamp)
        key = None if rng.random() < 0.05 else f"k{rng.randint(1, 6)}".encode()
        partition = i % PARTITIONS if key is None else default_partition(key, PARTITIONS)
        roll = rng.random()
        value = (None if roll < 0.06 else b"bad" if roll < 0.12 else rng.randint(0, 40).to_bytes(8, "big", signed=True))
        amounts.append((key, value, partition, timestamp, [("src", f"p{partition}".encode())]))
    return amounts


def _lines(seed: int = 33) -> list[tuple]:
    """``[(key, value, partition, timestamp, headers)]`` of the lines: a few words each from a small
    vocabulary, some with doubled or trailing spaces (empty words), empty lines, null values, null
    keys; enough per partition for several batches of 40 records. Timestamps out of order in each
    partition but in order per key (each key some seconds behind or ahead of the others): an
    aggregation's update has the larger of its record's and its previous timestamp, here the
    record's, so that the timestamp stamped into a word's value names its line."""
    rng = random.Random(seed)
    lines = []
    for i in range(120):
        number = rng.randint(1, 4)
        key = None if rng.random() < 0.05 else f"k{number}".encode()
        timestamp = T0 + 20_000 + i * 250 + (0, -2_600, 1_900, -5_100)[number - 1]
        partition = i % PARTITIONS if key is None else default_partition(key, PARTITIONS)
        roll = rng.random()
        if roll < 0.05:
            value = None
        elif roll < 0.08:
            value = b""
        else:
            words = [rng.choice(("to", "be", "or", "not", "w" + str(i))) for _ in range(rng.randint(1, 4))]
            separator = "  " if rng.random() < 0.1 else " "
            value = (separator.join(words) + (" " if rng.random() < 0.1 else "")).encode()
        lines.append((key, value, partition, timestamp, [("src", f"p{partition}".encode())]))
    return lines


def _results(bootstrap: str, topics: dict[str, str]) -> dict[tuple, list]:
    """``{(branch, source partition, output): [(key, value, headers, timestamp)]}`` in offset order, ``output``
    "out" or "routed"; after the repartition topic, ``{("rekeyed", source partition, key, output): ...}``,
    every branch of that sub-topology together: Kafka Streams forwards a record down each branch
    before the next record; behind the lines' words, ``{("words", source partition, key, output): ...}``,
    both branches together (their values stamped with their timestamps)."""
    results: dict[tuple, list] = {}
    records = [(output, record) for output in OUTPUTS for record in sorted(
        read_topic(bootstrap, topics[output]), key=lambda r: (r.partition, r.offset))]
    for output, record in records:
        headers = tuple((name, value) for name, value in record.headers if not name.startswith(INTERNAL_HEADER_PREFIX))
        branch = record.value.decode().split("|")[0]
        source = dict(headers).get("src")
        if branch in WORD_BRANCHES:
            results.setdefault(("words", source, record.key, output), []).append(
                (record.key, record.value, headers, written_time(record)))
            continue
        group = ("rekeyed", source, record.key, output) if branch in REKEYED_BRANCHES else (branch, source, output)
        results.setdefault(group, []).append((record.key, record.value, headers, written_time(record)))
    return results


def _assert_groups_match(bootstrap: str, topics: dict[str, str], expected: dict) -> None:
    """Ours on ``topics`` has exactly ``expected``'s groups (:func:`_results`), each the same sequence."""
    ours = _results(bootstrap, topics)
    assert set(ours) == set(expected)
    for group, sequence in expected.items():
        assert ours[group] == sequence, group


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {"events": unique_topic("headers-events"), "amounts": unique_topic("headers-amounts"),
              "lines": unique_topic("headers-lines")}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = _input()
    amounts = _amounts(records)
    lines = _lines()
    produce(kafka_bootstrap, inputs["events"], records)
    produce(kafka_bootstrap, inputs["amounts"], amounts)
    produce(kafka_bootstrap, inputs["lines"], lines)
    topics, stdout = run_kafka_streams("kstreams.oracle.HeaderExamples", "headers", kafka_bootstrap, kafka_admin,
                                       unique_topic, tmp_path_factory, inputs, OUTPUTS)
    report = json.loads(stdout)
    return {"inputs": inputs, "records": records, "amounts": amounts, "lines": lines, "describe": report["describe"],
            "stores": report["stores"], "results": _results(kafka_bootstrap, topics), "topics": topics}


def test_describe_of_the_topology_run_is_kafka_streams(spark, kafka_streams_run):  # spark: Columns need it
    ours = header_examples(kafka_streams_run["topics"]).build().describe()
    assert str(ours) == kafka_streams_run["describe"]


def test_headers_killed_part_way_and_rerun_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    expected = kafka_streams_run["results"]
    _assert_reference_exercises_it(expected)
    line_times = [[line[3] for line in kafka_streams_run["lines"] if line[2] == partition]
                  for partition in range(PARTITIONS)]
    assert all(times != sorted(times) for times in line_times)  # out of order in each partition

    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS)
    rerun = kill_and_rerun(tmp_path, header_examples, topics, app_id=unique_topic("spark-headers"),
                           bootstrap=kafka_bootstrap, spark=spark, kill_when=lambda line: line.startswith("task 0_1 batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", "40",
                                        "--deserialization-exception-handler", "log_and_continue"),
                           arrow_batch_size=7,  # a task's batch in several Arrow batches through the segments
                           max_records_per_batch=40,  # and the lines' words in several micro-batches here too
                           deserialization_exception_handler="log_and_continue")
    task_records = sum(1 for records in (kafka_streams_run["records"], kafka_streams_run["amounts"])
                       for record in records if record[2] == 1)
    assert 0 < rerun.by_task["0_1"].records_in < task_records  # continued
    assert rerun.by_task["0_0"].records_in == 0  # run whole, and cleanly, by the killed process
    # Sub-topology 0's Columns run in front of its state, handing their records over.
    assert isinstance(rerun.runner.compiled.program(0).column_plan, ColumnsBeforeState)
    assert {key: str(total) for key, total in rerun.runner.read_store("amount-sums").items()} \
        == kafka_streams_run["stores"]
    # The Column plan with its Python segments (not a Python pass) ran the rekeyed sub-topology.
    application = rerun.runner.compiled.application
    (rekeyed,) = [sub for sub in application.subtopology_ids
                  if any(topic.endswith("-rekeyed-repartition") for topic in application.source_topics(sub))]
    assert isinstance(strategy_for(rerun.runner.compiled.program(rekeyed)), ColumnPlan)
    assert len(rerun.runner.compiled.program(rekeyed).column_plan.segments) == 8
    # The lines' flat_map_values runs in front of the words' state, handing each word over.
    (words,) = [sub for sub in application.subtopology_ids
                if kafka_streams_run["inputs"]["lines"] in application.source_topics(sub)]
    assert isinstance(rerun.runner.compiled.program(words).column_plan, ColumnsBeforeState)

    _assert_groups_match(kafka_bootstrap, topics, expected)


def test_words_killed_in_their_own_task_and_rerun_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    """The lines' part alone (the run above is killed in sub-topology 0, before the words' tasks
    start), killed once the words' task 0_0 has committed its first batch of 40 records, and rerun
    in batches of 40 too: each key's count and reduce updates as Kafka Streams gives them."""
    expected = {group: sequence for group, sequence in kafka_streams_run["results"].items() if group[0] == "words"}
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS)
    rerun = kill_and_rerun(tmp_path, word_examples, topics, app_id=unique_topic("spark-words"),
                           bootstrap=kafka_bootstrap, spark=spark,
                           kill_when=lambda line: line.startswith("task 0_0 batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", "40"),
                           arrow_batch_size=7, max_records_per_batch=40)
    partition_lines = sum(1 for line in kafka_streams_run["lines"] if line[2] == 0)
    assert 0 < rerun.by_task["0_0"].records_in < partition_lines  # continued
    assert isinstance(rerun.runner.compiled.program(0).column_plan, ColumnsBeforeState)
    _assert_groups_match(kafka_bootstrap, topics, expected)


def test_rekeyed_columns_killed_in_their_own_task_and_rerun_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    """The re-keyed Column sub-topology alone (the run above is killed in sub-topology 0, before its
    tasks start), killed once its task 1_0 has committed its first batch of 40 records, and rerun in
    Arrow batches of 7: its peek, foreach and splits beside Columns among them, per source partition
    and key as Kafka Streams gives them."""
    expected = {group: sequence for group, sequence in kafka_streams_run["results"].items() if group[0] == "rekeyed"}
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS)
    rerun = kill_and_rerun(tmp_path, rekeyed_examples, topics, app_id=unique_topic("spark-rekeyed"),
                           bootstrap=kafka_bootstrap, spark=spark,
                           kill_when=lambda line: line.startswith("task 1_0 batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", "40"),
                           arrow_batch_size=7, max_records_per_batch=40)
    assert rerun.by_task["1_0"].records_in > 0 and rerun.by_task["0_0"].records_in == 0  # continued
    assert isinstance(strategy_for(rerun.runner.compiled.program(1)), ColumnPlan)
    _assert_groups_match(kafka_bootstrap, topics, expected)


def _assert_reference_exercises_it(expected: dict) -> None:
    """Kafka Streams' output shows what the test is about: every branch from both partitions,
    duplicate header names, null header values, the processor's added and new headers."""
    branches = {value.decode().split("|")[0] for sequence in expected.values() for _, value, _, _ in sequence}
    assert branches == {"flat", "rekeyed", "count", "proc", "fresh", "win", "final", "mixmap", "mixa", "mixb",
                        "peek", "pone", "ptwo", "prest", "cthree", "cother", "sum", "join", "rproc", "wc", "ws",
                        "xsrc", "xproc", "xfresh", "xrep"}
    # Each topic-name extractor sent records to both topics, from both source partitions.
    routes = {(value.decode().split("|")[0], group[1], group[-1]) for group, sequence in expected.items()
              for _, value, _, _ in sequence}
    assert {(branch, source, output) for branch in ("xsrc", "xproc", "xfresh", "xrep") for source in (b"p0", b"p1")
            for output in OUTPUTS} <= routes
    # Behind the Columns: sums of doubled amounts over 10, joins of those up to 25 with a present and an
    # absent (deleted) event.
    joined = [value.decode() for group, sequence in expected.items() if group[0] == "join"
              for _, value, _, _ in sequence]
    sums = [value.decode() for group, sequence in expected.items() if group[0] == "sum" for _, value, _, _ in sequence]
    assert len(joined) > 5 and len(sums) > 15
    # One key's records of several branches of the rekeyed sub-topology, interleaved record by record.
    assert any(len({value.decode().split("|")[0] for _, value, _, _ in sequence}) >= 3
               for group, sequence in expected.items() if group[0] == "rekeyed")
    # Every branch of each split: the peek's records, each down one branch of the split on Python
    # predicates; the split on Columns: a value ending in 3 to its first branch only (the second takes
    # every key but v1), a null value (key "none") to the second, v1 to none (no default branch).
    rekeyed = [value.decode() for group, sequence in expected.items() if group[0] == "rekeyed"
               for _, value, _, _ in sequence]
    peeked = [value.split("|")[1] for value in rekeyed if value.startswith("peek|")]
    split = sorted(value.split("|")[1] for value in rekeyed if value.split("|")[0] in ("pone", "ptwo", "prest"))
    assert peeked and split == sorted(peeked)
    assert "cother|none|null" in rekeyed and any(value.startswith("cthree|") for value in rekeyed)
    assert not any(value.startswith(("cother|v3|", "cother|v1|")) for value in rekeyed)
    assert {group[1] for group in expected} == {b"p0", b"p1"}
    # The amounts' new keys at the processor, a null value's too.
    rekeyed_amounts = [key for group, sequence in expected.items() if group[0] == "rproc" for key, _, _, _ in sequence]
    assert len(rekeyed_amounts) > 15 and b"rnull" in rekeyed_amounts
    # A line's words down the count and the reduce in turn, at one timestamp: count, reduce, count.
    words = [[value.decode().split("|") for _, value, _, _ in sequence]
             for group, sequence in expected.items() if group[0] == "words"]
    assert any(first[0] == "wc" and second[0] == "ws" and third[0] == "wc" and first[2] == second[2] == third[2]
               for sequence in words for first, second, third in zip(sequence, sequence[1:], sequence[2:]))
    assert any(",," in value for sequence in words for _, value, _ in sequence)  # an empty word reduced
    assert {group[1] for group in expected if group[0] == "words"} == {b"p0", b"p1"}
    every = [headers for sequence in expected.values() for _, _, headers, _ in sequence]
    assert any([name for name, _ in headers].count("dup") > 1 for headers in every)
    assert any(value is None for headers in every for _, value in headers)
    assert any(("fresh", None) in headers for headers in every)
    assert any(name == "seen" for headers in every for name, _ in headers)
    assert any(name == "drop" for headers in every for name, _ in headers)  # kept on the other branches


def test_at_least_once_writes_headers_before_the_runners_own_and_reads_them_back(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    """The Kafka comparison above runs exactly-once (the default); at-least-once writes through
    Spark's Kafka sink, which appends the runner's timestamp and position headers to the record's
    own: across a repartition topic the output carries the input's headers, and only those."""
    events, out = unique_topic("headers-alo-in"), unique_topic("headers-alo-out")
    kafka_admin.create_topics({events: 1, out: 1})  # one task per sub-topology: the writer is the point
    headers = [[("a", b"1"), ("a", None), ("b", b"")], [], [("c", None)]]
    produce(kafka_bootstrap, events, [(f"k{i}".encode(), b"v", 0, T0 + i, headers[i % 3]) for i in range(12)])
    builder = StreamsBuilder()
    builder.stream(events).select_key(lambda k, v: k + "!").repartition().map_values(lambda v: v + "?").to(out)
    TaskRunner(builder, unique_topic("spark-headers-alo"), kafka_bootstrap, state_location=str(tmp_path / "state"),
               spark=spark, processing_guarantee="at_least_once").run_all()
    written = {record.key: record.headers for record in read_topic(kafka_bootstrap, out)}
    assert {key: tuple(h for h in own if not h[0].startswith(INTERNAL_HEADER_PREFIX))
            for key, own in written.items()} == {f"k{i}!".encode(): tuple(headers[i % 3]) for i in range(12)}
    assert all(own[-1][0] == HEADER_WRITTEN for own in written.values())  # the runner's own come last
