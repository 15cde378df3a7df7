"""``suppress`` and ``emit_strategy(EmitStrategy.on_window_close())`` on Spark against Kafka Streams itself.

One topology (tests/suppress_topology.py; Java twin SuppressExamples): on an event stream, a
tumbling count suppressed until its windows close (also after a filter, whose old values decide
which updates reach the suppression; after the same filter, until a time limit in a buffer bounded
in bytes, which counts each update's old count), a hopping aggregate that emits on window
close, a session count suppressed until its sessions close (also after a filter, and until a time
limit in a buffer bounded in bytes: a new session's update has no old value, a merged-away session's
removal carries its old count), a session aggregate that emits on window close, the same hopping and
session aggregates emitting on window close from suppliers' stores kept in memory (a plain
``InMemoryWindowStore`` kept 15 s and ``InMemorySessionStore`` kept 10 s:
tests/suppress_memory_topology.py), and a hopping aggregate and a session aggregate emitting on window
close whose stores processors on the events write and read (``ClosedWindowWriter``,
``ClosedSessionWriter``: they overwrite, delete and add windows, write windows emitted already, and
move the store's time ahead; what they read and what the aggregates emit, with each window's
timestamp, are compared); on a prices table, a suppression until a time limit with at most 3 records
buffered (emitted early when full), and a filter then an unbounded suppression until a time limit;
on a copy of the event stream (its own
sub-topology), a sliding-window aggregate that emits on window close, the same aggregate whose
time-ordered store (with its key index) a processor on the slides writes and reads
(``ClosedSlidingWriter``: overwrites windows the next slides aggregate onto, deletes, adds, writes
emitted windows, moves the store's time ahead; reads key ranges in the index's order and every key's
windows by start), and a sliding count (emitting on update) suppressed until its windows close after a
filter and until a time limit in a buffer bounded in bytes (an update's old count: the aggregate it was
computed from). On the prices table too,
suppressions bounded in bytes as Kafka Streams sizes a buffered record (``max_bytes(200)``; a
``map_values`` then ``max_records(3).with_max_bytes(230)``; both emit early) and one of 2,000 bytes
that shuts down when full and never is; a suppression until a time limit re-grouped by key family (each
update it emits subtracts the old value it sends) and left-joined by the prices table itself (whose
updates read it through the buffer: a buffered key's prior value), looked up by the table's own updates
(a stream-table join), joined and re-grouped through a filter with a store of its own (that store: what
the filter last forwarded, with the re-grouping's old values), that left join suppressed, then joined
and re-grouped, and the suppressed table suppressed again, left-joined and looked up by the table itself
(through both buffers). Windowed aggregations and the table run without
the record cache, so what reaches each suppression, and so its output, is fixed by the input. The
events' hopping windows also emit on window close from stores of suppliers: one kept 15 s in memory, and
a timestamped RocksDB one kept 60 s, which Kafka Streams emits segment by segment (60 s), then by key,
then start (what a jump closes at once comes out in that order).
Kafka Streams 4.3.1 runs it once (emit-on-window-close checked after every record).

Our tasks run the twin in a ``dagster-kstreams run`` process, one task after another in batches
of 150 records, SIGKILLed once the second task (0_1) has committed its first batch; a rerun in
another process continues every task from its checkpoint (the suppression buffers, their stream
times and the closed windows of task 0_1 come back from it) and is SIGKILLed in turn once task
2_1 (sliding windows) has committed its first batch; a third process (this one) finishes.

Input (2 partitions each): keys ``a*`` in partition 0 and ``b*`` in partition 1, so that each
key family is one task's; null keys, null values and tombstones, out-of-order timestamps (within
grace and beyond), and three jumps of stream time longer than the hopping windows' retention
(windows it jumps over are never emitted, in Kafka Streams as here), one across a minute (sessions
in the time-ordered session store's 60 s segment before it are never emitted either). Every output topic has one
partition: the records of one key family there are one task's output, in its order.

Compared: describe() of the very topology run, and per output topic and key family the whole
sequence of (key, value, timestamp) records.

The prices carry headers on some records (a name of one Java char per code unit and of two, a null
value), and from record 300 on, those of partition 1 a 60-byte header: Kafka Streams counts headers
in a buffered record's size, so the byte-bounded suppressions evict on them; and a second
application (SuppressExamples' shutDownExample, run beside the first) suppresses the prices in 480
bytes that shut down when full: only partition 1's task overflows, in that tail.
"""

