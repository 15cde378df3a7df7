"""A versioned table's updates consumed downstream, on Spark against Kafka Streams itself.

One topology (tests/versioned_consumers_topology.py; Java twin VersionedConsumerExamples): prices, a
table read from a topic into a versioned store (10 s of history), and limits, a plain table. Kafka
Streams forwards an out-of-order price update (older than the key's latest, within the history)
marked "not latest" (KIP-914), and each consumer treats it its own way: the prices' side of an outer
join with the limits skips it; a re-grouping (through a filter without a store) skips it, into an
aggregate kept in a versioned store (1 s of history: an update is stamped with the larger of its
record's time and the aggregate's, and dropped when older than the history; its changes carry their
timestamps); a filter and a map_values materialized in plain stores of their own take it as
the key's latest value and forward it (their changes go to topics), and a left join of the limits
with that filtered table then reads it. The limits are also filtered into a versioned store of 3 s
of history (which drops an update older than that, and marks out-of-order ones not latest), joined
with the prices (each side skipping the other's out-of-order updates) and read by a stream of
orders as of their own timestamps. The orders are counted per user into a versioned store (2 s of
history: a count is stamped with the larger of the order's time and the previous count's, and dropped
when older than the history), which the orders join as of their own timestamps. The prices are
joined on a foreign key with regions, another versioned table (4 s of history): the subscriptions skip
the prices' out-of-order updates, the right side's answers the regions'. Kafka Streams 4.3.1 runs the whole input once
(``max.task.idle.ms``: its timestamp merge of the inputs of a task).

Input on 2 partitions, keyed by user (three users in each partition, re-grouped within their
partition, so that each group is fed by one upstream task: the order of its updates is the same in
both systems): updates in time, out of order within the history, older than the history (dropped),
tombstones (also out of order), null keys (skipped). No two records share a timestamp. The regions
are all written first and never deleted, so that every foreign key has a row: then the join's final
values are the join of both tables' latest versions whenever its answers come back (with a missing
foreign key they are not, in Kafka Streams as here: tests/test_equivalence_fk_join.py).

Our side runs it as a ``dagster-kstreams run`` process, one task after another, SIGKILLed once its
first task is done; a rerun in this process does the rest. Another run of ours processes it clean.
Three steps into versioned stores put updates of tables that Kafka Streams stamps with other times
than their records': the re-grouped aggregate mapped into one of 500 ms of history, the limits
left-joined with the prices (the larger of both rows' times) filtered into one of 2 s, the last order
per user (a reduce into a plain store: the larger of the order's and the previous one's time)
filtered into one of 1 s; their changes carry their timestamps (StampValues), so the puts dropped as
expired and those forwarded out of order are compared.

A processor on the re-grouped aggregate's changes (HistoryVersions) works on the aggregate's versioned
store and on its tails' (a map_values' versioned store) as Kafka Streams' ``VersionedKeyValueStore``:
it puts versions ahead into each (the aggregation adds its next change of the key to what it put) and
reads each one's latest version and the one before the change.

Two more steps into versioned stores: the orders and the limits' changes cogrouped into a plain store
(each cogrouped stream's aggregation stamps its update with the larger of the record's and the
aggregate's time) mapped into one of 1 s, and the limits suppressed for 500 ms (each evicted update
emitted with the time of the key's latest buffered update) filtered into one of 2 s: their changes
carry their timestamps (expired puts, out-of-order ones forwarded, tombstones). A processor on the
cogroup tails' changes (StepVersions) reads both stores (latest and as of 1 ms before the change) and
the prices' filter's plain store, which takes an out-of-order price as the key's latest, at its time.

And a foreign-key join's result into a versioned step: each order flags its user (a table of "o", the
same value every time) left-joined on a foreign key, the user itself, with owners (a plain table whose
every record is older than every other input's, u15 never written), filtered into a versioned store of
2 s. Its sequence is determined, unlike the prices' join's: the owners are all processed before any
subscription (older, in Kafka Streams' timestamp merge as here), so every answer carries its order's
time; a user's subscriptions go to its own partition's owners task, whose answers come back in the
order sent; and every answer matches the flag's hash (the same value), whenever it comes back. Beside
that join, a processor reads each store it reads: the flags' on the orders, the owners' on their updates.

And windowed tables' steps into versioned stores keyed by windows (``WindowedSerde``/``SessionWindowed`` key
serdes, as Kafka Streams needs): the orders counted in 10 s windows filtered into one of 3 s, the limits'
changes counted in sliding windows mapped into one of 2 s, the regions' changes counted in sessions
(merged ones forward their merged-away sessions' tombstones) filtered into one of 1 s; a processor
(WindowVersions) on each one's changes reads the store for the window (latest, and as of 1 ms before the
change), and on the time windows' puts versions 700 ms ahead, so that later updates of those windows are
forwarded out of order (marked not latest). The time windows' and the sliding windows' steps are
re-grouped by user (a reduce of their windows' values): an update marked not latest goes to no group, each
latest one subtracts the value before it (a version the processor put ahead among them).

Compared: describe() of the very topology run, and per output topic and partition the whole
sequence of (key, value, timestamp) records, except the foreign-key join's: which answers a later version of a price makes stale
depends on when they come back, in Kafka Streams as here, so its final value per key is compared.
"""

