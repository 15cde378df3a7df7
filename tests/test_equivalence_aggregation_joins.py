"""Stream-stream joins fed by aggregations' ``to_stream`` in the same sub-topology, on Spark against Kafka Streams
itself (tests/oracle, AggregationJoinExamples.java; our twin aggregation_join_examples).

Four joins. An uncached count of the events (after ``group_by_key``: no repartition, one sub-topology with the
clicks) inner-joined with the clicks (1 s before and after, 2 s grace); an uncached reduce of the same events to
their last value left-joined with them (1 s before, 2 s after, 1 s grace); an uncached cogroup of the events and the
clicks to the last value of either inner-joined with the clicks (1 s, 2 s grace); and a table of profiles re-grouped
by the group its value names into an uncached aggregate (the last payload added) inner-joined with the visits (1 s,
2 s grace), in the sub-topology after the repartition topic. Kafka Streams stamps an aggregation's update (a
cogroup's: one store, whichever input updates it; a re-grouped table's: after a subtraction, an addition or both)
with the larger of the record's timestamp and the aggregate's previous one, and the join's windows pair the update
by that stamp; the runner keeps the aggregations' timestamps for it (README, "Stream-stream joins (inner, left,
outer) run task-grouped"). Each output value ends with ``|t`` and its record's timestamp (a ``process_values`` after
the join). And, in an app of their own, seventeen joins fed by stores with the record cache on (a table, a count, a
to_table, a cogroup, a materialized table-table join, a filter's and a map_values' own stores after a versioned
table, time, session and sliding windowed counts and cogroups, a re-grouped table's count, a foreign-key join's
result, a filter's own store on an uncached table and a map_values' on a cached one), a cached filter's own store
read by a processor named with it and a transform_values' cached store of its own (cached_join_feed_topology,
CachedJoinFeedExamples.java), run by Kafka Streams committing once, when closed after its whole input
(CommitOnceRuns.java); each of their tasks' input is one micro-batch of ours, also killed.

Input (2 partitions, each key on one): rounds a minute apart, each with events, clicks, profile updates and visits
out of order within 6 s of the round's start, events late by 15 s and by a round (their updates stamped with the
key's later time), late clicks, profile updates and visits, profile tombstones, null keys and null values in the
streams. Compared: ``describe()``, and each output partition's whole sequence of ``(key, value, timestamp)`` (values
carrying the timestamps too), on a clean run and on a run killed part-way and rerun from its checkpoints.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections import Counter, defaultdict
from datetime import timedelta

import pytest
from pyspark import cloudpickle

import cached_join_feed_topology as cached_feeds
from cached_join_feed_topology import cached_join_feed_examples, cached_join_feed_input
from equivalence_io import (KafkaStreamsReference, StampValues, java_string, output_topics, produce_strings,
                            run_kafka_streams, start_kafka_streams, written_time)
from killed_runs import kill_after_first_batch_at_least_once
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import Materialized, StreamsBuilder
from dagster_kstreams.topology.windows import JoinWindows

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(cached_feeds)

PARTITIONS = 2
INPUTS = ("events", "clicks", "profiles", "visits")
OUTPUTS = {"out-inner": PARTITIONS, "out-left": PARTITIONS, "out-cogroup": PARTITIONS, "out-regroup": PARTITIONS}
CACHED_OUTPUTS = {name: PARTITIONS for name in cached_feeds.OUTPUTS}
ROUNDS = 8
ROUND_MS = 60_000
BASE = ((int(time.time()) - 3600) * 1000) // ROUND_MS * ROUND_MS  # recent: the broker keeps 7 days
INNER_BEFORE_AFTER_MS = 1_000


def aggregation_join_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The Python twin of AggregationJoinExamples.aggregationJoinExamples (Java); keep the two in step."""
    builder = StreamsBuilder()
    grouped = builder.stream(topics["events"]).group_by_key()
    clicks = builder.stream(topics["clicks"])
    grouped.count(Materialized.as_("event-counts").with_caching_disabled()) \
        .to_stream() \
        .map_values(lambda count: f"n{count}") \
        .join(clicks, lambda n, click: f"{n}+{click}",
              JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=2))) \
        .process_values(StampValues) \
        .to(topics["out-inner"])
    grouped.reduce(lambda last, value: value, Materialized.as_("event-last").with_caching_disabled()) \
        .to_stream() \
        .left_join(clicks, lambda last, click: f"{last}+{java_string(click)}",
                   JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=1))
                   .after(timedelta(seconds=2))) \
        .process_values(StampValues) \
        .to(topics["out-left"])
    grouped.cogroup(lambda key, value, last: value) \
        .cogroup(clicks.group_by_key(), lambda key, click, last: click) \
        .aggregate(lambda: "", Materialized.as_("latest").with_caching_disabled()) \
        .to_stream() \
        .join(clicks, lambda last, click: f"{last}*{click}",
              JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=2))) \
        .process_values(StampValues) \
        .to(topics["out-cogroup"])
    builder.table(topics["profiles"], Materialized.as_("profiles-store").with_caching_disabled()) \
        .group_by(lambda user, profile: (profile.split(":")[0], profile.split(":")[1])) \
        .aggregate(lambda: "", lambda group, payload, last: payload, lambda group, payload, last: last,
                   Materialized.as_("group-latest").with_caching_disabled()) \
        .to_stream() \
        .join(builder.stream(topics["visits"]), lambda last, visit: f"{last}+{visit}",
              JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=2))) \
        .process_values(StampValues) \
        .to(topics["out-regroup"])
    return builder


