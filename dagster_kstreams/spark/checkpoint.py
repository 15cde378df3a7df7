"""Where a task keeps its Structured Streaming checkpoint, and what the checkpoint says.

Layout: ``<state_location>/<application_id>/tasks/<task_id>/checkpoint``. The checkpoint holds
the task's source offsets (``offsets/<batch>``, written before a batch runs; ``commits/<batch>``,
written after it succeeded) and its RocksDB state store snapshots (``state/``), so that the task
continues exactly where it stopped in whatever process or machine runs it next, as long as that
one sees the same location. ``state_location`` may be a local directory (read with plain file
I/O) or any Hadoop-compatible URI (``hdfs://``, ``s3a://``, ``abfss://`` ...: read through Spark's
own Hadoop FileSystem): :mod:`~dagster_kstreams.spark.checkpoint_files`.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Optional

from pyspark.sql import SparkSession

from dagster_kstreams.base.home import state_home
from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.spark.checkpoint_files import checkpoint_files, local_path
from dagster_kstreams.spark.errors import python_worker_late, used_concurrently
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["default_state_location", "on_local_file_system", "task_directory", "task_checkpoint",
           "start_on_checkpoint", "CheckpointReader", "WriteIntents"]

STATE_LOCATION_ENV_VAR = "DAGSTER_KSTREAMS_STATE_LOCATION"
# The pauses before a query whose Python worker was late (python_worker_late) starts again: the
# first, doubled each time up to the longest.
_FIRST_PAUSE_WHEN_WORKER_LATE_S = 2.0
_LONGEST_PAUSE_WHEN_WORKER_LATE_S = 15.0

log = logging.getLogger(__name__)


def default_state_location() -> str:
    """``$DAGSTER_KSTREAMS_STATE_LOCATION``, else ``<DAGSTER_KSTREAMS_HOME or ./.kstreams>/state``."""
    configured = os.environ.get(STATE_LOCATION_ENV_VAR)
    if configured:
        return configured
    return str(state_home() / "state")


def _is_uri(location: str) -> bool:
    return "://" in location or location.startswith("file:")


def normalize_location(location: str) -> str:
    """A local path made absolute (Spark resolves relative ones against its own cwd); URIs as given."""
    if _is_uri(location):
        return location.rstrip("/")
    return str(Path(location).expanduser().resolve())


def on_local_file_system(location: str) -> bool:
    """Whether ``location`` is a directory of the local file system (a path or a ``file:`` URI)."""
    return local_path(location) is not None


def task_directory(state_location: str, application_id: str, task_id: TaskId | str) -> str:
    return f"{normalize_location(state_location)}/{application_id}/tasks/{task_id}"


def task_checkpoint(state_location: str, application_id: str, task_id: TaskId | str) -> str:
    return f"{task_directory(state_location, application_id, task_id)}/checkpoint"


def start_on_checkpoint(writer: Any, query: str, patience_s: float) -> Any:
    """``writer.start()`` (a ``DataStreamWriter`` whose checkpoint is set), again if another
    process started the same new checkpoint at the same moment, or, for up to ``patience_s`` (the
    runner's ``task_timeout_s``), while the Python worker Spark started for the query does not
    connect back in time. ``query`` names it in the log.

    Spark takes no lock on a checkpoint: both processes write its ``metadata`` and the slower one
    fails (``SparkConcurrentModificationException``: a ``FileAlreadyExistsException`` on
    ``checkpoint/metadata``). That one starts again on the metadata the other wrote: which of the
    two keeps the task is for the task's fence to say (the one that started the task last), not
    a race on a file. A Spark Connect server starts a Python worker for the query's
    ``foreachBatch`` before the query, and waits 10 s for it: on a machine too busy to start one
    that fast (a pyspark import of about 2 CPU seconds), the start fails and nothing has run."""
    raced, late, deadline = False, 0, time.monotonic() + patience_s
    while True:
        try:
            return writer.start()
        except Exception as error:  # Py4JJavaError, raised by the JVM (or a Connect server's error)
            if used_concurrently(error) and not raced:
                raced = True
            elif python_worker_late(error) and time.monotonic() < deadline:
                pause = min(_FIRST_PAUSE_WHEN_WORKER_LATE_S * 2 ** late, _LONGEST_PAUSE_WHEN_WORKER_LATE_S)
                late += 1
                log.warning("%s: Spark's Python worker for the query did not connect back within 10 s (a busy "
                            "machine); nothing ran, starting the query again in %.0f s", query, pause)
                time.sleep(pause)
            else:
                raise


class CheckpointReader:
    """Reads a streaming checkpoint (:mod:`~dagster_kstreams.spark.checkpoint_files`: plain file I/O
    for a local directory, else Hadoop's FileSystem through ``spark``)."""

    def __init__(self, spark: Optional["SparkSession"], checkpoint: str):
        self.checkpoint = checkpoint
        self.files = checkpoint_files(spark, checkpoint)

    def _path(self, *parts: str) -> str:
        return self.files.join(*parts)

    def _batch_ids(self, directory: str) -> list[int]:
        return sorted(int(name) for name in self.files.names(self._path(directory)) if name.isdigit())

    def last_committed_batch(self) -> Optional[int]:
        """The last batch whose output and state were committed, or None for a new checkpoint."""
        ids = self._batch_ids("commits")
        return ids[-1] if ids else None

    def committed_batches(self, after: Optional[int]) -> list[int]:
        """The batches of the commit log after batch ``after`` (all of them for None), in order."""
        return [batch for batch in self._batch_ids("commits") if after is None or batch > after]

    def batch_end_offsets(self, batch: int, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """End offsets of batch ``batch`` for those of ``partitions`` the offset log has."""
        ends = self.batch_source_offsets(batch)
        return {tp: ends[(tp.topic, tp.partition)] for tp in partitions if (tp.topic, tp.partition) in ends}

    def last_planned_batch(self) -> Optional[int]:
        """The last batch in the offset log (planned; committed too unless a run stopped in it)."""
        ids = self._batch_ids("offsets")
        return ids[-1] if ids else None

    def discard_torn_first_batch(self) -> None:
        """Remove what a run killed while writing a new checkpoint's first offset log entry left in
        ``offsets/`` (a temporary and a checksum file, no batch): Spark would take the checkpoint for
        a new one and refuse to start on a non-empty offset log (``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``).
        Only when the log holds no batch: then nothing in it is progress."""
        if self._batch_ids("offsets"):
            return
        for name in self.files.names(self._path("offsets")):
            self.files.delete(self._path("offsets", name))

    def query_id(self) -> Optional[str]:
        """The id Spark gave the checkpoint's query (kept across restarts), or None before its first start."""
        if not self.files.exists(self._path("metadata")):
            return None
        return json.loads(self.files.read_text(self._path("metadata"))).get("id")

    def committed_source_offsets(self) -> dict[tuple[str, int], int]:
        """End offsets of the last committed batch: ``{(topic, partition): next offset}``.

        The offset log file is ``v1``, the batch metadata (JSON), then one JSON line per
        source; the Kafka source's line is ``{"topic": {"partition": offset}}``.
        """
        batch = self.last_committed_batch()
        if batch is None:
            return {}
        return self.batch_source_offsets(batch)

    def batch_source_offsets(self, batch: int) -> dict[tuple[str, int], int]:
        """End offsets of batch ``batch`` from the offset log (written before the batch runs)."""
        lines = self.files.read_text(self._path("offsets", str(batch))).splitlines()
        offsets: dict[tuple[str, int], int] = {}
        for line in lines[2:]:
            line = line.strip()
            if not line or line == "-":
                continue
            for topic, partitions in json.loads(line).items():
                for partition, offset in partitions.items():
                    offsets[(topic, int(partition))] = int(offset)
        return offsets


class WriteIntents:
    """Before a batch writes its output, the end offsets of the topics it writes to.

    Spark's Kafka writes are not transactional: a run killed while writing batch ``N`` leaves
    part of ``N``'s output in Kafka, and the next run replays ``N`` (same input, same state,
    hence the same records in the same order). The intent recorded for ``N`` tells the replay
    where to look for what the killed attempt already wrote, so that it is not written twice.
    Files live next to the checkpoint (``<task>/intents/<batch>``) and are written atomically.
    """

    def __init__(self, spark: Optional["SparkSession"], task_dir: str):
        self.files = checkpoint_files(spark, task_dir)
        self._listed = False  # whether intents left by earlier runs have been looked for
        self._written: set[int] = set()

    def read(self, batch: int) -> Optional[dict[tuple[str, int], int]]:
        path = self.files.join("intents", str(batch))
        if not self.files.exists(path):
            return None
        try:
            entries = json.loads(self.files.read_text(path))
        except ValueError:
            return None  # torn write: the batch had not started writing
        return {(entry["topic"], int(entry["partition"])): int(entry["offset"]) for entry in entries}

    def write(self, batch: int, offsets: dict[tuple[str, int], int]) -> None:
        text = json.dumps([{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(offsets.items())])
        self.files.write_text(self.files.join("intents", str(batch)), text)
        self._written.add(batch)

    def forget_before(self, batch: int) -> None:
        """Batches before ``batch`` are committed; their intents are no longer needed.

        The directory is listed once per run (for intents of earlier runs); after that this run
        deletes the intents it wrote itself, without listing again."""
        if not self._listed:
            self._listed = True
            self._written.update(int(name) for name in self.files.names(self.files.join("intents")) if name.isdigit())
        for old in sorted(b for b in self._written if b < batch):
            self.files.delete(self.files.join("intents", str(old)))
            self._written.discard(old)
