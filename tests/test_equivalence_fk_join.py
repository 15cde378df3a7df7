"""Foreign-key table-table joins on Spark against Kafka Streams itself.

One topology (tests/fk_join_topology.py; Java twin ForeignKeyJoinExamples): accounts (account ->
"user:amount", no record cache) joined on their user with users (user -> country): an inner join
(generated names), a left join of the accounts not "frozen" (named ``acct-user``,
materialized), and an inner join with ``TableJoined`` partitioners (named ``placed``) whose output
goes out through a stream partitioner (the partitions of its records and of its internal topics'
records are compared too); and orders joined on their user with the same users (named ``paid``),
whose result is stamped with each record's timestamp and inner-joined with payments within 2 s (a
foreign-key join's result feeding a stream-stream join). Kafka Streams 4.3.1 runs it once. Our tasks run the twin in a ``dagster-kstreams
run`` process, one sub-topology after another, SIGKILLed once the accounts' task 0_0 has run;
a rerun in another process (this one) does the rest, the accounts' and the users' tasks twice: the
joins are cycles (accounts -> subscriptions -> users -> answers -> accounts, the same through
orders), and the orders' tasks a third time for the answers to their subscriptions' second pass.

Input (2 partitions each, placed by key as Kafka's default partitioner does; see the README's
"Semantics that differ"): foreign key changes, null foreign keys, rows the filter drops,
tombstones on both sides (also of rows never seen), null keys, out-of-order timestamps.

What is compared, and why not more: which answers a left row's later version makes stale depends
on when they come back, in Kafka Streams as here, so the sequence of results of a row updated
several times is timing-dependent in both. Compared: the whole per-key sequence of both outputs
for the rows whose sequence does not depend on timing (written once, on users written once);
the final value of every key of both outputs; the left join's store; the internal topics. The input keeps clear of
the one case where Kafka Streams' final result depends on timing (a row deleted and written again
onto a missing foreign key: tests/test_fk_join_logic.py), so that the final values are the
relational join of the two tables' last states in both systems, which is checked too. Every record
compared carries the timestamp it was written with: the sequences are of ``(value, timestamp)``; the
final values' timestamps where Kafka Streams' own do not depend on timing (:func:`_timed_finals`).

The orders' join carries timestamps to compare: Kafka Streams stamps an answer with the larger of
the subscription's and the user row's timestamps, which the stream-stream join then pairs by. Its
input is timing-independent: every order is written once (one deleted right after), onto users
written once, one of them (``v2``) later than the orders, at the end of the users (so the answers
are the same whether its row or the subscription comes first; the one order deleted, after that row); each order's payments in increasing
time, one within 2 s of the order, one of ``v2``'s time. Compared: each key's whole sequence of both
stamped outputs, and each output partition's records as a multiset (their order across keys is
the order the answers come back in, timing-dependent in Kafka Streams itself).
"""

from __future__ import annotations

import json
import random
import time
from collections import defaultdict

import pytest
from pyspark import cloudpickle

import fk_join_topology
import oracle_harness
from equivalence_io import final_values_and_times, output_topics, partition_sequences, produce_inputs, written_time
from fk_join_topology import (
    INPUTS, INTERNAL_TOPICS, ORDER_INPUTS, ORDER_INTERNAL_TOPICS, ORDER_OUTPUTS, PAYMENT_WINDOW, PLACED_INTERNAL_TOPICS,
    PLACED_OUTPUT, fk_join_partitioned_examples,
)
from fk_join_topology import OUTPUTS as JOIN_OUTPUTS
from killed_runs import run_until_killed
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(fk_join_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) * 1000
USERS = [f"u{i}" for i in range(6)]
STABLE_USERS = {"v0": "jp", "v1": "br"}  # written once, never changed
STABLE_ACCOUNTS = {"s0": "v0:1", "s1": "v1:2", "s2": "v0:3", "s3": "v1:4"}  # written once
OUTPUTS = (*JOIN_OUTPUTS, PLACED_OUTPUT)
JOINERS = {"out-inner": "@", "out-left": "@", PLACED_OUTPUT: "#"}  # what each joiner puts between
ALL_INPUTS = (*INPUTS, *ORDER_INPUTS)
ALL_OUTPUTS = (*OUTPUTS, *ORDER_OUTPUTS)
LATE_USER_TIME = T0 + 35_007  # v2's row: later than every order
# o2 (on v2) deleted after v2's row: its unsubscribe's null answer carries the deletion's time whether
# v2's row or the unsubscribe is processed first (with no row yet, an answer keeps its own time).
DELETED_ORDER_TIME = LATE_USER_TIME + 13


