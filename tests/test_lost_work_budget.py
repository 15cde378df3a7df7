"""How often a run starts its query again after Spark lost a batch's work: three times in a row at
most, the row begun again by every batch committed between (a long run that loses a Python worker
now and then goes on; one whose batch is lost on every try fails, naming why)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.spark import running_task
from dagster_kstreams.spark.running_task import RunningTask
from dagster_kstreams.topology.task_id import TaskId

LOST = RuntimeError("Lost task 0.0 in stage 3.0: org.apache.spark.SparkException: Python worker exited unexpectedly "
                    "(crashed)")
PARTITION = TopicPartition("in", 0)


class _StoppedQuery:
    """A query that stopped because Spark lost its batch's work."""

    isActive = False

    def exception(self):
        return LOST


class _Fence:
    fenced = None

    def check(self, offsets, stage):
        pass


@pytest.fixture
def task(monkeypatch):
    monkeypatch.setattr(running_task, "_PAUSE_BEFORE_STARTING_AGAIN_S", 0)
    run = SimpleNamespace(task=TaskId(0, 0), started=0.0, processed={PARTITION: 0})
    starts = []

    def start_again():
        starts.append(dict(run.processed))
        return _StoppedQuery()

    running = RunningTask("app", _StoppedQuery(), run, _Fence(), admin=None, source_topics=["in"],
                          on_exit=lambda task: None, start_again=start_again)
    return running, run, starts


def test_a_batch_lost_on_every_try_fails_the_task_after_three_starts(task):
    running, _, starts = task
    for _ in range(3):
        assert running.failure() is None  # started again
    error = running.failure()
    assert error is not None and "Python worker running the batch exited unexpectedly" in error.reason
    assert len(starts) == 3


def test_losses_with_batches_committed_between_are_started_again_each_time(task):
    running, run, starts = task
    for committed in range(1, 8):
        assert running.failure() is None
        run.processed = {PARTITION: committed * 10}  # the started query committed a batch, then lost the next
    assert len(starts) == 7
