"""Our tasks on Spark against Kafka Streams itself: same input, same final values per key.

100,000 records with skewed keys over 4 partitions go through three example topologies
(users counted per country; word count; a key-changing map followed by to_table), once with
Kafka Streams 4.3.1 (tests/oracle, ProcessExamples.java) and once with TaskRunner. Every output
topic and every store must hold the same final value per key, each key in the same partition, its
record written with the same timestamp.
Then again with the task process SIGKILLed part-way and rerun, with exactly-once on (the
at-least-once runs are killed in the other equivalence tests).
"""

from __future__ import annotations

import json
import random
import signal
import textwrap
import time

import pytest

import oracle_harness
from equivalence_io import written_time
from killed_runs import KILLED_RUN_MASTER, kill_group, start_killed_run
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration

RECORDS = 100_000
INPUT_PARTITIONS = 4
OUTPUT_PARTITIONS = 3
STORES = ("country-counts", "word-counts", "latest-amount")

# The Python twin of ProcessExamples.examples (Java); keep the two in step. Written as source
# so that the CLI can load the very same definition in another process.
EXAMPLES_SOURCE = textwrap.dedent('''
    import re

    from dagster_kstreams.topology.consumed_produced import Produced
    from dagster_kstreams.topology.materialized import Materialized
    from dagster_kstreams.topology import StreamsBuilder
    from dagster_kstreams.topology.serdes import Serdes

    NON_WORD = re.compile(r"[^a-z0-9_]+")  # Java's \\\\W: ASCII only


    def examples(input_topic, counts_topic, words_topic, latest_topic):
        builder = StreamsBuilder()
        rows = builder.stream(input_topic)
        rows.group_by(lambda key, value: value.split(",")[1]) \\
            .count(Materialized.as_("country-counts")) \\
            .to_stream().to(counts_topic, Produced.with_(Serdes.String(), Serdes.Long()))
        rows.flat_map_values(lambda value: [w for w in NON_WORD.split(value.split(",")[3].lower()) if w]) \\
            .group_by(lambda key, word: word) \\
            .count(Materialized.as_("word-counts")) \\
            .to_stream().to(words_topic, Produced.with_(Serdes.String(), Serdes.Long()))
        rows.map(lambda key, value: (value.split(",")[1] + "/" + key, value.split(",")[2])) \\
            .to_table(Materialized.as_("latest-amount")) \\
            .to_stream().to(latest_topic)
        return builder
''')


