"""Kafka Streams' own scenarios for windows, aggregations and suppression, on Spark against Kafka Streams.

The inputs follow the unit tests of Kafka Streams (apache/kafka, streams/src/test/.../kstream/internals):
``KStreamSlidingWindowAggregateTest`` (testAggregateSmallInput, testReduceSmallInput, the early records
of testEarlyRecordsSmallInput and testEarlyRecordsRepeatedInput, whose windows would start before 0,
shouldLogAndMeterWhenSkippingExpiredWindowByGrace), ``KStreamWindowAggregateTest`` (testAggBasic's
hopping windows, shouldLogAndMeterWhenSkippingExpiredWindow: a store kept 100 ms),
``KStreamSessionWindowAggregateProcessorTest`` (shouldHandleMultipleSessionsAndMerging,
shouldLogAndMeterWhenSkippingLateRecordWithNonzeroGrace; and both tests' emit-final variants),
``KStreamAggregationIntegrationTest`` (its sessions; keys written at one time into windows of 500 ms whose
keys are made strings), ``SuppressScenarioTest`` (final results for
time windows, with a large jump, for sliding and session windows; a re-grouped table's counts
suppressed by a time limit of zero, of 2 ms, in a buffer of one record and one of 200 bytes) and ``KTableAggregateTest``
(testRemoveOldBeforeAddNew: an update that stays in its group), and SuppressScenarioTest's suppressed
table re-grouped (shouldWorkBeforeGroupBy, on the table scenarios' input) and joined
(shouldWorkBeforeJoinRight / shouldWorkBeforeJoinLeft: their updates, then ours, on two tables of their
own), and the suppressed table's other readers (ours): a stream-table join looking keys up through the
buffer, a table-table join through a filter with a store of its own after the suppression (which the
join reads), a suppressed join's result joined and re-grouped, the suppressed table re-grouped through a
filter with a store of its own (each update subtracts what the filter last forwarded), its suppression
joined with a table and a stream (through both buffers). Their timestamps are theirs: near the
epoch (the early records at 1 to 70 ms, the others moved up by whole seconds so that windows stay
aligned; 0 became 1: a producer stamps 0 with the time of sending), so every topic keeps its records
forever (``retention.ms`` -1). Each scenario has its own keys, in one partition each, chosen so that
the default partitioner puts them (and every key a re-grouping makes of them) in the partition they
are written to: each output partition is one task's, in its order (but for the windows whose keys are
made strings: compared per source key). The scenarios share their inputs
(tests/kstreams_window_scenarios_topology.py), so every windowed processor sees the others' records
too, out of order as they come. Emitting on window close from stores kept in memory (ours: Kafka Streams'
in-memory DSL suppliers ignore the emit strategy, so it emits from a plain InMemoryWindowStore): hopping
windows from a supplier's store kept exactly size + grace (which never emits: each window is gone when it
closes) and kept 20 ms (a window stream time jumped 20 ms past is gone), sliding windows from
``with_store_type("in_memory")``; sessions from a plain InMemorySessionStore kept 20 ms (by end, then key,
then start descending: two keys' sessions ending together, ours, go out in the other order than from the
time-ordered store; a session stream time jumped 20 ms past is gone, 19 ms is not) and from
``with_store_type("in_memory")`` (kept gap + grace: never emits). Emitting on window close from timestamped
RocksDB suppliers' stores (ours: Kafka Streams emits from the supplier's segmented store, segment by segment,
then by key, then start), hopping and sliding windows of seconds kept 60 s, on records last in each partition:
two keys whose byte order is not their windows' start order, windows in up to four segments, and a window the
store's retention cuts before it closes. Stores from suppliers of ours too: hopping windows from stores kept
32 ms, less than they stay open, in memory and in timestamped RocksDB, and in memory behind a filter (its own
clocks; records late within the grace find their windows gone, or still there where stream time minus 32 ms
would have cut them), and from a supplier of windows of 20 ms for windows of 10 ms (the windows forwarded are
the aggregation's: their keys show the end), from an in-memory store retaining duplicates (it returns no
window to the aggregation), and hopping and sliding windows from plain RocksDB suppliers' stores (they keep no
timestamps: Kafka Streams reads each window back stamped -1, so an update is stamped with its record's
timestamp, and a sliding record's new windows copy no records from the windows around it); sliding windows and
sessions from stores kept less than they stay open, in memory and in RocksDB (a late record's reads cut by the
store's time: the largest window start put, which the sliding aggregation keeps as a task-level value, and the
largest session end put, the stream time before the record).

Other readers of a suppressed table stay refused when defined (a unit test below keeps them refused by
name): a suppressed windowed table joined, a foreign-key join of a suppressed table. No
killed-and-rerun comparison here (tests/test_equivalence_suppress.py has one of a suppressed table
re-grouped, joined, and read by the other readers above).

What they found: an aggregation (here a re-grouped table's) whose updates reach a suppression or a user
processor in its sub-topology stamped them with the record's timestamp, where Kafka Streams stamps the
larger of it and the aggregate's previous one (out-moves, out-regroup-*: the suppressions buffered and
emitted, and the stamping processor saw, the record's own); it now keeps its timestamps for them
(tests/test_aggregate_stamps_logic.py). Every windowed scenario matched as it was.

Kafka Streams 4.3.1 runs the whole input once, record cache off (``statestore.cache.max.bytes`` 0), emit
on window close checked after every record; our side runs it in many micro-batches per task.
Compared: describe() of the very topology run, and per output topic and partition the whole sequence
of (key with its window, value with its timestamp).
"""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from pyspark import cloudpickle

