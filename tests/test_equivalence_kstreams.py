"""Issue 4 equivalence: our tasks on Spark against real Kafka Streams 4.3.1 apps, one app per topology.

Complements test_runner_kstreams_oracle.py (one app with all three examples, default serdes): here
every serde is declared in the DSL (Consumed/Grouped/Materialized/Produced.with_), each topology
is its own application (own application.id, own repartition topic), and the process is killed
twice: in the stateless sub-topology that feeds the repartition topic, and in the stateful one
that counts. Kafka Streams (tests/oracle StreamsApp.java) runs with its record cache and
at_least_once; both sides read the same 100,000 skewed records from one 4-partition topic.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import equivalence_topologies as eq
import oracle_harness
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.spark.runner import TaskRunner

pytestmark = pytest.mark.integration

RECORDS = 100_000
PARTITIONS = 4
TESTS_DIR = Path(__file__).resolve().parent


def _final_with_partitions(bootstrap: str, topic: str, topology: str) -> dict[str, tuple[int, object]]:
    """Final value per key of an output topic, with the partition holding the key."""
    records = read_topic(bootstrap, topic)
    values = final_values(records, bytes.decode, eq.OUTPUT_VALUE_SERDES[topology].deserialize)
    partitions: dict[str, set[int]] = {}
    for record in records:
        partitions.setdefault(record.key.decode(), set()).add(record.partition)
    # A key written to two partitions would be a partitioner mismatch: keep all to show it.
    return {key: (sorted(partitions[key]), value) for key, value in values.items()}


@pytest.fixture(scope="module")
def reference(kafka_bootstrap, kafka_admin, unique_topic, tmp_path_factory):
    """The shared input, and what Kafka Streams made of it: output tables and store dumps."""
    input_topic = unique_topic("eq-input")
    kafka_admin.create_topics({input_topic: PARTITIONS})
    records = list(eq.skewed_records(RECORDS, PARTITIONS))
    produce(kafka_bootstrap, input_topic, records)
    outputs = {name: unique_topic(f"eq-ks-{name.replace('_', '-')}") for name in eq.TOPOLOGIES}
    kafka_admin.create_topics({topic: PARTITIONS for topic in outputs.values()})
    runs = oracle_harness.run_streams_apps(
        kafka_bootstrap, str(tmp_path_factory.mktemp("kafka-streams-state")),
        [(name, unique_topic(f"eq-ks-{name.replace('_', '-')}"), input_topic, outputs[name]) for name in eq.TOPOLOGIES],
    )
    by_name = {run["topology"]: run for run in runs}
    return {
        "input": input_topic,
        "records": records,
        "runs": by_name,
        "outputs": {name: _final_with_partitions(kafka_bootstrap, outputs[name], name) for name in eq.TOPOLOGIES},
    }


def _assert_matches_kafka_streams(bootstrap, name, our_output_topic, our_store, reference):
    expected_store = reference["runs"][name]["stores"][eq.STORES[name]]
    ours = _final_with_partitions(bootstrap, our_output_topic, name)
    theirs = reference["outputs"][name]
    missing = sorted(set(theirs) - set(ours))[:5]
    extra = sorted(set(ours) - set(theirs))[:5]
    assert not missing and not extra, f"{name}: keys missing {missing}, keys Kafka Streams never wrote {extra}"
    differing = {key: (ours[key], theirs[key]) for key in theirs if ours[key] != theirs[key]}
    assert not differing, f"{name}: (ours, Kafka Streams) differ for {len(differing)} keys, e.g. " \
                          f"{dict(list(differing.items())[:5])}"
    assert our_store == expected_store, f"{name}: store {eq.STORES[name]} differs from Kafka Streams' " \
                                        f"(interactive query)"


def test_the_kafka_streams_reference_is_sound(reference):
    # The oracle's own run agrees with plain Python and with its own output topics; otherwise
    # every comparison below would compare against a broken reference.
    expected = eq.expected_tables(reference["records"])
    for name in eq.TOPOLOGIES:
        run = reference["runs"][name]
        assert run["records"] == RECORDS
        assert run["stores"][eq.STORES[name]] == expected[name], name
        assert {key: value for key, (_, value) in reference["outputs"][name].items()} == expected[name], name
    assert sum(expected["word_count"].values()) > 2 * RECORDS  # flat_map_values fans out
    top = max(expected["users_per_country"].values())
    assert top > 5 * RECORDS / len(expected["users_per_country"])  # skewed


@pytest.mark.parametrize("name", ["users_per_country", "latest_user_by_country"])
def test_tasks_on_spark_match_kafka_streams(name, kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                            reference):
    # word_count is compared in the kill test below (same comparison, after two SIGKILLs).
    output = unique_topic(f"eq-spark-{name.replace('_', '-')}")
    kafka_admin.create_topics({output: PARTITIONS})
    app_id = unique_topic("eq-spark-app")
    runner = TaskRunner(eq.BUILDERS[name](reference["input"], output), app_id, kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    assert runner.task_ids() == [f"{s}_{p}" for s in (0, 1) for p in range(PARTITIONS)]
    results = runner.run_all()
    assert sum(r.records_in for r in results if r.subtopology == 0) == RECORDS
    _assert_matches_kafka_streams(kafka_bootstrap, name, output, runner.read_store(eq.STORES[name]), reference)
    assert kafka_admin.committed_offsets(app_id, reference["input"]) == kafka_admin.end_offsets(reference["input"])


def _run_until(command, env, should_kill, written_topic: str, admin, stderr_path: Path) -> tuple[int, list[str], str]:
    """Start the CLI in its own session; once ``should_kill(progress_lines)`` is true, wait until the
    next batch has begun writing (``written_topic``'s end offsets grow past their value at that
    progress line) and SIGKILL the whole session: the driver, its JVM and its Python workers.
    Returns (return code, stdout lines, stderr)."""
    # stderr to a file: a full stderr pipe nobody reads would stall the process.
    with open(stderr_path, "w") as stderr_file:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr_file, text=True, env=env,
                                   start_new_session=True)
    lines: list[str] = []
    try:
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if should_kill(lines):
                baseline = sum(admin.end_offsets(written_topic).values())
                deadline = time.monotonic() + 120
                while process.poll() is None and time.monotonic() < deadline:
                    if sum(admin.end_offsets(written_topic).values()) > baseline:
                        break
                    time.sleep(0.02)
                break
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        process.stdout.close()
    return process.returncode, lines, stderr_path.read_text()


BATCH_BOUND = 25_000
_BATCH = re.compile(r"^task (\d+)_(\d+) batch (\d+):.* lag left (\d+)$")


def _batch_under_way(subtopology: int):
    """True once a task of ``subtopology`` reported a batch and still has at least half a batch
    to go: its next batch is then being read, processed and written."""

    def check(lines: list[str]) -> bool:
        match = _BATCH.match(lines[-1])
        return bool(match) and int(match.group(1)) == subtopology and int(match.group(4)) >= BATCH_BOUND // 2

    return check


def test_word_count_killed_mid_batch_twice_then_rerun_matches_kafka_streams(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, reference
):
    name = "word_count"
    output = unique_topic("eq-spark-word-count")
    kafka_admin.create_topics({output: PARTITIONS})
    module = tmp_path / "word_count_topology.py"
    module.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(TESTS_DIR)!r})
        import equivalence_topologies

        def build():
            return equivalence_topologies.word_count({reference["input"]!r}, {output!r})
    """))
    app_id = unique_topic("eq-spark-app")
    state = tmp_path / "state"
    command = [
        sys.executable, "-m", "dagster_kstreams.cli", "run", f"{module}:build", "--app-id", app_id, "--all",
        "--bootstrap-servers", kafka_bootstrap, "--state-location", str(state), "--master", "local[2]",
        "--max-records-per-batch", str(BATCH_BOUND), "--json",
    ]
    # PYTHONFAULTHANDLER: should the driver crash on its own (not our SIGKILL), its stack is in stderr.
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONFAULTHANDLER": "1"}
    runner = TaskRunner(eq.word_count(reference["input"], output), app_id, kafka_bootstrap,
                        state_location=str(state), spark=spark)
    repartition = runner.compiled.repartition_topics[0]

    # 1. Killed in sub-topology 0 while a batch writes the repartition topic.
    code, lines, stderr = _run_until(command, env, _batch_under_way(0), repartition, kafka_admin,
                                     tmp_path / "run1.err")
    assert code == -signal.SIGKILL, f"first run was not killed (exit {code}): {lines[-3:]} {stderr[-3000:]}"
    assert not any(line.startswith("task 1_") for line in lines), "killed too late: sub-topology 1 had started"

    # 2. Killed in sub-topology 1 (the count and its store) while a batch writes the output topic.
    code, lines, stderr = _run_until(command, env, _batch_under_way(1), output, kafka_admin,
                                     tmp_path / "run2.err")
    assert code == -signal.SIGKILL, f"second run was not killed (exit {code}): {lines[-3:]} {stderr[-3000:]}"
    assert any(line.startswith("task 1_") for line in lines), "killed too early: sub-topology 1 had not started"

    # 3. Run to completion.
    final = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert final.returncode == 0, final.stderr[-3000:]
    # Shown with -rP: whether a kill left part of a batch in Kafka that a rerun then skipped.
    print("replays after the kills:", [line for line in stderr.splitlines() + final.stderr.splitlines()
                                       if "is a replay" in line])
    _assert_matches_kafka_streams(kafka_bootstrap, name, output, runner.read_store(eq.STORES[name]), reference)
    for topic in (reference["input"], repartition):
        assert kafka_admin.committed_offsets(app_id, topic) == kafka_admin.end_offsets(topic), topic
