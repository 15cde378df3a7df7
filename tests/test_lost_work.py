"""A batch whose work Spark loses (a Python worker killed, a task's result lost) is run again.

Spark's Python workers are processes of their own; the kernel's out-of-memory killer, or an
operator, may kill one while it runs a batch. In local mode Spark does not retry the task, so the
query fails. That batch was not committed (its transaction never began, or at-least-once's write
intents cover what it sent), so the task's run starts its query again on its checkpoint, as a rerun
after a crash would, instead of failing: the output is exactly what an undisturbed run writes.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections import Counter

import pytest

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import StreamsBuilder

RECORDS = 2_000


@pytest.mark.integration
@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
def test_a_batch_whose_python_worker_is_killed_runs_again_and_the_counts_are_exact(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, caplog, guarantee
):
    source, sink = unique_topic("lost-in"), unique_topic("lost-out")
    kafka_admin.create_topics({source: 1, sink: 1})
    running_pid = tmp_path / "python-worker-pid"

    def slow_and_seen(value: bytes) -> bytes:
        # The Python worker that runs the batch says so (its pid, once), and the batch takes seconds
        # there: long enough to be killed in. (Defined here, Spark's workers get it by value.)
        if not running_pid.exists():
            written = running_pid.with_suffix(f".{os.getpid()}")
            written.write_text(str(os.getpid()))
            os.replace(written, running_pid)
        time.sleep(0.002)
        return value

    builder = StreamsBuilder()
    builder.stream(source).map_values(slow_and_seen).group_by_key().count().to_stream().to(sink)
    app_id = unique_topic("lost-app")
    runner = TaskRunner(builder.build(), app_id, kafka_bootstrap, state_location=str(tmp_path / "state"),
                        spark=spark, processing_guarantee=guarantee)
    records = [(f"k{i % 7}".encode(), b"x", 0) for i in range(RECORDS)]
    produce(kafka_bootstrap, source, records)
    killed: list[int] = []
    stop = threading.Event()

    def kill_the_worker_running_the_batch() -> None:
        while not stop.is_set() and not killed:
            if running_pid.exists():
                pid = int(running_pid.read_text())
                if pid != os.getpid():  # a Python worker's, not this (the driver's) process
                    os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_worker_running_the_batch, daemon=True)
    killer.start()
    with caplog.at_level(logging.WARNING, logger="dagster_kstreams.spark.running_task"):
        try:
            result = runner.run_task("0_0")
        finally:
            stop.set()
            killer.join()
    assert killed and killed[0] != os.getpid(), "no Python worker was seen running the batch"
    restarts = [message for message in caplog.messages
                if "Spark lost the Python worker that ran the batch" in message and "starts again" in message]
    assert restarts, caplog.messages
    assert result.records_in == RECORDS
    written = read_topic(kafka_bootstrap, sink)
    counts = final_values(written, bytes.decode, lambda value: int.from_bytes(value, "big", signed=True))
    assert counts == dict(Counter(key.decode() for key, _, _ in records))
    if guarantee == "exactly_once_v2":  # the lost attempt sent nothing: one cached update per key
        assert len(written) == len(counts)
    assert kafka_admin.lag(app_id, source) == {TopicPartition(source, 0): 0}