import kstreams_window_scenarios_topology
import oracle_harness
from equivalence_io import produce_strings, windowed_key_reader
from kstreams_window_scenarios_topology import INPUTS, OUTPUT_KEYS, OUTPUTS, window_scenario_examples
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.orchestration.app import check_runnable
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import BufferConfig, StreamsBuilder, Suppressed
from dagster_kstreams.topology.windows import TimeWindows

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(kstreams_window_scenarios_topology)

PARTITIONS = 2
FOREVER = {"retention.ms": "-1"}  # the scenarios' timestamps are near the epoch
REKEYED = ("out-windowed-keys", "out-other-size")  # outputs whose keys are no longer their task's


def _in_partition(stem: str, partition: int) -> str:
    """``stem``, or ``stem`` with the first suffix that makes it, that the default partitioner puts in
    ``partition``."""
    for suffix in itertools.count():
        name = stem if suffix == 0 else f"{stem}~{suffix}"
        if default_partition(name.encode(), PARTITIONS) == partition:
            return name
    raise AssertionError("unreachable")


# Every table key of a partition starts with one character that the partitioner puts there too: the
# re-grouping by the key's first character keeps each key in its partition.
FIRST = {partition: next(c for c in "ABCDEFGHIJ" if default_partition(c.encode(), PARTITIONS) == partition)
         for partition in range(PARTITIONS)}


def _records(partition: int, stem: str, values_and_times, base: int = 0) -> list[tuple]:
    key = _in_partition(f"{stem}{partition}", partition)
    return [(key, value, partition, base + max(1, time)) for value, time in values_and_times]


def _numbered(times) -> list[tuple]:
    return [(str(i + 1), time) for i, time in enumerate(times)]


