"""User processors reading and writing DSL operations' stores, on Spark against Kafka Streams itself
(tests/dsl_store_processor_topology.py; Java twin DslStoreProcessorExamples). Kafka Streams 4.3.1
runs it once.

``CountCorrector`` reads the uncached ``counts`` store of the count it follows (a ``ValueAndTimestamp``
per key), corrects a count of 3 to 10 and deletes a count of 13 or more; the count goes on from what
it wrote (and stamps an update with the larger of the record's and the stored timestamp, as Kafka
Streams does), and a stream-time punctuator lists and deletes the keys of the 10 s buckets that ended.
``PriceReader`` reads the store of a table read from another topic, in the same sub-topology (Kafka
Streams merges the two sub-topologies: describe() compared). ``StoreEditor`` reads, overwrites (by
the update's timestamp) and deletes the stores of a table's filter and map_values, of an inner and an
outer table-table join, of a left join's filter and the outer join's map_values, of a re-grouped
table's reduce and of a cogroup's aggregate, each stamped by Kafka Streams' rule (the update's time;
a join's: the larger of both rows'; the larger of the record's and the aggregate's). And the stores
keyed by windows (``TimestampedKeyValueStore<Windowed<K>, V>``, in sub-topologies of their own): a
tumbling count outer-joined with a hopping concatenation, that join's filter's store, the count's
map_values' store, the map_values' store of the same count suppressed until its windows close, of a
cogroup's concatenation in those windows and of a count emitting on window close; a sliding count and
concatenation outer-joined, the count's map_values' store and that of a count emitting on window close
(Kafka Streams checks for closed windows after every record: emit interval 0, the runner's); a session
count's map_values' store, keyed by the session-windowed serde (sessions merged away deleted). And a
suppressed table's filter's store (``until_time_limit``: tombstones forwarded too), beside the items'
filter. And two tables whose own stores a processor rewrites and deletes from while their updates travel
on (old_value_write_topology.py): the owners' processor before a re-grouping's reduce and an outer join
and its filter (which sends old values), the pets' after the join and a re-grouping's count; each
reader gets the update's own value and the one from before it, as Kafka Streams' ``Change``.

Input (2 partitions): out-of-order timestamps within each 10 s bucket (a bucket's records all come
before the next bucket's, so the keys a punctuation closes have seen all their records whenever Kafka
Streams runs it), null keys and null values; table tombstones and older table updates. The joined
tables' updates come in rounds of 2 s, 6 updates of each table per partition and round, out of order
within a round, tombstones on either side, null keys. Every output record is compared with its
timestamp. Compared, per task, the whole sequence of what the count's records forwarded (values
carry the record timestamps and the stored ones) and of what the punctuator forwarded (the two interleave differently from run to run
in Kafka Streams); per key, what each order read from the table (a task's two topics are merged by
timestamp, which Kafka Streams only guarantees per key here); and both stores as interactive queries
read them at the end; per task, the whole sequence of what the filter's, the joins' and the
re-grouping's updates forwarded (the accounts all come from partition 0, so that each re-grouping task
reads one writer's records in its order), and per task and key the cogroup's (two topics merged). Once
on a clean run, and once killed part-way (the joins' second task after its first batch of 120 records:
10 rounds of each table, so the cap cuts where Kafka Streams' order across the two topics is kept) and
rerun from the checkpoints; and once each killed in the time-windowed, the sliding, the session and
the owners' and pets' stores' second task after its first batch.
"""

from __future__ import annotations

import json
import random
import re
import time

import pytest
from pyspark import cloudpickle

import dsl_store_processor_topology
import old_value_write_topology
from dsl_store_processor_topology import BUCKET_MS, dsl_store_processor_examples, key_text
from equivalence_io import output_topics, produce_strings, run_kafka_streams, with_unique_timestamps, written_time
from killed_runs import kill_and_rerun
from dagster_kstreams.kafka.records import read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

# Spark's Python workers cannot import modules of tests/: ship the processors by value.
cloudpickle.register_pickle_by_value(dsl_store_processor_topology)
cloudpickle.register_pickle_by_value(old_value_write_topology)