def _input(seed: int = 14) -> dict[str, list[tuple]]:
    """``{topic: [(key, value, partition, timestamp)]}`` in production order. Per round and partition:
    8 events at random times of the round's first 6 s (so out of order), then one 15 s and one a
    round late; 4 clicks, then one 15 s late; 4 profile updates (some tombstones of a profile
    that has a row), then one 15 s late; 4 visits, then one 15 s late. A killed run's batches of 60
    offsets then take whole rounds of a task's input partitions (each profile update gives one
    repartition record), cutting where Kafka Streams' order is kept (README, "Order across
    co-partitioned inputs"). Timestamps never tie."""
    rng = random.Random(seed)
    keys = {p: [k for k in (f"k{i}" for i in range(6)) if default_partition(k.encode(), PARTITIONS) == p]
            for p in range(PARTITIONS)}
    users = {p: [u for u in (f"u{i}" for i in range(10)) if default_partition(u.encode(), PARTITIONS) == p]
             for p in range(PARTITIONS)}
    # A user's group is on its partition: each repartition partition is written by one upstream task,
    # in its order (across upstream tasks, records interleave as the tasks run).
    group_of = {user: rng.choice(keys[p]) for p in range(PARTITIONS) for user in users[p]}
    with_row: set[str] = set()
    records: dict[str, list[tuple]] = {name: [] for name in INPUTS}
    for r in range(2, 2 + ROUNDS):
        start = BASE + r * ROUND_MS
        in_time = iter(start + offset for offset in rng.sample(range(0, 6000, 2), 20 * PARTITIONS))
        late = iter(rng.sample(range(1, 3000, 2), 5 * PARTITIONS))
        for partition in range(PARTITIONS):
            events = _in_time(rng, keys[partition], f"e{r}.{partition}", 8, in_time)
            for lateness, behind in (("grace", 15_000), ("round", ROUND_MS)):
                key = rng.choice([row[0] for row in events if row[0] is not None] or keys[partition])
                events.append((key, f"e{r}.{partition}-late-{lateness}", start - behind + next(late)))
            clicks = _in_time(rng, keys[partition], f"c{r}.{partition}", 4, in_time)
            clicks.append((rng.choice(keys[partition]), f"c{r}.{partition}-late", start - 15_000 + next(late)))
            profiles = []
            for i, timestamp in enumerate([next(in_time) for _ in range(4)] + [start - 15_000 + next(late)]):
                user = rng.choice(users[partition])
                deleted = user in with_row and rng.random() < 0.15  # a tombstone: a subtraction only
                profiles.append((user, None if deleted else f"{group_of[user]}:p{r}.{partition}{i}", timestamp))
                (with_row.discard if deleted else with_row.add)(user)
            visits = _in_time(rng, keys[partition], f"v{r}.{partition}", 4, in_time)
            visits.append((rng.choice(keys[partition]), f"v{r}.{partition}-late", start - 15_000 + next(late)))
            for topic, rows in (("events", events), ("clicks", clicks), ("profiles", profiles), ("visits", visits)):
                records[topic] += [(key, value, partition, timestamp) for key, value, timestamp in rows]
    return records