def _examples_module(tmp_path, topics: dict[str, str]):
    path = tmp_path / "examples_topology.py"
    path.write_text(EXAMPLES_SOURCE + textwrap.dedent(f'''

        def build():
            return examples({topics["input"]!r}, {topics["counts"]!r}, {topics["words"]!r}, {topics["latest"]!r})
    '''))
    namespace: dict = {"__name__": "examples_topology"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return path, namespace["build"]


def _input_records(seed: int = 7) -> list[tuple[bytes, bytes]]:
    """Skewed: a few users, countries and words carry most records."""
    rng = random.Random(seed)
    countries = ["fr"] * 8 + ["de"] * 4 + ["it"] * 2 + ["es", "pt", "nl", "be"]
    vocabulary = [f"w{i}" for i in range(300)] + ["the", "a", "kafka", "streams", "spark"] * 20
    records = []
    for _ in range(RECORDS):
        user = int(2000 * rng.random() ** 3)
        country = countries[(user * 31) % len(countries)]
        amount = rng.randrange(1000)
        text = " ".join(vocabulary[int(len(vocabulary) * rng.random() ** 2)] for _ in range(rng.randint(1, 6)))
        records.append((f"user{user}".encode(), f"user{user},{country},{amount},{text.title()}!".encode()))
    return records


def _outputs(kafka_bootstrap: str, topics: dict[str, str]) -> dict[str, dict[str, tuple[int, str, int]]]:
    """Final value per key of each output topic, with the partition the key was written to and the
    timestamp it was written with (a count's: the largest of its key's records')."""
    decoders = {"counts": lambda b: str(int.from_bytes(b, "big", signed=True)),
                "words": lambda b: str(int.from_bytes(b, "big", signed=True)),
                "latest": bytes.decode}
    result = {}
    for name in ("counts", "words", "latest"):
        records = read_topic(kafka_bootstrap, topics[name])
        values = final_values(records, bytes.decode, decoders[name])
        partitions = {record.key.decode(): record.partition for record in records}
        stamps = {record.key.decode(): written_time(record)
                  for record in sorted(records, key=lambda record: (record.partition, record.offset))}
        result[name] = {key: (partitions[key], value, stamps[key]) for key, value in values.items()}
    return result


@pytest.fixture(scope="module")
def kafka_streams_run(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    """The input, and what Kafka Streams made of it (outputs and stores)."""
    input_topic = unique_topic("examples-input")
    kafka_admin.create_topics({input_topic: INPUT_PARTITIONS})
    records = _input_records()
    produce(kafka_bootstrap, input_topic, records)
    topics = {"input": input_topic, **{name: unique_topic(f"ks-{name}") for name in ("counts", "words", "latest")}}
    kafka_admin.create_topics({topics[name]: OUTPUT_PARTITIONS for name in ("counts", "words", "latest")})
    state_dir = tmp_path_factory.mktemp("kafka-streams-state")
    stdout = oracle_harness.run_main(
        "kstreams.oracle.ProcessExamples",
        [kafka_bootstrap, unique_topic("ks-app"), str(state_dir), input_topic,
         topics["counts"], topics["words"], topics["latest"]],
        timeout=900,
    )
    stores = json.loads(stdout)
    return {"input": input_topic, "records": records, "stores": stores, "outputs": _outputs(kafka_bootstrap, topics)}


def _our_topics(kafka_admin, unique_topic, input_topic: str) -> dict[str, str]:
    topics = {"input": input_topic, **{name: unique_topic(f"spark-{name}") for name in ("counts", "words", "latest")}}
    kafka_admin.create_topics({topics[name]: OUTPUT_PARTITIONS for name in ("counts", "words", "latest")})
    return topics


def _assert_same_as_kafka_streams(kafka_bootstrap, topics, stores, kafka_streams_run):
    ours = _outputs(kafka_bootstrap, topics)
    expected = kafka_streams_run["outputs"]
    for name in ("counts", "words", "latest"):
        assert len(ours[name]) == len(expected[name]), name
        assert ours[name] == expected[name], f"output {name} differs from Kafka Streams"
    for store in STORES:
        assert {str(k): str(v) for k, v in stores[store].items()} == kafka_streams_run["stores"][store], store


def test_tasks_on_spark_match_kafka_streams(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                            kafka_streams_run):
    # Sanity of the reference itself: counts per country sum to the input size.
    assert sum(int(v) for v in kafka_streams_run["stores"]["country-counts"].values()) == RECORDS
    topics = _our_topics(kafka_admin, unique_topic, kafka_streams_run["input"])
    _, build = _examples_module(tmp_path, topics)
    runner = TaskRunner(build(), unique_topic("spark-app"), kafka_bootstrap, state_location=str(tmp_path / "state"),
                        spark=spark)
    # One sub-topology reads the input; one per repartition topic does the counting or the table.
    assert len(runner.task_ids()) == 4 * INPUT_PARTITIONS
    results = runner.run_all()
    assert sum(r.records_in for r in results if r.subtopology == 0) == RECORDS
    stores = {store: runner.read_store(store) for store in STORES}
    _assert_same_as_kafka_streams(kafka_bootstrap, topics, stores, kafka_streams_run)


def test_killed_mid_batch_and_rerun_still_matches_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, kafka_streams_run
):
    topics = _our_topics(kafka_admin, unique_topic, kafka_streams_run["input"])
    module, build = _examples_module(tmp_path, topics)
    app_id = unique_topic("spark-app")
    state = tmp_path / "state"
    argv = [
        "run", f"{module}:build", "--app-id", app_id, "--all",
        "--bootstrap-servers", kafka_bootstrap, "--state-location", str(state), "--master", KILLED_RUN_MASTER,
        "--max-records-per-batch", "15000", "--spark-conf", "spark.sql.execution.arrow.maxRecordsPerBatch=500",
        "--processing-guarantee", "exactly_once_v2",
    ]
    victim = start_killed_run(argv, tmp_path)
    progress_lines = []
    try:
        # Let it finish a few batches of the first tasks, then kill it in the middle of the next one.
        for line in victim.stdout:
            progress_lines.append(line)
            if sum(1 for seen in progress_lines if " batch " in seen) >= 3:
                time.sleep(1.5)
                break
    finally:
        kill_group(victim)  # the whole session: the driver and its Python workers
    assert victim.returncode == -signal.SIGKILL
    assert sum(1 for seen in progress_lines if " batch " in seen) >= 3

    # Rerun here, in another process than the killed one: it continues from the killed run's state.
    runner = TaskRunner(build(), app_id, kafka_bootstrap, state_location=str(state), spark=spark,
                        max_records_per_batch=15000, processing_guarantee="exactly_once_v2")
    results = runner.run_all()
    assert sum(r.records_in for r in results if r.subtopology == 0) < RECORDS  # the killed run did some
    stores = {store: runner.read_store(store) for store in STORES}
    _assert_same_as_kafka_streams(kafka_bootstrap, topics, stores, kafka_streams_run)
