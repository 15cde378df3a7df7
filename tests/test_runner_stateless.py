"""Stateless sub-topologies on Spark against a real broker: outputs, placement, offsets, resumption."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import produce, read_topic
from dagster_kstreams.local.processes import free_port
from dagster_kstreams.spark.event_time import TIMESTAMP_HEADER
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes

pytestmark = pytest.mark.integration


def _rows(count: int, start: int = 0) -> list[tuple[bytes, bytes]]:
    # "user<i>,<country>,<amount>": countries skewed towards "fr".
    countries = ["fr", "fr", "fr", "de", "it", "es"]
    return [
        (f"user{i % 13}".encode(), f"user{i % 13},{countries[i % len(countries)]},{i}".encode())
        for i in range(start, start + count)
    ]


def _expected(rows):
    """The topology below, in plain Python: (topic, key, value) per input row, in order."""
    out = []
    for key, value in rows:
        user, country, amount = value.decode().split(",")
        if int(amount) % 3 != 0:  # filter_not(amount divisible by 3)
            out.append(("big", key.decode(), f"{country.upper()}:{amount}"))
        for word in (user, country):  # flat_map to (word, amount)
            out.append(("words", word, int(amount)))
    return out


def _topology(in_topic: str, big_topic: str, words_topic: str):
    builder = StreamsBuilder()
    rows = builder.stream(in_topic)
    rows.filter_not(lambda key, value: int(value.split(",")[2]) % 3 == 0) \
        .map_values(lambda value: f"{value.split(',')[1].upper()}:{value.split(',')[2]}") \
        .to(big_topic)
    rows.flat_map(lambda key, value: [(part, int(value.split(",")[2])) for part in value.split(",")[:2]]) \
        .to(words_topic, Produced.with_(Serdes.String(), Serdes.Long()))
    return builder


def test_stateless_tasks_write_every_sink_commit_offsets_and_resume(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    in_topic, big_topic, words_topic = unique_topic("rows"), unique_topic("big"), unique_topic("words")
    kafka_admin.create_topics({in_topic: 2, big_topic: 3, words_topic: 2})
    first = _rows(60)
    produce(kafka_bootstrap, in_topic, first)
    app_id = unique_topic("app")
    runner = TaskRunner(_topology(in_topic, big_topic, words_topic), app_id, kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    assert runner.task_ids() == ["0_0", "0_1"]

    progress = []
    results = runner.run_all(progress=progress.append)
    assert sum(result.records_in for result in results) == len(first)
    assert progress and progress[-1].lag_left == 0

    def check_outputs(rows):
        expected = _expected(rows)
        big = read_topic(kafka_bootstrap, big_topic)
        words = read_topic(kafka_bootstrap, words_topic)
        # Same multiset of records, and each record where Kafka's default partitioner puts it.
        assert sorted((r.key.decode(), r.value.decode()) for r in big) == sorted(
            (k, v) for t, k, v in expected if t == "big")
        assert sorted((r.key.decode(), int.from_bytes(r.value, "big", signed=True)) for r in words) == sorted(
            (k, v) for t, k, v in expected if t == "words")
        for record in big:
            assert record.partition == default_partition(record.key, 3)
        for record in words:
            assert record.partition == default_partition(record.key, 2)
        # Order per key is the input order (one input partition per key, one task per partition).
        amounts_by_word: dict[str, list[int]] = {}
        for record in words:
            amounts_by_word.setdefault(record.key.decode(), []).append(int.from_bytes(record.value, "big"))
        for word, amounts in amounts_by_word.items():
            per_input_partition: dict[int, list[int]] = {}
            for key, value in rows:
                user, country, amount = value.decode().split(",")
                if word in (user, country):
                    per_input_partition.setdefault(default_partition(key, 2), []).append(int(amount))
            for partition_amounts in per_input_partition.values():
                positions = [amounts.index(a) for a in partition_amounts]
                assert positions == sorted(positions), f"records of {word!r} out of order"
        return big, words

    check_outputs(first)
    end = kafka_admin.end_offsets(in_topic)
    assert kafka_admin.committed_offsets(app_id, in_topic) == end
    assert results[0].records_out[big_topic] + results[1].records_out[big_topic] == sum(
        1 for t, _, _ in _expected(first) if t == "big")

    # Nothing new: nothing processed, nothing written.
    again = runner.run_all()
    assert [result.records_in for result in again] == [0, 0]
    assert kafka_admin.end_offsets(big_topic) == kafka_admin.end_offsets(big_topic)
    check_outputs(first)

    # More input: only the new records are processed.
    more = _rows(25, start=60)
    produce(kafka_bootstrap, in_topic, more)
    later = runner.run_all()
    assert sum(result.records_in for result in later) == len(more)
    for result in later:
        tp = TopicPartition(in_topic, result.partition)
        assert result.offsets_from[tp] == end[tp]
    check_outputs(first + more)
    assert kafka_admin.committed_offsets(app_id, in_topic) == kafka_admin.end_offsets(in_topic)


def test_new_checkpoint_starts_from_the_groups_committed_offsets(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    in_topic, big_topic, words_topic = unique_topic("rows"), unique_topic("big"), unique_topic("words")
    kafka_admin.create_topics({in_topic: 1, big_topic: 1, words_topic: 1})
    rows = _rows(20)
    produce(kafka_bootstrap, in_topic, rows)
    app_id = unique_topic("app")
    # The group already consumed the first 15 records (e.g. the application ran elsewhere before).
    kafka_admin.commit_offsets(app_id, {TopicPartition(in_topic, 0): 15})
    runner = TaskRunner(_topology(in_topic, big_topic, words_topic), app_id, kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    result = runner.run_task("0_0")
    assert result.offsets_from == {TopicPartition(in_topic, 0): 15}
    assert result.records_in == 5
    big = read_topic(kafka_bootstrap, big_topic)
    assert sorted(r.value.decode() for r in big) == sorted(v for t, _, v in _expected(rows[15:]) if t == "big")


def test_a_run_killed_while_writing_its_first_offset_log_entry_leaves_a_checkpoint_that_starts(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    """SIGKILLed inside Spark's first write to ``offsets/``, a run leaves a temporary and a checksum
    file and no batch; Spark then refuses the checkpoint (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY)."""
    in_topic, big_topic, words_topic = unique_topic("rows"), unique_topic("big"), unique_topic("words")
    kafka_admin.create_topics({in_topic: 1, big_topic: 1, words_topic: 1})
    rows = _rows(12)
    produce(kafka_bootstrap, in_topic, rows)
    runner = TaskRunner(_topology(in_topic, big_topic, words_topic), unique_topic("app"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    offsets = Path(runner.checkpoint_location("0_0")) / "offsets"
    offsets.mkdir(parents=True)
    (offsets / ".0.5f0c9b1e.tmp").write_text("v1\n{")
    (offsets / "..0.5f0c9b1e.tmp.crc").write_bytes(b"crc")
    assert runner.run_task("0_0").records_in == 12
    assert sorted(r.value.decode() for r in read_topic(kafka_bootstrap, big_topic)) == \
        sorted(v for t, _, v in _expected(rows) if t == "big")


def test_max_records_bounds_a_run(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path):
    in_topic, big_topic, words_topic = unique_topic("rows"), unique_topic("big"), unique_topic("words")
    kafka_admin.create_topics({in_topic: 1, big_topic: 1, words_topic: 1})
    produce(kafka_bootstrap, in_topic, _rows(30))
    app_id = unique_topic("app")
    runner = TaskRunner(_topology(in_topic, big_topic, words_topic), app_id, kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    bounded = runner.run_task("0_0", max_records=10)
    assert bounded.records_in == 10
    assert bounded.offsets_to == {TopicPartition(in_topic, 0): 10}
    assert kafka_admin.committed_offsets(app_id, in_topic) == {TopicPartition(in_topic, 0): 10}
    assert bounded.lag_left == {TopicPartition(in_topic, 0): 20}
    rest = runner.run_task("0_0")
    assert rest.offsets_to == {TopicPartition(in_topic, 0): 30}
    # Every input record was processed exactly once over the two runs.
    assert len(read_topic(kafka_bootstrap, words_topic)) == 2 * 30


def test_a_tasks_log_has_no_error_when_its_run_stops_and_one_warning_a_minute_while_kafka_is_down(
    kafka_bootstrap, kafka_admin, unique_topic, tmp_path
):
    """Run as a worker or an asset's materialization runs a task: a session of the library's, at
    Spark's own log level (the CLI turns Spark's log off). A run that reached ``max_records`` ends its
    query at the next batch, by an exception of ours that Spark's micro-batch loop would log at ERROR
    with its JVM and Python stacks; and Kafka's Java clients, which warn at every failed connection
    while a broker is down, warn once a minute."""
    words, shouted = unique_topic("words"), unique_topic("shouted")
    kafka_admin.create_topics({words: 1, shouted: 1})
    produce(kafka_bootstrap, words, [(f"k{i}".encode(), f"word {i}".encode()) for i in range(20)])
    script = textwrap.dedent(f"""
        import time

        from dagster_kstreams.spark.task_runner import TaskRunner
        from dagster_kstreams.topology import StreamsBuilder

        builder = StreamsBuilder()
        builder.stream({words!r}).map_values(lambda value: value.upper()).to({shouted!r})
        runner = TaskRunner(builder.build(), {unique_topic("app")!r}, {kafka_bootstrap!r},
                            state_location={str(tmp_path / "state")!r})
        print(runner.run_task("0_0", max_records=5).records_in)
        started = time.monotonic()
        try:  # Spark's Kafka clients, 8 s an attempt, on a port where no broker listens
            runner.spark.read.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:{free_port()}") \\
                .option("kafka.request.timeout.ms", "4000").option("kafka.default.api.timeout.ms", "8000") \\
                .option("subscribe", "nowhere").load().count()
        except Exception:
            print("unreachable", int(time.monotonic() - started))
        runner.spark.stop()
    """)
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                               env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert completed.returncode == 0, completed.stderr[-3000:]
    records_in, unreachable, seconds = completed.stdout.split()
    assert (records_in, unreachable) == ("5", "unreachable")
    assert len(read_topic(kafka_bootstrap, shouted)) == 5
    assert "terminated with error" not in completed.stderr, completed.stderr[-3000:]
    assert "Traceback" not in completed.stderr, completed.stderr[-3000:]
    # One a minute (about 40 in 8 s without the limit).
    warnings = len(re.findall(r"WARN NetworkClient: .* could not be established", completed.stderr))
    assert 1 <= warnings <= 1 + int(seconds) // 60, completed.stderr[-3000:]


def test_replay_of_a_partly_written_batch_writes_only_the_rest(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    in_topic, out_topic = unique_topic("in"), unique_topic("out")
    kafka_admin.create_topics({in_topic: 1, out_topic: 2})
    rows = [(f"k{i}".encode(), str(i).encode()) for i in range(40)]
    produce(kafka_bootstrap, in_topic, rows)
    crash_marker = tmp_path / "crashed-once"

    def crash_once_at_30(key, value):
        # The first attempt dies at record 30, after its first records reached Kafka.
        if value == "30" and not crash_marker.exists():
            crash_marker.write_text("x")
            time.sleep(2)
            raise RuntimeError("simulated crash")
        return value

    builder = StreamsBuilder()
    builder.stream(in_topic).map_values(crash_once_at_30).to(out_topic)
    app_id = unique_topic("app")
    # At-least-once: Spark's sink wrote part of the batch (under exactly-once it would be aborted:
    # tests/test_exactly_once.py).
    runner = TaskRunner(builder, app_id, kafka_bootstrap, state_location=str(tmp_path / "state"), spark=spark,
                        arrow_batch_size=10, processing_guarantee="at_least_once")
    with pytest.raises(Exception, match="simulated crash"):
        runner.run_task("0_0")
    partial = read_topic(kafka_bootstrap, out_topic)
    assert 0 < len(partial) < len(rows)
    # Nothing of the crashed batch is committed: the group is where the task started.
    assert kafka_admin.committed_offsets(app_id, in_topic) == {TopicPartition(in_topic, 0): 0}

    result = runner.run_task("0_0")
    assert result.offsets_to == {TopicPartition(in_topic, 0): 40}
    values = sorted(int(record.value) for record in read_topic(kafka_bootstrap, out_topic))
    assert values == list(range(40))  # every record once: the replay skipped what was written


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_repartition_topics_carry_the_record_timestamp(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path,
                                                       guarantee):
    """Kafka Streams keeps record timestamps across a repartition: a record a task writes to a
    repartition topic has its source record's timestamp as its Kafka timestamp, under exactly-once
    (the producer's) as under at-least-once (Spark's sink writes it in a header, which the producer
    interceptor makes the record's own and drops). Both the Python pass and the Column (JVM) pass."""
    in_topic = unique_topic("clicks")
    kafka_admin.create_topics({in_topic: 2})
    base = int(time.time() * 1000) - 3_600_000  # within the broker's retention (README, tests)
    rows = [(f"k{i}".encode(), f"user{i % 3}".encode(), None, base + 1000 * i) for i in range(30)]
    produce(kafka_bootstrap, in_topic, rows)
    expected = sorted((f"user{i % 3}", base + 1000 * i) for i in range(30))
    for name, mapper in (("python", lambda key, value: value), ("column", F.col("value"))):
        builder = StreamsBuilder()
        builder.stream(in_topic).select_key(mapper).group_by_key().count()
        app_id = unique_topic(f"app-{name}")
        runner = TaskRunner(builder, app_id, kafka_bootstrap, state_location=str(tmp_path / name), spark=spark,
                            processing_guarantee=guarantee)
        for task in runner.task_ids():
            if task.startswith("0_"):
                runner.run_task(task)
        (repartition,) = runner.application.repartition_topics
        written = read_topic(kafka_bootstrap, repartition)
        assert sorted((record.key.decode(), record.timestamp) for record in written) == expected, name
        assert not any(header == TIMESTAMP_HEADER for record in written for header, _ in record.headers), name


def test_a_stateless_pass_on_the_driver_or_the_executors_writes_the_same_records(kafka_bootstrap, kafka_admin,
                                                                                  unique_topic, spark, tmp_path):
    """Under exactly-once a stateless Python pass runs on the driver, over the batch it collects
    anyway (the default), or in Spark's Python workers (``stateless_pass="executors"``): the same
    records in the same order on every partition, with the same headers. One input partition, so
    each output partition's order is determined. (A record on an output topic is stamped when it
    is written, by either.)"""
    in_topic = unique_topic("lines")
    kafka_admin.create_topics({in_topic: 1})
    base = int(time.time() * 1000) - 3_600_000  # within the broker's retention (README, tests)
    rows = [(f"u{i % 5}".encode(), " ".join(f"w{(i * j) % 7}" for j in range(i % 4)).encode(), 0, base + i,
             [("trace", f"t{i}".encode())] if i % 3 else None) for i in range(80)]
    produce(kafka_bootstrap, in_topic, rows)
    words = sum(i % 4 for i in range(80))
    written = {}
    for place in ("driver", "executors"):
        out = unique_topic(f"words-{place}")
        kafka_admin.create_topics({out: 3})
        builder = StreamsBuilder()
        builder.stream(in_topic).flat_map_values(lambda line: line.split()).select_key(lambda user, word: word).to(out)
        runner = TaskRunner(builder, unique_topic(f"app-{place}"), kafka_bootstrap, state_location=str(tmp_path / place),
                            spark=spark, stateless_pass=place)
        (result,) = runner.run_all()
        assert result.records_in == 80, place
        written[place] = [(record.partition, record.key, record.value, record.headers)
                          for record in read_topic(kafka_bootstrap, out)]
    assert len(written["driver"]) == words
    assert written["driver"] == written["executors"]


def test_the_stateless_pass_is_placed_on_the_driver_or_the_executors_only():
    with pytest.raises(ValueError, match="stateless_pass must be one of driver, executors, got 'gpu'"):
        TaskRunner(StreamsBuilder(), "app", "127.0.0.1:1", stateless_pass="gpu")
