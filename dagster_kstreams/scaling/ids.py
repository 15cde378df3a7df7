"""Task and worker identifiers, and the orders every scaling decision breaks ties by.

A task id is Kafka Streams' ``<sub-topology>_<partition>`` (``"1_3"``); a worker id is
``"worker-<n>"``. Both sort numerically where they can (``"1_10"`` after ``"1_9"``,
``"worker-10"`` after ``"worker-9"``), so that decisions read naturally and are the same on
every run.
"""

from __future__ import annotations

import re

WORKER_PREFIX = "worker-"

_TASK_ID = re.compile(r"^(\d+)_(\d+)$")
_WORKER_ID = re.compile(r"^" + re.escape(WORKER_PREFIX) + r"(\d+)$")


def task_sort_key(task_id: str) -> tuple:
    """Numeric order for ``"<sub-topology>_<partition>"`` ids; any other id after them, by text."""
    match = _TASK_ID.match(task_id)
    if match:
        return (0, int(match.group(1)), int(match.group(2)), task_id)
    return (1, 0, 0, task_id)


def subtopology_of(task_id: str) -> str:
    """The sub-topology part of a task id (``"1"`` for ``"1_3"``); another id is its own group."""
    match = _TASK_ID.match(task_id)
    return match.group(1) if match else task_id


def worker_id(index: int) -> str:
    if index < 0:
        raise ValueError(f"worker index must be >= 0, got {index}")
    return f"{WORKER_PREFIX}{index}"


def worker_index(worker: str) -> int | None:
    """The ``n`` of ``"worker-<n>"``, or None for an id of another shape."""
    match = _WORKER_ID.match(worker)
    return int(match.group(1)) if match else None


def worker_sort_key(worker: str) -> tuple:
    index = worker_index(worker)
    if index is not None:
        return (0, index, worker)
    return (1, 0, worker)


def lowest_free_worker_ids(taken: set[str] | frozenset[str], count: int) -> list[str]:
    """``count`` ids ``"worker-<n>"`` not in ``taken``, lowest ``n`` first."""
    ids: list[str] = []
    index = 0
    while len(ids) < count:
        candidate = worker_id(index)
        if candidate not in taken:
            ids.append(candidate)
        index += 1
    return ids
