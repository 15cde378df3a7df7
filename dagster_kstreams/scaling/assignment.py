"""Sticky, balanced assignment of tasks to workers (what Kafka Streams' assignors do).

Guarantees of :func:`assign_tasks`, for ``n`` tasks and ``w >= 1`` workers:

* every task goes to exactly one worker;
* every worker gets ``n // w`` or ``n // w + 1`` tasks (balanced within one task);
* the number of tasks that stay with their previous worker is the largest any balanced
  assignment allows (so the fewest tasks move). In particular:

  - previous assignment already balanced over the same workers and tasks: nothing moves;
  - one worker added to a balanced assignment of ``n`` tasks over ``w`` workers: exactly
    ``n // (w + 1)`` tasks move, all of them to the new worker, which is the least any
    balanced assignment can move;
  - one worker removed (failed, vanished, retired) from a balanced assignment: only its own
    tasks move;
* a worker that keeps only some of its previous tasks keeps a share of each sub-topology
  (alternating between them), so a new worker takes a share of every stage: on the word count,
  one worker of two does not end up with every counting task while the other only splits
  lines (``bench/autoscaling.py``);
* deterministic: ties break by task order and worker order (:mod:`.ids`), never by hash
  or set iteration order.

Why it is optimal: a balanced assignment gives ``r = n mod w`` workers ``q + 1 = n // w + 1``
tasks and the rest ``q``. A worker that previously had ``c`` of the tasks can keep at most
``min(c, capacity)`` of them, and an extra slot is worth one kept task exactly when
``c >= q + 1``. Handing the ``r`` extra slots to the workers with the most previous tasks
therefore maximises the total kept, and every other task is placed into the remaining room.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from .ids import subtopology_of, task_sort_key, worker_sort_key


def assign_tasks(
    tasks: Iterable[str],
    workers: Iterable[str],
    previous: Mapping[str, Iterable[str]] | None = None,
    *,
    task_weights: Mapping[str, float] | None = None,
) -> dict[str, frozenset[str]]:
    """Assign every task to exactly one worker, balanced by count, moving as few as possible.

    ``previous`` maps worker ids to the tasks they had; entries for workers not in
    ``workers`` (failed, vanished, retired) and tasks not in ``tasks`` are ignored, so
    their tasks are simply redistributed. A task listed under several workers counts as
    the previous task of the first of them in worker order.

    ``task_weights`` (for example each task's lag) only decides where the tasks that must
    move go: heaviest first, each to the worker with room and the least weight so far.
    The count balance and the number of moved tasks do not depend on it.

    Returns a mapping with an entry (possibly empty) for every worker.
    """
    task_list = sorted(set(tasks), key=task_sort_key)
    worker_list = sorted(set(workers), key=worker_sort_key)
    if not worker_list:
        if task_list:
            raise ValueError(f"cannot assign {len(task_list)} tasks to no workers")
        return {}
    task_set = set(task_list)
    previous = previous or {}

    previous_owner: dict[str, str] = {}
    for worker in worker_list:
        for task in sorted(set(previous.get(worker, ())), key=task_sort_key):
            if task in task_set and task not in previous_owner:
                previous_owner[task] = worker
    candidates: dict[str, list[str]] = {worker: [] for worker in worker_list}
    for task in task_list:
        owner = previous_owner.get(task)
        if owner is not None:
            candidates[owner].append(task)

    base, extra_slots = divmod(len(task_list), len(worker_list))
    position = {worker: i for i, worker in enumerate(worker_list)}
    by_most_previous = sorted(worker_list, key=lambda worker: (-len(candidates[worker]), position[worker]))
    capacity = {worker: base + (1 if rank < extra_slots else 0) for rank, worker in enumerate(by_most_previous)}

    assigned: dict[str, list[str]] = {}
    homeless: list[str] = []
    for worker in worker_list:
        spread = _across_subtopologies(candidates[worker])
        assigned[worker] = spread[: capacity[worker]]
        homeless.extend(spread[capacity[worker] :])
    homeless.extend(task for task in task_list if task not in previous_owner)

    # A task listed under several previous workers stays with another of them that has room
    # (in task order, before weights are looked at: stickiness never depends on them).
    for task in sorted(homeless, key=task_sort_key):
        listed = [worker for worker in worker_list
                  if task in previous.get(worker, ()) and len(assigned[worker]) < capacity[worker]]
        if listed:
            assigned[listed[0]].append(task)
            homeless.remove(task)

    weight = (lambda task: float(task_weights.get(task, 0.0))) if task_weights else (lambda task: 0.0)
    homeless.sort(key=lambda task: (-weight(task), task_sort_key(task)))
    load = {worker: sum(weight(task) for task in assigned[worker]) for worker in worker_list}
    for task in homeless:
        target = min(
            (worker for worker in worker_list if len(assigned[worker]) < capacity[worker]),
            key=lambda worker: (load[worker], len(assigned[worker]), position[worker]),
        )
        assigned[target].append(task)
        load[target] += weight(task)

    return {worker: frozenset(assigned[worker]) for worker in worker_list}


def _across_subtopologies(tasks: list[str]) -> list[str]:
    """``tasks`` (in task order) re-ordered to alternate between sub-topologies: each one's first
    task, then each one's second, ... (``0_0, 0_1, 1_0, 1_1`` -> ``0_0, 1_0, 0_1, 1_1``)."""
    rank: dict[str, int] = {}
    seen: Counter = Counter()
    for task in tasks:
        rank[task] = seen[subtopology_of(task)]
        seen[subtopology_of(task)] += 1
    return sorted(tasks, key=lambda task: (rank[task], task_sort_key(task)))


def moved_tasks(
    previous: Mapping[str, Iterable[str]],
    current: Mapping[str, Iterable[str]],
) -> frozenset[str]:
    """Tasks that had a worker in ``previous`` and have a different one in ``current``.

    New tasks (no worker before) are not moves; a task of a vanished worker is.
    """
    before = {task: worker for worker, tasks in previous.items() for task in tasks}
    return frozenset(
        task
        for worker, tasks in current.items()
        for task in tasks
        if task in before and before[task] != worker
    )
