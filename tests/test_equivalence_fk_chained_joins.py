"""Foreign-key joins of table-table joins' results on Spark against Kafka Streams itself.

One topology (tests/fk_chained_join_topology.py; Java twin ChainedForeignKeyJoinExamples): the
result of ``a.join(b)`` (no store) joined on a foreign key with the result of ``u.left_join(v)``
(no store), the joined table on both sides; ``a.join(b)`` through a filter left-joined with u
(named, materialized); a left-joined with ``u.outer_join(v)`` (materialized) through a filter.
Kafka Streams 4.3.1 reads those tables through the join's value getter
(``KTableKTableJoinValueGetter``), and their updates (with old values) drive the subscriptions and
the answers, as the runner does.

Why phases. Which answers a left row's later version makes stale depends on when they come back,
in Kafka Streams as here (see test_equivalence_fk_join.py). So the input comes in phases, each
consumed to its end (the internal topics too) by both sides before the next is written: phases
of right-table updates (u and v, any number per key: every answer to a left row then comes from
its one foreign key, in order), and phases where each left key is updated at most once (every key
on a, then every key on b, then some on a or b): foreign-key changes, null and missing foreign
keys, rows the filter drops, tombstones on every table (also of rows never written), null keys,
out-of-order timestamps, 2 partitions. Every key's whole output sequence is then determined, and
is compared, with the final values, each value with the timestamp its record was written with. Not
the order of different keys within a partition: answers
to one partition come from both right tasks, interleaved as they happen to run, in Kafka Streams
as here.

Kafka Streams runs each phase in a new process on one application id and state directory. Ours
runs the phases once, on one application id and state location: its first two phases clean, its
third in a process SIGKILLed once the left table's task 0_0 has run (the subscriptions of partition
0 sent), then rerun from the same state, and the last two clean again, continuing from what the
killed phase and its rerun left. (A second, wholly clean pass over the phases would double ours' part
of the suite's slowest module; a clean run of foreign-key joins is compared in
test_equivalence_fk_join.py.)

The versioned join (c joined with u into a versioned store, sub-topology 0, so the killed phase's
process runs c's tasks, and a's and b's partition 0, before its kill) is compared more closely: each
output partition's whole sequence, with each record's timestamp and what a processor reads from the
store as of times. That order is determined too: every c key's foreign keys are users of its own
partition (u0..u4, u9 and "" in partition 0; u5, w0, w1 and "" in 1), so each partition's
subscriptions come from one c task and its answers from one u task, in the order they were sent.
Its input (a random of its own, the same clock): c updated at most once per left phase (foreign key
changes, a missing user, null foreign keys, tombstones), u5 and w0 updated in the right phases (u0..u4
are already), a quarter of both 200 ms to 2.5 s out of order, so that results land out of order (kept
as history, forwarded not latest) and older than the store's observed time minus its history (dropped).
"""

from __future__ import annotations

import random
import time
from collections import defaultdict

import pytest
from pyspark import cloudpickle

import fk_chained_join_topology
import oracle_harness
from equivalence_io import final_values_and_times, output_topics, partition_sequences, produce_strings, written_time
from fk_chained_join_topology import INPUTS, OUTPUTS, VERSIONED_OUTPUTS, chained_fk_join_examples
from killed_runs import run_until_killed
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(fk_chained_join_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) * 1000
USERS = ("u0", "u1", "u2", "u3", "u4")
LEFT_KEYS = tuple(f"k{i}" for i in range(12))
PHASES = ("right", "a", "b", "right", "left")
KILLED_PHASE = 2
JOINED_INPUTS = ("a", "b", "u", "v")  # the chained joins'; c is the versioned join's
# The versioned join's left keys and, by their partition, the users they may name (module docstring).
VERSIONED_KEYS = ("c0", "c1", "c2", "c3", "c4", "c5", "c9", "c10")
VERSIONED_USERS = {0: ("u0", "u1", "u2", "u3", "u4", "u9", ""), 1: ("u5", "w0", "w1", "")}


def _input(seed: int = 19, versioned_seed: int = 32) -> list[dict[str, list[tuple]]]:
    """Per phase, ``{topic: [(key, value, partition, timestamp)]}``."""
    rng, versioned_rng = random.Random(seed), random.Random(versioned_seed)
    clock = [0]
    phases = []
    for kind in PHASES:
        records: dict[str, list[tuple]] = {name: [] for name in INPUTS}

        def add(topic, key, value):
            clock[0] += 1
            i = clock[0]
            timestamp = T0 + i * 100 if rng.random() > 1 / 6 else T0 + (i - rng.randint(1, 30)) * 100 + 7
            partition = rng.randrange(PARTITIONS) if key is None else default_partition(key.encode(), PARTITIONS)
            records[topic].append((key, None if value is None else value.format(i=i), partition, timestamp))

        if kind == "right":
            for _ in range(40):
                topic = rng.choice(("u", "v"))
                add(topic, rng.choice(USERS), None if rng.random() < 0.2 else topic + "{i}")
        else:
            for key in rng.sample(LEFT_KEYS, len(LEFT_KEYS) if kind != "left" else 9):
                if kind == "a" or (kind == "left" and rng.random() < 0.6):
                    user = rng.choice((*USERS, "", "frozen", "u9"))  # a null, a filtered, a missing user
                    add("a", key, None if rng.random() < 0.15 else user + ":a{i}")
                else:
                    add("b", key, None if rng.random() < 0.15 else "b{i}")
        add(rng.choice(JOINED_INPUTS), None, "u1:a0")  # a null key: dropped by the table
        _add_versioned_join_input(kind, versioned_rng, clock, records)
        phases.append(records)
    return phases


