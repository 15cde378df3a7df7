"""An application's task state under a state location, listed and deleted as a whole.

Each task keeps its Spark checkpoint and its write intents in
``<state_location>/<application_id>/tasks/<task_id>`` (:mod:`~dagster_kstreams.spark.checkpoint`).
A local directory (the default location) is read and deleted with the file system, with no JVM;
any other location (``hdfs://``, ``s3a://``, ``file:/`` ...) through Spark's Hadoop FileSystem,
so those need a SparkSession.
"""

from __future__ import annotations

import posixpath
import shutil
from pathlib import Path
from typing import Any

from dagster_kstreams.spark.checkpoint import normalize_location, task_directory
from dagster_kstreams.spark.jvm import hadoop_file_system

__all__ = ["TaskStateLocation", "is_local_location"]


def is_local_location(state_location: str) -> bool:
    """A local directory (read without a JVM), rather than a URI for Hadoop's FileSystem."""
    return normalize_location(state_location).startswith("/")  # local paths come back absolute


class TaskStateLocation:
    """The directory of one application's tasks (``<state_location>/<application_id>/tasks``)."""

    def __init__(self, state_location: str, application_id: str, spark: Any = None):
        self.state_location = normalize_location(state_location)
        self.is_local = is_local_location(state_location)
        self.tasks_directory = posixpath.dirname(task_directory(state_location, application_id, "any"))
        self.application_directory = posixpath.dirname(self.tasks_directory)
        if not self.is_local and spark is None:
            raise ValueError(f"state location {state_location!r} is not a local directory: reading it needs a "
                             "SparkSession (Hadoop FileSystem)")
        self._spark = spark

    def task_directories(self) -> list[str]:
        """The task directories present, sorted by name (empty when the application has no state here)."""
        if self.is_local:
            root = Path(self.tasks_directory)
            return sorted(str(path) for path in root.iterdir() if path.is_dir()) if root.is_dir() else []
        fs, path = self._hadoop(self.tasks_directory)
        if not fs.exists(path):
            return []
        return sorted(f"{self.tasks_directory}/{status.getPath().getName()}"
                      for status in fs.listStatus(path) if status.isDirectory())

    def exists(self) -> bool:
        """Whether anything of the application lives under the state location."""
        if self.is_local:
            return Path(self.application_directory).exists()
        fs, path = self._hadoop(self.application_directory)
        return bool(fs.exists(path))

    def delete(self) -> list[str]:
        """Delete the application's directory with every task's checkpoint and state; returns the
        task directories that were there."""
        tasks = self.task_directories()
        if self.is_local:
            if Path(self.application_directory).exists():
                shutil.rmtree(self.application_directory)
            return tasks
        fs, path = self._hadoop(self.application_directory)
        if fs.exists(path) and not fs.delete(path, True):
            raise OSError(f"could not delete {self.application_directory}")
        return tasks

    def _hadoop(self, location: str) -> tuple[Any, Any]:
        file_system, path_class, _ = hadoop_file_system(self._spark, location)
        return file_system, path_class(location)