def _events() -> list[tuple]:
    """The stream scenarios, ``(key, value, partition, timestamp)``; partition 0 then 1, each in time ranges."""
    records = []
    # The early records (windows that would start before 0), then the small inputs at 1 s.
    records += _records(0, "early", _numbered([0, 5, 6, 3, 13, 10, 70]))
    records += _records(1, "early", _numbered([0, 2, 4, 0, 2, 2, 0, 7]))
    records += _records(0, "slide", _numbered([10, 10, 14, 15, 20, 22, 30]), 1_000)
    records += [(None, "no-key", 0, 1_016), (_in_partition("slide0", 0), None, 0, 1_017)]
    records += _records(1, "slide", _numbered([10, 14, 15, 22, 26, 30, 24, 12, 3]), 1_000)
    records += [(_in_partition("slide1", 1), None, 1, 1_028)]
    # Expired windows: a record 100 ms ahead, then records beyond the grace (90 ms).
    records += _records(0, "expire", [(str(t), t) for t in (100, 0, 1, 2, 3, 4, 5, 6, 105, 106)], 2_000)
    records += _records(1, "expire", [("100", 200), *((str(t - 100), t) for t in range(100, 106)), ("6", 15),
                                      ("101", 300)], 2_000)
    # Stores kept 32 ms by their suppliers, less than the windows (10 ms, grace 90 ms) stay open: records late
    # within the grace into windows the stores no longer return, into one they still do (started after the store's
    # time, the last start, minus 32 ms, though not after stream time minus 32 ms), a null value.
    records += _records(0, "short", [(str(t), t) for t in (10, 11, 60, 12, 13, 61)] + [(None, 14)]
                        + [(str(t), t) for t in (63, 33, 36, 36)], 2_500)
    records += _records(1, "short", [(str(t), t) for t in (20, 70, 21, 22, 73)] + [(None, 45)]
                        + [(str(t), t) for t in (44, 105, 46, 100)], 2_500)
    # Sessions: SuppressScenarioTest's (gap 5), the processor test's merges (its gap of 5 minutes made 5 ms)
    # and its late record with a grace of 1 ms.
    for stem, time in (("k1-", 0), ("k1-", 5), ("k1-", 1), ("k2-", 11), ("k1-", 5), ("k1-", 30)):
        records += _records(0, stem, [("v" + str(time), time)], 3_000)
    for stem, time in (("dummy", 0), ("on-time1-", 0), ("dummy", 11), ("on-time2-", 0), ("dummy", 12), ("late1-", 0)):
        records += _records(1, stem, [(stem, time)], 3_000)
    for partition in range(PARTITIONS):
        merges = (("a", 0), ("b", 0), ("c", 0), ("d", 0), ("d", 2), ("a", 6), ("b", 6), ("a", 8), ("c", 8))
        for stem, time in merges:
            records += _records(partition, "merge-" + stem, [(stem + str(time), time)], 3_100)
    records += [(_in_partition("merge-a1", 1), None, 1, 3_111)]
    # Ours, for the sessions emitted on window close from stores kept in memory (gap 5 ms): a jump of 89 ms
    # past the merges' sessions, two keys' sessions ending together whose keys and starts go opposite ways
    # (b's [0, 4], a's [2, 4]), then jumps of exactly 20 ms past a session's end and of 19 ms.
    for partition in range(PARTITIONS):
        for stem, time in (("b", 0), ("a", 2), ("a", 4), ("b", 4), ("c", 10), ("d", 30), ("e", 49)):
            records += _records(partition, "order-" + stem, [(stem + str(time), time)], 3_200)
    # KStreamAggregationIntegrationTest: sessions (its gap of 5 minutes made 5 ms; bob's continues, jo's
    # late record bridges nothing), and five keys written at one time, then twice at a time 1 s later.
    for partition in range(PARTITIONS):
        for time, stems_and_values in ((0, (("bob", "start"), ("penny", "start"), ("jo", "pause"), ("emily", "pause"))),
                                       (2, (("emily", "resume"),)), (6, (("bob", "pause"), ("penny", "stop"))),
                                       (8, (("bob", "resume"), ("jo", "resume"))), (7, (("jo", "late"),))):
            for stem, value in stems_and_values:
                records += _records(partition, stem, [(value, time)], 5_000)
        for time in (6_000, 7_000, 7_000):
            for number, value in enumerate("ABCDE", start=1):
                records += _records(partition, f"produced{number}-", [(value, time)])
    # Final results: time windows of 2 ms (grace 1 ms), a large jump (grace 2 ms), sliding windows.
    records += _records(0, "final", _numbered([0, 1, 2, 1, 0, 5, 0]), 4_000)
    records += _records(0, "jump", _numbered([0, 1, 2, 0, 3, 0, 4, 0, 30]), 4_050)
    records += _records(1, "final", _numbered([10, 11, 10, 13, 10, 24, 5, 7, 90]), 4_000)
    # Last, in seconds: emitting on window close from RocksDB suppliers' stores (segments of 60 s). Keys
    # "seg-a" and "seg-b" write alternately around 60 s (one late, one out of order within the grace, a null
    # value, a null key), then a jump to 90 s emits 48 s to 75 s at once: "seg-a"'s windows before
    # "seg-b"'s within a segment, segment 0 before segment 1. Then "seg-a" at 136 s and "seg-b" at 194 s:
    # the store's time (190 s) minus the retention (60 s) is the window at 130 s, which the segmented store
    # no longer returns (the time-ordered one would); the one at 135 s is emitted.
    for partition in range(PARTITIONS):
        a, b = (_in_partition(f"seg-{stem}{partition}", partition) for stem in "ab")
        records += [(key, value, partition, time) for key, value, time in (
            (b, "1", 47_000), (a, "2", 52_000), (b, "3", 56_000), (a, "4", 58_000), (b, "5", 61_000),
            (a, "6", 62_000), (a, "late", 45_000), (a, "7", 55_000), (b, None, 60_000), (None, "no-key", 63_000),
            (_in_partition(f"seg-c{partition}", partition), "8", 90_000), (a, "9", 136_000), (b, "10", 194_000))]
    return records