def _add_versioned_join_input(kind: str, rng: random.Random, clock: list, records: dict) -> None:
    """The versioned join's records of one phase (module docstring), on the phases' clock."""
    def add(topic, key, value):
        clock[0] += 1
        i = clock[0]
        timestamp = T0 + i * 100 - (rng.randint(200, 2_500) if rng.random() < 1 / 4 else 0)
        partition = rng.randrange(PARTITIONS) if key is None else default_partition(key.encode(), PARTITIONS)
        records[topic].append((key, None if value is None else value.format(i=i), partition, timestamp))

    if kind == "right":
        for _ in range(12):
            add("u", rng.choice(("u5", "w0")), None if rng.random() < 0.2 else "u{i}")
        return
    for key in rng.sample(VERSIONED_KEYS, 7):
        user = rng.choice(VERSIONED_USERS[default_partition(key.encode(), PARTITIONS)])
        add("c", key, None if rng.random() < 0.15 else user + ":c{i}")
    add("c", None, "u1:c0")  # a null key: dropped by the table


def _results(bootstrap: str, topics: dict[str, str]) -> dict:
    """Per output: every key's whole sequence of ``(value, timestamp)``, and the final ones."""
    results = {}
    for name in OUTPUTS:
        records = read_topic(bootstrap, topics[name])
        sequences = defaultdict(list)
        for record in sorted(records, key=lambda r: (r.partition, r.offset)):
            sequences[record.key.decode()].append(
                (None if record.value is None else record.value.decode(), written_time(record)))
        results[name] = {"sequences": dict(sequences), "final": final_values_and_times(records)}
    results["partitions"] = partition_sequences(bootstrap, topics, VERSIONED_OUTPUTS)
    return results


def _run_phase(topics: dict[str, str], app_id: str, bootstrap: str, state, spark) -> None:
    TaskRunner(chained_fk_join_examples(topics), app_id, bootstrap, state_location=str(state), spark=spark).run_all()


