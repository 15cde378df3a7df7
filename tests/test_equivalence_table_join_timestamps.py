"""Stream-stream joins fed by table-table joins' ``to_stream`` in the same sub-topology, on Spark
against Kafka Streams itself (tests/oracle, TableJoinTimestampExamples.java; our twin
table_join_timestamp_examples).

Two uncached tables, accounts and limits, joined inner, left and outer; each joined table's updates
joined the same way with the clicks (inner: 1 s, 2 s grace; left: 1 s before, 2 s after, 1 s grace;
outer: 1 s, 2 s grace). Kafka Streams stamps a table-table join's update with the larger of the
update's timestamp and the other table's row's (the update's own when the other table has no row),
and the stream-stream join's windows pair the update by that stamp; the runner reads the other row's
timestamp from the tables' stores, which keep their timestamps for it (README, "Stream-stream joins
(inner, left, outer) run task-grouped"). Each output value ends with ``|t`` and its record's timestamp
(a ``process_values`` after the join).

The same tables are also joined into versioned stores (3 s of history; inner, left, outer), whose
puts go by that stamp: the versioned join forwards the plain join's updates less those older than the
store's observed time minus the history (dropped), some older than the key's latest version (kept as
history, forwarded, and not the joined table's current value); clicks join the left join's versioned
table as of their own time; and the clicks are cogrouped per user into a versioned store (each update
stamped with the larger of the click's and the aggregate's time, dropped when expired). Each versioned
store's latest value per key is read back and compared too (Kafka Streams': interactive queries v2).
A processor on the clicks (:class:`VersionsAt`) works on two of those stores as Kafka Streams'
``VersionedKeyValueStore``: the inner join's (a join's merge writes it) and the cogroup's (an
aggregation writes it, and adds the next click to what the processor put): it reads each key's latest
version and the versions as of the click, puts a version 200 ms ahead into the cogroup's store and
deletes the join's 100 ms behind for some clicks, and forwards what those return.

Input (2 partitions, each key on one): rounds a minute apart, each with account and limit updates and
clicks at random times of the round's first 6 s (so out of order), then one of each 15 s late; table
tombstones of rows there, clicks with null keys and null values. Compared: ``describe()``, and each
output partition's whole sequence of ``(key, value)`` (values carrying the timestamps), on a clean run
and on a run killed part-way and rerun from its checkpoints.
"""

from __future__ import annotations

import json
import random
import sys
import time
from datetime import timedelta

import pytest
from pyspark import cloudpickle

from equivalence_io import (
    KafkaStreamsReference, StampValues, java_string, output_topics, partition_sequences, produce_inputs,
    start_kafka_streams, with_unique_timestamps,
)
from killed_runs import kill_and_rerun
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import Materialized, Processor, Record, Stores, StreamsBuilder
from dagster_kstreams.topology.windows import JoinWindows

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])

PARTITIONS = 2
INPUTS = ("accounts", "limits", "clicks")
OUTPUTS = {"out-inner": PARTITIONS, "out-left": PARTITIONS, "out-outer": PARTITIONS, "out-plain-inner": PARTITIONS,
           "out-v-inner": PARTITIONS, "out-v-left": PARTITIONS, "out-v-read": PARTITIONS, "out-v-outer": PARTITIONS,
           "out-v-clicks": PARTITIONS, "out-v-versions": PARTITIONS}
# The versioned stores' history retention: a round's updates come within 6 s, in random order (some
# older than the key's joined row: history; some older than the store's time minus this: dropped),
# and the late ones 15 s behind (dropped unless the other table's row is newer).
HISTORY = timedelta(seconds=3)
ROUNDS = 6
ROUND_MS = 60_000
BASE = ((int(time.time()) - 3600) * 1000) // ROUND_MS * ROUND_MS  # recent: the broker keeps 7 days
INNER_BEFORE_AFTER_MS = 1_000
# Per round and partition: account updates, limit updates, clicks (each with one 15 s late). A task
# reads 20 records a round, so batches of 40 take two whole rounds of all three partitions (Spark
# splits a batch by each partition's share of the backlog: exactly here), cutting where Kafka
# Streams' order is kept (README, "Order across co-partitioned inputs").
PER_ROUND = {"accounts": 8, "limits": 7, "clicks": 5}
BATCH = 40


