"""User processors reading and correcting a windowed count's store, a session count's and a sliding
count's, on Spark against Kafka Streams itself (tests/dsl_window_store_processor_topology.py; Java twin
DslWindowStoreProcessorExamples). Kafka Streams 4.3.1 runs it once.

``WindowCorrector`` reads the uncached ``window-counts`` store of the hopping-window count it follows,
an in-memory one (``Stores.in_memory_window_store``: ranges by start, then key), (a window's
``ValueAndTimestamp``, the key's windows around it, every key's windows within 5 s of its start),
corrects a window's count of 3 to 10 and deletes a count of 13 or more; the window's count goes on
from what it wrote (and stamps an update with the larger of the record's and the stored timestamp).
``SessionCorrector`` reads the uncached ``session-counts`` store of a session count of the same events
(the session, the key's sessions around it, every key's sessions backward) on every update, merged-away
sessions' tombstones included; it corrects a count of 3 to 10, puts a session of 100 after a count of 2
(keys ending in 1; the key's next record may merge with it) and removes a count of 13 or more; the key's next records
merge with what it wrote.
``SlidingCorrector`` reads the uncached ``sliding-counts`` store of a sliding count (1 s, grace 2 s,
retention 4 s) of the same events on every update: the window, the key's windows around it backward,
the keys' windows back to the retention's edge, every key's windows around it backward, and at times
every window (``all``, ``backward_all``); it corrects a count of 3 to 10, deletes a count of 11 or more
and puts a window of 100 3 s ahead of a count of 2 (keys ending in 2), which moves the store's time:
the windows it hides are gone for the aggregation too. The key's next records aggregate onto what it
wrote, and the windows they create copy it.

The session and sliding counts run a second time over stores kept in memory (``with_store_type(
"in_memory")``, ``Stores.in_memory_window_store``): their reads come by session end, then key, then start
descending (``InMemorySessionStore``), and by window start, then key (``InMemoryWindowStore``); the
session store's ``find_sessions(earliest_end, latest_end)`` is read too (that store only).

``ClosedInMemoryWriter`` writes and reads, beside them on the events (between their emits), the stores of
a hopping count and of a sliding count emitting on window close from stores kept in memory (a supplier's
``Stores.in_memory_window_store`` kept 15 s, so windows start at its retention's edge;
``with_store_type("in_memory")``): overwrites, deletes, new keys' windows, writes into emitted windows and
a put ahead that moves the store's time; each emitted window goes out with its count and timestamp
(``ClosedStamp``). It does the same beside a hopping and a sliding count emitting on window close from timestamped
RocksDB suppliers' stores (``Stores.persistent_timestamped_window_store``, kept as long: Kafka Streams keeps the
supplier's segmented store, which cuts as the in-memory one and reads by segment of 60 s, then key, then start). ``ClosedInMemorySessionWriter`` does the same beside a session count emitting on window
close from a store kept in memory 4 s (``InMemorySessionStore``): overwrites of the key's current session (the
count goes on from it), removes of earlier sessions and of sessions ahead that are not stored (its ``remove``
leaves the store's time), deletes ahead (a ``put`` of None moves it, cutting closed sessions the emit then no
longer finds), new keys' sessions, writes of closed sessions and a put ahead; read with ``fetch_session``,
``find_sessions`` of a key and of two ends (every key's, by end, then key, then start descending) and ``fetch``
of a key range. Kafka Streams checks for closed windows after every record (emit interval 0, the runner's).

Input (2 partitions, 3 keys each): timestamps advancing about 100 ms a record, a fifth of them out
of order by up to 12 s (within the 4 s grace, and beyond it: dropped from the closed windows), null
keys and null values. Compared: describe(), every task's whole output sequence of (key, value,
timestamp) records (values carry the record timestamps, the stored ones, and the store's ranges in its order, so retention is read at its
edge; the emitted windows' timestamps), and the stores as interactive queries read them at the end.
Once on a clean run, once killed part-way (the second task after its first batch of 120 records) and
rerun from the checkpoints.
"""

from __future__ import annotations

import json
import random
import time

import pytest
from pyspark import cloudpickle