def _table_key(stem: str, partition: int) -> str:
    return _in_partition(FIRST[partition] + stem, partition)


def _tables() -> list[tuple]:
    """The table scenarios: re-grouped counts suppressed (SuppressScenarioTest), and an update that stays
    in its group (KTableAggregateTest.testRemoveOldBeforeAddNew)."""
    records = []
    for partition in range(PARTITIONS):
        def row(stem, value, time):
            value = None if value is None else _in_partition(f"{value}{partition}", partition)
            return (_table_key(stem, partition), value, partition, time)

        records += [row(*update) for update in (
            ("k1", "v1", 1_000), ("k1", "v2", 1_001), ("k2", "v1", 1_002), ("tick", "tick", 1_003),
            ("tick", "tock", 1_004), ("x", "x", 1_005), ("x", "y", 1_006), ("k1", None, 1_007),
            ("tick", "tick", 1_010), ("k2", None, 1_014), ("tick", "tock", 1_020))]
        records += [row(*update) for update in (
            ("1", "A", 2_010), ("2", "B", 2_008), ("1", None, 2_012), ("2", "C", 2_006), ("3", "D", 2_015),
            ("2", None, 2_020))]
    return records


def _joined_tables() -> list[tuple]:
    """SuppressScenarioTest.shouldWorkBeforeJoinRight/Left's updates of the right table then the left (each
    test suppresses one side; here both topologies read the same two topics), at 10 s, then ours: out of
    order, tombstones of buffered and emitted keys, a key the other table never held, a null key."""
    records = []
    for partition in range(PARTITIONS):
        def row(side, stem, value, time):
            key = None if stem is None else _in_partition(f"{stem}{partition}", partition)
            return (side, key, value, partition, 10_000 + time)

        records += [row(*update) for update in (
            ("right", "B", "1", 1), ("right", "A", "1", 2), ("right", "tick", "tick", 12), ("right", "A", "2", 13),
            ("left", "A", "a", 14), ("left", "B", "b", 15), ("left", "A", "b", 16), ("right", "tick", "tick1", 23),
            # ours: out of order in each topic, a buffered key deleted and written again, deletes of emitted
            # keys, a key only one table holds, a null key
            ("left", "C", "c", 30), ("right", "A", None, 33), ("left", "B", None, 28), ("right", "C", "3", 31),
            ("left", "A", "d", 36), ("right", "A", "4", 35), (("left", None, "no-key", 37)), ("right", "B", None, 40),
            ("left", "tick", "tick", 41), ("right", "tick", "tick2", 52), ("left", "tick", "tock", 70),
            ("left", "A", "e", 71), ("right", "A", "5", 73), ("left", "C", "g", 80), ("right", "tick", "tick3", 90),
            # a late left update while the right key is buffered again: a join through the filter's own store
            # stamps it with that store's time (what the filter last forwarded), not the buffer's unknown one
            ("left", "A", "f", 34))]
    return records