from __future__ import annotations

import json
import random
import re
import time

import pytest
from pyspark import cloudpickle

import oracle_harness
import suppress_context_topology
import suppress_memory_topology
import suppress_topology
import suppressed_readers_topology
from equivalence_io import output_topics, produce_strings, windowed_key_reader, written_time
from killed_runs import run_until_killed
from suppress_reader_checks import (
    assert_the_other_readers_of_the_suppression_matter, assert_updates_go_out_in_their_buffered_context,
)
from suppress_context_topology import CONTEXT_OUTPUTS
from suppress_topology import (INPUTS, OUTPUT_KEYS, OUTPUTS, RAISED_BYTES, SHUT_DOWN_OUTPUT, shut_down_example,
                               suppress_examples)
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.errors import TaskFailedError
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(suppress_topology)
cloudpickle.register_pickle_by_value(suppress_context_topology)
cloudpickle.register_pickle_by_value(suppress_memory_topology)
cloudpickle.register_pickle_by_value(suppressed_readers_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute
FAMILIES = ("a", "b")  # the keys of partition 0, of partition 1
# The outputs of StampWindowValues: each value ends with "|t" and its record's timestamp.
STAMPED_OUTPUTS = ("out-closed-written", "out-closed-sessions-written", "out-closed-sliding-written")


def _input(seed: int = 14) -> dict[str, list[tuple]]:
    """``{topic: [(key, value, partition, timestamp)]}`` in production order."""
    rng = random.Random(seed)
    events, base = [], T0
    for i in range(700):
        if i in (250, 290, 500):
            # A jump of stream time longer than the hopping windows' retention (12 s); the second
            # crosses a minute: the session store's 60 s segment before it is dropped.
            base += 25_000
        partition = i % PARTITIONS
        timestamp = base + i * 120 + i % 7
        roll = rng.random()
        if roll < 0.12:
            timestamp -= rng.randint(100, 4_500)    # late, mostly within the grace periods
        elif roll < 0.17:
            timestamp -= rng.randint(6_000, 20_000)  # late beyond every grace
        key = None if rng.random() < 0.03 else f"{FAMILIES[partition]}{rng.randint(1, 3)}"
        value = None if rng.random() < 0.05 else f"e{i}"
        events.append((key, value, partition, timestamp))
    prices = []
    for i in range(400):
        partition = i % PARTITIONS
        timestamp = T0 + i * 400 + i % 5
        if rng.random() < 0.15:
            timestamp -= rng.randint(100, 5_000)
        key = None if rng.random() < 0.03 else f"{FAMILIES[partition]}{rng.randint(1, 6)}"
        roll = rng.random()
        value = None if roll < 0.12 else (f"x{i}" if roll < 0.35 else f"p{i}")
        prices.append((key, value, partition, timestamp, _price_headers(i, partition)))
    return {"events": events, "prices": prices}


def _price_headers(i: int, partition: int) -> list:
    """Headers of price ``i``: none, short ones, or (partition 1 from 300 on) a big one."""
    if partition == 1 and i >= 300:
        return [("trace", b"t" * 60)]
    return ([], [("src", b"feed")], [("\u00e9t\U0001d11e", None)])[i % 3]


def _key_reader(name: str):
    return windowed_key_reader(OUTPUT_KEYS[name])


def _value_reader(name: str):
    if name in ("out-final", "out-sessions", "out-final-filtered", "out-windowed-bytes", "out-sessions-filtered",
                "out-session-bytes", "out-sliding-filtered", "out-sliding-bytes"):
        return lambda data: None if data is None else int.from_bytes(data, "big", signed=True)
    return lambda data: None if data is None else data.decode()


def _results(bootstrap: str, topics: dict[str, str], names=OUTPUTS) -> dict[tuple[str, str], list]:
    """``{(output, key family): [(key, value, timestamp)] in offset order}``."""
    results: dict[tuple[str, str], list] = {}
    for name in names:
        key_of, value_of = _key_reader(name), _value_reader(name)
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            key = key_of(record.key)
            family = (key[0] if isinstance(key, tuple) else key)[0]
            results.setdefault((name, family), []).append((key, value_of(record.value), written_time(record)))
    return results


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"suppress-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = _input()
    # The sliding windows' own topic: the same records, with one more jump of stream time (15 s from
    # record 400 on), longer than their store's retention (2 x 5 s + 2 s) but shorter than the
    # 18 s the runner keeps for sliding windows emitting on update: the time-ordered store of
    # emit-on-close no longer returns (reads, emits) what lies beyond its own retention.
    records["slides"] = [(key, value, partition, timestamp + (15_000 if i >= 400 else 0))
                         for i, (key, value, partition, timestamp) in enumerate(records["events"])]
    for name in INPUTS:
        produce_strings(kafka_bootstrap, inputs[name], records[name])
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys((*OUTPUTS, SHUT_DOWN_OUTPUT), 1), "ks")
    stdout = oracle_harness.run_main(
        "kstreams.oracle.SuppressExamples",
        [kafka_bootstrap, unique_topic("ks-suppress"), str(tmp_path_factory.mktemp("ks-suppress-state")),
         *(topics[name] for name in INPUTS), *(topics[name] for name in (*OUTPUTS, SHUT_DOWN_OUTPUT))],
        timeout=600,
    )
    printed = json.loads(stdout)
    return {"inputs": inputs, "records": records, "describe": printed["describe"], "failure": printed["failure"],
            "results": _results(kafka_bootstrap, topics), "topics": topics,
            "shut_down": _results(kafka_bootstrap, topics, (SHUT_DOWN_OUTPUT,))}


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    ours = suppress_examples(kafka_streams_run["topics"]).build().describe()
    assert str(ours) == kafka_streams_run["describe"]