def _in_time(rng: random.Random, keys: list[str], prefix: str, count: int, times) -> list[tuple]:
    """``count`` records ``(key, value, timestamp)`` of ``keys`` (or a null key), valued ``<prefix><i>``
    (or null), at the next ``times``."""
    return [(None if rng.random() < 0.06 else rng.choice(keys), None if rng.random() < 0.08 else f"{prefix}{i}",
             next(times)) for i in range(count)]


def _results(bootstrap: str, topics: dict[str, str], outputs=OUTPUTS) -> dict[str, dict[int, list[tuple]]]:
    """Each output, partition by partition, as its sequence of ``(key, value, timestamp written with)``
    (each partition is written by one task, in its processing order)."""
    results: dict = {}
    for name in outputs:
        sequences: dict[int, list] = defaultdict(list)
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            sequences[record.partition].append((record.key.decode(), record.value.decode(), written_time(record)))
        results[name] = dict(sequences)
    return results


def _assert_same(ours: dict, expected: dict, outputs=OUTPUTS) -> None:
    for name in outputs:
        assert ours[name] == expected[name], name


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"aggjoin-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = _input()
    for name in INPUTS:
        produce_strings(kafka_bootstrap, inputs[name], records[name])
    # In the background: our clean run, the first test, goes on meanwhile.
    topics, main = start_kafka_streams("kstreams.oracle.AggregationJoinExamples", "aggjoin", kafka_bootstrap,
                                       kafka_admin, unique_topic, tmp_path_factory, inputs, OUTPUTS)
    reference = KafkaStreamsReference(main, {"inputs": inputs, "topics": topics, "records": records}, lambda stdout: {
        "describe": json.loads(stdout.strip().splitlines()[-1])["describe"], "results": _results(kafka_bootstrap, topics)})
    yield reference
    reference.close()


def _event_times(records: dict[str, list[tuple]]) -> tuple[dict, dict]:
    """``({(key, n): timestamp of the key's n-th counted event}, {value: timestamp})`` of the events,
    with the clicks', the visits' and the profiles' payloads merged into the second."""
    nth, times, counts = {}, {}, defaultdict(int)
    for key, value, _, timestamp in records["events"]:
        if key is not None and value is not None:
            counts[key] += 1
            nth[(key, counts[key])] = timestamp
            times[value] = timestamp
    for _, value, _, timestamp in records["clicks"] + records["visits"]:
        if value is not None:
            times[value] = timestamp
    for _, value, _, timestamp in records["profiles"]:
        if value is not None:
            times[value.split(":")[1]] = timestamp
    return nth, times