def _results(bootstrap: str, topics: dict[str, str]) -> dict[tuple[str, int], list]:
    """``{(output, partition): [(key, value)] in offset order}``; a windowed key as (key, start, end)."""
    results: dict[tuple[str, int], list] = {}
    for name in OUTPUTS:
        key_of = windowed_key_reader(OUTPUT_KEYS[name])
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            value = None if record.value is None else record.value.decode()
            results.setdefault((name, record.partition), []).append((key_of(record.key), value))
    # Keys made strings leave their task's partition: there each source key's records are in its task's
    # order, the two tasks' interleaved as they ran (in Kafka Streams too).
    for (name, partition), sequence in results.items():
        if name in REKEYED:
            by_source_key: dict[str, list] = {}
            for key, value in sequence:
                by_source_key.setdefault(key.rsplit("@", 1)[0], []).append((key, value))
            results[name, partition] = by_source_key
    return results


def _create(kafka_admin, unique_topic, names, prefix: str) -> dict[str, str]:
    topics = {name: unique_topic(f"{prefix}-{name}") for name in names}
    kafka_admin.create_topics(dict.fromkeys(topics.values(), PARTITIONS), topic_config=FOREVER)
    return topics


@pytest.fixture(scope="module")
def scenario_runs(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory, spark):
    """Kafka Streams' run (in the background) and ours, on the same input topics: their outputs."""
    inputs = _create(kafka_admin, unique_topic, INPUTS, "kss-in")
    produce_strings(kafka_bootstrap, inputs["events"], _events())
    produce_strings(kafka_bootstrap, inputs["tables"], _tables())
    joined = _joined_tables()
    for side in ("left", "right"):
        produce_strings(kafka_bootstrap, inputs[side], [record[1:] for record in joined if record[0] == side])
    theirs = {**inputs, **_create(kafka_admin, unique_topic, OUTPUTS, "kss-ks")}
    main = oracle_harness.BackgroundMain("kstreams.oracle.WindowScenarioExamples", [
        # App ids of one length: a buffer bounded in bytes counts the repartition topic's name, named after it.
        kafka_bootstrap, unique_topic("kss-ks"), str(tmp_path_factory.mktemp("kss-ks-state")),
        *(theirs[name] for name in (*INPUTS, *OUTPUTS))])
    try:
        ours = {**inputs, **_create(kafka_admin, unique_topic, OUTPUTS, "kss-ours")}
        runner = TaskRunner(window_scenario_examples(ours), unique_topic("kss-us"), kafka_bootstrap,
                            state_location=str(tmp_path_factory.mktemp("kss-ours-state")), spark=spark,
                            max_records_per_batch=20)
        batches = max(result.batches for result in runner.run_all())
        yield {"describe": main.report()["describe"], "topics": theirs, "batches": batches,
               "theirs": _results(kafka_bootstrap, theirs), "ours": _results(kafka_bootstrap, ours)}
    finally:
        main.close()


@pytest.mark.integration
def test_describe_of_the_topology_run_is_kafka_streams(scenario_runs):
    assert str(window_scenario_examples(scenario_runs["topics"]).build().describe()) == scenario_runs["describe"]