def test_suppression_killed_part_way_and_rerun_matches_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    expected = kafka_streams_run["results"]
    _assert_reference_exercises_it(expected, kafka_streams_run["records"])

    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, 1))
    app_id = unique_topic("spark-suppress")
    state = tmp_path / "state"
    run_until_killed(tmp_path, "suppress_topology:suppress_examples", topics, app_id=app_id,
                     bootstrap=kafka_bootstrap, state=state, kill_when=lambda line: line.startswith("task 0_1 batch"),
                     extra_args=("--parallelism", "1", "--max-records-per-batch", "150"))
    # A second process continues every task and is killed in turn, once the sliding windows' second
    # task (2_1) has committed a batch: their closed windows and last emission time come back too.
    lines = run_until_killed(tmp_path, "suppress_topology:suppress_examples", topics, app_id=app_id,
                             bootstrap=kafka_bootstrap, state=state,
                             kill_when=lambda line: line.startswith("task 2_1 batch"),
                             extra_args=("--parallelism", "1", "--max-records-per-batch", "150"))
    on_partition_1 = sum(1 for record in kafka_streams_run["records"]["events"] if record[2] == 1)
    # "task <id> batch <n>: <records done> records, ...": each task's records in this process
    done = {line.split()[1]: int(line.split(": ")[1].split()[0]) for line in lines if " batch " in line}
    assert 0 < done["0_1"] < on_partition_1  # task 0_1 continued from its checkpoint
    assert done["1_0"] and done["1_1"] and done["2_0"]

    runner = TaskRunner(suppress_examples(topics), app_id, kafka_bootstrap, state_location=str(state), spark=spark)
    results = {r.task_id: r for r in runner.run_all()}
    assert 0 < results["2_1"].records_in < on_partition_1  # and so did task 2_1

    ours = _results(kafka_bootstrap, topics)
    assert set(ours) == set(expected)
    for output_and_family, sequence in expected.items():
        assert ours[output_and_family] == sequence, output_and_family