def test_clean_run_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                         kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS, "spark-aggjoin")
    runner = TaskRunner(aggregation_join_examples(topics), unique_topic("spark-aggjoin"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    assert {r.task_id for r in runner.run_all()} == {"0_0", "0_1", "1_0", "1_1", "2_0", "2_1"}
    _assert_same(_results(kafka_bootstrap, topics), kafka_streams_run["results"])


def test_reference_pairs_by_the_aggregations_timestamps(kafka_streams_run):
    """Kafka Streams' output shows what the test is about, on both partitions: pairs that only the
    aggregation's stamp (later than its record's own time) puts within the join window (count,
    cogroup, re-grouped table), and left records joined with null."""
    nth, times = _event_times(kafka_streams_run["records"])
    results = kafka_streams_run["results"]
    assert all(sorted(results[name]) == [0, 1] for name in OUTPUTS)
    for partition in range(PARTITIONS):
        stamped_pairs = []
        for key, value, _ in results["out-inner"][partition]:
            pair, _ = value.split("|t")
            count, click = pair.split("+")
            own, click_time = nth[(key, int(count[1:]))], times[click]
            if abs(own - click_time) > INNER_BEFORE_AFTER_MS:
                stamped_pairs.append(value)
        assert stamped_pairs, partition
        stamped_cogroup_pairs = [value for _, value, _ in results["out-cogroup"][partition]
                                 if abs(times[value.split("|t")[0].split("*")[0]] - times[value.split("|t")[0].split("*")[1]])
                                 > INNER_BEFORE_AFTER_MS]
        assert stamped_cogroup_pairs, partition
        stamped_regroup_pairs = [value for _, value, _ in results["out-regroup"][partition]
                                 if abs(times[value.split("|t")[0].split("+")[0]] - times[value.split("|t")[0].split("+")[1]])
                                 > INNER_BEFORE_AFTER_MS]
        assert stamped_regroup_pairs, partition
        left = [value for _, value, _ in results["out-left"][partition]]
        assert any(value.split("|t")[0].endswith("+null") for value in left)
        assert any(not value.split("|t")[0].endswith("+null") for value in left)
        assert any("late" in value.split("+")[0] for value in left)  # late events' updates, stamped later


def test_describe_matches_kafka_streams(kafka_streams_run):
    ours = aggregation_join_examples(kafka_streams_run["topics"]).build().describe()
    assert str(ours) == kafka_streams_run["describe"]


def test_killed_part_way_and_rerun_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                                         kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS, "spark-aggjoin")
    # Killed once task 0_0 has committed its first batch (four whole rounds of its two input partitions: the
    # aggregates, their timestamps, the join buffers and the left join's pending records in its task state),
    # at-least-once as in test_equivalence_stream_joins.py (under exactly-once, commit markers would move the cuts).
    rerun = kill_after_first_batch_at_least_once(tmp_path, aggregation_join_examples, topics,
                                                 app_id=unique_topic("spark-aggjoin-kill"),
                                                 bootstrap=kafka_bootstrap, spark=spark)
    task_records = sum(row[2] == 0 for name in INPUTS for row in kafka_streams_run["records"][name])
    assert 0 < rerun.by_task["0_0"].records_in < task_records, rerun.by_task
    _assert_same(_results(kafka_bootstrap, topics), kafka_streams_run["results"])


@pytest.fixture(scope="module")
def cached_kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"cachedjoin-{name}") for name in cached_feeds.INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = cached_join_feed_input(BASE, PARTITIONS)
    for name in cached_feeds.INPUTS:
        produce_strings(kafka_bootstrap, inputs[name], records[name])
    topics, stdout = run_kafka_streams("kstreams.oracle.CachedJoinFeedExamples", "cachedjoin", kafka_bootstrap,
                                       kafka_admin, unique_topic, tmp_path_factory, inputs, CACHED_OUTPUTS)
    return {"inputs": inputs, "topics": topics, "records": records,
            "describe": json.loads(stdout.strip().splitlines()[-1])["describe"],
            "results": _results(kafka_bootstrap, topics, CACHED_OUTPUTS)}


