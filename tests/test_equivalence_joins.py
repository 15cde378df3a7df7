"""Joins on Spark against Kafka Streams itself: same input, same results.

One topology holds a stream-table join (inner and left) and three table-table joins (inner,
left, outer, each materialized). Kafka Streams 4.3.1 runs it once (tests/oracle,
JoinExamples.java); our tasks run the Python twin. The input has explicit record timestamps,
partly out of order within a partition, tombstones on the tables, null values and null keys on
the stream, and table updates interleaved with the stream records that read them.

Compared: every stream-table join output per key, in order (a stream record joins the table as
of its place in Kafka Streams' timestamp-merged processing order), the final value per key of
every table-table join output (uncached: every update per key, in order), and every store; each
output record with its timestamp (the stream record's; a table-table join's: the larger of both
rows'), except a cached join's last record per key, whose value is compared alone: its
timestamp is that of the last update the joined tables' caches forwarded, and which ones they
forward depends on when Kafka Streams committed (a right row created and deleted between two
commits forwards nothing, so the key's last record is the left row's earlier one).

The cached customers table also goes on, by ``to_stream``, to a repartition topic, in the
sub-topology where the orders read the same keys. Its records keep their timestamps there (and
the orders and customers have a header naming each record), so what the record cache forwards is
compared whole: a key's last update on that topic has the value, timestamp and headers of the
customer record that last updated the store, not of a later order of the same key (Kafka Streams'
cache entry keeps its own record context). Keys whose table ends deleted are left out: whether
Kafka Streams writes their last tombstone depends on when it committed (a key created and deleted
between two commits forwards nothing).

The same table updates go through the three table-table joins twice: with Kafka Streams' record
cache (which collapses a key's updates per commit) and without it (``with_caching_disabled()`` on
both joined tables and on the join results), where every single update reaches the output: a
delete or update on one side when the other side has no row, a tombstone for a key never held.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from collections import defaultdict

from pyspark import cloudpickle
import pytest

from equivalence_io import (KafkaStreamsReference, java_string, output_topics, produce_strings, start_kafka_streams,
                            written_time)
from killed_runs import kill_and_rerun
from dagster_kstreams.kafka.records import produce, read_topic
from dagster_kstreams.kafka.timestamp_header import INTERNAL_HEADER_PREFIX, TIMESTAMP_HEADER, decode_timestamp
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology.grouped_repartitioned import Repartitioned
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology import StreamsBuilder

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import this test module: ship its functions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

PARTITIONS = 2
# Recent timestamps: records older than the broker's retention (7 days) may be deleted under the test.
T0 = (int(time.time()) - 3600) * 1000
TABLE_JOINS = ("tt-inner", "tt-left", "tt-outer", "ut-inner", "ut-left", "ut-outer")  # ut: uncached
STORES = ("customers-store", *TABLE_JOINS)
INPUTS = ("orders", "customers", "left", "right", "uleft", "uright")
OUTPUTS = ("out-inner", "out-left", *TABLE_JOINS, "out-customers")
# The cached customers table's updates, read back from the repartition topic of this name.
CUSTOMER_UPDATES = "customer-updates"


def join_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The Python twin of JoinExamples.joinExamples (Java); keep the two in step."""
    builder = StreamsBuilder()
    # Sub-topology 0: the uncached table-table joins (the killed run stops inside it).
    uleft = builder.table(topics["uleft"], Materialized.as_("uleft-store").with_caching_disabled())
    uright = builder.table(topics["uright"], Materialized.as_("uright-store").with_caching_disabled())
    for join, name in ((uleft.join, "ut-inner"), (uleft.left_join, "ut-left"), (uleft.outer_join, "ut-outer")):
        join(uright, lambda a, b: f"{java_string(a)}+{java_string(b)}",
             Materialized.as_(name).with_caching_disabled()).to_stream().to(topics[name])
    orders = builder.stream(topics["orders"])
    customers = builder.table(topics["customers"], Materialized.as_("customers-store"))
    orders.join(customers, lambda order, customer: f"{order}|{java_string(customer)}").to(topics["out-inner"])
    orders.left_join(customers, lambda order, customer: f"{order}|{java_string(customer)}").to(topics["out-left"])
    left, right = builder.table(topics["left"]), builder.table(topics["right"])
    for join, name in ((left.join, "tt-inner"), (left.left_join, "tt-left"), (left.outer_join, "tt-outer")):
        join(right, lambda a, b: f"{java_string(a)}+{java_string(b)}", Materialized.as_(name)) \
            .to_stream().to(topics[name])
    customers.to_stream().repartition(Repartitioned.as_(CUSTOMER_UPDATES)).to(topics["out-customers"])
    return builder


