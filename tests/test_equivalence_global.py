"""Stream-global-table joins and a timestamp extractor on Spark against Kafka Streams itself.

One topology (tests/global_topology.py; Java twin GlobalExamples): a click stream, read with a
timestamp extractor that takes each click's event time from its value, joined (inner) and
left-joined with a global table of user profiles (each click mapped to its user by a key selector
on its value), and counted in tumbling windows of its event time; and pings (a day old) counted in
windows of the wall-clock time they are read; and orders filtered and upper-cased by PySpark Column
expressions around a left join with the same global table (a Python segment of the Column plan).
Kafka Streams 4.3.1 runs it once,
its global store bootstrapped from the whole profile topic before the clicks are processed.

Our tasks run the twin in a ``dagster-kstreams run`` process, one task after another in batches of
50 records, SIGKILLed once the first task (1_0) has committed its first batch; a rerun in another
process (this one) continues every task from its checkpoint (the window store, the stream time),
reading the global topic again.

Input: profiles on 2 partitions (updated keys: the last value counts; tombstones; a null key,
skipped), written before the clicks; clicks on 2 partitions, ``a*`` keys in partition 0 and ``b*``
in 1, with null keys, null values, clicks whose user maps to null (``-``), users the table never had
or no longer has; Kafka timestamps in order but event times out of order (within and beyond the
windows' grace) and a few negative (those clicks are dropped before any processor sees them). Each
task looks up profiles of both partitions.
Output topics have one partition; a click's value names its family, so each family's records are
one task's output, in its order.

Compared: describe() of the very topology run, and per output and family the whole sequence of
(key, value, timestamp) records, windowed keys with their windows; for the pings, the counts per key
and that every window is one of the hour the run read them in (their timestamps are the wall-clock
time each run read them at).
"""

from __future__ import annotations

import json
import random
import re
import time

import pytest
from pyspark import cloudpickle