def test_reference_forwards_each_cached_key_once_at_its_commit(cached_kafka_streams_run):
    """Kafka Streams committed once after the input: each cached store forwarded each key's last
    update once (a count its key's total, a table its last row; a key whose last row is a tombstone
    nothing: created and deleted within the commit; a cogroup a value of its key; a table-table join
    its last row with a tap; a re-grouped count its group's members at the end; a foreign-key join
    the order's last row with its user's last, an answer that came twice once; a filter's own store on the
    uncached marks' table each key's last mark if it passes, of keys with several that pass too; a map_values'
    on the cached rows' table each key's last row, upper-cased; a transform_values' own store each key's last
    transformed mark, none where it was deleted), and the joins paired some of them and joined others with null,
    on both partitions. The cached filter's store forwarded each key's last mark it keeps, once, which its
    reader read back; the taps read puts not flushed yet from its cache."""
    records, results = cached_kafka_streams_run["records"], cached_kafka_streams_run["results"]
    counts, mark_partitions, passing = defaultdict(int), {}, defaultdict(int)
    for key, value, partition, _ in records["marks"]:
        if key is not None:
            counts[key] += value is not None
            mark_partitions[key] = partition
            passing[key] += value is not None and not value.endswith("5")
    last_rows, last_marks = cached_feeds.last_values(records, "rows"), cached_feeds.last_values(records, "marks")
    assert any(value is None for value in last_rows.values())
    marks_and_taps, last_members = defaultdict(set), cached_feeds.last_values(records, "members")
    for key, value, _, _ in records["marks"] + records["taps"]:
        marks_and_taps[key].add(value)
    last_orders = {key: value for key, value, _, _ in records["orders"]}
    users = {key: value for key, value, _, _ in records["users"]}
    # a re-grouped count subtracts a member's old group and adds its new one: each group's total at the end
    group_counts = Counter(value.split(":")[0] for value in last_members.values() if value is not None)
    for partition in range(PARTITIONS):
        count_pairs = results["out-cached-count"][partition]
        assert count_pairs and all(value.split("+")[0] == f"n{counts[key]}" for key, value, _ in count_pairs)
        table_pairs = [(key, value.split("|t")[0]) for key, value, _ in results["out-cached-table"][partition]]
        assert all(value.split("+")[0] == last_rows[key] for key, value in table_pairs)
        assert any(value.endswith("+null") for _, value in table_pairs)
        assert any(not value.endswith("+null") for _, value in table_pairs)
        outer = [(key, value.split("|t")[0]) for key, value, _ in results["out-cached-to-table"][partition]]
        assert all(value.startswith("null+") or value.split("+")[0] == last_marks[key] for key, value in outer)
        assert any(value.startswith("null+") for _, value in outer)
        assert any(value.endswith("+null") for _, value in outer)
        cogroup_pairs = [(key, value.split("|t")[0].split("*")[0]) for key, value, _ in results["out-cached-cogroup"][partition]]
        assert cogroup_pairs and all(last in marks_and_taps[key] for key, last in cogroup_pairs)
        joined_pairs = [(key, value.split("+")[0]) for key, value, _ in results["out-cached-table-join"][partition]]
        assert joined_pairs and all(joined.split("&")[0] == last_rows[key] for key, joined in joined_pairs)
        regroup_pairs = results["out-cached-regroup"][partition]
        assert regroup_pairs and all(value.split("+")[0] == f"g{group_counts[key]}" for key, value, _ in regroup_pairs)
        paid_pairs = [(key, value.split("+")[0]) for key, value, _ in results["out-cached-paid"][partition]]
        assert paid_pairs and all(paid == f"{last_orders[key]}@{users[last_orders[key].split(':')[0]]}"
                                  for key, paid in paid_pairs)
        assert any(paid.endswith(".again") for _, paid in paid_pairs)  # the answer that came twice, once
        steps = [(key, value.split("|t")[0].split("+")) for key, value, _ in results["out-cached-step"][partition]]
        assert steps and all(mark == last_marks[key] and not mark.endswith("5") for key, (mark, _) in steps)
        assert any(tap == "null" for _, (_, tap) in steps) and any(tap != "null" for _, (_, tap) in steps)
        assert any(passing[key] > 1 for key, _ in steps)  # its cache collapsed several updates that pass
        for name in ("out-cached-cogroup-windows", "out-cached-cogroup-sessions", "out-cached-cogroup-sliding"):
            assert all(any(tag in value for _, value, _ in results[name][partition]) for tag in (",m", ",t")), name
        transformed = [(key, value) for key, value, _ in results["out-cached-transformed"][partition]]
        assert transformed == cached_feeds.transformed_once_per_key(records, partition)
        assert any(counts[key] > 1 for key, _ in transformed)  # a key's several marks: its last, once
        series = results["out-cached-step-series"][partition]
        assert series and all(value.split("+")[0] == last_rows[key].upper() for key, value, _ in series)
        # the filter's changes are marks ("m..."), never a tombstone: a key flushed once was never stored before
        reads = results["out-cached-filtered"][partition]
        kept = sorted((key, value.split("|t")[0]) for key, value, _ in reads if value.startswith("m"))
        assert kept == sorted((key, mark) for key, mark in last_marks.items() if mark_partitions[key] == partition
                              and mark is not None and not mark.endswith("3"))
        assert all(value.split("|")[-1].startswith(f"{value.split('|t')[0]}@") for _, value, _ in reads
                   if value.startswith("m"))
    # the taps read marks put before the commit (from the cache), and nothing where none was put yet
    tap_reads = [value.split("|")[-1] for partition in range(PARTITIONS)
                 for _, value, _ in results["out-cached-filtered"][partition] if not value.startswith("m")]
    assert any(read == "null" for read in tap_reads) and any(read.startswith("m") for read in tap_reads)