def _input(seed: int = 14) -> dict[str, list[tuple]]:
    """``{topic: [(key, value, partition, timestamp)]}``."""
    rng = random.Random(seed)
    records: dict[str, list[tuple]] = {name: [] for name in INPUTS}
    clock = [0]

    def add(topic, key, value):
        clock[0] += 1
        i = clock[0]
        timestamp = T0 + i * 100 if rng.random() > 1 / 6 else T0 + (i - rng.randint(1, 40)) * 100 + 7
        partition = rng.randrange(PARTITIONS) if key is None else default_partition(key.encode(), PARTITIONS)
        records[topic].append((key, value, partition, timestamp))

    for user, country in STABLE_USERS.items():
        add("users", user, country)
    deleted: set[str] = set()
    for step in range(500):
        if step % 3 == 0:
            user = rng.choice(USERS)
            add("users", user, None if rng.random() < 0.15 else rng.choice(["fr", "de", "es", "it"]))
        elif rng.random() < 0.03:
            add(rng.choice(INPUTS), None, "u1:1")  # a null key: dropped by the table
        else:
            account = f"a{rng.randrange(14)}"
            roll = rng.random()
            if account in deleted or roll < 0.6:
                # After a tombstone, always onto an existing user (see the module docstring).
                value = f"{rng.choice(USERS)}:{rng.randint(1, 9)}"
                deleted.discard(account)
            elif roll < 0.72:
                value = f":{rng.randint(1, 9)}"  # null foreign key
            elif roll < 0.82:
                value = f"frozen:{rng.randint(1, 9)}"  # dropped by the left join's filter; a missing user
            else:
                value = None
                deleted.add(account)
            add("accounts", account, value)
        if step == 250:
            for account, value in STABLE_ACCOUNTS.items():
                add("accounts", account, value)
    for user in USERS:  # every user ends present: the final result is then not timing-dependent
        add("users", user, rng.choice(["fr", "de", "es", "it"]))
    for account in sorted(deleted):  # nor is it for a row whose last write is a tombstone
        add("accounts", account, f"{rng.choice(USERS)}:0")
    records["users"].append(("v2", "nl", default_partition(b"v2", PARTITIONS), LATE_USER_TIME))
    records.update(_orders(rng))
    return records


def _orders(rng: random.Random) -> dict[str, list[tuple]]:
    """Orders written once each (module docstring), out of order across keys, on the users v0/v1
    (earlier than the orders), v2 (later), a missing one, a null foreign key; one order on v2 deleted
    after v2's row (``DELETED_ORDER_TIME``), a null key. Each order's payments:
    one 300 ms after it (v0/v1: 5 s before it, too early), one 500 ms after v2's row (v0/v1: 1 s after
    the order), so the order's answer pairs with one of them by its timestamp."""
    def placed(key, value, timestamp):
        partition = rng.randrange(PARTITIONS) if key is None else default_partition(key.encode(), PARTITIONS)
        return key, value, partition, timestamp

    users = ["v2", "v0", "v2", "v1", "v2", "w9", "", "v0", "v2", "v1", "v2"]
    times = [T0 + 20_000 + i * 1_000 + 11 for i in range(len(users))]
    rng.shuffle(times)
    orders, payments = [], []
    for i, (user, timestamp) in enumerate(zip(users, times)):
        key = f"o{i}"
        orders.append(placed(key, f"{user}:{i}", timestamp))
        if user == "v2":
            payments += [placed(key, f"p{i}a", timestamp + 300), placed(key, f"p{i}b", LATE_USER_TIME + 500 + i)]
        else:
            payments += [placed(key, f"p{i}a", timestamp - 5_000), placed(key, f"p{i}b", timestamp + 1_000)]
    orders.append(placed("o2", None, DELETED_ORDER_TIME))
    orders.append(placed(None, "v0:9", T0 + 20_503))
    payments.append(placed(None, "p-none", T0 + 20_505))
    return {"orders": orders, "payments": payments}