def table_join_timestamp_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The Python twin of TableJoinTimestampExamples.tableJoinTimestampExamples (Java); keep the two in step."""
    builder = StreamsBuilder()
    accounts = builder.table(topics["accounts"], Materialized.as_("accounts-store").with_caching_disabled())
    limits = builder.table(topics["limits"], Materialized.as_("limits-store").with_caching_disabled())
    clicks = builder.stream(topics["clicks"])
    accounts.join(limits, lambda account, limit: f"{account}&{limit}") \
        .to_stream() \
        .join(clicks, lambda row, click: f"{row}+{click}",
              JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=2))) \
        .process_values(StampValues) \
        .to(topics["out-inner"])
    accounts.left_join(limits, lambda account, limit: f"{account}&{java_string(limit)}") \
        .to_stream() \
        .left_join(clicks, lambda row, click: f"{row}+{java_string(click)}",
                   JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=1))
                   .after(timedelta(seconds=2))) \
        .process_values(StampValues) \
        .to(topics["out-left"])
    accounts.outer_join(limits, lambda account, limit: f"{java_string(account)}&{java_string(limit)}") \
        .to_stream() \
        .outer_join(clicks, lambda row, click: f"{java_string(row)}+{java_string(click)}",
                    JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=2))) \
        .process_values(StampValues) \
        .to(topics["out-outer"])
    _versioned_joins(builder, topics, accounts, limits, clicks)
    return builder


def _versioned_joins(builder: StreamsBuilder, topics: dict[str, str], accounts, limits, clicks) -> None:
    """The same tables joined into versioned stores (inner, left, outer), each join's changes stamped;
    the plain inner join's changes beside them (the versioned one's are those less its expired puts);
    clicks joined with the left join's versioned table as of their own time; clicks per user
    cogrouped into a versioned store."""
    accounts.join(limits, lambda account, limit: f"{account}&{limit}") \
        .to_stream().process_values(StampValues).to(topics["out-plain-inner"])
    accounts.join(limits, lambda account, limit: f"{account}&{limit}", _versioned("inner-versioned")) \
        .to_stream().process_values(StampValues).to(topics["out-v-inner"])
    left = accounts.left_join(limits, lambda account, limit: f"{account}&{java_string(limit)}",
                              _versioned("left-versioned"))
    left.to_stream().process_values(StampValues).to(topics["out-v-left"])
    clicks.join(left, lambda click, row: f"{click}@{row}").process_values(StampValues).to(topics["out-v-read"])
    accounts.outer_join(limits, lambda account, limit: f"{java_string(account)}&{java_string(limit)}",
                        _versioned("outer-versioned")) \
        .to_stream().process_values(StampValues).to(topics["out-v-outer"])
    clicks.group_by_key().cogroup(lambda user, click, seen: f"{seen}{click[1:]},") \
        .aggregate(lambda: "", _versioned("clicks-versioned")) \
        .to_stream().process_values(StampValues).to(topics["out-v-clicks"])
    clicks.process(VersionsAt, "inner-versioned", "clicks-versioned").to(topics["out-v-versions"])


def _versioned_record(record) -> str:
    """ProcessorApiExamples.VersionLog.versioned: "value@timestamp~validTo" ("-": no validTo; "null": none)."""
    if record is None:
        return "null"
    valid_to = record.valid_to()
    return f"{record.value()}@{record.timestamp()}~{'-' if valid_to is None else valid_to}"


class VersionsAt(Processor):
    """TableJoinTimestampExamples.VersionsAt: per click with a key, a click whose value ends in 1 puts
    a version 200 ms ahead into the cogroup's store and one ending in 2 deletes the inner join's 100 ms
    behind; then the latest version of both stores and each one's version as of the click."""

    def init(self, context) -> None:
        self.context = context
        self.joined = context.get_state_store("inner-versioned")
        self.clicked = context.get_state_store("clicks-versioned")

    def process(self, record: Record) -> None:
        key, t = record.key, record.timestamp
        if key is None:
            return
        value = java_string(record.value)
        written = ""
        if value.endswith("1"):
            written = f"put={self.clicked.put(key, 'w' + str(t), t + 200)}"
        elif value.endswith("2"):
            written = f"del={_versioned_record(self.joined.delete(key, t - 100))}"
        reads = [self.joined.get(key), self.joined.get(key, t), self.clicked.get(key), self.clicked.get(key, t)]
        self.context.forward(record.with_value(
            f"{value}|t{t}|{written}|" + "|".join(_versioned_record(read) for read in reads)))


def _versioned(store: str) -> Materialized:
    return Materialized.as_(Stores.persistent_versioned_key_value_store(store, HISTORY))