def test_reference_forwards_each_kept_stores_last_put(cached_kafka_streams_run):
    """Kafka Streams committed once after the input: the filter's and the map_values' own stores after
    the versioned table forwarded each key's last put mark (an out-of-order one too, which the versioned
    table keeps as an older version; one beyond its history never), filtered or upper-cased, and the
    joins paired or left-joined them, on both partitions."""
    records, results = cached_kafka_streams_run["records"], cached_kafka_streams_run["results"]
    out_of_order_forwarded = expired_last = False
    for partition in range(PARTITIONS):
        last_put, out_of_order = cached_feeds.last_put_marks(records, partition)
        last_mark = {key: value for key, value, in_partition, _ in records["marks"]
                     if in_partition == partition and key is not None}
        kept = [(key, value.split("|t")[0].split("+")) for key, value, _ in results["out-cached-kept"][partition]]
        assert kept and all(mark == last_put[key] and not mark.endswith("3") for key, (mark, _) in kept)
        assert any(tap == "null" for _, (_, tap) in kept) and any(tap != "null" for _, (_, tap) in kept)
        shouted = results["out-cached-shouted"][partition]
        assert shouted and all(value.split("+")[0] == last_put[key].upper() for key, value, _ in shouted)
        forwarded = {key for key, _ in kept} | {key for key, _, _ in shouted}
        out_of_order_forwarded |= bool(forwarded & out_of_order)
        expired_last |= any(last_mark[key] != last_put[key] for key in forwarded)
    assert out_of_order_forwarded and expired_last


def test_cached_feeds_describe_matches_kafka_streams(cached_kafka_streams_run):
    ours = cached_join_feed_examples(cached_kafka_streams_run["topics"]).build().describe()
    assert str(ours) == cached_kafka_streams_run["describe"]


def test_cached_feeds_clean_run_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                                      cached_kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, cached_kafka_streams_run["inputs"], CACHED_OUTPUTS,
                           "spark-cachedjoin")
    runner = TaskRunner(cached_join_feed_examples(topics), unique_topic("spark-cachedjoin"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    assert {r.task_id for r in runner.run_all()} == {f"{sub}_{p}" for sub in range(5) for p in range(PARTITIONS)}
    _assert_same(_results(kafka_bootstrap, topics, CACHED_OUTPUTS), cached_kafka_streams_run["results"],
                 CACHED_OUTPUTS)


def test_cached_feeds_killed_part_way_and_rerun_match_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark,
                                                                    tmp_path, cached_kafka_streams_run):
    # Each task's input one micro-batch, as in Kafka Streams' one commit: killed once task 0_0 has
    # committed its batch, task 0_1's batch (done, under way or not begun) left to the rerun here.
    topics = output_topics(kafka_admin, unique_topic, cached_kafka_streams_run["inputs"], CACHED_OUTPUTS,
                           "spark-cachedjoin")
    rerun = kill_after_first_batch_at_least_once(tmp_path, cached_join_feed_examples, topics,
                                                 app_id=unique_topic("spark-cachedjoin-kill"),
                                                 bootstrap=kafka_bootstrap, spark=spark)
    assert rerun.by_task["0_0"].records_in == 0, rerun.by_task  # its one batch committed before the kill
    _assert_same(_results(kafka_bootstrap, topics, CACHED_OUTPUTS), cached_kafka_streams_run["results"],
                 CACHED_OUTPUTS)