def _results(bootstrap: str, topics: dict[str, str]) -> dict:
    """Per output: each key's sequence of ``(value, timestamp)``, its final ``(value, timestamp)``, the
    partitions of each key's records; per output of the orders, each partition's records as a multiset."""
    results = {}
    for name in ALL_OUTPUTS:
        records = read_topic(bootstrap, topics[name])
        sequences = defaultdict(list)
        for record in sorted(records, key=lambda r: (r.partition, r.offset)):
            sequences[record.key.decode()].append(
                (None if record.value is None else record.value.decode(), written_time(record)))
        results[name] = {"final": final_values_and_times(records), "sequences": dict(sequences),
                         "partitions": _partitions(records)}
    for (name, partition), records in partition_sequences(bootstrap, topics, ORDER_OUTPUTS).items():
        results[name].setdefault("multisets", {})[partition] = sorted(records, key=repr)
    return results


def _partitions(records) -> dict[bytes, set[int]]:
    """The partitions each key's records went to."""
    placed = defaultdict(set)
    for record in records:
        placed[record.key].add(record.partition)
    return dict(placed)


def _internal_partitions(bootstrap: str, app_id: str) -> dict[str, dict[bytes, set[int]]]:
    return {topic: _partitions(read_topic(bootstrap, f"{app_id}-{topic}")) for topic in PLACED_INTERNAL_TOPICS}


def _check_the_orders_reference(kafka_streams_run) -> None:
    """Kafka Streams' stamped outputs are what the module docstring says: an answer carries the
    later of the order's and the user row's timestamps (a deletion's null answer too), and the
    stream-stream join pairs it by that."""
    orders = {key: (value, timestamp) for key, value, _, timestamp in kafka_streams_run["records"]["orders"]
              if key is not None and value is not None}
    users = {key: (value, timestamp) for key, value, _, timestamp in kafka_streams_run["records"]["users"]
             if key in ("v0", "v1", "v2")}  # written once each
    assert users["v2"] == ("nl", LATE_USER_TIME) and max(users["v0"][1], users["v1"][1]) < min(
        timestamp for _, timestamp in orders.values())
    answers, paid = kafka_streams_run["results"]["out-orders"], kafka_streams_run["results"]["out-paid"]
    expected_answers, expected_paid = {}, {}
    for key, (value, timestamp) in orders.items():
        user = value.split(":")[0]
        if user not in users:
            continue
        country, user_time = users[user]
        stamp = max(timestamp, user_time)
        expected_answers[key] = [(f"{value}@{country}|t{stamp}", stamp)]
        window = PAYMENT_WINDOW.total_seconds() * 1000
        expected_paid[key] = [(f"{value}@{country}+{payment}|t{max(stamp, paid_at)}", max(stamp, paid_at))
                              for payment_key, payment, _, paid_at in kafka_streams_run["records"]["payments"]
                              if payment_key == key and abs(paid_at - stamp) <= window]
    # deleted: its subscription's answer came back stale
    expected_answers["o2"] = [(f"null|t{DELETED_ORDER_TIME}", DELETED_ORDER_TIME)]
    assert answers["sequences"] == expected_answers
    assert {key: values for key, values in paid["sequences"].items()} == \
        {key: values for key, values in expected_paid.items() if values and key != "o2"}
    assert all("b|t" in value for values in paid["sequences"].values() for value, _ in values
               if value.startswith("v2"))  # v2's orders paired by v2's time, not their own


def _last_writes(records, name: str) -> dict[str, tuple]:
    """Each key's last ``(value, timestamp)`` written to input ``name``."""
    return {key: (value, timestamp) for key, value, _, timestamp in records[name] if key is not None}


