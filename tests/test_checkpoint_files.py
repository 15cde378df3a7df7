"""The task directory's files without a JVM, the state layout a count's checkpoint keeps, the claim that
hands a task to a Connect server's writer, and that writer's pickling (what Connect sends to the server)
and end after a failed batch."""

from __future__ import annotations

import os
import pickle

import pytest

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.fencing import TaskFence
from dagster_kstreams.spark.checkpoint import CheckpointReader, WriteIntents
from dagster_kstreams.spark.checkpoint_files import LocalFiles, checkpoint_files, local_path
from dagster_kstreams.spark.remote_writer import RemoteBatchWriter
from dagster_kstreams.spark.strategies import JvmCount
from dagster_kstreams.spark.task_claim import new_claim, read_claim, write_claim
from dagster_kstreams.topology.task_id import TaskId


def test_local_paths_and_file_uris_are_read_with_the_file_system():
    assert local_path("/state/app") == "/state/app"
    assert local_path("file:/state/app") == "/state/app"
    assert local_path("file:///state/app") == "/state/app"
    assert local_path("hdfs://namenode/state") is None
    assert isinstance(checkpoint_files(None, "file:///tmp/x"), LocalFiles)


def test_the_checkpoint_s_logs_are_read_with_plain_file_io(tmp_path):
    checkpoint = tmp_path / "checkpoint"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "commits").mkdir()
    for batch, (first, second) in enumerate([(3, 5), (7, 9)]):
        (checkpoint / "offsets" / str(batch)).write_text(
            'v1\n{"batchWatermarkMs":0}\n{"in":{"0":%d,"1":%d}}\n' % (first, second))
    (checkpoint / "commits" / "0").write_text("v1\n{}\n")
    (checkpoint / "commits" / ".1.tmp").write_text("")  # a commit being written is not one
    (checkpoint / "metadata").write_text('{"id":"q-1"}')
    reader = CheckpointReader(None, f"file://{checkpoint}")
    assert reader.last_planned_batch() == 1 and reader.last_committed_batch() == 0
    assert reader.committed_batches(None) == [0] and reader.committed_batches(0) == []
    assert reader.committed_source_offsets() == {("in", 0): 3, ("in", 1): 5}
    assert reader.batch_end_offsets(1, [TopicPartition("in", 1)]) == {TopicPartition("in", 1): 9}
    assert reader.query_id() == "q-1"


def test_write_intents_are_written_atomically_and_forgotten_once_committed(tmp_path):
    intents = WriteIntents(None, str(tmp_path))
    intents.write(0, {("out", 0): 10})
    intents.write(1, {("out", 0): 12})
    assert intents.read(1) == {("out", 0): 12} and intents.read(2) is None
    assert not [name for name in os.listdir(tmp_path / "intents") if name.startswith(".")]
    WriteIntents(None, str(tmp_path)).forget_before(1)  # a later run finds the older intents
    assert sorted(os.listdir(tmp_path / "intents")) == ["1"]


def test_the_last_claim_written_is_the_one_read(tmp_path):
    files = LocalFiles(str(tmp_path / "task"))
    assert read_claim(files) is None
    first, second = new_claim(), new_claim()
    write_claim(files, first)
    write_claim(files, second)
    assert first != second and read_claim(files) == second


def test_the_remote_writer_is_pickled_with_its_settings_and_never_with_what_it_built():
    writer = RemoteBatchWriter(
        "app", TaskId(0, 1), "claim", TaskFence("127.0.0.1:9092", "app-task-0_1", "app", {}), {"bootstrap.servers": "x"},
        30.0, "/state/app/tasks/0_1/checkpoint", "/state/app/tasks/0_1", [TopicPartition("in", 1)],
        {TopicPartition("in", 1): 0}, None, False, False, None)
    writer._writer = object()  # what the server built at its first batch (a producer, a lock ...)
    copy = pickle.loads(pickle.dumps(writer))
    assert copy._writer is None and copy.task == TaskId(0, 1) and copy.fence.transactional_id == "app-task-0_1"
    writer._run_fence = object()
    assert pickle.loads(pickle.dumps(writer))._run_fence is None


class _ClosedFence:
    closed = False

    def __exit__(self, *exc) -> None:
        self.closed = True


def test_the_remote_writer_closes_its_fence_when_a_batch_fails():
    """The server stops the writer's process after a failed query without closing anything."""
    writer = RemoteBatchWriter(
        "app", TaskId(0, 1), "claim", None, {"bootstrap.servers": "x"}, 30.0, "/state/app/tasks/0_1/checkpoint",
        "/state/app/tasks/0_1", [TopicPartition("in", 1)], {TopicPartition("in", 1): 0}, None, False, False, None)
    fence = writer._run_fence = _ClosedFence()

    def failing_batch(batch, batch_id):
        raise RuntimeError("batch 3 failed")

    writer._writer = failing_batch
    with pytest.raises(RuntimeError, match="batch 3 failed"):
        writer(None, 3)
    assert fence.closed


def _count_schema(checkpoint, value_fields: list[str]) -> None:
    """A state schema file as Spark 4 writes one for a streaming count (v2: Java's length-prefixed strings)."""
    def utf(text: str) -> bytes:
        data = text.encode()
        return len(data).to_bytes(2, "big") + data
    key = '{"type":"struct","fields":[{"name":"key","type":"binary","nullable":true,"metadata":{}}]}'
    value = '{"type":"struct","fields":[%s]}' % ",".join(
        '{"name":"%s","type":"long","nullable":true,"metadata":{}}' % name for name in value_fields)
    schema = checkpoint / "state" / "0" / "0" / "_metadata" / "schema"
    schema.parent.mkdir(parents=True)
    schema.write_bytes(utf("v2") + len(key).to_bytes(4, "big") + utf(key) + len(value).to_bytes(4, "big") + utf(value))


def test_a_count_checkpoint_written_before_counts_kept_their_timestamps_keeps_its_layout(tmp_path):
    counting = JvmCount()
    assert counting.on_checkpoint(checkpoint_files(None, str(tmp_path / "new"))) is counting  # no state yet
    _count_schema(tmp_path / "stamped", ["count", "max"])
    assert counting.on_checkpoint(checkpoint_files(None, str(tmp_path / "stamped"))) is counting
    _count_schema(tmp_path / "earlier", ["count"])
    kept = counting.on_checkpoint(checkpoint_files(None, str(tmp_path / "earlier")))
    assert isinstance(kept, JvmCount) and not kept.stamped and counting.stamped
