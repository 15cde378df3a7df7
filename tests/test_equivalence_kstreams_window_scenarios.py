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
of (key with its window, value, the record's timestamp) (some values carry a timestamp too).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark import cloudpickle

import kstreams_window_scenarios_topology
import oracle_harness
from equivalence_io import produce_strings, windowed_key_reader, written_time
from kstreams_window_scenarios_inputs import PARTITIONS, events, in_partition, joined_tables, tables
from kstreams_window_scenarios_topology import INPUTS, OUTPUT_KEYS, OUTPUTS, window_scenario_examples
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.orchestration.app import check_runnable
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import BufferConfig, StreamsBuilder, Suppressed
from dagster_kstreams.topology.windows import TimeWindows

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(kstreams_window_scenarios_topology)

FOREVER = {"retention.ms": "-1"}  # the scenarios' timestamps are near the epoch
REKEYED = ("out-windowed-keys", "out-other-size")  # outputs whose keys are no longer their task's


def _results(bootstrap: str, topics: dict[str, str]) -> dict[tuple[str, int], list]:
    """``{(output, partition): [(key, value, timestamp)] in offset order}``; a windowed key as (key, start,
    end)."""
    results: dict[tuple[str, int], list] = {}
    for name in OUTPUTS:
        key_of = windowed_key_reader(OUTPUT_KEYS[name])
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            value = None if record.value is None else record.value.decode()
            results.setdefault((name, record.partition), []).append((key_of(record.key), value, written_time(record)))
    # Keys made strings leave their task's partition: there each source key's records are in its task's
    # order, the two tasks' interleaved as they ran (in Kafka Streams too).
    for (name, partition), sequence in results.items():
        if name in REKEYED:
            by_source_key: dict[str, list] = {}
            for key, value, timestamp in sequence:
                by_source_key.setdefault(key.rsplit("@", 1)[0], []).append((key, value, timestamp))
            results[name, partition] = by_source_key
    return results


def _keys_and_values(results: dict) -> dict:
    """``results`` without the timestamps: what the checks of Kafka Streams' output read."""
    def pairs(sequence: list) -> list:
        return [(key, value) for key, value, _ in sequence]
    return {output: ({key: pairs(sequence) for key, sequence in records.items()} if isinstance(records, dict)
                     else pairs(records)) for output, records in results.items()}


def _create(kafka_admin, unique_topic, names, prefix: str) -> dict[str, str]:
    topics = {name: unique_topic(f"{prefix}-{name}") for name in names}
    kafka_admin.create_topics(dict.fromkeys(topics.values(), PARTITIONS), topic_config=FOREVER)
    return topics


@pytest.fixture(scope="module")
def scenario_runs(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory, spark):
    """Kafka Streams' run (in the background) and ours, on the same input topics: their outputs."""
    inputs = _create(kafka_admin, unique_topic, INPUTS, "kss-in")
    produce_strings(kafka_bootstrap, inputs["events"], events())
    produce_strings(kafka_bootstrap, inputs["tables"], tables())
    joined = joined_tables()
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
    theirs = _keys_and_values(scenario_runs["theirs"])
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
        key = in_partition(f"A{partition}", partition)
        right_held = theirs["out-join-right-held", partition]
        assert (key, "(a,1)|t10014") in right_held and (key, "(b,2)|t10016") in right_held
    # Stores kept 32 ms by their suppliers, in memory as in RocksDB (and behind a filter): a late record's window
    # gone from the store aggregates from nothing; one the store's time (2560, 2570) keeps, stream time (2563,
    # 2573) would not.
    for output in ("out-short-kept-memory", "out-short-kept-rocksdb", "out-short-kept-filtered"):
        short = {partition: in_partition(f"short{partition}", partition) for partition in range(PARTITIONS)}
        assert ((short[0], 2505, 2515), "+12|t2512") in theirs[output, 0]
        assert ((short[0], 2530, 2540), "+33+36|t2536") in theirs[output, 0]
        assert ((short[1], 2540, 2550), "+null+44|t2545") in theirs[output, 1]
        assert ((short[1], 2540, 2550), "+46|t2546") in theirs[output, 1]
    # Sliding windows from stores kept 45 ms in memory, 50 ms in RocksDB: the store's time (2550, the left window
    # of 2560) cuts at 2505 (in memory) or 2500 (RocksDB), not at stream time's 2515 or 2510: the record at 2512
    # still reads the right window at 2511; in memory it no longer finds the window at 2501 (stream time would not
    # have either), in RocksDB it does (on partition 1, at 2522: the window at 2511 is read, stream time cut it).
    slide = {partition: in_partition(f"short{partition}", partition) for partition in range(PARTITIONS)}
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
    # Compared: every record with its timestamp. Each value shows the timestamp its update was forwarded
    # with (StampValues): Kafka Streams' sinks write that one, near the epoch (none is 0 or less here).
    theirs, ours = scenario_runs["theirs"], scenario_runs["ours"]
    records = [record for sequence in theirs.values()
               for record in (sum(sequence.values(), []) if isinstance(sequence, dict) else sequence)]
    assert all(value.rsplit("|t", 1)[1] == str(timestamp) for _, value, timestamp in records)
    assert 0 < min(timestamp for *_, timestamp in records) < 100
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
