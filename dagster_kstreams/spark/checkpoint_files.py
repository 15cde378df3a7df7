"""The files of a task's directory (checkpoint, write intents, owner claim), read and written
either with the local file system or through Hadoop's FileSystem in the driver's JVM.

A local directory (a path or a ``file:`` URI) is read with plain file I/O: no JVM round trip
between two micro-batches, and a Spark Connect client or the Connect server's Python process can
read it as well as a classic driver. Any other location (``hdfs://``, ``s3a://`` ...) goes
through Hadoop (:func:`~dagster_kstreams.spark.jvm.hadoop_file_system`), which needs a classic
session. Writes are atomic: a temporary file renamed into place.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any, Optional

from dagster_kstreams.spark.jvm import hadoop_file_system

__all__ = ["CheckpointFiles", "LocalFiles", "HadoopFiles", "checkpoint_files", "local_path"]

_FILE_URI = re.compile(r"^file:(//)?(?=/)")


def local_path(location: str) -> Optional[str]:
    """The local path of ``location`` (a path or a ``file:`` URI), or None for any other URI."""
    if _FILE_URI.match(location):
        return _FILE_URI.sub("", location)
    return None if "://" in location else location


class CheckpointFiles:
    """What the runner does with a task's files; paths are ``/``-joined under ``root``."""

    def __init__(self, root: str):
        self.root = root

    def join(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def exists(self, path: str) -> bool:
        raise NotImplementedError

    def names(self, directory: str) -> list[str]:
        """The names in ``directory`` (empty if it does not exist)."""
        raise NotImplementedError

    def read_text(self, path: str) -> str:
        raise NotImplementedError

    def write_text(self, path: str, text: str) -> None:
        """Write ``text`` to ``path`` atomically (through a temporary file beside it)."""
        raise NotImplementedError

    def delete(self, path: str) -> None:
        """Delete a file, or a directory with what it holds; nothing if it is not there."""
        raise NotImplementedError


class LocalFiles(CheckpointFiles):
    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def names(self, directory: str) -> list[str]:
        return os.listdir(directory) if os.path.isdir(directory) else []

    def read_text(self, path: str) -> str:
        # What is not UTF-8 (Spark's binary files: a state schema) is replaced, as Hadoop's reader does.
        return Path(path).read_text(encoding="utf-8", errors="replace")

    def write_text(self, path: str, text: str) -> None:
        directory, name = os.path.split(path)
        os.makedirs(directory, exist_ok=True)
        temporary = os.path.join(directory, f".{name}.tmp")
        Path(temporary).write_text(text, encoding="utf-8")
        os.replace(temporary, path)

    def delete(self, path: str) -> None:
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.exists(path):
            os.remove(path)


class HadoopFiles(CheckpointFiles):
    def __init__(self, root: str, spark: Any):
        super().__init__(root)
        # Resolved once: each lookup of a JVM class through py4j is a round trip, and these run
        # between every two micro-batches.
        self._fs, self._path, self._read_all = hadoop_file_system(spark, root)

    def exists(self, path: str) -> bool:
        return bool(self._fs.exists(self._path(path)))

    def names(self, directory: str) -> list[str]:
        path = self._path(directory)
        if not self._fs.exists(path):
            return []
        return [status.getPath().getName() for status in self._fs.listStatus(path)]

    def read_text(self, path: str) -> str:
        stream = self._fs.open(self._path(path))
        try:
            return self._read_all(stream, "UTF-8")
        finally:
            stream.close()

    def write_text(self, path: str, text: str) -> None:
        directory, _, name = path.rpartition("/")
        temporary = self._path(f"{directory}/.{name}.tmp")
        stream = self._fs.create(temporary, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        final = self._path(path)
        self._fs.delete(final, False)
        if not self._fs.rename(temporary, final):
            raise OSError(f"could not write {path}")

    def delete(self, path: str) -> None:
        self._fs.delete(self._path(path), True)


def checkpoint_files(spark: Any, root: str) -> CheckpointFiles:
    """The files under ``root``: plain file I/O for a local directory, else Hadoop through ``spark``."""
    path = local_path(root)
    return LocalFiles(path) if path is not None else HadoopFiles(root, spark)