import dsl_window_store_processor_topology
from dsl_window_store_processor_topology import dsl_window_store_processor_examples
from equivalence_io import output_topics, produce_strings, run_kafka_streams, written_time
from killed_runs import kill_and_rerun
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the processor by value.
cloudpickle.register_pickle_by_value(dsl_window_store_processor_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute: a window start
OUTPUTS = {"out": 1, "sessions-out": 1, "sliding-out": 1, "sessions-in-memory-out": 1, "sliding-in-memory-out": 1,
           "closed-in-memory-out": 1, "closed-in-memory-reads": 1, "closed-sliding-in-memory-out": 1,
           "closed-sliding-in-memory-reads": 1, "closed-sessions-in-memory-out": 1,
           "closed-sessions-in-memory-reads": 1, "closed-rocksdb-out": 1, "closed-rocksdb-reads": 1,
           "closed-sliding-rocksdb-out": 1, "closed-sliding-rocksdb-reads": 1}
# the counts emitting on window close from stores kept in memory, then from RocksDB suppliers' stores: (their
# outputs' names, their store's)
CLOSED = (("closed-in-memory", "closed-counts-in-memory"), ("closed-sliding-in-memory", "closed-sliding-in-memory"),
          ("closed-rocksdb", "closed-counts-rocksdb"), ("closed-sliding-rocksdb", "closed-sliding-rocksdb"))
CLOSED_SESSIONS = "closed-sessions-in-memory"  # the session count's outputs' names and its store's


def _events(seed: int = 41) -> list[tuple]:
    """``[(key, value, partition, timestamp)]``: 700 records over about 35 s per partition."""
    rng = random.Random(seed)
    events = []
    for i in range(700):
        partition = i % PARTITIONS
        timestamp = T0 + i * 50 + rng.randint(0, 40)
        if rng.random() < 0.2:
            timestamp = max(T0, timestamp - rng.randint(200, 12_000))  # within the grace, or beyond it
        key = None if rng.random() < 0.03 else f"{'ab'[partition]}{rng.randint(1, 3)}"
        value = None if rng.random() < 0.05 else f"v{i}"
        events.append((key, value, partition, timestamp))
    return events


def _results(bootstrap: str, topic: str) -> dict[str, list]:
    """``{task tag: [(key, value, timestamp)]}`` in offset order."""
    results: dict[str, list] = {}
    for record in sorted(read_topic(bootstrap, topic), key=lambda r: (r.partition, r.offset)):
        value = record.value.decode()
        results.setdefault(value.split("|")[0], []).append((record.key.decode(), value, written_time(record)))
    return results


def _closed_results(bootstrap: str, topics: dict[str, str]) -> dict[str, dict]:
    """What the counts emitting on window close forwarded (timestamps in the values) and their processors read."""
    return {f"{name}{suffix}": _results(bootstrap, topics[f"{name}{suffix}"])
            for name in (*(name for name, _ in CLOSED), CLOSED_SESSIONS) for suffix in ("-out", "-reads")}


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {"events": unique_topic("dsl-window-papi-events")}
    kafka_admin.create_topics({inputs["events"]: PARTITIONS})
    produce_strings(kafka_bootstrap, inputs["events"], _events())
    topics, stdout = run_kafka_streams("kstreams.oracle.DslWindowStoreProcessorExamples", "dsl-window-papi",
                                       kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory, inputs, OUTPUTS)
    printed = json.loads(stdout)
    return {"inputs": inputs, "describe": printed["describe"], "results": _results(kafka_bootstrap, topics["out"]),
            "sessions": _results(kafka_bootstrap, topics["sessions-out"]), "store": printed["window-counts"],
            "session_store": printed["session-counts"], "sliding": _results(kafka_bootstrap, topics["sliding-out"]),
            "sliding_store": printed["sliding-counts"], "topics": topics,
            "sessions_in_memory": _results(kafka_bootstrap, topics["sessions-in-memory-out"]),
            "session_store_in_memory": printed["session-counts-in-memory"],
            "sliding_in_memory": _results(kafka_bootstrap, topics["sliding-in-memory-out"]),
            "sliding_store_in_memory": printed["sliding-counts-in-memory"],
            "closed": _closed_results(kafka_bootstrap, topics),
            "closed_stores": {store: printed[store] for _, store in CLOSED},
            "closed_session_store": printed[CLOSED_SESSIONS]}


def test_describe_is_kafka_streams(kafka_streams_run):
    ours = dsl_window_store_processor_examples(kafka_streams_run["topics"]).build().describe()
    assert str(ours) == kafka_streams_run["describe"]


def test_clean_run_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                         kafka_streams_run):
    _assert_reference_exercises_it(kafka_streams_run)
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS)
    runner = TaskRunner(dsl_window_store_processor_examples(topics), unique_topic("spark-dsl-window-papi"),
                        kafka_bootstrap, state_location=str(tmp_path / "state"), spark=spark)
    assert {r.task_id for r in runner.run_all()} == {"0_0", "0_1"}
    _assert_matches(kafka_bootstrap, topics, runner, kafka_streams_run)


