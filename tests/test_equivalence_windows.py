"""Windowed aggregations on Spark against Kafka Streams itself: same input, same results.

One topology (tests/oracle WindowExamples.java; Python twin window_examples) holds a tumbling
count with grace, a hopping aggregate without grace (a record may be late for one of its
windows only), a count over TimeWindows after group_by (a repartition topic: record timestamps
travel in a header), a hopping count whose store's supplier keeps less than its windows stay open
(a late record finds windows gone: they count from nothing again; the puts they drop are counted),
a hopping count from a plain RocksDB supplier's store (it keeps no timestamps: each update, its
timestamp in its value, is stamped with its record's) and a sliding-window reduce on a second input. Both inputs have two
partitions; records come out of order (within grace and far beyond it), with null keys and
null values. Kafka Streams 4.3.1 runs it once; our tasks run the twin.

Compared: the last value per windowed key of every output topic (read with Kafka's
time-windowed key format) with its record's timestamp, every update of the outputs without a record
cache with its timestamp, every window store
(but the supplier's), and the late records: ours counted per
(record, closed window), and per put a store drops, equal Kafka Streams' dropped-records-total minus the records it skipped
for a null key (each time window aggregation of the events) or a null key or value (sliding).
"""

from __future__ import annotations

import json
import random
import sys
import time
from datetime import timedelta

import pytest
from pyspark import cloudpickle

from equivalence_io import (KafkaStreamsReference, StampValues, java_string, output_topics, produce_strings,
                            start_kafka_streams, written_time)
from killed_runs import kill_and_rerun
from dagster_kstreams.kafka.records import final_values, read_topic
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology import Stores, StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import SlidingWindows, TimeWindows

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute
STORES = ("tumbling-count", "hopping-agg", "sliding-reduce", "regrouped-count", "uncached-count")
INPUTS = ("events", "slides")
OUTPUTS = {  # name: (window size, value decoder)
    "out-tumbling": (10_000, "long"), "out-hopping": (10_000, "string"),
    "out-sliding": (5_000, "string"), "out-regrouped": (20_000, "long"), "out-uncached": (10_000, "long"),
    "out-short-kept": (10_000, "long"), "out-plain-kept": (10_000, "string"),  # its updates stamped "count|t..."
}
EVERY_UPDATE = ("out-uncached", "out-short-kept", "out-plain-kept")  # the outputs without a record cache


