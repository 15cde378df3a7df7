"""processing_guarantee="exactly_once_v2": a batch's output and its offsets land together or never.

* A word count (a repartition, then a count) gives the exact counts; the repartition records carry
  the input's timestamps as their own Kafka timestamps and no bookkeeping header.
* A run that died after its transaction committed but before Spark's checkpoint did (simulated by
  removing the last ``commits/<batch>`` file, which is what such a run leaves) replays the batch
  without sending it again: the committed offsets' marks decide.
* Two processes on one task: the first, paused inside its transaction after sending a batch, is
  fenced by the second; its records are aborted (a ``read_uncommitted`` reader sees them, a
  ``read_committed`` one never does), and the output holds every record once.
"""

from __future__ import annotations

import math
import os
import struct
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.fencing import TaskFence
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.spark import TaskFencedError
from dagster_kstreams.spark.transactional_writer import EXACTLY_ONCE_V2, check_processing_guarantee, commit_mark
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Consumed, Produced
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.serdes import Serdes

REPO = Path(__file__).resolve().parents[1]
LINES = 1_200
BATCH = 400
# Within the broker's retention of now, else its retention check may delete them mid-test
# (tests/connect_word_count.py says how that looks).
BASE_TIME = int(time.time() * 1000) - 3_600_000


def test_the_guarantee_is_checked_where_it_is_set():
    assert check_processing_guarantee("exactly_once_v2", fencing=True) == EXACTLY_ONCE_V2
    with pytest.raises(ValueError, match="exactly_once_v2.*fencing=True"):
        check_processing_guarantee("exactly_once_v2", fencing=False)
    with pytest.raises(ValueError, match="at_least_once, exactly_once_v2, got 'exactly_once'"):
        check_processing_guarantee("exactly_once", fencing=True)
    assert commit_mark("abc", 7) == "dagster-kstreams:abc:7"


def _word_count(source: str, sink: str) -> StreamsBuilder:
    builder = StreamsBuilder()
    (builder.stream(source, Consumed.with_(Serdes.String(), Serdes.String()))
     .flat_map_values(lambda line: line.split())
     .group_by(lambda _key, word: word, Grouped.with_(Serdes.String(), Serdes.String()))
     .count()
     .to_stream()
     .to(sink, Produced.with_(Serdes.String(), Serdes.Long())))
    return builder


def _lines(partitions: int = 2) -> list[tuple[bytes, bytes, int, int]]:
    return [(f"k{i}".encode(), f"w{i % 7} w{i % 11} w{i % 13}".encode(), i % partitions, BASE_TIME + i)
            for i in range(LINES)]


def _expected_counts(lines) -> dict[str, int]:
    return dict(Counter(word for _, value, _, _ in lines for word in value.decode().split()))


def _counts(bootstrap: str, topic: str) -> dict[str, int]:
    return final_values(read_topic(bootstrap, topic), bytes.decode, lambda v: struct.unpack(">q", v)[0])