def _assert_reference_exercises_it(expected: dict, records: dict) -> None:
    """Kafka Streams' output shows what the test is about: final results once per window, closed
    windows by start, the jumps leaving hopping windows unemitted, sessions, tombstones."""
    # The outputs whose values show their update's timestamp: Kafka Streams' sinks write that one.
    for (name, family), sequence in expected.items():
        if name in (*STAMPED_OUTPUTS, *CONTEXT_OUTPUTS):
            assert sequence and all(value.rsplit("|t", 1)[1] == str(timestamp) for _, value, timestamp in sequence)
    expected = {output: [(key, value) for key, value, _ in sequence] for output, sequence in expected.items()}
    assert set(expected) == {(name, family) for name in OUTPUTS for family in FAMILIES}
    for family in FAMILIES:
        finals = [key for key, _ in expected[("out-final", family)]]
        assert len(finals) == len(set(finals)) > 20
        closed = [key for key, _ in expected[("out-closed", family)]]
        starts = [start for _, start, _ in closed]
        assert len(closed) == len(set(closed)) > 20 and starts == sorted(starts)
        assert set(range(min(starts), max(starts), 5_000)) - set(starts), "the jumps leave windows unemitted"
        # a RocksDB supplier's store (kept 60 s) emits what the jumps close by segment, then key, then start
        rocksdb_starts = [start for (_, start, _), _ in expected[("out-closed-rocksdb", family)]]
        assert rocksdb_starts != sorted(rocksdb_starts) and set(rocksdb_starts) > set(starts)
        assert {key for key, _, _ in closed} == {key for key, _, _, _ in records["events"] if key and key[0] == family}
        sliding = [key for key, _ in expected[("out-closed-sliding", family)]]
        starts = [start for _, start, _ in sliding]
        assert len(sliding) == len(set(sliding)) > 20 and starts == sorted(starts)
        assert any(value.count(",") > 1 for _, value in expected[("out-closed-sliding", family)])
        assert any(count > 1 for _, count in expected[("out-sessions", family)])
        closed_sessions = [key for key, _ in expected[("out-closed-sessions", family)]]
        ends = [end for _, _, end in closed_sessions]
        assert len(closed_sessions) == len(set(closed_sessions)) > 5 and ends == sorted(ends)
        assert any("|" in value for _, value in expected[("out-closed-sessions", family)])  # merged sessions
        # from an in-memory store kept 10 s: the same sessions by end, but for those a jump of stream time passed
        memory_sessions = expected[("out-closed-memory-sessions", family)]
        assert set(memory_sessions) < set(expected[("out-closed-sessions", family)]) and memory_sessions
        assert [end for (_, _, end), _ in memory_sessions] == sorted(end for (_, _, end), _ in memory_sessions)
        assert any(value is None for _, value in expected[("out-limited", family)])
        assert any("-" in value for _, value in expected[("out-held-regrouped", family)])  # subtractions
        assert_the_other_readers_of_the_suppression_matter(expected, family)
        assert_updates_go_out_in_their_buffered_context(expected, family)
        debounced = [value for _, value in expected[("out-debounced", family)]]
        assert None in debounced and not any(value and value.startswith("x") for value in debounced)
        held = [value for _, value in expected[("out-held", family)]]
        assert None in held and not any(value and value.startswith("x") for value in held)
        # the byte bounds evict early: not the sequence of the (never full) 2,000-byte buffer
        assert expected[("out-bytes", family)] != expected[("out-raised", family)]
        assert len(expected[("out-both-bounds", family)]) > 20
        # the filter before a suppression: final counts of 1 or 2 modulo 4 are tombstones, never emitted
        filtered = expected[("out-final-filtered", family)]
        assert len(filtered) > 10 and set(filtered) < set(expected[("out-final", family)])
        assert all(count % 4 not in (1, 2) for _, count in filtered)
        # filtered, then until a time limit in bytes: a window goes out more than once, new windows as tombstones
        windowed_bytes = expected[("out-windowed-bytes", family)]
        assert len(windowed_bytes) > 2 * len({key for key, _ in windowed_bytes}) > 40
        assert any(count is None for _, count in windowed_bytes)
        _assert_session_and_sliding_old_values_matter(expected, family)
        _assert_the_processors_writes_reach_the_window_close_emit(expected, family)
        _assert_the_sliding_processors_writes_reach_the_window_close_emit(expected, family)