PARTITIONS = 2
T0 = (int(time.time()) - 3600) // 60 * 60 * 1000  # recent (broker retention), a whole minute: a bucket start
OUTPUTS = {"out": 1, "out-prices": 1, "out-tables": 1}
STORES = ("counts", "prices-store", "kept", "mapped", "items-later", "regrouped", "cogrouped", "joined", "left-kept",
          "outer-joined", "outer-mapped", "win-joined", "win-kept", "win-labels", "win-final", "win-cog-labels",
          "win-closed", "slide-joined", "slide-labels", "slide-closed", "session-labels", "owners-store", "pets-store",
          "owner-groups", "pet-groups")
# compared per task and key: their tasks merge two topics, or groups written by two tasks
PER_KEY = ("cogrouped", "owner-groups", "pet-groups")
JOIN_STORES = ("joined", "left-kept", "outer-joined", "win-joined", "slide-joined")  # each StoreEditor's first store
# keyed by windows
WINDOWED_STORES = ("win-joined", "win-labels", "win-final", "win-cog-labels", "win-closed", "slide-joined",
                   "slide-labels", "slide-closed", "session-labels")
JOIN_ROUNDS, JOIN_ROUND_MS, JOIN_PER_ROUND = 20, 2_000, 6  # per round, partition and table: 6 updates