def _input(seed: int = 11) -> dict[str, list[tuple]]:
    """``{topic: [(key, value, timestamp)]}`` in production order.

    Records get distinct timestamps (no two records of different partitions share one: Kafka
    Streams breaks such ties by its queue order, which the runner does not model). About one in
    six is out of order: stamped up to 50 steps before its place.
    """
    rng = random.Random(seed)
    events = (["orders"] * 1600) + (["customers"] * 350) + (["left"] * 400) + (["right"] * 400)
    rng.shuffle(events)
    records: dict[str, list[tuple]] = {name: [] for name in INPUTS}
    for i, topic in enumerate(events):
        timestamp = T0 + i * 100
        if rng.random() < 1 / 6:
            timestamp = T0 + (i - rng.randint(1, 50)) * 100 + 1 + i % 97
        if topic == "orders":
            key = f"c{rng.randrange(30)}"
            value = None if rng.random() < 0.03 else f"o{i}"
            if rng.random() < 0.02:
                key = None
        elif topic == "customers":
            key = f"c{rng.randrange(24)}"
            value = None if rng.random() < 0.15 else f"n{i}"
        else:
            key = f"k{rng.randrange(40)}"
            value = None if rng.random() < 0.15 else f"{topic[0]}{i}"
        records[topic].append((key, value, timestamp))
    records["uleft"], records["uright"] = records["left"], records["right"]  # the uncached joins' tables
    return records


def _headers(name: str, index: int) -> list[tuple[str, bytes]]:
    """The headers of the ``index``-th record of input ``name``: which record it is."""
    return [("src", f"{name}#{index}".encode())]


def _produce(bootstrap: str, inputs: dict[str, str], records: dict[str, list[tuple]]) -> None:
    """Every input; the orders and the customers with :func:`_headers`."""
    for name in INPUTS:
        if name in ("orders", "customers"):
            produce(bootstrap, inputs[name], [
                (None if key is None else key.encode(), None if value is None else value.encode(), None, timestamp,
                 _headers(name, index))
                for index, (key, value, timestamp) in enumerate(records[name])])
        else:
            produce_strings(bootstrap, inputs[name], records[name])


def _updates(records) -> dict:
    """``{key: [(partition, value, timestamp, headers)]}`` of a repartition topic, in order: the
    timestamp a record keeps there (the runner's header under at-least-once, else its own) and its
    headers less the runner's."""
    updates: dict = defaultdict(list)
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        headers = dict(record.headers)
        timestamp = decode_timestamp(headers[TIMESTAMP_HEADER]) if TIMESTAMP_HEADER in headers else record.timestamp
        own = tuple((name, value) for name, value in record.headers if not name.startswith(INTERNAL_HEADER_PREFIX))
        updates[record.key.decode()].append(
            (record.partition, None if record.value is None else record.value.decode(), timestamp, own))
    return dict(updates)