from __future__ import annotations

import random
import time

import pytest
from pyspark import cloudpickle

import versioned_consumers_topology
from equivalence_io import (
    KafkaStreamsInBackground, output_topics, partition_sequences, produce_inputs, with_unique_timestamps,
)
from killed_runs import run_until_killed
from versioned_consumers_exercised import assert_reference_exercises_it
from versioned_consumers_topology import FK_JOIN_NAME, FK_OUTPUT, INPUTS, OUTPUTS, versioned_consumer_examples
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.processors.fk_join_wire import decode_subscription
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(versioned_consumers_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute
SPAN_MS = 60_000
USERS = ("u1", "u2", "u3", "u5", "u11", "u15")  # three in each partition (murmur2)
REGIONS = ("r0", "r1", "r2", "r3")  # the foreign keys of the prices
# per input: (records, (share late within the history, its lateness), (share late beyond it, its lateness))
SHAPES = {
    "prices": (160, (0.2, (1_000, 7_000)), (0.08, (12_000, 25_000))),
    "limits": (90, (0.15, (500, 2_500)), (0.1, (4_000, 9_000))),
    "orders": (120, (0.15, (500, 2_500)), (0.1, (4_000, 9_000))),
    "regions": (50, (0.25, (500, 3_500)), (0.1, (5_000, 12_000))),
}


def _records(rng: random.Random, topic: str) -> list[tuple]:
    count, (within_share, within), (beyond_share, beyond) = SHAPES[topic]
    records = []
    for i, base in enumerate(sorted(rng.randrange(T0, T0 + SPAN_MS) for _ in range(count))):
        if topic == "regions":  # each region first, then updates; never deleted (see the module docstring)
            key = REGIONS[i] if i < len(REGIONS) else None if rng.random() < 0.03 else rng.choice(REGIONS)
            value = f"g{i}"
        else:
            key = None if rng.random() < 0.03 else rng.choice(USERS)
            value = None if rng.random() < 0.07 else f"{topic[0]}{i}"
        timestamp, roll = base, rng.random()
        if topic == "regions" and i < len(REGIONS):
            roll = 1.0  # in time
        if roll < within_share:
            timestamp -= rng.randint(*within)
        elif roll < within_share + beyond_share:
            timestamp -= rng.randint(*beyond)
        partition = default_partition(key.encode(), PARTITIONS) if key is not None else rng.randrange(PARTITIONS)
        records.append((key, value, partition, max(T0, timestamp)))
    return records


def _owners(rng: random.Random) -> list[tuple]:
    """The owners table: every record older than every other input's (module docstring), u15 never
    written, some deleted, out of order among themselves."""
    records = []
    for i in range(24):
        key = rng.choice(USERS[:-1])
        value = None if rng.random() < 0.15 else f"w{i}"
        records.append((key, value, default_partition(key.encode(), PARTITIONS), T0 - 30_000 + i * 1_000
                        - rng.randint(0, 3_000)))
    return records


def _input(seed: int = 19) -> dict[str, list[tuple]]:
    rng = random.Random(seed)
    records = {topic: _records(rng, topic) for topic in INPUTS if topic != "owners"}
    records["owners"] = _owners(rng)
    (records,) = with_unique_timestamps([records], INPUTS)
    return records


def _produce(bootstrap: str, topics: dict[str, str], records: dict[str, list[tuple]]) -> None:
    produce_inputs(bootstrap, topics, records, INPUTS)


def _results(bootstrap: str, topics: dict[str, str], app_id: str) -> dict[tuple, list]:
    """The outputs' sequences, and the foreign-key join's subscriptions: per partition and per left
    partition that sent them (each sent in its task's order, whatever the timing), in Kafka Streams'
    wire format, so that the prices' out-of-order updates they skip are compared."""
    results: dict[tuple, list] = dict(partition_sequences(bootstrap, topics, OUTPUTS))
    topic = f"{app_id}-{FK_JOIN_NAME}-subscription-registration-topic"
    for record in sorted(read_topic(bootstrap, topic), key=lambda r: (r.partition, r.offset)):
        sent_from = decode_subscription(record.value).primary_partition
        results.setdefault(("subscriptions", record.partition, sent_from), []).append((record.key, record.value))
    return results


@pytest.fixture(scope="module")
def records():
    return _input()


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory, records):
    names: dict[str, str] = {}

    def naming(prefix: str) -> str:  # keeps the app id Kafka Streams' run gets, for its internal topics
        names[prefix] = unique_topic(prefix)
        return names[prefix]

    run = KafkaStreamsInBackground(
        "kstreams.oracle.VersionedConsumerExamples", "versioned-consumers", kafka_bootstrap, kafka_admin,
        naming, tmp_path_factory.mktemp("ks-versioned-consumers-state"), INPUTS, OUTPUTS, PARTITIONS,
        lambda inputs: _produce(kafka_bootstrap, inputs, records),
        lambda bootstrap, topics: _results(bootstrap, topics, names["ks-versioned-consumers"]))
    yield run
    run.close()