def _assert_session_and_sliding_old_values_matter(expected: dict, family: str) -> None:
    """The session and sliding tables' filters and byte bounds: what each case is there for."""
    sessions, filtered = expected[("out-sessions", family)], expected[("out-sessions-filtered", family)]
    # only sessions whose final count is not 1 modulo 3, and fewer of them than unfiltered
    assert 5 < len(filtered) < len(sessions) and all(count % 3 != 1 for _, count in filtered)
    session_bytes = expected[("out-session-bytes", family)]
    assert any(count is None for _, count in session_bytes)  # merged-away sessions' removals
    assert len(session_bytes) > 2 * len(sessions)
    sliding = expected[("out-sliding-filtered", family)]
    assert len(sliding) > 20 and all(count % 4 not in (1, 2) for _, count in sliding)
    sliding_bytes = expected[("out-sliding-bytes", family)]
    assert len(sliding_bytes) > 40


def _assert_the_processors_writes_reach_the_window_close_emit(expected: dict, family: str) -> None:
    """The hopping and session aggregates whose stores the processors write emit what they wrote:
    their windows are out-closed's and out-closed-sessions' (the same aggregates, unwritten) but for
    those the processors overwrote, put, deleted or hid by moving the store's time ahead."""
    plain = dict(expected[("out-closed", family)])
    written = dict(expected[("out-closed-written", family)])  # window -> "value|t<timestamp>"
    assert len(written) == len(expected[("out-closed-written", family)]) > 10  # each window once
    starts = [start for _, start, _ in written]
    assert starts == sorted(starts)
    assert any(key.endswith("9") for key, _, _ in written)  # a window the processor put goes out
    assert any(value.startswith("w") for value in written.values())  # one it overwrote, with what it wrote
    assert set(plain) - set(written)  # deleted, or older than the store's time (moved ahead) minus the retention
    assert sum(plain.get(window) == value.rsplit("|t", 1)[0] for window, value in written.items()) > 5
    assert len(expected[("out-closed-reads", family)]) > 200
    # the same for the sessions: each once, by end; one the processor put, one it overwrote; some
    # removed or hidden; those before its first write as the unwritten aggregate's (which, never cut
    # by a removal, merges the events into a few long sessions)
    plain = dict(expected[("out-closed-sessions", family)])
    written = dict(expected[("out-closed-sessions-written", family)])
    assert len(written) == len(expected[("out-closed-sessions-written", family)]) > 5
    ends = [end for _, _, end in written]
    assert ends == sorted(ends)
    assert any(key.endswith("9") for key, _, _ in written)
    assert any("w" in value for value in written.values())
    assert set(plain) - set(written)
    assert sum(plain.get(session) == value.rsplit("|t", 1)[0] for session, value in written.items()) > 0
    assert len(expected[("out-closed-session-reads", family)]) > 200