def _results(bootstrap: str, topics: dict[str, str], app_id: str) -> dict:
    """Stream-table outputs as ``{key: (partition, [(value, timestamp) in order])}`` (null keys: a
    sorted list), table-table outputs as the final ``(value, timestamp)`` per key, the customers
    table's updates by :func:`_updates`."""
    result = {"customer-updates": _updates(read_topic(bootstrap, f"{app_id}-{CUSTOMER_UPDATES}-repartition"))}
    for name in ("out-inner", "out-left"):
        per_key: dict = defaultdict(list)
        partitions: dict = {}
        null_keys = []
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            if record.key is None:
                null_keys.append((record.value.decode(), written_time(record)))
                continue
            key = record.key.decode()
            per_key[key].append((record.value.decode(), written_time(record)))
            partitions.setdefault(key, set()).add(record.partition)
        result[name] = {key: (sorted(partitions[key]), values) for key, values in per_key.items()}
        result[name + "/null-keys"] = sorted(null_keys)
    for name in TABLE_JOINS:
        # Every update of each key in order, tombstones included (None): what a reader of the
        # joined table's topic sees, not only where it ends up. Compared for the uncached joins
        # (ut-*), where it is every update; with the cache a key's latest value per commit, which
        # depends on when Kafka Streams' commit interval (500 ms) fell during its run.
        updates: dict = defaultdict(list)
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            updates[record.key.decode()].append(
                (None if record.value is None else record.value.decode(), written_time(record)))
        result[name + "/updates"] = dict(updates)
        # the final value per key (a tombstone deletes it), with the timestamp of its record
        result[name] = {key: last for key, (*_, last) in updates.items() if last[0] is not None}
    return result


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"join-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = _input()
    _produce(kafka_bootstrap, inputs, records)
    app_id = unique_topic("ks-joins")
    # In the background: our clean run, the first test, goes on meanwhile.
    topics, main = start_kafka_streams("kstreams.oracle.JoinExamples", "joins", kafka_bootstrap, kafka_admin,
                                       unique_topic, tmp_path_factory, inputs, dict.fromkeys(OUTPUTS, PARTITIONS),
                                       app_id=app_id)
    reference = KafkaStreamsReference(main, {"inputs": inputs, "records": records}, lambda stdout: {
        "stores": json.loads(stdout), "results": _results(kafka_bootstrap, topics, app_id)})
    yield reference
    reference.close()


def _values(final: dict) -> dict:
    """``{key: value}`` of a table-table join's ``{key: (value, timestamp)}``."""
    return {key: value for key, (value, _) in final.items()}


def _assert_same(expected_run, ours: dict, stores: dict) -> None:
    expected = expected_run["results"]
    for name in ("out-inner", "out-left"):
        assert ours[name + "/null-keys"] == expected[name + "/null-keys"], name
        assert set(ours[name]) == set(expected[name]), name
        for key in expected[name]:
            assert ours[name][key] == expected[name][key], f"{name}, key {key}"
    for name in TABLE_JOINS:
        if name.startswith("tt-"):  # cached: which updates reach the join depends on when Kafka Streams commits
            assert _values(ours[name]) == _values(expected[name]), name
            continue
        assert ours[name] == expected[name], name
        for key in expected[name + "/updates"].keys() | ours[name + "/updates"].keys():
            assert ours[name + "/updates"].get(key) == expected[name + "/updates"].get(key), f"{name}, key {key}"
    for store in STORES:
        assert {str(k): str(v) for k, v in stores[store].items()} == expected_run["stores"][store], store
    # The cached table's last update per key that still holds a value: value, timestamp, headers.
    expected_last = {key: updates[-1] for key, updates in expected["customer-updates"].items()
                     if updates[-1][1] is not None}
    ours_last = {key: updates[-1] for key, updates in ours["customer-updates"].items() if updates[-1][1] is not None}
    assert ours_last == expected_last