def _timed_finals(records) -> dict[str, dict[str, int]]:
    """Per output, the accounts whose final result's timestamp the input fixes, with that timestamp.
    Kafka Streams stamps an answer to the account's last subscription with the larger of its time and
    the user row's, an answer to the user row's last update with that update's time: the same
    whichever comes first when the user row is the later of the two (an answer with a null foreign
    key: the account's own). When the account is the later one, whichever is processed last is final,
    which depends on when the subscription reaches the users' task (timing, in Kafka Streams too). Nor
    the left join's result of a null foreign key: its subscription has a null key, which the producer
    puts on any partition, so two writes of one value can be answered by two tasks in either order, in
    Kafka Streams too (README, "Foreign-key joins")."""
    accounts, users = _last_writes(records, "accounts"), _last_writes(records, "users")
    timed: dict[str, dict[str, int]] = {name: {} for name in OUTPUTS}
    for account, (value, account_time) in accounts.items():
        if value is None:
            continue
        user = value.split(":")[0] or None
        if user is None:
            continue
        user_value, user_time = users.get(user, (None, None))
        if user_value is None or user_time < account_time:
            continue
        for name in OUTPUTS:
            if name != "out-left" or not value.startswith("frozen"):
                timed[name][account] = user_time
    return timed


def _relational_join(records) -> dict[str, dict]:
    tables = {name: {} for name in INPUTS}
    for name in INPUTS:
        for key, value, _, _ in records[name]:
            if key is None:
                continue
            if value is None:
                tables[name].pop(key, None)
            else:
                tables[name][key] = value
    users = tables["users"]

    def user(value):
        return value.split(":")[0] or None

    accounts = tables["accounts"]
    return {
        "out-inner": {a: f"{v}@{users[user(v)]}" for a, v in accounts.items() if user(v) in users},
        PLACED_OUTPUT: {a: f"{v}#{users[user(v)]}" for a, v in accounts.items() if user(v) in users},
        "out-left": {a: f"{v}@{users.get(user(v)) or 'null'}" for a, v in accounts.items()
                     if not v.startswith("frozen")},
    }


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"fk-{name}") for name in ALL_INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = _input()
    produce_inputs(kafka_bootstrap, inputs, records, ALL_INPUTS)
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(ALL_OUTPUTS, PARTITIONS), "ks")
    app_id = unique_topic("ks-fk")
    stdout = oracle_harness.run_main(
        "kstreams.oracle.ForeignKeyJoinExamples",
        [kafka_bootstrap, app_id, str(tmp_path_factory.mktemp("ks-fk-state")),
         *(topics[name] for name in ALL_INPUTS), *(topics[name] for name in ALL_OUTPUTS)],
        timeout=600,
    )
    reference = json.loads(stdout)
    return {"inputs": inputs, "topics": topics, "records": records, "describe": reference["describe"],
            "stores": reference["stores"], "results": _results(kafka_bootstrap, topics),
            "internal": _internal_partitions(kafka_bootstrap, app_id)}


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    ours = fk_join_partitioned_examples(kafka_streams_run["topics"]).build().describe()
    assert str(ours) == kafka_streams_run["describe"]