@pytest.mark.integration
def test_word_count_is_exact_and_a_batch_committed_before_a_crash_is_not_sent_again(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    source, sink, app_id = unique_topic("eos-lines"), unique_topic("eos-counts"), unique_topic("eos-app")
    kafka_admin.create_topics({source: 2, sink: 2})
    lines = _lines()
    produce(kafka_bootstrap, source, lines)
    state = tmp_path / "state"

    def runner():
        return TaskRunner(_word_count(source, sink), app_id, kafka_bootstrap, state_location=str(state), spark=spark,
                          max_records_per_batch=BATCH, processing_guarantee=EXACTLY_ONCE_V2,
                          repartition_purge_interval_s=math.inf)  # the repartition topic is read whole

    first = runner()
    first.run_all()
    assert _counts(kafka_bootstrap, sink) == _expected_counts(lines)
    assert kafka_admin.lag(app_id, source) == {TopicPartition(source, 0): 0, TopicPartition(source, 1): 0}
    [repartition] = first.application.repartition_topics
    carried = read_topic(kafka_bootstrap, repartition)
    assert len(carried) == sum(len(value.split()) for _, value, _, _ in lines)
    assert all(record.headers == () for record in carried)  # no position or timestamp header
    assert {record.timestamp for record in carried} == {timestamp for *_, timestamp in lines}

    # Each task as a crash between its transaction's commit and Spark's leaves it: the last batch
    # committed to Kafka (offsets and mark) but not in the checkpoint's commit log.
    output_before = len(read_topic(kafka_bootstrap, sink))
    for task in first.task_ids():
        commits = Path(first.checkpoint_location(task)) / "commits"
        last = max(int(name) for name in os.listdir(commits) if name.isdigit())
        (commits / str(last)).unlink()
        (commits / f".{last}.crc").unlink(missing_ok=True)
    rerun = runner().run_all()
    assert all(result.batches == 1 for result in rerun)  # each replayed its last batch ...
    assert len(read_topic(kafka_bootstrap, repartition)) == len(carried)  # ... and sent nothing again
    assert len(read_topic(kafka_bootstrap, sink)) == output_before
    assert _counts(kafka_bootstrap, sink) == _expected_counts(lines)
    assert kafka_admin.lag(app_id, source) == {TopicPartition(source, 0): 0, TopicPartition(source, 1): 0}


class _PausingFence(TaskFence):
    """The task's real fence, made to wait once inside the transaction of the batch that ends at
    offset ``at``, after its records were sent and before its offsets and commit."""

    def __init__(self, *args, at: int, reached: threading.Event, release: threading.Event, **kwargs):
        super().__init__(*args, **kwargs)
        self.at, self.reached, self.release = at, reached, release

    def commit(self, offsets, metadata=None, produce=None) -> None:
        def produce_then_pause(producer):
            produce(producer)
            producer.flush(30)  # the records are in the broker's log, in the open transaction
            self.reached.set()
            assert self.release.wait(300), "the test never released the first process"

        pausing = produce is not None and max(offsets.values()) == self.at and not self.reached.is_set()
        super().commit(offsets, metadata, produce_then_pause if pausing else produce)


class _PausingRunner(TaskRunner):
    def __init__(self, *args, pause, **kwargs):
        super().__init__(*args, **kwargs)
        self.pause = pause

    def task_fence(self, task_id):
        fence = super().task_fence(task_id)
        return _PausingFence(self.kafka_config["bootstrap.servers"], fence.transactional_id, fence.group_id,
                             **self.pause)


@pytest.mark.integration
def test_a_zombies_records_are_aborted_and_the_output_holds_each_record_once(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    source, sink, app_id = unique_topic("eos-zin"), unique_topic("eos-zout"), unique_topic("eos-zapp")
    kafka_admin.create_topics({source: 1, sink: 1})
    module = tmp_path / "upper.py"
    module.write_text(textwrap.dedent(f"""
        from dagster_kstreams.topology import StreamsBuilder

        def build():
            builder = StreamsBuilder()
            builder.stream({source!r}).map_values(lambda value: value.upper()).to({sink!r})
            return builder.build()
    """))
    namespace: dict = {}
    exec(compile(module.read_text(), str(module), "exec"), namespace)
    inputs = [(f"k{i}".encode(), f"v{i}".encode(), 0) for i in range(3 * BATCH)]
    produce(kafka_bootstrap, source, inputs)
    reached, release = threading.Event(), threading.Event()
    first = _PausingRunner(namespace["build"](), app_id, kafka_bootstrap, state_location=str(tmp_path / "state"),
                           spark=spark, max_records_per_batch=BATCH, processing_guarantee=EXACTLY_ONCE_V2,
                           pause={"at": 2 * BATCH, "reached": reached, "release": release})
    outcome: dict = {}
    thread = threading.Thread(target=lambda: outcome.update(error=_error_of(first.run_task, "0_0")))
    thread.start()
    try:
        assert reached.wait(240), "the first process never reached its pause"
        # Batch 1 is in the log inside an open transaction: invisible to read_committed readers.
        assert len(read_topic(kafka_bootstrap, sink, {"isolation.level": "read_uncommitted"})) == 2 * BATCH
        command = [
            sys.executable, "-m", "dagster_kstreams.cli", "run", f"{module}:build", "--app-id", app_id,
            "--task", "0_0", "--bootstrap-servers", kafka_bootstrap, "--state-location", str(tmp_path / "state"),
            "--master", "local[1]", "--max-records-per-batch", str(BATCH), "--processing-guarantee", EXACTLY_ONCE_V2,
        ]
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        second = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
        assert second.returncode == 0, second.stderr[-3000:]
    finally:
        release.set()
        thread.join(300)
    assert isinstance(outcome["error"], TaskFencedError), repr(outcome["error"])

    expected = [(key.decode(), value.decode().upper()) for key, value, _ in inputs]
    committed = [(r.key.decode(), r.value.decode()) for r in read_topic(kafka_bootstrap, sink)]
    assert committed == expected  # each record once, in input order
    # The zombie's batch 1 is in the log, aborted: 400 records more for a read_uncommitted reader.
    assert len(read_topic(kafka_bootstrap, sink, {"isolation.level": "read_uncommitted"})) == len(expected) + BATCH
    assert kafka_admin.lag(app_id, source) == {TopicPartition(source, 0): 0}


def _error_of(call, *args):
    try:
        call(*args)
    except BaseException as error:  # handed to the test's thread
        return error
    return None


@pytest.mark.integration
def test_a_transaction_that_fails_after_sending_is_aborted_not_left_open(kafka_bootstrap, kafka_admin, unique_topic):
    """A failure inside a batch's transaction (here the produce function's own, after its records
    reached the broker) aborts it before it is raised: the last stable offset moves past the
    records at once, not after transaction.timeout.ms (60 s) as for a transaction left open."""
    topic, app_id = unique_topic("failed-txn"), unique_topic("failed-txn-app")
    kafka_admin.create_topics({topic: 1})

    def send_then_fail(producer):
        producer.produce(topic, key=b"k", value=b"v", partition=0)
        producer.flush(30)  # in the broker's log, inside the open transaction
        raise RuntimeError("the batch failed after sending")

    fence = TaskFence(kafka_bootstrap, f"{app_id}-task-0_0", app_id).start()
    try:
        with pytest.raises(RuntimeError, match="the batch failed after sending"):
            fence.commit({(topic, 0): 1}, produce=send_then_fail)
        deadline = time.monotonic() + 10
        while kafka_admin.end_offsets(topic, "read_committed") != kafka_admin.end_offsets(topic):
            assert time.monotonic() < deadline, "the failed transaction was left open"
            time.sleep(0.1)
        assert read_topic(kafka_bootstrap, topic, timeout_s=10) == []  # aborted: nothing to read_committed
    finally:
        fence.close()