def test_killed_part_way_and_rerun_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                                         kafka_streams_run):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS)
    rerun = kill_and_rerun(tmp_path, dsl_window_store_processor_examples, topics,
                           app_id=unique_topic("spark-dsl-window-papi-k"), bootstrap=kafka_bootstrap, spark=spark,
                           kill_when=lambda line: line.startswith("task 0_1 batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", "120"))
    on_partition_1 = sum(1 for record in _events() if record[2] == 1)
    assert 0 < rerun.by_task["0_1"].records_in < on_partition_1  # task 0_1 continued from its checkpoint
    _assert_matches(kafka_bootstrap, topics, rerun.runner, kafka_streams_run)


def _assert_matches(bootstrap: str, topics: dict[str, str], runner: TaskRunner, reference: dict) -> None:
    ours = _results(bootstrap, topics["out"])
    assert set(ours) == set(reference["results"])
    for tag, sequence in reference["results"].items():
        assert ours[tag] == sequence, tag
    store = {f"{windowed.key}@{windowed.window.start}": str(count)
             for windowed, count in runner.read_store("window-counts").items()}
    assert store == reference["store"]
    for suffix, store_suffix in (("", ""), ("_in_memory", "-in-memory")):
        ours = _results(bootstrap, topics[f"sessions{store_suffix}-out"])
        assert set(ours) == set(reference[f"sessions{suffix}"])
        for tag, sequence in reference[f"sessions{suffix}"].items():
            assert ours[tag] == sequence, f"sessions{suffix} {tag}"
        sessions = {f"{windowed.key}@{windowed.window.start}-{windowed.window.end}": str(count)
                    for windowed, count in runner.read_store(f"session-counts{store_suffix}").items()}
        assert sessions == reference[f"session_store{suffix}"]
        ours = _results(bootstrap, topics[f"sliding{store_suffix}-out"])
        assert set(ours) == set(reference[f"sliding{suffix}"])
        for tag, sequence in reference[f"sliding{suffix}"].items():
            assert ours[tag] == sequence, f"sliding{suffix} {tag}"
        store = {f"{windowed.key}@{windowed.window.start}": str(count)
                 for windowed, count in runner.read_store(f"sliding-counts{store_suffix}").items()}
        assert store == reference[f"sliding_store{suffix}"]
    closed = _closed_results(bootstrap, topics)
    for output, sequences in reference["closed"].items():
        assert set(closed[output]) == set(sequences), output
        for tag, sequence in sequences.items():
            assert closed[output][tag] == sequence, f"{output} {tag}"
    for _, store_name in CLOSED:
        store = {f"{windowed.key}@{windowed.window.start}": str(count)
                 for windowed, count in runner.read_store(store_name).items()}
        assert store == reference["closed_stores"][store_name], store_name
    sessions = {f"{windowed.key}@{windowed.window.start}-{windowed.window.end}": str(count)
                for windowed, count in runner.read_store(CLOSED_SESSIONS).items()}
    assert sessions == reference["closed_session_store"]


def _assert_reference_exercises_it(reference: dict) -> None:
    """Kafka Streams' output shows what the test is about, in both tasks: windows corrected to 10 and
    counting on from there, windows deleted and counting again from 1, ranges of several windows,
    several keys' windows of one start, and records dropped from closed windows (fewer updates than
    two windows per keyed record)."""
    for tag in ("p0", "p1"):
        values = [value.split("|") for _, value, _ in reference["results"][tag]]
        assert any(parts[2] == "11" and parts[4].startswith("11@") for parts in values)
        assert sum(1 for parts in values if parts[2] == "13") >= 2
        assert any(parts[5].count("=") >= 3 for parts in values)
        assert any(parts[6].count("=") >= 3 for parts in values)
    keyed = sum(1 for key, *_ in _events() if key is not None)
    assert sum(len(sequence) for sequence in reference["results"].values()) < 2 * keyed
    assert reference["store"]
    for suffix in ("", "_in_memory"):
        _assert_reference_exercises_sessions(reference, suffix)
        _assert_reference_exercises_sliding(reference, suffix)
    _assert_in_memory_orders_differ(reference)
    _assert_reference_exercises_closed(reference)


