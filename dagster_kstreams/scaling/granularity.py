"""Whole tasks: a worker count that leaves every worker's tasks within one worker's capacity.

A task is never split between workers, and the assignment (:mod:`.assignment`) balances tasks by
count, so with ``T`` tasks and ``w`` workers some worker holds ``k = ceil(T / w)`` of them. The
policy's count, ``ceil(required rate / capacity)``, is a total: 256 tasks of 500 records/s on 63
workers of 2,431.6 records/s each have capacity to spare in total, yet four of those workers hold
5 tasks (2,500 records/s) and fall behind by 68 records a second, until their lag alone is enough for
the catch-up term to clear the scale-up dead band (``bench/README.md``, "Simulated again (session
10)" and "(session 11)": 2.4 M records, 800 s, at 256 partitions; at 128 still growing at the end).

What is guaranteed whatever the tasks' loads (they are not equal: sub-topologies cost differently,
keys are skewed): a worker holding ``k`` tasks carries at least the ``k`` *lightest* tasks' load.
When even that exceeds one worker, every worker holding ``k`` tasks falls behind, and only a count
that lowers ``ceil(T / w)`` helps; counts between two values of ``ceil(T / w)`` change nothing for
those workers. :func:`workers_for_whole_tasks` then gives the fewest workers whose busiest holds a
number of tasks whose lightest load fits. The lower bound is never an overestimate, so the rule
never adds a worker that the loads do not prove necessary: with skewed loads it rarely fires (the
count stays the total's), with even loads it is exact. Readings that swing (producers send in
batches) make the lightest loads read low, which only makes the rule fire less.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import accumulate

# A sum of loads that makes exactly one worker may come out a hair above it.
_ONE_WORKER_SLACK = 1e-9


def busiest_worker_tasks(task_count: int, workers: int) -> int:
    """How many tasks the busiest of ``workers`` holds under a count-balanced assignment."""
    return math.ceil(task_count / workers) if workers > 0 else task_count


def lightest_load(task_loads: Iterable[float], tasks: int) -> float:
    """The least load any ``tasks`` of these tasks carry together: the ``tasks`` lightest."""
    return sum(sorted(task_loads)[:tasks])


def workers_for_whole_tasks(task_loads: Iterable[float], workers: int, upper: int) -> int:
    """``workers``, or more (at most ``upper``) when the tasks its busiest worker holds provably
    exceed one worker: the fewest workers whose busiest holds few enough tasks that their lightest
    load fits one worker (``task_loads``: each task's load in workers, its input over its worker
    capacity). When every task alone exceeds a worker, each gets a worker of its own (up to ``upper``).
    """
    loads = sorted(task_loads)
    if workers <= 0 or not loads or upper <= workers:
        return workers
    held = busiest_worker_tasks(len(loads), workers)
    lightest = list(accumulate(loads))  # lightest[k - 1]: the k lightest tasks' load
    if lightest[held - 1] <= 1 + _ONE_WORKER_SLACK:
        return workers
    fitting = sum(1 for load in lightest[:held] if load <= 1 + _ONE_WORKER_SLACK)
    return max(workers, min(upper, math.ceil(len(loads) / max(fitting, 1))))


def is_short_of_whole_tasks(task_loads: Iterable[float], workers: int) -> bool:
    """Whether the busiest of ``workers`` provably falls behind (its tasks' lightest load exceeds
    one worker)."""
    loads = list(task_loads)
    return workers > 0 and bool(loads) and \
        lightest_load(loads, busiest_worker_tasks(len(loads), workers)) > 1 + _ONE_WORKER_SLACK