def _assert_the_sliding_processors_writes_reach_the_window_close_emit(expected: dict, family: str) -> None:
    """The sliding aggregate whose store ClosedSlidingWriter writes emits each window once, by start: one the
    processor put, ones it overwrote (and the slides after aggregated onto), fewer than the same aggregate
    unwritten (deleted, or hidden by the store's time moved ahead), and a window put ahead. Its reads: the key
    range (through the store's key index) holds the windows fetch_all returns, in another order (by key)."""
    plain = dict(expected[("out-closed-sliding", family)])
    written = dict(expected[("out-closed-sliding-written", family)])
    assert len(written) == len(expected[("out-closed-sliding-written", family)]) > 20
    starts = [start for _, start, _ in written]
    assert starts == sorted(starts)
    assert any(key.endswith("9") for key, _, _ in written)
    assert any(value.startswith("w") and "," in value for value in written.values())  # aggregated onto
    assert any(value.startswith("ahead") for value in written.values())
    assert set(plain) - set(written)
    assert sum(plain.get(window) == value.rsplit("|t", 1)[0] for window, value in written.items()) > 20
    reads = [value.split("|") for _, value in expected[("out-closed-sliding-reads", family)]]
    assert len(reads) > 200
    by_key = [re.findall(r"(\w+@\d+)=", read[3]) for read in reads]
    by_start = [[entry for entry in read[5].split(",") if entry] for read in reads]
    assert all(sorted(keyed) == sorted(timed) for keyed, timed in zip(by_key, by_start))
    assert sum(keyed != timed for keyed, timed in zip(by_key, by_start)) > 50


def test_a_buffer_that_shuts_down_when_full_stops_where_kafka_streams_stops_and_a_raised_bound_continues(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    """Both stop at the same input record, and what each wrote before it is exact: Kafka Streams
    (at-least-once, commits every 500 ms) had written some prefix of the never-full suppression's
    output when it stopped (how much depends on its commit and send timing, so only the prefix is
    compared); our failed batch commits nothing (exactly-once), so what we wrote before is a prefix
    too, and with the bound raised, a rerun writes exactly the rest: nothing lost, nothing twice.
    Kafka Streams' reference for the rest is the same suppression with the bound raised
    (``out-raised``, in the first application; partition 0's task, which never overflows, is
    compared there)."""
    failure, inputs = kafka_streams_run["failure"], kafka_streams_run["inputs"]
    assert failure is not None, "Kafka Streams' shut-down application did not stop"
    assert (failure["topic"], failure["partition"], failure["node"]) == (inputs["prices"], 1, "bounded")
    assert "bounded buffer exceeded its max capacity" in failure["message"]
    reference = {"b": kafka_streams_run["results"][("out-raised", "b")]}
    ks_before = kafka_streams_run["shut_down"].get((SHUT_DOWN_OUTPUT, "b"), [])
    assert ks_before == reference["b"][:len(ks_before)]

    topics = output_topics(kafka_admin, unique_topic, inputs, {SHUT_DOWN_OUTPUT: 1})
    app_id, state = unique_topic("spark-shut-down"), str(tmp_path / "state")
    runner = TaskRunner(shut_down_example(topics), app_id, kafka_bootstrap, state_location=state, spark=spark,
                        max_records_per_batch=100)
    with pytest.raises(TaskFailedError) as failed:  # only partition 1's task overflows: only it runs here
        runner.run_task("0_1")
    message = str(failed.value)
    assert "\n" not in message
    assert message.startswith(f"task 0_1 of application {app_id!r} failed: ProcessingError: suppression bounded "
                              "buffer exceeded its max capacity (shut_down_when_full). Currently [")
    assert f"/480] bytes, at the record at topic {inputs['prices']!r} partition 1 offset {failure['offset']};" in message
    before = _results(kafka_bootstrap, topics, (SHUT_DOWN_OUTPUT,)).get((SHUT_DOWN_OUTPUT, "b"), [])
    assert 0 < len(before) < len(reference["b"]) and before == reference["b"][:len(before)]

    rerun = TaskRunner(shut_down_example(topics, RAISED_BYTES), app_id, kafka_bootstrap, state_location=state,
                       spark=spark)
    rerun.run_task("0_1")
    assert _results(kafka_bootstrap, topics, (SHUT_DOWN_OUTPUT,)) == {(SHUT_DOWN_OUTPUT, "b"): reference["b"]}
