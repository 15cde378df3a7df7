"""Which run of a task last started it, in the task's directory: the hand-over from a worker to
its writer in the Spark Connect server (:mod:`~dagster_kstreams.spark.remote_writer`).

A run writes its claim (a token of its own) *before* its fence's ``init_transactions``; the
writer reads it *after* its own. Kafka fences every producer initialized before the newest one,
so a writer initialized after a newer run's init reads that newer run's claim and stops without
writing, and one initialized before it is fenced: of two runs, only the one that started last
writes. The file is written atomically; only a local state location is read this way.
"""

from __future__ import annotations

import uuid
from typing import Optional

from dagster_kstreams.spark.checkpoint_files import CheckpointFiles

__all__ = ["CLAIM_FILE", "new_claim", "write_claim", "read_claim"]

CLAIM_FILE = "claim"


def new_claim() -> str:
    return uuid.uuid4().hex


def write_claim(task_files: CheckpointFiles, claim: str) -> None:
    task_files.write_text(task_files.join(CLAIM_FILE), claim)


def read_claim(task_files: CheckpointFiles) -> Optional[str]:
    path = task_files.join(CLAIM_FILE)
    return task_files.read_text(path).strip() if task_files.exists(path) else None