import global_topology
import oracle_harness
from equivalence_io import output_topics, produce_strings, written_time
from global_topology import INPUTS, OUTPUTS, global_examples
from killed_runs import kill_and_rerun
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the topology's lambdas by value.
cloudpickle.register_pickle_by_value(global_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000
FAMILIES = ("a", "b")  # the click keys of partition 0, of partition 1


def _input(seed: int = 14) -> dict[str, list[tuple]]:
    """``{topic: [(key, value, partition, timestamp)]}`` in production order."""
    rng = random.Random(seed)
    profiles = []
    for i in range(60):
        user = f"u{rng.randint(0, 9)}"
        profiles.append((user, f"p{i}-{user}", i % PARTITIONS, T0 + i))
    profiles += [("u5", None, 0, T0 + 100), ("u5", None, 1, T0 + 101), ("u7", None, 0, T0 + 102),
                 ("u7", None, 1, T0 + 103), (None, "no-key", 0, T0 + 104), (None, None, 1, T0 + 105)]
    clicks = []
    for i in range(240):
        partition = i % PARTITIONS
        timestamp = T0 + 10_000 + i * 50  # the Kafka timestamp: in order, not the event time
        event_time = T0 + 10_000 + i * 250
        roll = rng.random()
        if roll < 0.03:
            event_time = -7  # dropped: a negative extracted timestamp
        elif roll < 0.18:
            event_time -= rng.randint(100, 6_000)  # out of order, within the grace or beyond
        key = None if rng.random() < 0.05 else f"{FAMILIES[partition]}{rng.randint(1, 4)}"
        roll = rng.random()
        user = "-" if roll < 0.06 else f"u{rng.randint(0, 11)}"  # u10, u11: never in the table
        value = None if rng.random() < 0.05 else f"{user},{FAMILIES[partition]}{i},{event_time}"
        clicks.append((key, value, partition, timestamp))
    pings = [(f"{FAMILIES[i % PARTITIONS]}p{rng.randint(1, 3)}", "ping", i % PARTITIONS, T0 - 86_400_000 + i)
             for i in range(24)]  # a day old: their windows come from the wall clock
    orders = []
    for i in range(80):
        partition = i % PARTITIONS
        roll = rng.random()
        user = "-" if rng.random() < 0.06 else f"u{rng.randint(0, 11)}"
        value = None if roll < 0.05 else f"x{i}" if roll < 0.15 else f"{user},{FAMILIES[partition]}{i}"
        key = None if rng.random() < 0.05 else f"{FAMILIES[partition]}o{rng.randint(1, 4)}"
        orders.append((key, value, partition, T0 + 20_000 + i * 50))
    return {"profiles": profiles, "clicks": clicks, "pings": pings, "orders": orders}


def _wall_clock_counts(bootstrap: str, topics: dict[str, str]) -> tuple[dict[str, int], set[int]]:
    """The pings counted per key (the final count of each of its windows, summed: the hour a run
    falls in is the wall clock's), and the windows' starts."""
    windowed = WindowedSerde(Serdes.String(), 3_600_000)
    finals = {}
    for record in sorted(read_topic(bootstrap, topics["out-wallclock"]), key=lambda r: (r.partition, r.offset)):
        window = windowed.deserialize(record.key)
        finals[(window.key, window.window.start)] = int.from_bytes(record.value, "big", signed=True)
    counts: dict[str, int] = {}
    for (key, _), count in finals.items():
        counts[key] = counts.get(key, 0) + count
    return counts, {start for _, start in finals}


def _results(bootstrap: str, topics: dict[str, str]) -> dict[tuple[str, str], list]:
    """``{(output, family): [(key, value, timestamp)] in offset order}`` (not the wall-clock windows)."""
    results: dict[tuple[str, str], list] = {}
    windowed = WindowedSerde(Serdes.String(), 10_000)
    for record in sorted(read_topic(bootstrap, topics["out-windowed"]), key=lambda r: (r.partition, r.offset)):
        window = windowed.deserialize(record.key)
        count = None if record.value is None else int.from_bytes(record.value, "big", signed=True)
        results.setdefault(("out-windowed", window.key[0]), []).append(
            ((window.key, window.window.start, window.window.end), count, written_time(record)))
    for name in ("out-inner", "out-left", "out-orders"):
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            key = None if record.key is None else record.key.decode()
            value = None if record.value is None else record.value.decode()
            click = value.split("|")[1] if value else "null"
            family = click.split(",")[1][0].lower() if "," in click else "?"  # an order's is upper-cased
            results.setdefault((name, family), []).append((key, value, written_time(record)))
    return results


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"global-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = _input()
    for name in INPUTS:  # the profiles first: both sides start with the whole table
        produce_strings(kafka_bootstrap, inputs[name], records[name])
    topics = output_topics(kafka_admin, unique_topic, inputs, dict.fromkeys(OUTPUTS, 1), "ks")
    started = time.time()
    stdout = oracle_harness.run_main(
        "kstreams.oracle.GlobalExamples",
        [kafka_bootstrap, unique_topic("ks-global"), str(tmp_path_factory.mktemp("ks-global-state")),
         *(topics[name] for name in INPUTS), *(topics[name] for name in OUTPUTS)],
        timeout=600,
    )
    return {"inputs": inputs, "records": records, "describe": json.loads(stdout)["describe"],
            "results": _results(kafka_bootstrap, topics), "started": started,
            "wall_clock": _wall_clock_counts(kafka_bootstrap, topics)}


def test_describe_of_the_topology_run_is_kafka_streams(kafka_streams_run, kafka_bootstrap, unique_topic, spark):
    topics = {**kafka_streams_run["inputs"], "out-inner": "x", "out-left": "y", "out-windowed": "z",
              "out-wallclock": "w", "out-orders": "v"}
    ours = str(global_examples(topics).build().describe())
    expected = kafka_streams_run["describe"]

    def without_output_topics(text: str) -> str:  # the output topics' names differ between the runs
        return re.sub(r"(Sink: \S+ \(topic: )[^)]*\)", r"\1...)", text)

    assert without_output_topics(ours) == without_output_topics(expected)
    assert "for global store (will not generate tasks)" in ours and "Sub-topology: 3" in ours


def test_global_join_killed_part_way_and_rerun_matches_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    expected = kafka_streams_run["results"]
    _assert_reference_exercises_it(expected)

    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, 1))
    started = time.time()
    rerun = kill_and_rerun(tmp_path, global_examples, topics, app_id=unique_topic("spark-global"),
                           bootstrap=kafka_bootstrap, spark=spark, kill_when=lambda line: line.startswith("task 1_0 batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", "50"))
    results = rerun.by_task
    on_partition_0 = sum(1 for record in kafka_streams_run["records"]["clicks"] if record[2] == 0)
    assert set(results) == {"1_0", "1_1", "2_0", "2_1", "3_0", "3_1"}  # the global store makes no task
    assert 0 < results["1_0"].records_in < on_partition_0  # task 1_0 continued from its checkpoint

    ours = _results(kafka_bootstrap, topics)
    assert set(ours) == set(expected)
    for output_and_family, sequence in expected.items():
        assert ours[output_and_family] == sequence, output_and_family

    # Pings: the same counts per key, in windows of the time each run read them (not a day ago).
    expected_counts, their_windows = kafka_streams_run["wall_clock"]
    counts, windows = _wall_clock_counts(kafka_bootstrap, topics)
    assert counts == expected_counts and sum(counts.values()) == 24
    hour = 3_600_000
    assert all((kafka_streams_run["started"] * 1000 // hour) * hour <= start <= time.time() * 1000
               for start in their_windows)
    assert all((started * 1000 // hour) * hour <= start <= time.time() * 1000 for start in windows)


def _assert_reference_exercises_it(expected: dict) -> None:
    """Kafka Streams' output shows what the test is about: both families, matches with profiles of
    both partitions, left-joined misses, windows of the event times (not of the Kafka timestamps),
    clicks with a negative event time nowhere."""
    assert {family for _, family in expected} == set(FAMILIES)
    for family in FAMILIES:
        windows = expected[("out-windowed", family)]
        assert len({key for key, _, _ in windows}) > 20
        assert max(start for (_, start, _), _, _ in windows) > T0 + 10_000 + 240 * 50  # beyond the Kafka timestamps
        inner = [value for _, value, _ in expected[("out-inner", family)]]
        left = [value for _, value, _ in expected[("out-left", family)]]
        assert len(left) > len(inner) > 30
        assert any(value.endswith("|null") for value in left)
        assert not any("u5," in value or "u7," in value for value in inner)  # deleted profiles
    left_all = [value for (name, _), rows in expected.items() if name == "out-left" for _, value, _ in rows]
    assert not any(value.endswith(",-7") or ",-7|" in value for value in left_all)
    inner_all = [value for (name, _), rows in expected.items() if name == "out-inner" for _, value, _ in rows]
    assert any(value.endswith("-u1") for value in inner_all) and any(value.endswith("-u2") for value in inner_all)
    # Orders: filtered (no null, no x...), joined or left with NULL, upper-cased, null keys among them.
    orders = [value for (name, _), rows in expected.items() if name == "out-orders" for _, value, _ in rows]
    assert {family for name, family in expected if name == "out-orders"} == set(FAMILIES) and len(orders) > 40
    assert any(value.endswith("|NULL") for value in orders) and any(value.startswith("NULL|") for value in orders)
    assert any("|-," in value for value in orders) and any("|P" in value for value in orders)
    assert not any("|X" in value for value in orders) and all(value == value.upper() for value in orders)