def _events(seed: int = 19) -> list[tuple]:
    """``[(key, value, partition, timestamp)]``: 12 buckets of 60 records, a key names its bucket."""
    rng = random.Random(seed)
    events = []
    for i in range(720):
        partition = i % PARTITIONS
        bucket_start = T0 + (i // 60) * BUCKET_MS
        timestamp = bucket_start + (i % 60) * 150 + i % 7
        if rng.random() < 0.2:
            timestamp = max(bucket_start, timestamp - rng.randint(100, 5_000))  # out of order, within its bucket
        key = None if rng.random() < 0.04 else f"{bucket_start // BUCKET_MS:012d}|{'ab'[partition]}{rng.randint(1, 3)}"
        value = None if rng.random() < 0.05 else f"v{rng.randint(1, 3)}"
        events.append((key, value, partition, timestamp))
    return events


def _prices_and_orders(seed: int = 20) -> tuple[list[tuple], list[tuple]]:
    """Table updates (even timestamps) and orders (odd ones: no tie across the two topics), each key
    on one partition of both."""
    rng = random.Random(seed)
    prices, orders = [], []
    for i in range(300):
        number = rng.randint(1, 6)
        key, partition = f"k{number}", number % PARTITIONS
        timestamp = T0 + i * 200
        if rng.random() < 0.4:
            if rng.random() < 0.15:
                timestamp -= 2 * rng.randint(50, 1_000)  # an older update: a table takes it all the same
            prices.append((key, None if rng.random() < 0.1 else f"{rng.randint(1, 99)}", partition, timestamp))
        elif rng.random() < 0.05:
            orders.append((None, f"o{i}", i % PARTITIONS, timestamp + 1))
        else:
            orders.append((key, None if rng.random() < 0.05 else f"o{i}", partition, timestamp + 1))
    return prices, orders


def _table_inputs(seed: int = 21) -> dict[str, list[tuple]]:
    """Table updates of items (some filtered out: "x..."; tombstones) on both partitions, of accounts
    moving between groups (all on partition 0), and clicks and views (null keys and values); out of
    order, no two records of one task at the same time (the cogroup's task merges two topics)."""
    rng = random.Random(seed)

    def timestamp(i: int) -> int:
        # 97 ms apart: the editor's choice by the timestamp modulo 5 comes round for every key
        return T0 + i * 97 - (rng.randint(1, 3_000) if rng.random() < 0.3 else 0)

    items, accounts, clicks, views = [], [], [], []
    for i in range(300):
        number = rng.randint(1, 6)
        value = None if rng.random() < 0.1 else f"{rng.choice('vvx')}{rng.randint(1, 9)}"
        items.append((None if rng.random() < 0.03 else f"i{number}", value, number % PARTITIONS, timestamp(i)))
    for i in range(160):
        value = None if rng.random() < 0.1 else f"g{rng.randint(1, 4)}:{rng.randint(1, 9)}"
        accounts.append((f"a{rng.randint(1, 6)}", value, 0, timestamp(i)))
    for i in range(200):
        number = rng.randint(1, 4)
        key = None if rng.random() < 0.04 else f"u{number}"
        value = None if rng.random() < 0.05 else f"{rng.randint(1, 9)}"
        (clicks if rng.random() < 0.5 else views).append((key, value, number % PARTITIONS, timestamp(i)))
    (streams,) = with_unique_timestamps([{"clicks": clicks, "views": views}], ("clicks", "views"))
    return {"items": items, "accounts": accounts, **streams}


def _join_inputs(seed: int = 22) -> dict[str, list[tuple]]:
    """Updates of the two joined tables in rounds: per round, partition and table, ``JOIN_PER_ROUND``
    updates at random times of the round's first 1.9 s (out of order), of three keys per partition
    (tombstones, a few null keys, values filtered out by the left join's filter: "x..."), no two
    at the same time."""
    rng = random.Random(seed)
    lefts, rights = [], []
    for round_ in range(JOIN_ROUNDS):
        start = T0 + round_ * JOIN_ROUND_MS
        for partition in range(PARTITIONS):
            for table in (lefts, rights):
                for _ in range(JOIN_PER_ROUND):
                    key = None if rng.random() < 0.03 else f"j{rng.choice((1, 3, 5) if partition else (2, 4, 6))}"
                    value = None if rng.random() < 0.15 else f"{rng.choice('vvx')}{rng.randint(1, 9)}"
                    table.append((key, value, partition, start + rng.randint(0, 1_900)))
    (tables,) = with_unique_timestamps([{"lefts": lefts, "rights": rights}], ("lefts", "rights"))
    return tables


def _owner_inputs(seed: int = 26) -> dict[str, list[tuple]]:
    """The owners' and pets' tables: updates in rounds as the joined tables' (:func:`_join_inputs`)."""
    return {"owners": (tables := _join_inputs(seed))["lefts"], "pets": tables["rights"]}


def _window_inputs(seed: int = 23) -> list[tuple]:
    """The windowed stores' stream: keys on both partitions, 60 ms apart, a fifth of them out of order
    by up to 1.5 s (some beyond the 500 ms grace: dropped from their windows), null keys and values."""
    return _keyed_stream(seed, 400, 60, "w")


def _session_inputs(seed: int = 25) -> list[tuple]:
    """The sessions' stream: keys on both partitions, 250 ms apart (a key's records about 1.5 s apart:
    sessions of a gap of 1 s start and merge), a fifth of them out of order by up to 1.5 s (some beyond
    the 500 ms grace: dropped, or merging sessions), null keys and values."""
    return _keyed_stream(seed, 300, 250, "s")


def _keyed_stream(seed: int, count: int, spacing_ms: int, prefix: str) -> list[tuple]:
    """``count`` records ``spacing_ms`` apart, keys ``<prefix>1``..``<prefix>6`` on both partitions, a fifth
    of them out of order by up to 1.5 s, 3% null keys and 5% null values."""
    rng = random.Random(seed)
    records = []
    for i in range(count):
        number = rng.randint(1, 6)
        timestamp = T0 + i * spacing_ms - (rng.randint(1, 1_500) if rng.random() < 0.2 else 0)
        key = None if rng.random() < 0.03 else f"{prefix}{number}"
        value = None if rng.random() < 0.05 else f"v{rng.randint(1, 9)}"
        records.append((key, value, number % PARTITIONS, timestamp))
    return records


def _count_results(records) -> dict[tuple[str, str], list]:
    """``{(task tag, "record" | "punctuation"): [(key, value, timestamp)]}`` in offset order."""
    results: dict[tuple[str, str], list] = {}
    for record in records:
        value = record.value.decode()
        tag, kind = value.split("|")[:2]
        results.setdefault((tag, "punctuation" if kind == "closed" else "record"), []).append(
            (record.key.decode(), value, written_time(record)))
    return results


def _price_results(records) -> dict[tuple[str, str], list]:
    """``{(task tag, key): [(value, timestamp)]}`` in offset order."""
    results: dict[tuple[str, str], list] = {}
    for record in records:
        value = record.value.decode()
        results.setdefault((value.split("|")[0], None if record.key is None else record.key.decode()), []).append(
            (value, written_time(record)))
    return results


def _table_results(records) -> dict[tuple, list]:
    """``{(task tag, store): [(key, value, timestamp)]}`` of the filter's and the re-grouping's updates,
    and ``{(task tag, store, key): [(value, timestamp)]}`` of the cogroup's, in offset order."""
    results: dict[tuple, list] = {}
    for record in records:
        key, value = record.key.decode(), record.value.decode()
        tag, store = value.split("|")[:2]
        if store in PER_KEY:
            results.setdefault((tag, store, key), []).append((value, written_time(record)))
        else:
            results.setdefault((tag, store), []).append((key, value, written_time(record)))
    return results


def _results(bootstrap: str, topics: dict[str, str]) -> dict:
    def read(topic):
        return sorted(read_topic(bootstrap, topic), key=lambda r: (r.partition, r.offset))
    return {"counts": _count_results(read(topics["out"])), "prices": _price_results(read(topics["out-prices"])),
            "tables": _table_results(read(topics["out-tables"]))}


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    names = ("events", "prices", "orders", "items", "accounts", "clicks", "views", "lefts", "rights", "wins",
             "slides", "sessions", "owners", "pets")
    inputs = {name: unique_topic(f"dsl-papi-{name}") for name in names}
    kafka_admin.create_topics({topic: PARTITIONS for topic in inputs.values()})
    prices, orders = _prices_and_orders()
    records = {"events": _events(), "prices": prices, "orders": orders, **_table_inputs(), **_join_inputs(),
               "wins": _window_inputs(), "slides": _window_inputs(24), "sessions": _session_inputs(),
               **_owner_inputs()}
    for name in names:
        produce_strings(kafka_bootstrap, inputs[name], records[name])
    topics, stdout = run_kafka_streams("kstreams.oracle.DslStoreProcessorExamples", "dsl-papi", kafka_bootstrap,
                                       kafka_admin, unique_topic, tmp_path_factory, inputs, OUTPUTS)
    printed = json.loads(stdout)
    return {"inputs": inputs, "describe": printed["describe"], "results": _results(kafka_bootstrap, topics),
            "stores": {store: printed[store] for store in STORES}, "topics": topics}


def test_describe_merges_the_store_owners_sub_topology_as_kafka_streams(kafka_streams_run):
    ours = dsl_store_processor_examples(kafka_streams_run["topics"]).build().describe()
    assert str(ours) == kafka_streams_run["describe"]


def test_clean_run_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                         kafka_streams_run):
    _assert_reference_exercises_it(kafka_streams_run)
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS)
    runner = TaskRunner(dsl_store_processor_examples(topics), unique_topic("spark-dsl-papi"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    assert {r.task_id for r in runner.run_all()} == {f"{sub}_{partition}" for sub in range(13) for partition in (0, 1)}
    _assert_matches(kafka_bootstrap, topics, runner, kafka_streams_run)


@pytest.mark.parametrize("killed_task, inputs", [
    ("7_1", lambda: [record for records in _join_inputs().values() for record in records]),  # the joins'
    ("3_1", _window_inputs),  # the time-windowed stores'
    ("4_1", lambda: _window_inputs(24)),  # the sliding ones'
    ("5_1", _session_inputs),  # the session one's
    ("0_1", lambda: [record for records in _owner_inputs().values() for record in records]),  # the owners and pets'
], ids=["joins", "windowed", "sliding", "sessions", "owners"])
def test_killed_part_way_and_rerun_matches_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                                         kafka_streams_run, killed_task, inputs):
    """The killed run runs one sub-topology after another in batches of 120 records (the owners' and
    pets', their re-groupings', the time-windowed stores', the sliding ones', the session one's, the
    filter's and map_values', then the joins') and is killed after ``killed_task``'s first batch (the
    second task of the owners' and pets', the time-windowed, the sliding, the session or the joins'
    stores'); the rerun continues from the checkpoints."""
    topics = output_topics(kafka_admin, unique_topic, kafka_streams_run["inputs"], OUTPUTS)
    rerun = kill_and_rerun(tmp_path, dsl_store_processor_examples, topics, app_id=unique_topic("spark-dsl-papi-k"),
                           bootstrap=kafka_bootstrap, spark=spark,
                           kill_when=lambda line: line.startswith(f"task {killed_task} batch"),
                           killed_args=("--parallelism", "1", "--max-records-per-batch", "120"))
    on_partition_1 = sum(1 for record in inputs() if record[2] == 1)
    assert 0 < rerun.by_task[killed_task].records_in < on_partition_1  # it continued from its checkpoint
    _assert_matches(kafka_bootstrap, topics, rerun.runner, kafka_streams_run)


def _assert_matches(bootstrap: str, topics: dict[str, str], runner: TaskRunner, reference: dict) -> None:
    ours = _results(bootstrap, topics)
    for part in ("counts", "prices", "tables"):
        expected = reference["results"][part]
        assert set(ours[part]) == set(expected), part
        for task_and_kind, sequence in expected.items():
            assert ours[part][task_and_kind] == sequence, (part, task_and_kind)
    # The queryable stores read what the processors wrote (the count's last bucket; every price; the
    # filter's, the map_values', the re-grouping's and the cogroup's last values).
    for store, content in reference["stores"].items():
        assert {key_text(key): str(value) for key, value in runner.read_store(store).items()} == content, store


def _assert_reference_exercises_it(reference: dict) -> None:
    """Kafka Streams' output shows what the test is about, in both tasks: counts corrected to 10 and
    going on from there, counts deleted by the processor, buckets closed by the punctuator, prices
    read with their timestamps, and deleted ones."""
    counts, prices = reference["results"]["counts"], reference["results"]["prices"]
    for tag in ("p0", "p1"):
        values = [value.split("|") for _, value, _ in counts[(tag, "record")]]
        assert any(parts[1] == "count" and parts[2] == "11" for parts in values)
        assert any(parts[1] == "deleted" and parts[2].startswith("13@") for parts in values)
        assert len(counts[(tag, "punctuation")]) > 10
        read = [value for (task, _), sequence in prices.items() if task == tag for value, _ in sequence]
        assert any("@" in value for value in read) and any(value.endswith("|null") for value in read)
    for tag in ("p0", "p1"):
        for store in ("kept", "items-later", "regrouped", "cogrouped", "win-labels", "win-final", "win-cog-labels",
                      "win-closed", "slide-labels", "slide-closed", "session-labels", *JOIN_STORES):
            values = [value for sequence in _by_key(reference, tag, store).values() for value in sequence]
            # a store read (or listed) what the processor wrote
            assert any("edited" in "|".join(parts[5:]) for parts in values if parts[2] == "update"), (tag, store)
            assert any(parts[2] == "deleted" and parts[3] != "null" for parts in values), (tag, store)
    # A join's update stamped with the other row's (larger) time: two updates of a key at one time.
    for store in JOIN_STORES:
        assert any(earlier[2] == later[2] == "update" and earlier[4] == later[4]
                   for tag in ("p0", "p1") for sequence in _by_key(reference, tag, store).values()
                   for earlier, later in zip(sequence, sequence[1:])), store
    # An aggregate's update stamped with the previous one's (larger) time: its record came out of order.
    assert any(earlier[2] == later[2] == "update" and earlier[4] == later[4]
               for store in ("regrouped", "cogrouped") for tag in ("p0", "p1")
               for sequence in _by_key(reference, tag, store).values()
               for earlier, later in zip(sequence, sequence[1:]))
    # The windowed stores' keys are windows (key@start/end), which all() lists in their serde's byte order.
    for store in WINDOWED_STORES:
        listed = [parts[-1] for tag in ("p0", "p1") for sequence in _by_key(reference, tag, store).values()
                  for parts in sequence if parts[2] == "update"]
        assert any(all_.count("=") > 2 for all_ in listed) and all(key.startswith("[") for key in
                                                                   reference["stores"][store]), store
    assert all(reference["stores"][store] for store in STORES)
    # A processor's write ("v3!") is the old value of its key's next update only: subtracted from its group
    # then; and the owners' join's filter forwards tombstones (its old value passed).
    for tag in ("p0", "p1"):
        for store, seen in (("owner-groups", r"-[vx]\d!"), ("owners-pets-kept", r"\|null\|")):
            assert any(re.search(seen, value) for (task, name, *_), sequence in reference["results"]["tables"].items()
                       if (task, name) == (tag, store) for *_, value, _ in sequence), (tag, store)


def _by_key(reference: dict, tag: str, store: str) -> dict[str, list[list[str]]]:
    """What ``store``'s StoreEditor forwarded in task ``tag``, per key: each value split at "|"."""
    by_key: dict[str, list[list[str]]] = {}
    for task_and_store, sequence in reference["results"]["tables"].items():
        if task_and_store[:2] == (tag, store):
            for entry in sequence:  # (key, value, timestamp), or per key (value, timestamp)
                key, value = entry[:2] if len(task_and_store) == 2 else (task_and_store[2], entry[0])
                by_key.setdefault(key, []).append(value.split("|"))
    return by_key