def test_joins_on_spark_match_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                            kafka_streams_run):
    expected = kafka_streams_run["results"]
    # The reference exercises what it should: misses, left-join nulls, null keys, deletes.
    assert any("|null" in v for _, values in expected["out-left"].values() for v, _ in values)
    assert len(expected["out-left/null-keys"]) > 0 and expected["out-inner/null-keys"] == []
    assert sum(len(v) for _, v in expected["out-inner"].values()) < sum(len(v) for _, v in expected["out-left"].values())
    assert len(expected["tt-inner"]) < len(expected["tt-left"]) < len(expected["tt-outer"])
    # ... and orders of a key arrive after its table's last update (what the key's last record is).
    latest_order = {key: timestamp for key, _, timestamp in sorted(kafka_streams_run["records"]["orders"],
                                                                  key=lambda record: record[2])}
    assert any(latest_order.get(key, 0) > updates[-1][2] for key, updates in expected["customer-updates"].items())
    assert any(v.startswith("null+") for v, _ in expected["tt-outer"].values())
    for kind in ("inner", "left", "outer"):  # uncached: every update, deletes included
        cached, uncached = expected[f"tt-{kind}/updates"], expected[f"ut-{kind}/updates"]
        assert sum(map(len, uncached.values())) > sum(map(len, cached.values())), kind
        assert any(value is None for updates in uncached.values() for value, _ in updates), kind
    _assert_reference_stamps_as_compared(kafka_streams_run)
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, PARTITIONS))
    runner = TaskRunner(join_examples(topics), unique_topic("spark-joins"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark, repartition_purge_interval_s=math.inf)
    assert len(runner.task_ids()) == 4 * PARTITIONS
    runner.run_all()
    stores = {store: runner.read_store(store) for store in STORES}
    _assert_same(kafka_streams_run, _results(kafka_bootstrap, topics, runner.application_id), stores)


def _assert_reference_stamps_as_compared(kafka_streams_run) -> None:
    """The timestamps compared follow Kafka Streams' rules: a stream-table join's output has its order's
    timestamp; a table-table join's update the larger of both rows' (the left's or the right's)."""
    records = kafka_streams_run["records"]
    expected = kafka_streams_run["results"]
    stamped = {value: timestamp for name in ("orders", "left", "right")
               for _, value, timestamp in records[name] if value is not None}
    orders = [(value.split("|")[0], timestamp) for name in ("out-inner", "out-left")
              for _, rows in expected[name].values() for value, timestamp in rows]
    assert orders and all(timestamp == stamped[order] for order, timestamp in orders)
    pairs = [(value.split("+"), timestamp) for updates in expected["ut-inner/updates"].values()
             for value, timestamp in updates if value is not None]
    assert pairs and all(timestamp == max(stamped[left], stamped[right]) for (left, right), timestamp in pairs)
    assert any(stamped[left] > stamped[right] for (left, right), _ in pairs)
    assert any(stamped[left] < stamped[right] for (left, right), _ in pairs)


def test_joins_killed_part_way_and_rerun_still_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, PARTITIONS))
    # Kill it once task 0_0 (the uncached table-table joins) has processed its batch, while it
    # works on (or starts) task 0_1 (--parallelism 1: one task after another, as that kill point
    # assumes). One batch per task: the input of a task is processed in Kafka Streams' order within it.
    rerun = kill_and_rerun(tmp_path, join_examples, topics, app_id=unique_topic("spark-joins-kill"),
                           bootstrap=kafka_bootstrap, spark=spark, kill_when=lambda line: line.startswith("task 0_0 "),
                           grace_seconds=1, killed_args=("--parallelism", "1", "--max-records-per-batch", "5000"),
                           max_records_per_batch=5000, repartition_purge_interval_s=math.inf)
    assert any(line.startswith("task 0_0 batch") for line in rerun.killed_lines), rerun.killed_lines
    # The killed run did task 0_0's batch (which a kill before its commit log is written replays,
    # skipping the output already in Kafka): the rerun does the rest.
    rerun_tasks = {r.task_id for r in rerun.results if r.records_in}
    assert {"0_1", "1_0", "1_1", "2_0", "2_1"} <= rerun_tasks, rerun_tasks
    stores = {store: rerun.runner.read_store(store) for store in STORES}
    _assert_same(kafka_streams_run, _results(kafka_bootstrap, topics, rerun.runner.application_id), stores)