def _input(seed: int = 20) -> dict[str, list[tuple]]:
    """``{topic: [(key, value, partition, timestamp)]}`` in production order: per round and partition,
    each input's updates at random times of the round's first 6 s, then one 15 s late (:data:`PER_ROUND`);
    about one table update in six a tombstone of a row there; about one click in twelve with a null key,
    one in twelve with a null value. Timestamps never tie."""
    rng = random.Random(seed)
    keys = {p: [k for k in (f"k{i}" for i in range(6)) if default_partition(k.encode(), PARTITIONS) == p]
            for p in range(PARTITIONS)}
    with_row: set[tuple[str, str]] = set()
    records: dict[str, list[tuple]] = {name: [] for name in INPUTS}
    for r in range(2, 2 + ROUNDS):
        start = BASE + r * ROUND_MS
        for partition in range(PARTITIONS):
            for topic, count in PER_ROUND.items():
                times = [start + offset for offset in rng.sample(range(0, 6000), count - 1)]
                times.append(start - 15_000 + rng.randrange(0, 3000))
                for i, timestamp in enumerate(times):
                    key, value = rng.choice(keys[partition]), f"{topic[0]}{r}.{partition}{i}"
                    if topic == "clicks":
                        key = None if rng.random() < 0.08 else key
                        value = None if rng.random() < 0.08 else value
                    elif (topic, key) in with_row and rng.random() < 0.17:
                        value = None
                    (with_row.add if value is not None else with_row.discard)((topic, key))
                    records[topic].append((key, value, partition, timestamp))
    return with_unique_timestamps([records], INPUTS)[0]


def _comparable(sequences: dict[tuple[str, int], list]) -> tuple[dict, dict]:
    """``({(output, partition): its keyed records in order}, {output: its null-keyed values, sorted})``:
    a click with a null key that the outer join passes on at once (KIP-962) goes out with a null key,
    which the producer puts on a partition of its choosing, in Kafka Streams as here."""
    keyed = {where: [record for record in records if record[0] is not None] for where, records in sequences.items()}
    unkeyed = {name: sorted((value, timestamp) for (output, _), records in sequences.items() if output == name
                            for key, value, timestamp in records if key is None) for name in OUTPUTS}
    return keyed, unkeyed


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"ttjts-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = _input()
    produce_inputs(kafka_bootstrap, inputs, records, INPUTS)
    # In the background: our clean run, the first test, goes on meanwhile.
    topics, main = start_kafka_streams("kstreams.oracle.TableJoinTimestampExamples", "ttjts", kafka_bootstrap,
                                       kafka_admin, unique_topic, tmp_path_factory, inputs, OUTPUTS)

    def finish(stdout: str) -> dict:
        printed = json.loads(stdout[stdout.rindex('{"describe"'):])  # the stores' objects span lines
        return {"describe": printed["describe"], "stores": printed["stores"],
                "results": partition_sequences(kafka_bootstrap, topics, OUTPUTS)}

    reference = KafkaStreamsReference(main, {"inputs": inputs, "topics": topics, "records": records}, finish)
    yield reference
    reference.close()


