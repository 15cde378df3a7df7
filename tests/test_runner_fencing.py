"""One task held by two processes at once, at-least-once: the one that started it last owns it, the
other's next commit fails (TaskFencedError), and the output holds every input record exactly once.
(Exactly-once, where the zombie's records are aborted instead: tests/test_exactly_once.py.)

Process A (this test process) runs tasks 0_0 and 0_1 and stops inside a batch of each:

* 0_0 after writing batch 1 to Kafka, before committing it;
* 0_1 before writing batch 1 (before its fence check).

Process B (``dagster-kstreams run`` in a subprocess, same checkpoints) then runs both tasks to the
end. When A goes on, 0_0's commit is rejected and 0_1 stops before writing: both raise
TaskFencedError. B replayed 0_0's batch 1 and skipped what A had written of it.

Two processes that start one task at the same moment may plan its batch at once: Spark fails the
slower, which goes on if it owns the task and stops (fenced, one line) if not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.fencing import (
    FenceError,
    FenceTimeoutError,
    ProducerFencedError,
    TaskFence,
    classify_transaction_error,
    task_transactional_id,
)
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.orchestration.worker_loop import LostTasks
from dagster_kstreams.spark import TaskFencedError
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import StreamsBuilder

REPO = Path(__file__).resolve().parents[1]
BATCH = 200
PER_PARTITION = 3 * BATCH


def _until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


# -- pure ------------------------------------------------------------------------------------
def test_transactional_id_names_the_task_and_errors_are_classified():
    assert task_transactional_id("word-count", "1_3") == "word-count-task-1_3"
    assert classify_transaction_error(KafkaError(KafkaError._FENCED, fatal=True)) == "fenced"
    assert classify_transaction_error(KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, fatal=True)) == "fatal"
    assert classify_transaction_error(KafkaError(KafkaError._TIMED_OUT, retriable=True)) == "retry"
    assert classify_transaction_error(KafkaError(KafkaError.NOT_COORDINATOR)) == "retry"  # raised unflagged
    assert classify_transaction_error(KafkaError(KafkaError._TRANSPORT)) == "retry"  # a broker restarting
    assert classify_transaction_error(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, txn_requires_abort=True)) == "abort"


def test_a_client_call_that_never_returns_fails_the_fence_instead_of_hanging():
    fence = TaskFence("127.0.0.1:1", "app-task-0_0", "app")  # never started: no broker needed
    fence.grace_s = 0.2
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(FenceError, match="gave no answer"):
        fence._bounded(release.wait, 0.1, "committing offsets")
    assert time.monotonic() - started < 5
    with pytest.raises(FenceError, match="never returned"):  # the fence is unusable from then on
        fence._bounded(lambda: None, 0.1, "checking the fence")
    release.set()


def test_a_broker_restart_is_waited_out_until_the_deadline_but_being_fenced_fails_at_once():
    fence = TaskFence("127.0.0.1:1", "app-task-0_0", "app", timeout_s=1.0)  # never started: no broker needed
    outage = iter([KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                   KafkaError.REQUEST_TIMED_OUT, None])

    def restarting_broker(remaining):
        code = next(outage)
        if code is not None:
            raise KafkaException(KafkaError(code))
        return "committed"

    assert fence._call(restarting_broker, "committing offsets") == "committed"

    def down(remaining):
        raise KafkaException(KafkaError(KafkaError._TRANSPORT))

    started = time.monotonic()
    with pytest.raises(FenceTimeoutError, match=r"committing offsets .* Kafka at 127\.0\.0\.1:1 was unavailable for 1s"):
        fence._call(down, "committing offsets")
    assert 0.9 < time.monotonic() - started < 3

    calls = []

    def fenced(remaining):
        calls.append(remaining)
        raise KafkaException(KafkaError(KafkaError._FENCED, fatal=True))

    with pytest.raises(ProducerFencedError):
        fence._call(fenced, "committing offsets")
    assert len(calls) == 1


def test_the_fence_reconnects_to_known_brokers_rather_than_rebootstrapping_unless_configured():
    # Re-bootstrapping after every broker was down leaves librdkafka waiting for ever on the old
    # group coordinator (librdkafka #5511): the fence's clients do not, unless told to.
    assert TaskFence("b:9092", "app-task-0_0", "app")._producer_config["metadata.recovery.strategy"] == "none"
    told = TaskFence("b:9092", "app-task-0_0", "app", {"metadata.recovery.strategy": "rebootstrap"})
    assert told._producer_config["metadata.recovery.strategy"] == "rebootstrap"


def test_a_worker_leaves_a_lost_task_alone_until_revoked_or_the_pause_is_over():
    lost, tags = LostTasks(pause_seconds=60), {"0_0", "0_1"}
    assert lost.usable(tags, now=0) == tags
    lost.lose("0_1", now=10)  # the worker's commit of 0_1 was fenced
    assert lost.usable(tags, now=11) == {"0_0"}
    assert lost.usable(tags, now=69.9) == {"0_0"}
    assert lost.usable(tags, now=70) == tags  # the pause is over: the worker takes it again
    lost.lose("0_1", now=100)
    assert lost.usable({"0_0"}, now=101) == {"0_0"}  # the sensor revoked it: forgotten ...
    assert lost.usable(tags, now=102) == tags  # ... so a later grant starts afresh


# -- broker only -----------------------------------------------------------------------------
@pytest.mark.integration
def test_a_newer_fence_of_a_task_rejects_the_older_ones_check_and_commit(kafka_bootstrap, kafka_admin, unique_topic):
    topic, group = unique_topic("fenced-in"), unique_topic("fenced-app")
    kafka_admin.create_topics({topic: 1})
    transactional_id = task_transactional_id(group, "0_0")
    older = TaskFence(kafka_bootstrap, transactional_id, group).start()
    older.check({(topic, 0): 5})
    older.commit({(topic, 0): 5})
    assert kafka_admin.committed_offsets(group, topic) == {TopicPartition(topic, 0): 5}

    newer = TaskFence(kafka_bootstrap, transactional_id, group).start()
    with pytest.raises(ProducerFencedError, match=transactional_id):
        older.check({(topic, 0): 9})
    with pytest.raises(ProducerFencedError):
        older.commit({(topic, 0): 9})
    newer.check({(topic, 0): 7})
    newer.commit({(topic, 0): 7})
    assert kafka_admin.committed_offsets(group, topic) == {TopicPartition(topic, 0): 7}
    older.close()

    # A transaction holding offsets for the group open (a run stopped between two calls): the
    # committed offsets stay readable at once, as the ones before it.
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group})
    metadata = consumer.consumer_group_metadata()
    consumer.close()
    other = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": unique_topic("pending")})
    other.init_transactions(30)
    other.begin_transaction()
    other.send_offsets_to_transaction([KafkaTopicPartition(topic, 0, 11)], metadata, 30)
    started = time.monotonic()
    assert kafka_admin.committed_offsets(group, topic) == {TopicPartition(topic, 0): 7}
    assert time.monotonic() - started < 5
    other.abort_transaction(30)
    other.close()
    newer.close()


# -- two processes, one task -----------------------------------------------------------------
class _PausingFence(TaskFence):
    """The task's real fence, made to wait once, at the batch whose end offset is ``at``,
    before checking (``where="check"``) or before committing (``where="commit"``)."""

    def __init__(self, *args, where: str, at: int, reached: threading.Event, release: threading.Event, **kwargs):
        super().__init__(*args, **kwargs)
        self.where, self.at, self.reached, self.release = where, at, reached, release

    def _pause(self, where: str, offsets) -> None:
        if where == self.where and max(offsets.values()) == self.at and not self.reached.is_set():
            self.reached.set()
            assert self.release.wait(300), "the test never released the first process"

    def check(self, offsets) -> None:
        self._pause("check", offsets)
        super().check(offsets)

    def commit(self, offsets, *args, **kwargs) -> None:
        self._pause("commit", offsets)
        super().commit(offsets, *args, **kwargs)


class _PausingRunner(TaskRunner):
    def __init__(self, *args, pauses, **kwargs):
        super().__init__(*args, **kwargs)
        self.pauses = pauses

    def task_fence(self, task_id):
        fence = super().task_fence(task_id)
        return _PausingFence(self.kafka_config["bootstrap.servers"], fence.transactional_id, fence.group_id,
                             **self.pauses[task_id])


def _inputs(partition: int, start: int = 0, count: int = PER_PARTITION):
    return [(f"k{partition}-{i}".encode(), f"v{partition}-{i}".encode(), partition) for i in range(start, start + count)]


def _outputs(bootstrap: str, topic: str) -> list[tuple[str, str]]:
    return [(record.key.decode(), record.value.decode()) for record in read_topic(bootstrap, topic)]


@pytest.mark.integration
def test_second_process_takes_the_task_over_and_the_first_ones_commit_fails(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    source, sink = unique_topic("fence-in"), unique_topic("fence-out")
    kafka_admin.create_topics({source: 2, sink: 1})
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
    app_id, state = unique_topic("fence-app"), tmp_path / "state"
    produce(kafka_bootstrap, source, _inputs(0) + _inputs(1))

    events = {task: (threading.Event(), threading.Event()) for task in ("0_0", "0_1")}
    pauses = {
        "0_0": {"where": "commit", "at": 2 * BATCH, "reached": events["0_0"][0], "release": events["0_0"][1]},
        "0_1": {"where": "check", "at": 2 * BATCH, "reached": events["0_1"][0], "release": events["0_1"][1]},
    }
    first = _PausingRunner(namespace["build"](), app_id, kafka_bootstrap, state_location=str(state), spark=spark,
                           max_records_per_batch=BATCH, pauses=pauses, processing_guarantee="at_least_once")
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = {task: pool.submit(first.run_task, task) for task in ("0_0", "0_1")}
        try:
            for task, (reached, _) in events.items():
                assert reached.wait(240), f"the first process never reached its pause in task {task}"
            # A wrote 0_0's batches 0 and 1 (1 not committed) and 0_1's batch 0.
            assert len(_outputs(kafka_bootstrap, sink)) == 3 * BATCH
            assert kafka_admin.committed_offsets(app_id, source) == {
                TopicPartition(source, 0): BATCH, TopicPartition(source, 1): BATCH}

            command = [
                sys.executable, "-m", "dagster_kstreams.cli", "run", f"{module}:build", "--app-id", app_id,
                "--task", "0_0", "--task", "0_1", "--bootstrap-servers", kafka_bootstrap,
                "--state-location", str(state), "--master", "local[1]", "--max-records-per-batch", str(BATCH),
                "--spark-conf", "spark.sql.shuffle.partitions=1", "--processing-guarantee", "at_least_once",
            ]
            env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
            second = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
            assert second.returncode == 0, second.stderr[-3000:]
            # B replayed 0_0's batch 1, found it in Kafka and did not write it again.
            assert f"batch 1 is a replay; {BATCH} records of it are already in Kafka" in second.stderr
        finally:
            for _, release in events.values():
                release.set()
        errors = {task: run.exception(timeout=300) for task, run in runs.items()}

    for task, stage in (("0_0", "at the commit of batch 1, after writing its output"),
                        ("0_1", "before writing batch 1")):
        error = errors[task]
        assert isinstance(error, TaskFencedError), f"task {task}: {error!r}"
        assert error.task_id == task and error.application_id == app_id and error.stage == stage
        assert f"task {task} of application {app_id!r} was taken over by another process" in str(error)

    expected = [(key.decode(), value.decode().upper()) for partition in (0, 1) for key, value, _ in _inputs(partition)]
    output = _outputs(kafka_bootstrap, sink)
    assert Counter(output) == Counter(expected)  # each record once: no duplicate, no loss
    for partition in (0, 1):  # and in input order within a task
        assert [kv for kv in output if kv[0].startswith(f"k{partition}-")] == \
               [kv for kv in expected if kv[0].startswith(f"k{partition}-")]
    assert kafka_admin.committed_offsets(app_id, source) == kafka_admin.end_offsets(source)
    assert kafka_admin.lag(app_id, source) == {TopicPartition(source, 0): 0, TopicPartition(source, 1): 0}

    # The fenced process may take the task back later: it continues from B's checkpoint.
    produce(kafka_bootstrap, source, _inputs(0, PER_PARTITION, 40))
    again = TaskRunner(namespace["build"](), app_id, kafka_bootstrap, state_location=str(state), spark=spark,
                       processing_guarantee="at_least_once")
    assert again.run_task("0_0").records_in == 40
    expected += [(key.decode(), value.decode().upper()) for key, value, _ in _inputs(0, PER_PARTITION, 40)]
    assert Counter(_outputs(kafka_bootstrap, sink)) == Counter(expected)
    assert kafka_admin.committed_offsets(app_id, source) == kafka_admin.end_offsets(source)


def _plan_next_batch(checkpoint: Path, batch: int, added: int) -> None:
    """What another process that planned batch ``batch`` of the checkpoint first leaves: the offset
    log entry (Spark's format, as this run's previous entry has it), ``added`` records further."""
    version, metadata, offsets = (checkpoint / "offsets" / str(batch - 1)).read_text().splitlines()
    ends = {topic: {partition: end + added for partition, end in partitions.items()}
            for topic, partitions in json.loads(offsets).items()}
    (checkpoint / "offsets" / str(batch)).write_text("\n".join([version, metadata, json.dumps(ends)]))


@pytest.mark.integration
def test_of_two_processes_planning_one_batch_at_once_the_owner_goes_on_and_only_the_other_stops(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    # Spark fails the slower of two queries planning one batch of a checkpoint: here this run's,
    # in both tasks, because "another process" (played by the test: its offset log entry, its
    # fence) planned the batch first. In 0_0 this run still owns the task and starts again on the
    # checkpoint; 0_1 the other process took (it started the task later), so this run stops there.
    source, sink = unique_topic("race-in"), unique_topic("race-out")
    kafka_admin.create_topics({source: 2, sink: 2})
    builder = StreamsBuilder()
    builder.stream(source).group_by_key().count().to_stream().to(sink)
    app_id, state = unique_topic("race-app"), tmp_path / "state"
    runner = TaskRunner(builder.build(), app_id, kafka_bootstrap, state_location=str(state), spark=spark)
    records = [(f"p{partition}-k{i % 3}".encode(), b"x", partition) for partition in (0, 1) for i in range(10)]
    produce(kafka_bootstrap, source, records)
    running = {task: runner.start_task(task) for task in ("0_0", "0_1")}
    other = TaskFence(kafka_bootstrap, task_transactional_id(app_id, "0_1"), app_id)
    try:
        _until(lambda: all(sum(run.processed.values()) == 10 for run in running.values()), 120, "batch 0 of each task")
        for task in running:
            _plan_next_batch(state / app_id / "tasks" / task / "checkpoint", 1, 10)
        other.start()
        produce(kafka_bootstrap, source, records)  # this run plans batch 1 of each task now
        owner, loser = running["0_0"], running["0_1"]

        def settled() -> bool:
            failure = owner.failure()
            if failure is not None:
                raise AssertionError(f"the owner stopped too: {failure}")
            return sum(owner.processed.values()) == 20 and loser.failure() is not None

        _until(settled, 120, "0_0 to go on and 0_1 to stop")
        assert owner.active
        error = loser.failure()
        assert isinstance(error, TaskFencedError) and error.stage == \
            "when another process planned the same batch at the same moment"
        assert str(error).startswith(f"task 0_1 of application {app_id!r} was taken over by another process")
        assert "\n" not in str(error)
    finally:
        for run in running.values():
            run.stop()
        other.close()
    # The task taken from this run goes on where its owner is: here, a later run of it.
    assert runner.run_task("0_1").records_in == 10
    counts = final_values(read_topic(kafka_bootstrap, sink), bytes.decode,
                          lambda value: int.from_bytes(value, "big", signed=True))
    assert counts == dict(Counter(key.decode() for key, _, _ in records + records))
    assert kafka_admin.lag(app_id, source) == {TopicPartition(source, 0): 0, TopicPartition(source, 1): 0}