@pytest.mark.integration
def test_kafka_streams_window_scenarios_on_spark_match_kafka_streams(scenario_runs):
    theirs, ours = scenario_runs["theirs"], scenario_runs["ours"]
    assert scenario_runs["batches"] >= 3  # stream time, buffers and windows carried from batch to batch
    # Every output has records on both partitions (what each scenario is about is in its input; the
    # suppressions of one record and of 200 bytes, whose time limit never comes, only by emitting early),
    # but the emits on close from in-memory stores kept exactly size + grace (gap + grace for sessions): their
    # windows are gone when they close (those of the time-ordered store, the same windows, are emitted).
    never_emitted = ("out-hopping-closed-memory", "out-session-closed-memory-default")
    assert set(theirs) == {(name, partition) for name in OUTPUTS for partition in range(PARTITIONS)
                           if name not in never_emitted}
    assert all(theirs["out-hopping-closed", partition] for partition in range(PARTITIONS))
    # The in-memory session store's points: sessions ending together by key (a's, then b's: the time-ordered
    # store's by start, b's first); a session stream time jumped 20 ms past is gone (c's), 19 ms is not (d's).
    for partition in range(PARTITIONS):
        def emitted(output, stems):
            return [key[0][:7] for key, _ in theirs[output, partition] if key[0].startswith(stems)]

        assert emitted("out-session-closed-memory", ("order-a", "order-b")) == ["order-a", "order-b"]
        assert emitted("out-session-closed", ("order-a", "order-b")) == ["order-b", "order-a"]
        assert emitted("out-session-closed", "order-c") and not emitted("out-session-closed-memory", "order-c")
        assert emitted("out-session-closed-memory", "order-d")
    # The scenarios' points show in Kafka Streams' output: sessions merged away (their removal), windows of
    # the early records clamped to start at 0, and the emit-final outputs fewer than the updates.
    for partition in range(PARTITIONS):
        assert any(value.startswith("null|") for _, value in theirs["out-session-counts", partition])
        assert any(key[1] == 0 for key, _ in theirs["out-early-5", partition])
    assert len(theirs["out-session-closed", 0]) < len(theirs["out-session-counts", 0])
    # The RocksDB supplier's emit: within the jump's emit, "seg-a"'s 55 s window before "seg-b"'s 50 s one,
    # and segment 1's windows after segment 0's; the window at 130 s is never emitted.
    for partition in range(PARTITIONS):
        starts = [key[1] for key, _ in theirs["out-hopping-closed-rocksdb", partition] if key[0].startswith("seg-")]
        assert starts != sorted(starts) and 130_000 not in starts and 135_000 in starts
    # shouldWorkBeforeJoinRight's points: a left update joins the right side's emitted value while the key
    # has a newer one buffered ("(a,1)", not 2), and the buffered one once emitted ("(b,2)").
    for partition in range(PARTITIONS):
        key = _in_partition(f"A{partition}", partition)
        right_held = theirs["out-join-right-held", partition]
        assert (key, "(a,1)|t10014") in right_held and (key, "(b,2)|t10016") in right_held
    # Stores kept 32 ms by their suppliers, in memory as in RocksDB (and behind a filter): a late record's window
    # gone from the store aggregates from nothing; one the store's time (2560, 2570) keeps, stream time (2563,
    # 2573) would not.
    for output in ("out-short-kept-memory", "out-short-kept-rocksdb", "out-short-kept-filtered"):
        short = {partition: _in_partition(f"short{partition}", partition) for partition in range(PARTITIONS)}
        assert ((short[0], 2505, 2515), "+12|t2512") in theirs[output, 0]
        assert ((short[0], 2530, 2540), "+33+36|t2536") in theirs[output, 0]
        assert ((short[1], 2540, 2550), "+null+44|t2545") in theirs[output, 1]
        assert ((short[1], 2540, 2550), "+46|t2546") in theirs[output, 1]
    # Sliding windows from stores kept 45 ms in memory, 50 ms in RocksDB: the store's time (2550, the left window
    # of 2560) cuts at 2505 (in memory) or 2500 (RocksDB), not at stream time's 2515 or 2510: the record at 2512
    # still reads the right window at 2511; in memory it no longer finds the window at 2501 (stream time would not
    # have either), in RocksDB it does (on partition 1, at 2522: the window at 2511 is read, stream time cut it).
    slide = {partition: _in_partition(f"short{partition}", partition) for partition in range(PARTITIONS)}
    assert ((slide[0], 2511, 2521), "+11+12|t2512") in theirs["out-short-sliding-memory", 0]
    assert ((slide[0], 2502, 2512), "+12|t2512") in theirs["out-short-sliding-memory", 0]
    assert ((slide[1], 2512, 2522), "+21+22|t2522") in theirs["out-short-sliding-rocksdb", 1]
    # Sessions from stores kept 45 ms in memory, 50 ms in RocksDB (their time, the largest end put: 2560, 2570):
    # 2512 finds [2510, 2511] gone and starts a session of its own; 2522 finds [2520] gone but [2521] not.
    assert ((slide[0], 2512, 2512), "+12|t2512") in theirs["out-short-session-memory", 0]
    assert ((slide[1], 2521, 2522), "|+21+22|t2522") in theirs["out-short-session-rocksdb", 1]
    # An in-memory store retaining duplicates returns no window: every update is one record's.
    for partition in range(PARTITIONS):
        updates = theirs["out-duplicates", partition]
        assert updates and all(value.count("+") == 1 for _, value in updates), updates[:5]
    # A supplier of windows of 20 ms for windows of 10 ms: the windows forwarded are the aggregation's.
    other_size = [key for partition in range(PARTITIONS) for keys in theirs["out-other-size", partition].values()
                  for key, _ in keys]
    assert other_size and all(int(key.rsplit("-", 1)[1]) - int(key.rsplit("@", 1)[1].split("-")[0]) == 10
                              for key in other_size)
    # Plain RocksDB suppliers' stores read each window back stamped -1: the time windows' updates are those of
    # the timestamped store's twin (out-expired-hopping), stamped with their records' timestamps where a record came
    # out of order; the sliding windows' create no right window of a record before another (out-expired-sliding's do).
    for partition in range(PARTITIONS):
        plain, kept = (theirs[output, partition] for output in ("out-plain-rocksdb", "out-expired-hopping"))
        unstamped = [[(key, value.split("|")[0]) for key, value in updates] for updates in (plain, kept)]
        assert unstamped[0] == unstamped[1] and plain != kept
        windows = {output: {key for key, _ in theirs[output, partition]}
                   for output in ("out-plain-rocksdb-sliding", "out-expired-sliding")}
        assert windows["out-expired-sliding"] - windows["out-plain-rocksdb-sliding"]
    different = sorted(key for key in theirs if ours.get(key) != theirs[key])
    assert not different, {key: (theirs[key], ours.get(key)) for key in different[:3]}
    assert set(ours) == set(theirs)