def test_clean_run_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                         kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS, "spark-ttjts")
    runner = TaskRunner(table_join_timestamp_examples(topics), unique_topic("spark-ttjts"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    assert {r.task_id for r in runner.run_all()} == {"0_0", "0_1"}
    assert _comparable(partition_sequences(kafka_bootstrap, topics, OUTPUTS)) == \
        _comparable(kafka_streams_run["results"])
    _assert_versioned_stores_match(runner, kafka_streams_run)


def test_reference_pairs_by_the_joins_timestamps(kafka_streams_run):
    """Kafka Streams' output shows what the test is about, on both partitions: joined rows paired with
    a click that the earlier row's time alone would not pair (the later row's time, the table-table
    join's stamp, does), left and outer rows with a missing side, and clicks joined with null."""
    times = {value: timestamp for name in INPUTS for _, value, _, timestamp in kafka_streams_run["records"][name]
             if value is not None}
    results = kafka_streams_run["results"]
    assert sorted(results) == sorted((name, p) for name in OUTPUTS for p in range(PARTITIONS))
    for partition in range(PARTITIONS):
        pairs = [value.split("|t")[0].split("+") for _, value, _ in results[("out-inner", partition)]]
        one_row_off = [(rows, click) for rows, click in pairs
                       if abs(min(times[row] for row in rows.split("&")) - times[click]) > INNER_BEFORE_AFTER_MS]
        assert one_row_off, partition
        left = [value.split("|t")[0] for _, value, _ in results[("out-left", partition)]]
        assert any(value.split("+")[0].endswith("&null") for value in left)
        assert any(value.endswith("+null") for value in left)
        outer = [value.split("|t")[0] for _, value, _ in results[("out-outer", partition)]]
        assert any(value.startswith("null&") for value in outer)
        assert any(value.startswith("null+") for value in outer)


def _stamped(value: str) -> tuple[str, int]:
    row, stamp = value.rsplit("|t", 1)
    return row, int(stamp)


def _is_subsequence(part: list, whole: list) -> bool:
    rest = iter(whole)
    return all(any(item == candidate for candidate in rest) for item in part)


def test_reference_versioned_joins_drop_expired_puts_and_forward_out_of_order_ones(kafka_streams_run):
    """Kafka Streams' versioned joins forward the plain join's updates less some (puts older than the
    store's time minus the history), some of them older than the key's previous one (history only);
    clicks read the joined table as of their time, and the cogroup drops some clicks."""
    results = kafka_streams_run["results"]
    for partition in range(PARTITIONS):
        plain, versioned = results[("out-plain-inner", partition)], results[("out-v-inner", partition)]
        assert _is_subsequence(versioned, plain) and len(versioned) < len(plain), partition
        latest: dict[str, int] = {}
        out_of_order = 0
        for key, value, _ in versioned:
            stamp = _stamped(value)[1]
            out_of_order += stamp < latest.get(key, stamp)
            latest[key] = max(latest.get(key, stamp), stamp)
        assert out_of_order, partition
        assert results[("out-v-read", partition)] and results[("out-v-outer", partition)], partition
        assert any(_stamped(value)[0] == "null" for _, value, _ in results[("out-v-inner", partition)]), partition
    clicks = [row for row in kafka_streams_run["records"]["clicks"] if row[0] is not None and row[1] is not None]
    assert 0 < sum(len(results[("out-v-clicks", p)]) for p in range(PARTITIONS)) < len(clicks)
    # the latest versions read back: a key's latest change (largest stamp) for each store that has one
    # (but for the keys VersionsAt deleted versions of)
    deleted = {key for p in range(PARTITIONS) for key, value, _ in results[("out-v-versions", p)] if "|del=" in value}
    inner = {key: value for p in range(PARTITIONS) for key, value, _ in sorted(
        results[("out-v-inner", p)], key=lambda row: _stamped(row[1])[1])}
    assert {key: value for key, value in kafka_streams_run["stores"]["inner-versioned"].items()
            if key not in deleted} == {key: value for key, value in inner.items()
                                       if _stamped(value)[0] != "null" and key not in deleted}


def test_reference_versions_at_works_on_a_join_s_and_an_aggregation_s_versioned_stores(kafka_streams_run):
    """Kafka Streams' VersionsAt puts versions (some taken), deletes some of the join's, and the cogroup
    adds later clicks to what it put; its reads as of the click differ from the latest ones."""
    results = kafka_streams_run["results"]
    versions = [value for p in range(PARTITIONS) for _, value, _ in results[("out-v-versions", p)]]
    assert any("|put=" in value and "|put=-9223372036854775808|" not in value for value in versions)
    assert any("|del=" in value and "|del=null|" not in value for value in versions)
    assert any(value.split("|")[3] != value.split("|")[4] for value in versions)  # the join's, as of the click
    assert any(value.split("|")[5] != value.split("|")[6] for value in versions)  # the cogroup's
    assert any(value.startswith("w") for p in range(PARTITIONS) for _, value, _ in results[("out-v-clicks", p)])


def _assert_versioned_stores_match(runner, kafka_streams_run) -> None:
    """Each versioned store's latest value per key, read back, is Kafka Streams' (whose timestamps the
    changes compared carry: the latest version is the one with the largest)."""
    for store, content in kafka_streams_run["stores"].items():
        expected = {key: _stamped(value)[0] for key, value in content.items()}
        assert runner.read_store(store) == expected, store


def test_describe_matches_kafka_streams(kafka_streams_run):
    ours = table_join_timestamp_examples(kafka_streams_run["topics"]).build().describe()
    assert str(ours) == kafka_streams_run["describe"]


def test_killed_part_way_and_rerun_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                                         kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS, "spark-ttjts")
    # Killed once task 0_0 has committed its first batch (two whole rounds of its three input
    # partitions: the tables' rows and their timestamps, the join buffers and the left and outer
    # joins' pending records in its task state), at-least-once as in test_equivalence_stream_joins.py
    # (under exactly-once the commit markers would count as offsets and move the cuts).
    rerun = kill_and_rerun(tmp_path, table_join_timestamp_examples, topics, app_id=unique_topic("spark-ttjts-kill"),
                           bootstrap=kafka_bootstrap, spark=spark,
                           kill_when=lambda line: line.startswith("task 0_0 batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", str(BATCH),
                                        "--processing-guarantee", "at_least_once"),
                           max_records_per_batch=BATCH, processing_guarantee="at_least_once")
    task_records = sum(row[2] == 0 for name in INPUTS for row in kafka_streams_run["records"][name])
    assert 0 < rerun.by_task["0_0"].records_in < task_records, rerun.by_task
    assert _comparable(partition_sequences(kafka_bootstrap, topics, OUTPUTS)) == \
        _comparable(kafka_streams_run["results"])
    _assert_versioned_stores_match(rerun.runner, kafka_streams_run)