@pytest.fixture(scope="module")
def runs(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path_factory):
    """Both sides over every phase: Kafka Streams, and ours, killed in a phase and rerun."""
    inputs = {name: unique_topic(f"fkc-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    partitions = dict.fromkeys((*OUTPUTS, *VERSIONED_OUTPUTS), PARTITIONS)
    ks_topics = output_topics(kafka_admin, unique_topic, inputs, partitions, "ks")
    our_topics = output_topics(kafka_admin, unique_topic, inputs, partitions, "ours")
    ks_app, our_app = (unique_topic(f"{side}-fkc") for side in ("ks", "ours"))
    ks_state = tmp_path_factory.mktemp("ks-fkc-state")
    our_dir = tmp_path_factory.mktemp("ours-fkc")
    our_state = our_dir / "state"
    phases = _input()
    describe = None
    killed_lines: list[str] = []
    for index, records in enumerate(phases):
        for name in INPUTS:
            produce_strings(kafka_bootstrap, inputs[name], records[name])
        kafka_streams = oracle_harness.BackgroundMain(
            "kstreams.oracle.ChainedForeignKeyJoinExamples",
            [kafka_bootstrap, ks_app, str(ks_state), *(ks_topics[name] for name in (*INPUTS, *OUTPUTS, *VERSIONED_OUTPUTS))])
        try:
            if index == KILLED_PHASE:
                # --parallelism 1: one sub-topology after another (0: c; 1: a and b; 2: u and v).
                killed_lines = run_until_killed(
                    our_dir, "fk_chained_join_topology:chained_fk_join_examples", our_topics, app_id=our_app,
                    bootstrap=kafka_bootstrap, state=our_state, kill_when=lambda line: line.startswith("task 1_0 "),
                    grace_seconds=1, extra_args=("--parallelism", "1"))
            _run_phase(our_topics, our_app, kafka_bootstrap, our_state, spark)
            describe = kafka_streams.report()["describe"]
        finally:
            kafka_streams.close()
    return {"phases": phases, "describe": describe, "ks_topics": ks_topics, "killed_lines": killed_lines,
            "ks": _results(kafka_bootstrap, ks_topics), "ours": _results(kafka_bootstrap, our_topics)}


def _relational_join(phases) -> dict[str, dict]:
    """The outputs' final values from the tables' last states."""
    tables: dict[str, dict] = {name: {} for name in JOINED_INPUTS}
    for records in phases:
        for name in JOINED_INPUTS:
            for key, value, _, _ in records[name]:
                if key is not None:
                    tables[name][key] = value
    a, b, u, v = ({k: x for k, x in tables[name].items() if x is not None} for name in JOINED_INPUTS)

    def user(value):
        return value.split(":")[0] or None

    def text(value):
        return "null" if value is None else value

    ab = {k: f"{a[k]}+{b[k]}" for k in a if k in b}
    uv = {k: f"{u[k]}/{text(v.get(k))}" for k in u}
    uv_kept = {k: f"{u[k]}~{text(v.get(k))}" for k in u}  # the filter drops the rows without u
    return {
        "out-inner": {k: f"{x}@{uv[user(x)]}" for k, x in ab.items() if user(x) in uv},
        "out-left": {k: f"{x}@{text(u.get(user(x)))}" for k, x in ab.items() if not x.startswith("frozen")},
        "out-right": {k: f"{x}#{text(uv_kept.get(user(x)))}" for k, x in a.items()},
    }


def test_describe_of_the_topology_run_is_kafka_streams(runs):
    ours = chained_fk_join_examples(runs["ks_topics"]).build().describe()
    assert str(ours) == runs["describe"]


def test_the_reference_exercises_the_chained_joins(runs):
    expected = runs["ks"]
    assert {name: {key: value for key, (value, _) in expected[name]["final"].items()}
            for name in OUTPUTS} == _relational_join(runs["phases"])
    inner = {key: [value for value, _ in records] for key, records in expected["out-inner"]["sequences"].items()}
    assert sum(len(values) for values in inner.values()) > 15
    assert any(None in values for values in inner.values())  # tombstones through the chained join
    assert any(len(set(values)) > 2 for values in inner.values())  # right updates answered again
    left = [value for values in expected["out-left"]["sequences"].values() for value, _ in values if value]
    assert any(value.endswith("@null") for value in left)
    assert any(value.startswith(":") for value in left)  # a null foreign key, left join
    right = [value for values in expected["out-right"]["sequences"].values() for value, _ in values if value]
    assert any(value.endswith("#null") for value in right) and any("~" in value for value in right)


def test_fk_joins_of_joined_tables_match_kafka_streams_across_a_kill(runs):
    assert runs["killed_lines"] and not any(line.startswith("task 2_") for line in runs["killed_lines"])
    expected, ours = runs["ks"], runs["ours"]
    for name in OUTPUTS:
        assert ours[name]["final"] == expected[name]["final"], name
        for key in sorted(set(expected[name]["sequences"]) | set(ours[name]["sequences"])):
            assert ours[name]["sequences"].get(key) == expected[name]["sequences"].get(key), (name, key)


def _stamp(value: str) -> int:
    return int(value.split("|t")[1].split("|")[0])


def _unforwarded_answers(phases, sequences) -> int:
    """How many answers to u's updates no result carries (puts the versioned store refused): in a right
    phase every c key subscribed to the updated user is answered at the update's time."""
    stamps = defaultdict(set)
    for (name, _), records in sequences.items():
        if name == "out-versioned":
            for key, value, _ in records:
                stamps[key].add(_stamp(value))
    users: dict[str, str] = {}  # c key -> the user it is subscribed to
    unforwarded = 0
    for records in phases:  # u is written in the right phases only, c in the others
        for user, _, _, timestamp in records["u"]:
            unforwarded += sum(1 for key, subscribed in users.items()
                               if subscribed == user and timestamp not in stamps[key])
        for key, value, _, _ in records["c"]:
            if key is not None:
                users[key] = None if value is None else value.split(":")[0] or None
    return unforwarded


def test_the_reference_exercises_the_versioned_join(runs):
    """Kafka Streams' versioned join forwards results out of order (the store's latest version is later
    than the record), tombstones, in both partitions, and drops expired puts (answers not forwarded)."""
    sequences = runs["ks"]["partitions"]
    assert {partition for _, partition in sequences} == {0, 1}
    reads = [value for (name, _), records in sequences.items() if name == "out-versions" for _, value, _ in records]
    latest = [(value, int(value.split("|")[2].split("@")[1].split("~")[0])) for value in reads
              if value.split("|")[2] != "null"]
    assert any(latest_time > _stamp(value) for value, latest_time in latest)  # forwarded not latest
    assert any(value.startswith("null|") for value in reads)  # tombstones
    assert _unforwarded_answers(runs["phases"], sequences) > 0


def test_the_versioned_fk_join_matches_kafka_streams_per_partition_across_a_kill(runs):
    assert any(line.startswith("task 0_1 ") for line in runs["killed_lines"])  # c's tasks ran before the kill
    assert runs["ours"]["partitions"] == runs["ks"]["partitions"]