def _held():
    return Suppressed.until_time_limit(timedelta(milliseconds=10), BufferConfig.unbounded())


def _join_of_suppressed_windowed_table(builder):
    windowed = builder.stream("left").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=1)))
    windowed.count().suppress(_held()).join(windowed.reduce(lambda one, two: one + two), lambda mine, theirs: mine) \
        .to_stream().to("out")


def _foreign_key_join_of_suppressed(builder):
    builder.table("left").join(builder.table("tables").suppress(_held()), lambda value: value,
                               lambda mine, theirs: mine).to_stream().to("out")


def _foreign_key_join_of_suppressed_left(builder):
    builder.table("tables").suppress(_held()).join(builder.table("left"), lambda value: value,
                                                   lambda mine, theirs: mine).to_stream().to("out")


@pytest.mark.parametrize("build, processor, reason", [
    # a suppressed windowed table: the table behind the suppression is read as a plain one only
    (_join_of_suppressed_windowed_table, r"KTABLE-JOINTHIS-\d+", r"whose values come from .* \(windowed_aggregate\)"),
    # a foreign-key join reads no suppressed table (neither side)
    (_foreign_key_join_of_suppressed, r"KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-\d+", r"whose values come from .* \(suppress\)"),
    (_foreign_key_join_of_suppressed_left, r"KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-\d+",
     r"whose values come from .* \(suppress\)"),
])
def test_what_reads_a_suppressed_table_otherwise_is_still_refused_naming_the_reader(build, processor, reason):
    builder = StreamsBuilder()
    build(builder)
    topics = ("tables", "left", "right", "out")
    with pytest.raises(UnsupportedTopologyError, match=f"processor {processor} .*{reason}"):
        check_runnable(builder.build(), "scenarios", dict.fromkeys(topics, PARTITIONS))
