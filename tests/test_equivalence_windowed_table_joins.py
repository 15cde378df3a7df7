"""Table-table joins of windowed tables on Spark against Kafka Streams itself.

One topology (tests/windowed_join_topology.py; Java twin WindowedTableJoinExamples): a stream's
count and concatenation in tumbling windows and its concatenation in hopping windows (windows of
one start in both), joined inner, left and outer, the odd counts (a filter) left-joined, and the
tumbling concatenation re-grouped by its key, every store without the record cache. Kafka Streams
reads a windowed table through the aggregation's value getter (``windowStore.fetch(key, window
start)``), through the filter's; the runner reads the window of the key's store slot (key-grouped).
The re-grouping reads each update's old value, which the aggregation then sends. In a sub-topology
of their own (the stream re-keyed), stores keyed by windowed keys after the windowed tables: a
``map_values`` of a count that keeps its own store, outer-joined with a concatenation into a
materialized join, which is re-grouped and left-joined with a hopping concatenation; the runner keeps
them in each window's group of the task's state (task-grouped), and reads the aggregations' windows
in the source key's group. There too, state after a materialized join (the odd counts joined with a
concatenation, tombstones when a count turns even): its stream counted and reduced by windowed key.
And in sub-topology 0, an outer join's result without a store, read through both tables and the
joiner: filtered and joined again with the counts, and re-grouped (its old values read). In a
sub-topology of their own (the stream re-keyed again), sliding windows: a count and a concatenation
joined without a store and outer-joined into a materialized join (task-grouped), the concatenation
re-grouped and left-joined with a count in 500 ms sliding windows whose retention is the least that
covers the 1 s windows' reach. Kafka Streams reads a sliding table as a time-windowed one
(``fetch(key, windowStart)``). In a sub-topology of their own (the stream re-keyed once more), session
windows: a concatenation and a count re-grouped (by key, and by the sessions' sizes through a
``map_values``; the count through a filter by key into a reduce with a subtractor). A record that
merges sessions sends each merged session's delete with its old value, which the re-grouping
subtracts (``KStreamSessionWindowAggregate``, ``KTableRepartitionMap``); nothing else of the session
store is read. There too joins of session tables (``fetchSession``), and joins without a store re-grouped
and joined again (read through both tables): that sub-topology runs key-grouped. In a sub-topology of its
own (the stream re-keyed through ``session-joins``, the session tables again), a materialized join of session
tables (keyed by sessions, read by a processor naming its store, with its timestamps), re-grouped and
joined again: it runs task-grouped. The clean run checks the mode the runner picks for each of the two.

Input on 2 partitions: 6 keys, a record every 150 ms, about one in six out of order (by up to 1.5 s:
some fall in closed windows and are dropped), null values (given to the reducers and the count as
Kafka Streams gives them) and null keys (dropped), no two records with one timestamp.

Compared: describe() of the very topology run; per join output topic and partition the whole
sequence of (key, window start, value, timestamp), and the re-grouped sums' final values with their
timestamps (their repartition topics interleave what the two upstream tasks wrote as they ran, in
Kafka Streams as here); the session re-groupings by key (each group fed by one upstream task: the
key's) per group, the whole sequence of their repartition topics' records (Kafka Streams' Change
bytes, with their timestamps: the session's end; Kafka Streams' purge switched off, the runner's side
what its purge left of each group: the end) and of their outputs, and the re-grouping by size's final
values; on a clean run and on one SIGKILLed once task 0_0 has run, then rerun; and the count's and the
reduce's stores after the materialized join, and the materialized joins of 1 s and 500 ms windows and
of sliding windows, read back from the checkpoints, against what Kafka Streams last sent per window
(per session for the materialized join of session tables). Every record with the timestamp it was
written with; the processor naming the materialized session join's store also forwards the record's
and the store's timestamps in its values.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict

import pytest
from pyspark import cloudpickle

import windowed_join_topology
from equivalence_io import (KafkaStreamsInBackground, final_values_and_times, output_topics, produce_strings,
                            with_unique_timestamps, written_time)
from killed_runs import kill_and_rerun
from windowed_join_topology import INPUTS, OUTPUTS, SESSION_REPARTITIONS, WINDOW_MS, windowed_join_examples
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.processors.changes import ChangedSerde
from dagster_kstreams.spark.strategies import KeyedState, TaskGroupedState, strategy_for
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology.serdes import Serdes

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(windowed_join_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) * 1000 // 1000 * 1000
KEYS = tuple(f"k{i}" for i in range(6))
REGROUPED = ("out-regrouped", "out-joined-regrouped", "out-pair-regrouped", "out-sliding-regrouped",
             "out-session-sizes")
# Session re-groupings by key: each group is fed by the upstream task of its key, so its sequence is one.
SESSION_SEQUENCES = ("out-session-regrouped", "out-long-sessions", "out-session-joined-regrouped",
                     "out-session-pair-regrouped")
# Joins of session tables: keys in Kafka Streams' session-windowed format (the key, the end, the start).
SESSION_JOINED = ("out-session-inner", "out-session-left", "out-session-outer", "out-session-materialized",
                  "out-session-rejoined", "out-session-pair-joined")
# The stores after the materialized join of odd counts, read back from the checkpoints: {store: output}.
STORES_READ_BACK = {"odd-counts": "out-odd-counts", "odd-reduced": "out-odd-reduced", "mixed": "out-mixed",
                    "slide-joined": "out-sliding-outer"}
JOINED = tuple(name for name in OUTPUTS if name not in REGROUPED + SESSION_SEQUENCES + SESSION_JOINED)
CHANGES = ChangedSerde(Serdes.String())


# After the random records, a session of two records (80 s, 80.2 s) in both session stores (gaps 500 and
# 300 ms); a record of another key of its partition at 81.1 s, past which the 300 ms store (retention 800 ms)
# no longer returns the session; then one at 80.1 s, inside it: the 500 ms concatenation deletes and puts
# the session again (not late: 80.2 s >= 81.1 s - 1 s), its left join reads nothing on the right.
EXPIRED_SESSION = (KEYS[0], (80_000, 80_200), "x0,x1,x3%null")


def _expiring_session() -> list[tuple]:
    key, (start, end), _ = EXPIRED_SESSION
    partition = default_partition(key.encode(), PARTITIONS)
    (other, *_) = [k for k in KEYS[1:] if default_partition(k.encode(), PARTITIONS) == partition]
    return [(key, "x0", partition, T0 + start), (key, "x1", partition, T0 + end),
            (other, "x2", partition, T0 + 81_100), (key, "x3", partition, T0 + 80_100)]


def _input(seed: int = 19) -> dict[str, list[tuple]]:
    """``{"s": [(key, value, partition, timestamp)]}`` in production order."""
    rng = random.Random(seed)
    records = []
    for i in range(500):
        timestamp = T0 + i * 150
        if rng.random() < 1 / 6:
            timestamp -= rng.randint(1, 1500)
        key = None if rng.random() < 0.02 else rng.choice(KEYS)
        value = None if rng.random() < 0.05 else f"v{i}"
        partition = rng.randrange(PARTITIONS) if key is None else default_partition(key.encode(), PARTITIONS)
        records.append((key, value, partition, timestamp))
    (unique,) = with_unique_timestamps([{"s": records + _expiring_session()}], INPUTS)
    return unique


def _produce(bootstrap: str, topics: dict[str, str], records: dict[str, list[tuple]]) -> None:
    produce_strings(bootstrap, topics["s"], records["s"])


def _per_group(records) -> dict[str, list[tuple]]:
    """``{key: [(partition, raw value, timestamp - T0)] in offset order}``: the timestamp a record was
    written with."""
    groups: dict = defaultdict(list)
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        groups[record.key.decode()].append((record.partition, record.value, written_time(record) - T0))
    return dict(groups)


def _results(bootstrap: str, topics: dict[str, str], app_id: str) -> dict:
    """``{(output, partition): [(key, window start, value, timestamp - T0)] in offset order}`` (a session's
    window: (start, end)), the re-groupings' final ``{key: (value, timestamp)}``, and per group the session
    re-groupings' outputs and repartition records (:func:`_per_group`; outputs' values decoded).
    Timestamps: the ones the records were written with."""
    results: dict = {name: final_values_and_times(read_topic(bootstrap, topics[name]), bytes.decode, bytes.decode)
                     for name in REGROUPED}
    for name in SESSION_SEQUENCES:
        results[name] = {key: [(partition, None if value is None else value.decode(), timestamp)
                               for partition, value, timestamp in updates]
                         for key, updates in _per_group(read_topic(bootstrap, topics[name])).items()}
    for name in SESSION_REPARTITIONS:
        results[name] = _per_group(read_topic(bootstrap, f"{app_id}-{name}-repartition"))
    for name in SESSION_JOINED:
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            key, end, start = record.key[:-16].decode(), record.key[-16:-8], record.key[-8:]
            window = (int.from_bytes(start, "big") - T0, int.from_bytes(end, "big") - T0)
            value = None if record.value is None else record.value.decode()
            results.setdefault((name, record.partition), []).append((key, window, value, written_time(record) - T0))
    for name in JOINED:
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            key, start = record.key[:-8].decode(), int.from_bytes(record.key[-8:], "big")
            value = None if record.value is None else record.value.decode()
            results.setdefault((name, record.partition), []).append((key, start - T0, value, written_time(record) - T0))
    return results


@pytest.fixture(scope="module")
def records():
    return _input()


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory, records):
    app_id = unique_topic("ks-windowed-joins")
    run = KafkaStreamsInBackground(
        "kstreams.oracle.WindowedTableJoinExamples", "windowed-joins", kafka_bootstrap, kafka_admin, unique_topic,
        tmp_path_factory.mktemp("ks-windowed-joins-state"), INPUTS, OUTPUTS, PARTITIONS,
        lambda inputs: _produce(kafka_bootstrap, inputs, records),
        lambda bootstrap, topics: _results(bootstrap, topics, app_id), app_id=app_id)
    yield run
    run.close()


def _inputs(kafka_admin, unique_topic, kafka_bootstrap, records, prefix: str) -> dict[str, str]:
    inputs = {name: unique_topic(f"{prefix}-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    _produce(kafka_bootstrap, inputs, records)
    return output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, PARTITIONS), prefix)


def _assert_reference_exercises_it(expected: dict) -> None:
    assert set(expected) == {(name, p) for name in JOINED + SESSION_JOINED for p in range(PARTITIONS)} | set(
        REGROUPED) | set(SESSION_SEQUENCES) | set(SESSION_REPARTITIONS)
    assert all(set(expected[name]) == set(KEYS) for name in REGROUPED if name != "out-session-sizes")
    _assert_sessions_merge(expected)
    assert all(int(v) > 0 for v, _ in expected["out-regrouped"].values())
    values = {name: [v for p in range(PARTITIONS) for _, _, v, _ in expected[name, p]] for name in JOINED}
    assert all(len(found) > 40 for found in values.values()), {name: len(found) for name, found in values.items()}
    assert any(v.endswith("<null") for v in values["out-left"])  # a window of null values only: counted
    assert any(v.startswith("null~") for v in values["out-outer"])  # a hopping window of no tumbling start
    assert any(v.endswith("~null") for v in values["out-outer"])
    assert any(v.endswith("<null") for v in values["out-filtered"])  # an odd count, no hopping window yet
    assert any(v is None for v in values["out-filtered"])  # an odd count turned even: the filter's tombstone
    assert all(v is None or int(v.split("<")[0]) % 2 == 1 for v in values["out-filtered"])
    assert any(v.startswith("null^") for v in values["out-materialized"])  # a window of null values only
    assert any(v is not None and not v.startswith("null^") for v in values["out-materialized"])
    assert any(v.endswith("@null") for v in values["out-rejoined"] if v is not None)
    assert any(";" in v.split("@")[1] for v in values["out-rejoined"] if v is not None)
    # the joins' result without a store, read through both tables: a hopping value joined, and none
    assert any(v.endswith("~null#" + v.split("#")[1]) for v in values["out-pair-joined"] if v is not None)
    assert any(";" in v.split("~")[1] for v in values["out-pair-joined"] if v is not None)
    assert any(int(v) > 0 for v, _ in expected["out-pair-regrouped"].values())
    # state after the materialized join: counted and reduced by window, its tombstones skipped
    assert any(v != "1" for v in values["out-odd-counts"]) and None not in values["out-odd-reduced"]
    assert any("+" in v for v in values["out-odd-reduced"])
    # the materialized join of 1 s and 500 ms windows: a 1 s window with no 500 ms one of its start, and with
    mixed = values["out-mixed"]
    assert any(v.endswith("%null") for v in mixed) and not all(v.endswith("%null") for v in mixed)
    # sliding windows: both tables hold the same windows (null values skipped), the count's updated first for
    # a record (the concatenation's window it reads has one value less, or is not there yet), then the other's
    inner = [v.split("|") for v in values["out-sliding-inner"]]  # count|values
    assert {int(n) - len(joined.split(",")) for n, joined in inner} == {0, 1}
    assert {n for n, _ in inner} >= {"1", "2", "3"}
    outer = [v.split("~") for v in values["out-sliding-outer"]]  # values~count
    assert {-1 if joined == "null" else int(n) - len(joined.split(",")) for joined, n in outer} == {-1, 0, 1}
    assert any(int(v) > 0 for v, _ in expected["out-sliding-regrouped"].values())
    left = values["out-sliding-left"]  # a 500 ms window of the start, and none
    assert any(v.endswith("%null") for v in left) and not all(v.endswith("%null") for v in left)
    starts = {start % 1000 for name in JOINED if name != "out-outer" and "sliding" not in name
              for p in range(PARTITIONS) for _, start, _, _ in expected[name, p]}
    assert starts == {0}  # tumbling starts only, except the outer join's hopping ones
    assert any(start % 1000 == 500 for p in range(PARTITIONS) for _, start, _, _ in expected["out-outer", p])


def _assert_sessions_merge(expected: dict) -> None:
    """Sessions merged: the re-groupings got deletes of merged sessions (subtractions, flag 0 in Kafka Streams'
    Change format), groups of one partition each; sessions of one record merged away (a size's count fell)."""
    for name in SESSION_REPARTITIONS:
        changes = [CHANGES.deserialize(value) for updates in expected[name].values() for _, value, _ in updates]
        assert sum(change.new is None for change in changes) > 10 and sum(change.old is None for change in changes) > 10
        assert all(len({partition for partition, _, _ in updates}) == 1 for updates in expected[name].values())
    assert set(expected["out-session-regrouped"]) == set(KEYS) and set(expected["out-long-sessions"]) <= set(KEYS)
    assert {"1", "2", "3"} <= set(expected["out-session-sizes"])
    joined = {name: [(window, v) for p in range(PARTITIONS) for _, window, v, _ in expected[name, p]]
              for name in SESSION_JOINED}
    assert all(len(found) > 40 for found in joined.values()), {name: len(found) for name, found in joined.items()}
    assert any(v is None for _, v in joined["out-session-inner"])  # a merged session's delete: a tombstone
    assert any(start < end for (start, end), _ in joined["out-session-inner"])  # sessions of several records
    left = [v for _, v in joined["out-session-left"] if v is not None]
    assert any(v.endswith("%null") for v in left) and not all(v.endswith("%null") for v in left)
    outer = [v for _, v in joined["out-session-outer"] if v is not None]
    assert any(v.startswith("null~") for v in outer) and any(not v.startswith("null~") for v in outer)
    _assert_session_joins_chain(joined)
    key, window, value = EXPIRED_SESSION  # the session the 300 ms store no longer returns: joined with nothing
    assert [v for p in range(PARTITIONS) for k, w, v, _ in expected["out-session-left", p] if (k, w) == (key, window)] \
        == ["x0,x1%null", "x0,x1%2", None, value]


def _assert_session_joins_chain(joined: dict) -> None:
    """The materialized join's store holds each update as forwarded, stamped with the session's end, and
    loses a session to its tombstone; joined again, it and a join without a store meet sessions the other
    table has not or no longer has, and deletes."""
    held = [v.split("|") for _, v in joined["out-session-materialized"]]
    assert all(stored == ("null" if value == "null" else f"{value}@{stamp[1:]}") for value, stamp, stored in held)
    assert all(int(stamp[1:]) - T0 == end
               for ((_, end), _), (_, stamp, _) in zip(joined["out-session-materialized"], held))
    assert any(value == "null" for value, _, _ in held) and any(value.startswith("null^") for value, _, _ in held)
    rejoined = [v for _, v in joined["out-session-rejoined"]]
    assert None in rejoined and any(v.endswith("@null") for v in rejoined if v) and any(
        not v.endswith("@null") for v in rejoined if v)
    pair = [v for _, v in joined["out-session-pair-joined"]]
    assert None in pair and any(v.startswith("null#") for v in pair if v)
    assert any(v.endswith("#null") for v in pair if v)


def _assert_session_store_read_back(runner: TaskRunner, expected: dict) -> None:
    """The materialized join of session tables holds, per session, what Kafka Streams last sent for it."""
    last = {(key, window): value.split("|")[0] for p in range(PARTITIONS)
            for key, window, value, _ in expected["out-session-materialized", p]}
    content = runner.read_store("session-joined")
    assert {(w.key, (w.window.start - T0, w.window.end - T0)): str(value) for w, value in content.items()} == {
        session: value for session, value in last.items() if value != "null"}


def _assert_same(actual: dict, expected: dict) -> None:
    for key in sorted(expected, key=str):
        if key in SESSION_REPARTITIONS:
            # The runner purges what a task consumed of a repartition topic every 30 s, as Kafka Streams does
            # (switched off in its twin, so that its side is whole): what is left of a group is its end.
            assert set(actual[key]) <= set(expected[key]), key
            assert all(records == expected[key][group][len(expected[key][group]) - len(records):]
                       for group, records in actual[key].items()), key
        else:
            assert actual.get(key) == expected[key], key
    assert set(actual) == set(expected)


def _assert_stores_read_back(runner: TaskRunner, expected: dict) -> None:
    """Each store after the materialized joins holds, per window start, what it last sent in Kafka Streams."""
    for store, output in STORES_READ_BACK.items():
        last = {(key, start): value for p in range(PARTITIONS) for key, start, value, _ in expected[output, p]}
        content = runner.read_store(store)
        assert {(w.key, w.window.start - T0): str(value) for w, value in content.items()} == last, store
        assert all(w.window.end - w.window.start == WINDOW_MS for w in content), store


def _assert_session_modes(runner: TaskRunner, app_id: str) -> None:
    """The session sub-topology (its joins and re-groupings without a store) runs key-grouped, the materialized
    join's own (its store keyed by sessions, a processor naming it) task-grouped: both modes compared."""
    strategies = {topic: type(strategy_for(runner.compiled.program(sub)))
                  for sub in runner.compiled.application.subtopology_ids
                  for topic in runner.compiled.application.source_topics(sub)}
    assert strategies[f"{app_id}-sessioned-repartition"] is KeyedState
    assert strategies[f"{app_id}-session-joins-repartition"] is TaskGroupedState


def test_windowed_table_joins_in_a_clean_run_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, records, spark, tmp_path
):
    topics = _inputs(kafka_admin, unique_topic, kafka_bootstrap, records, "clean-wj")
    app_id = unique_topic("clean-wj")
    runner = TaskRunner(windowed_join_examples(topics), app_id, kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    runner.run_all()
    expected = kafka_streams_run.result()["results"]
    _assert_reference_exercises_it(expected)
    _assert_same(_results(kafka_bootstrap, topics, app_id), expected)
    _assert_stores_read_back(runner, expected)
    _assert_session_store_read_back(runner, expected)
    _assert_session_modes(runner, app_id)


def test_windowed_table_joins_killed_part_way_and_rerun_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, kafka_streams_run, records, spark, tmp_path
):
    topics = _inputs(kafka_admin, unique_topic, kafka_bootstrap, records, "killed-wj")
    app_id = unique_topic("killed-wj")
    rerun = kill_and_rerun(tmp_path, windowed_join_examples, topics, app_id=app_id,
                           bootstrap=kafka_bootstrap, spark=spark,
                           kill_when=lambda line: line.startswith("task 0_0 "))
    assert not any(line.startswith("task 0_1 ") for line in rerun.killed_lines), rerun.killed_lines
    expected = kafka_streams_run.result()["results"]
    _assert_same(_results(kafka_bootstrap, topics, app_id), expected)
    _assert_stores_read_back(rerun.runner, expected)
    _assert_session_store_read_back(rerun.runner, expected)


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run):
    ours = windowed_join_examples(kafka_streams_run.topics).build().describe()
    assert str(ours) == kafka_streams_run.result()["describe"]