def window_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The Python twin of WindowExamples.windowExamples (Java); keep the two in step."""
    builder = StreamsBuilder()
    events = builder.stream(topics["events"])
    windowed = lambda size: Produced.with_(WindowedSerde(Serdes.String(), size), Serdes.Long())  # noqa: E731
    events.group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=5))) \
        .count(Materialized.as_("tumbling-count")).to_stream().to(topics["out-tumbling"], windowed(10_000))
    events.group_by_key() \
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=10)).advance_by(timedelta(seconds=5))) \
        .aggregate(lambda: "", lambda key, value, agg: f"{agg},{java_string(value)}", Materialized.as_("hopping-agg")) \
        .to_stream().to(topics["out-hopping"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String()))
    events.group_by(lambda key, value: None if key is None else key[:1]) \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=20), timedelta(hours=1))) \
        .count(Materialized.as_("regrouped-count")).to_stream().to(topics["out-regrouped"], windowed(20_000))
    events.group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=5))) \
        .count(Materialized.as_("uncached-count").with_caching_disabled()).to_stream() \
        .to(topics["out-uncached"], windowed(10_000))
    # A store from a supplier kept 11 s, less than its windows stay open (10 s + grace 5 s): a late record's
    # windows at or before the store's time (its last window start) minus 11 s count from nothing again.
    events.group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=5))
                     .advance_by(timedelta(seconds=2))) \
        .count(Materialized.as_(Stores.in_memory_window_store("short-kept-count", timedelta(seconds=11),
                                                              timedelta(seconds=10), False)).with_caching_disabled()) \
        .to_stream().to(topics["out-short-kept"], windowed(10_000))
    # A plain RocksDB supplier's store keeps no timestamps: an update is stamped with its record's timestamp
    # (each update's value carries it, "count|t<timestamp>", compared with every update).
    events.group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=5))
                     .advance_by(timedelta(seconds=5))) \
        .count(Materialized.as_(Stores.persistent_window_store("plain-kept-count", timedelta(seconds=15),
                                                               timedelta(seconds=10), False)).with_caching_disabled()) \
        .to_stream().process_values(StampValues) \
        .to(topics["out-plain-kept"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String()))
    builder.stream(topics["slides"]).group_by_key() \
        .windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(seconds=5), timedelta(seconds=3))) \
        .reduce(lambda agg, value: f"{agg}+{value}", Materialized.as_("sliding-reduce")) \
        .to_stream().to(topics["out-sliding"], Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.String()))
    return builder


def _input(seed: int = 5) -> dict[str, list[tuple]]:
    """``{topic: [(key, value, timestamp)]}`` in production order, all timestamps distinct."""
    rng = random.Random(seed)
    used: set[int] = set()

    def stamp(timestamp: int) -> int:
        while timestamp in used:
            timestamp += 1
        used.add(timestamp)
        return timestamp

    events = []
    for i in range(700):
        timestamp = T0 + i * 150 + i % 7
        roll = rng.random()
        if roll < 0.10:
            timestamp -= rng.randint(100, 4_800)      # late, within the tumbling grace
        elif roll < 0.16:
            timestamp -= rng.randint(6_000, 25_000)   # late beyond the tumbling grace
        key = None if rng.random() < 0.03 else f"{rng.choice('abcd')}{rng.randint(1, 2)}"
        value = None if rng.random() < 0.05 else f"e{i}"
        events.append((key, value, stamp(timestamp)))
    slides = []
    for i in range(500):
        timestamp = T0 + i * 200 + 3 + i % 5
        roll = rng.random()
        if roll < 0.10:
            timestamp -= rng.randint(100, 2_500)      # within grace (3 s)
        elif roll < 0.15:
            timestamp -= rng.randint(9_500, 25_000)   # beyond grace + time difference: dropped whole
        key = None if rng.random() < 0.03 else f"s{rng.randint(1, 5)}"
        value = None if rng.random() < 0.05 else f"x{i}"
        slides.append((key, value, stamp(timestamp)))
        if i == 250:
            # A null value far ahead does not advance the sliding windows' stream time: the
            # records after it are not late (they would be if it counted).
            slides.append(("s9", None, stamp(timestamp + 7_000)))
            slides.extend(("s9", f"y{j}", stamp(timestamp + 50 + j)) for j in range(3))
    return {"events": events, "slides": slides}


def _results(bootstrap: str, topics: dict[str, str]) -> dict:
    """The last value per (key, window start) of every output topic, and the timestamp of its record;
    for the outputs without a record cache, every (value, timestamp) per (key, window start) in order."""
    result = {}
    for name, (size, kind) in OUTPUTS.items():
        serde = WindowedSerde(Serdes.String(), size)
        decode = (lambda data: int.from_bytes(data, "big", signed=True)) if kind == "long" else bytes.decode
        records = read_topic(bootstrap, topics[name])
        values = final_values(records, serde.deserialize, decode)
        result[name] = {(w.key, w.window.start): value for w, value in values.items()}
        last_written = {}  # the timestamp of each window's last record (no window here is deleted)
        for record in sorted(records, key=lambda r: (r.partition, r.offset)):
            windowed = serde.deserialize(record.key)
            last_written[windowed.key, windowed.window.start] = written_time(record)
        result[f"{name}/timestamps"] = {window: last_written[window] for window in result[name]}
        placed: dict = {}  # where each window went: by its inner key (WindowedStreamPartitioner)
        for record in records:
            windowed = serde.deserialize(record.key)
            placed.setdefault((windowed.key, windowed.window.start), set()).add(record.partition)
        result[f"{name}/partitions"] = placed
        if name in EVERY_UPDATE:
            updates: dict = {}
            for record in sorted(records, key=lambda r: (r.partition, r.offset)):
                windowed = serde.deserialize(record.key)
                updates.setdefault((windowed.key, windowed.window.start), []).append(
                    (decode(record.value), written_time(record)))
            result[f"{name}/updates"] = updates
    return result


def _null_skips(records: dict[str, list[tuple]]) -> int:
    """Records Kafka Streams' windowed processors skip (and count as dropped) for null keys/values."""
    events = sum(1 for key, _, _ in records["events"] if key is None) * 5  # the five time windowed aggregations
    slides = sum(1 for key, value, _ in records["slides"] if key is None or value is None)
    return events + slides


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    inputs = {name: unique_topic(f"win-{name}") for name in INPUTS}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    records = _input()
    for name in INPUTS:
        produce_strings(kafka_bootstrap, inputs[name], records[name])
    # In the background: our clean run, the first test, goes on meanwhile.
    topics, main = start_kafka_streams("kstreams.oracle.WindowExamples", "windows", kafka_bootstrap, kafka_admin,
                                       unique_topic, tmp_path_factory, inputs, dict.fromkeys(OUTPUTS, PARTITIONS))
    reference = KafkaStreamsReference(main, {"inputs": inputs, "records": records}, lambda stdout: {
        **{key: json.loads(stdout)[key] for key in ("stores", "dropped")}, "results": _results(kafka_bootstrap, topics)})
    yield reference
    reference.close()


# Our retention per store (windows.py): a window whose start is at or before stream time - retention is gone.
RETENTION = {"tumbling-count": 15_000, "uncached-count": 15_000, "hopping-agg": 10_000,
             "sliding-reduce": 3 * 5_000 + 3_000 + 1, "regrouped-count": 20_000 + 3_600_000}