def _final_values(results: dict, output: str) -> dict:
    """The last value of each key of ``output`` (its keys are placed by key: one partition each)."""
    return {key: value for p in range(PARTITIONS) for key, value, _ in results.get((output, p), [])}


def _assert_same(actual: dict, expected: dict) -> None:
    for key in sorted(expected):
        if key[0] == "subscriptions":
            # The runner purges what it consumed of a repartition topic every 30 s, as Kafka Streams
            # does (switched off in its twin, so that its side is whole): what is left is the end.
            sent = actual.get(key, [])
            assert sent == expected[key][len(expected[key]) - len(sent):], key
        elif key[0] != FK_OUTPUT:
            assert actual.get(key) == expected[key], key
    assert set(actual) <= set(expected)
    assert {key for key in actual if key[0] != "subscriptions"} == {key for key in expected if key[0] != "subscriptions"}
    assert _final_values(actual, FK_OUTPUT) == _final_values(expected, FK_OUTPUT)


def test_versioned_table_consumers_in_a_clean_run_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, records, spark, tmp_path
):
    inputs = {name: unique_topic(f"clean-versioned-consumers-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))
    _produce(kafka_bootstrap, inputs, records)
    app_id = unique_topic("clean-versioned-consumers")
    runner = TaskRunner(versioned_consumer_examples(topics), app_id, kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    results = runner.run_all()
    assert {result.task_id for result in results} == {f"{sub}_{p}" for sub in range(6) for p in range(PARTITIONS)}

    expected = kafka_streams_run.result()["results"]
    assert_reference_exercises_it(expected, records)
    _assert_same(_results(kafka_bootstrap, topics, app_id), expected)


def test_versioned_table_consumers_killed_part_way_and_rerun_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, records, spark, tmp_path
):
    inputs = {name: unique_topic(f"killed-versioned-consumers-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))
    _produce(kafka_bootstrap, inputs, records)
    app_id = unique_topic("killed-versioned-consumers")
    state = tmp_path / "state"
    # --parallelism 1: one task after another (0_0, 0_1, 1_0, 1_1). Killed once task 0_0 has
    # processed its batch, while it works on (or starts) 0_1.
    lines = run_until_killed(tmp_path, "versioned_consumers_topology:versioned_consumer_examples", topics,
                             app_id=app_id, bootstrap=kafka_bootstrap, state=state,
                             kill_when=lambda line: line.startswith("task 0_0 "), grace_seconds=1,
                             extra_args=("--parallelism", "1"))
    assert not any(line.startswith("task 1_") for line in lines), lines

    runner = TaskRunner(versioned_consumer_examples(topics), app_id, kafka_bootstrap, state_location=str(state),
                        spark=spark)
    results = runner.run_all()
    assert {"1_0", "1_1"} <= {result.task_id for result in results if result.records_in}

    _assert_same(_results(kafka_bootstrap, topics, app_id), kafka_streams_run.result()["results"])


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    ours = versioned_consumer_examples(kafka_streams_run.topics).build().describe()
    assert str(ours) == kafka_streams_run.result()["describe"]