def _assert_reference_exercises_sessions(reference: dict, suffix: str) -> None:
    """The session count's side, in both tasks: counts corrected to 10 going on at 11, sessions merged
    with the one the processor put (a count past 100), sessions removed at 13, and tombstones of
    merged-away sessions (records merging two sessions or more: two tombstones in a row)."""
    for tag in ("p0", "p1"):
        values = [value.split("|") for _, value, _ in reference[f"sessions{suffix}"][tag]]
        counts = [parts[2] for parts in values]
        assert "11" in counts and any(count.isdigit() and int(count) > 100 for count in counts)
        assert counts.count("13") >= 2 and counts.count("null") >= 10 and reference[f"session_store{suffix}"]
        assert any(count == "null" and following != "null" and previous == "null"
                   for previous, count, following in zip(counts, counts[1:], counts[2:]))


def _assert_reference_exercises_sliding(reference: dict, suffix: str) -> None:
    """The sliding count's side, in both tasks: windows counting on from the processor's 10 (11, then
    deleted), windows aggregating onto a window put ahead (past 100), windows the record just put that
    the store no longer returns (the put ahead moved its time: stored ``null``), key ranges reaching
    several keys, and both listings of every window."""
    for tag in ("p0", "p1"):
        values = [value.split("|") for _, value, _ in reference[f"sliding{suffix}"][tag]]
        counts = [int(parts[2]) for parts in values]
        assert 11 in counts and any(count > 100 for count in counts)
        assert sum(1 for parts in values if parts[4] == "null") >= 2
        assert any(len({entry.split("@")[0] for entry in parts[6].split(",")}) >= 2 for parts in values)
        assert any(parts[2] == "2" and parts[8].count("=") >= 5 for parts in values)  # all()
        assert any(parts[2] == "1" and parts[8].count("=") >= 5 for parts in values)  # backward_all()
    assert reference[f"sliding_store{suffix}"]


def _assert_in_memory_orders_differ(reference: dict) -> None:
    """The stores kept in memory list several keys in an order of their own: a listing of every key's
    sessions (or windows) in which a key comes back after another (by end or start first, not by key),
    and that listing reached only through the in-memory session store (``find_sessions`` of two times)."""
    def keys_interleave(listing: str) -> bool:
        keys = [entry.split("@")[0] for entry in listing.split(",") if entry]
        runs = [key for i, key in enumerate(keys) if i == 0 or keys[i - 1] != key]
        return len(runs) > len(set(runs))

    for tag in ("p0", "p1"):
        sessions = [value.split("|") for _, value, _ in reference["sessions_in_memory"][tag]]
        assert any(keys_interleave(parts[6]) for parts in sessions)  # backward_fetch(key_from, key_to)
        assert any(keys_interleave(parts[7]) for parts in sessions)  # find_sessions(earliest_end, latest_end)
        sliding = [value.split("|") for _, value, _ in reference["sliding_in_memory"][tag]]
        assert any(keys_interleave(parts[8]) for parts in sliding if parts[8])  # all() / backward_all()


def _assert_reference_exercises_closed(reference: dict) -> None:
    """The counts emitting on window close from stores kept in memory, in both tasks: windows emitted
    with the processor's value and timestamp (1000 + i, stamped 3 ms after its event) or counting on from
    it, windows of keys only the processor put (``<family>9``), and reads that found the window gone. The
    session count's likewise (sessions ``key@start-end``; its reads' ``fetch_session`` of the record's instant)."""
    for name in (*(name for name, _ in CLOSED), CLOSED_SESSIONS):
        for tag in ("p0", "p1"):
            emitted = reference["closed"][f"{name}-out"][tag]
            counts = [int(value.split("|")[1]) for _, value, _ in emitted]
            assert any(count > 1000 for count in counts) and any(count < 1000 for count in counts), name
            assert any(key.split("@")[0].endswith("9") for key, _, _ in emitted), name
            reads = [value.split("|") for _, value, _ in reference["closed"][f"{name}-reads"][tag]]
            assert any(parts[2] == "null" for parts in reads) and any(parts[2] != "null" for parts in reads), name
            if "rocksdb" in name:  # some all() listing by key, then start (the segmented store), not by start
                assert any(_starts(parts[6]) != sorted(_starts(parts[6])) for parts in reads), name


def _starts(listing: str) -> list[int]:
    return [int(entry.split("@")[1]) for entry in listing.split(",") if entry]