def _assert_stores(expected_run, stores: dict) -> None:
    """Every window we hold is Kafka Streams' (same value); Kafka Streams may still hold older
    windows past retention (its segments go by whole), which we dropped."""
    for store in STORES:
        mine = {f"{w.key}@{w.window.start}": str(v) for w, v in stores[store].items()}
        theirs = expected_run["stores"][store]
        assert len(mine) > 10, store
        assert {k: theirs.get(k) for k in mine} == mine, store
        # We drop a window at or before stream time - retention; stream time <= the input's newest record.
        topic = "slides" if store == "sliding-reduce" else "events"
        horizon = max(t for _, _, t in expected_run["records"][topic]) - RETENTION[store]
        extra = sorted(k for k in set(theirs) - set(mine) if int(k.split("@")[1]) > horizon)
        assert not extra, (store, horizon, extra[:10], sorted(mine)[-10:])


def _assert_same(expected_run, ours: dict, stores: dict, dropped_late: int) -> None:
    expected = expected_run["results"]
    for name in OUTPUTS:
        assert set(ours[name]) == set(expected[name]), name
        assert ours[name] == expected[name], name
        assert ours[f"{name}/timestamps"] == expected[f"{name}/timestamps"], name
        assert ours[f"{name}/partitions"] == expected[f"{name}/partitions"], name
    for name in EVERY_UPDATE:
        assert ours[f"{name}/updates"] == expected[f"{name}/updates"], name  # every update, as they came
    # Kafka Streams counts the puts a store drops too (out-short-kept's: its windows at or below the cut)
    assert dropped_late == expected_run["dropped"] - _null_skips(expected_run["records"])
    _assert_stores(expected_run, stores)


def test_windowed_aggregations_on_spark_match_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark,
                                                            tmp_path, kafka_streams_run):
    expected = kafka_streams_run["results"]
    # The reference exercises what it should: late records dropped, null values aggregated.
    assert kafka_streams_run["dropped"] > _null_skips(kafka_streams_run["records"]) > 0
    assert any(",null" in value for value in expected["out-hopping"].values())
    assert all(len(expected[name]) > 20 for name in OUTPUTS)
    # Without the record cache Kafka Streams forwards every update: 1, 2, 3 ... per window.
    uncached = {window: [value for value, _ in updates] for window, updates in expected["out-uncached/updates"].items()}
    assert all(values == list(range(1, len(values) + 1)) for values in uncached.values())
    assert max(len(values) for values in uncached.values()) > 3
    # A store kept less than its windows stay open: some windows count from nothing again after a late record.
    assert any([value for value, _ in updates] != list(range(1, len(updates) + 1))
               for updates in expected["out-short-kept/updates"].values())
    # A plain RocksDB supplier's store: a record out of order stamps its window's update with its own timestamp,
    # below the window's earlier updates' (a timestamped store's would stay at the largest).
    stamps = [[int(value.split("|t")[1]) for value, _ in updates] for updates in expected["out-plain-kept/updates"].values()]
    assert any(window_stamps != sorted(window_stamps) for window_stamps in stamps)
    # and the record carries the timestamp its value shows
    assert all(int(value.split("|t")[1]) == timestamp
               for updates in expected["out-plain-kept/updates"].values() for value, timestamp in updates)

    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, PARTITIONS))
    # Several micro-batches per task: stream time carried from batch to batch by the watermark.
    runner = TaskRunner(window_examples(topics), unique_topic("spark-windows"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark, max_records_per_batch=150)
    results = runner.run_all()
    assert max(result.batches for result in results) >= 2
    dropped = sum(result.records_dropped_late for result in results)
    assert dropped > 0
    stores = {store: runner.read_store(store) for store in STORES}
    _assert_same(kafka_streams_run, _results(kafka_bootstrap, topics), stores, dropped)


def test_windowed_aggregations_killed_part_way_and_rerun_still_match_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], dict.fromkeys(OUTPUTS, PARTITIONS))
    # Kill it once task 1_0 has processed its batch, while it works on (or starts) task 1_1
    # (--parallelism 1: one task after another, as that kill point assumes).
    rerun = kill_and_rerun(tmp_path, window_examples, topics, app_id=unique_topic("spark-windows-kill"),
                           bootstrap=kafka_bootstrap, spark=spark, kill_when=lambda line: line.startswith("task 1_0 "),
                           grace_seconds=1, killed_args=("--parallelism", "1", "--max-records-per-batch", "5000"),
                           max_records_per_batch=5000)
    assert any(line.startswith("task 0_1 batch") for line in rerun.killed_lines), rerun.killed_lines
    runner = rerun.runner
    rerun_tasks = {r.task_id for r in rerun.results if r.records_in}
    assert "1_1" in rerun_tasks and not rerun_tasks & {"0_0", "0_1"}, rerun_tasks
    # The outputs and stores are Kafka Streams' (the late records of the tasks the killed run
    # finished were counted by that run).
    ours = _results(kafka_bootstrap, topics)
    for name in OUTPUTS:
        assert ours[name] == kafka_streams_run["results"][name], name
        assert ours[f"{name}/timestamps"] == kafka_streams_run["results"][f"{name}/timestamps"], name
        assert ours[f"{name}/partitions"] == kafka_streams_run["results"][f"{name}/partitions"], name
    for name in EVERY_UPDATE:
        assert ours[f"{name}/updates"] == kafka_streams_run["results"][f"{name}/updates"], name
    _assert_stores(kafka_streams_run, {store: runner.read_store(store) for store in STORES})