def test_fk_joins_killed_part_way_and_rerun_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    expected = kafka_streams_run["results"]
    model = _relational_join(kafka_streams_run["records"])
    # The reference is what the module docstring says it is, and exercises what it should.
    for name in OUTPUTS:
        assert {key: value for key, (value, _) in expected[name]["final"].items()} == model[name], name
        timed = _timed_finals(kafka_streams_run["records"])[name]
        assert len(timed) >= 4 and {key: expected[name]["final"][key][1] for key in timed} == timed, name
        for account, value in STABLE_ACCOUNTS.items():
            user = value.split(":")[0]
            assert [joined for joined, _ in expected[name]["sequences"][account]] == \
                [f"{value}{JOINERS[name]}{STABLE_USERS[user]}"]
    inner, left = ({key: [value for value, _ in records] for key, records in expected[name]["sequences"].items()}
                   for name in ("out-inner", "out-left"))
    assert any(None in values for values in inner.values())  # tombstones
    assert any(value.endswith("@null") for values in left.values() for value in values if value)  # left, no match
    assert any(value.startswith(":") for values in left.values() for value in values if value)  # null FK, left
    assert sum(len(values) for values in inner.values()) > 20

    _check_the_orders_reference(kafka_streams_run)

    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"],
                           dict.fromkeys(ALL_OUTPUTS, PARTITIONS))
    app_id = unique_topic("spark-fk")
    state = tmp_path / "state"
    # --parallelism 1: one sub-topology after another (0: accounts; 1: users). Killed once task
    # 0_0 has processed its batch, while it works on (or starts) 0_1.
    lines = run_until_killed(tmp_path, "fk_join_topology:fk_join_partitioned_examples", topics, app_id=app_id,
                             bootstrap=kafka_bootstrap, state=state, kill_when=lambda line: line.startswith("task 0_0 "),
                             grace_seconds=1, extra_args=("--parallelism", "1"))
    assert not any(line.startswith("task 1_") for line in lines), lines

    runner = TaskRunner(fk_join_partitioned_examples(topics), app_id, kafka_bootstrap, state_location=str(state),
                        spark=spark)
    assert len(runner.task_ids()) == 3 * PARTITIONS
    # The cycles: all tasks send the subscriptions up and answer them (the users' tasks wait for the
    # accounts' ones); then, in the same call, the accounts' tasks run again and resolve the answers,
    # the users' ones answer the orders' subscriptions (the orders' sub-topology comes after theirs),
    # and the orders' tasks resolve those answers.
    results = runner.run_all()
    assert [r.task_id for r in results] == ["0_0", "0_1", "1_0", "1_1", "2_0", "2_1",
                                            "0_0", "0_1", "1_0", "1_1", "2_0", "2_1"]
    assert all(r.records_in for r in results[2:]), results
    group_lag = kafka_admin.lag(app_id, [*(topics[name] for name in ALL_INPUTS), *(
        f"{app_id}-{topic}" for topic in (*INTERNAL_TOPICS, *PLACED_INTERNAL_TOPICS, *ORDER_INTERNAL_TOPICS))])
    assert not any(group_lag.values()), group_lag

    ours = _results(kafka_bootstrap, topics)
    timed_finals = _timed_finals(kafka_streams_run["records"])
    for name in OUTPUTS:
        assert {key: value for key, (value, _) in ours[name]["final"].items()} == \
            {key: value for key, (value, _) in expected[name]["final"].items()}, name
        assert {key: ours[name]["final"][key] for key in timed_finals[name]} == \
            {key: expected[name]["final"][key] for key in timed_finals[name]}, name
        for account in STABLE_ACCOUNTS:
            assert ours[name]["sequences"][account] == expected[name]["sequences"][account], (name, account)
    # Placed by the partitioners: the output by the key's number, the internal topics by TableJoined's.
    placed = expected[PLACED_OUTPUT]["partitions"]
    assert placed and all(partitions == {int(key[1:]) % PARTITIONS} for key, partitions in placed.items())
    assert ours[PLACED_OUTPUT]["partitions"] == placed
    assert _internal_partitions(kafka_bootstrap, app_id) == kafka_streams_run["internal"]
    # The orders' answers and what the stream-stream join paired by their timestamps: each key's
    # whole sequence, and each partition's records.
    for name in ORDER_OUTPUTS:
        assert ours[name]["sequences"] == expected[name]["sequences"], name
        assert ours[name]["multisets"] == expected[name]["multisets"], name
    stored = {str(k): str(v) for k, v in runner.read_store("accounts-with-country").items()}
    assert stored == kafka_streams_run["stores"]["accounts-with-country"]
    # The join's internal topics exist under Kafka Streams' names, with the partitions it gives them.
    for topic in INTERNAL_TOPICS:
        assert kafka_admin.partition_count(f"{app_id}-{topic}") == PARTITIONS, topic
