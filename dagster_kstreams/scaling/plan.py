"""Reconciliation: from the workers there are and the count wanted, what to launch, retag, retire.

The plan never lets two workers process one task at once. A task moves in two phases:

1. **revoke** — the old worker's tags drop the task; the new worker's *target* has it, but
   its tags (``tasks``, what it may process) do not yet: the move is a pending
   :class:`Handover`;
2. **grant** — on a later tick, once the old worker reports it no longer holds the task
   (or it failed, or it is gone), the new worker's tags get it.

A task counts as busy on a live (running or retiring) worker while it is in that worker's
tags or in what the worker last reported holding. A task is put into a worker's tags only
when no other live worker has it busy. Failed workers hold nothing: their tasks are
reassigned, and granted, on the very next plan: a failed worker that was only stalled (a
zombie) is fenced by Kafka as soon as its task starts elsewhere; its next commit fails
(``TaskFencedError``, see the runner's "Fencing") and it writes no further batch.

Contract with the worker run, which makes "reported holding" trustworthy: at the start of
each batch it (1) reads its tags, (2) reports the tasks it read as held, (3) reads its tags
again and (4) processes only tasks present both times, then commits. A worker whose tags
have emptied and that is marked retiring exits after reporting nothing held.

Worker ids are ``worker-<n>``; a new worker takes the lowest index no running or retiring
worker uses, so a failed worker's replacement takes its id, and its tasks (stickiness
follows the id), leaving the healthy workers untouched.

A task moving to a worker that is not *ready* (just launched, or still starting its
SparkSession: it has not beaten yet) stays in its current worker's tags until the receiver is
ready; only then is it revoked. Revoking it at once would leave it unprocessed for the
receiver's whole start-up (a minute), right when it was launched because of a backlog.

A worker whose run has not started yet (queued behind a concurrency limit) holds nothing and
costs nothing: when workers must go it goes first, and it is *cancelled* (``cancel``) rather
than tagged retiring, which it would only notice after starting a SparkSession. A failed
worker id in restart backoff (``deferred``, see :mod:`.backoff`) stays a member of the
assignment, keeping its tasks, but is not launched on this tick.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .assignment import assign_tasks
from .ids import lowest_free_worker_ids, task_sort_key, worker_sort_key


class WorkerState(str, enum.Enum):
    RUNNING = "running"
    RETIRING = "retiring"
    FAILED = "failed"


@dataclass(frozen=True)
class Worker:
    """A worker run as the sensor sees it.

    ``tasks``: its tags, the tasks it may process. ``assigned``: its target, which also
    holds tasks awaiting handover (None: same as ``tasks``); only stickiness reads it.
    ``held``: the tasks it last reported holding (see the module docstring). ``started``: its
    run has left the queue (a queued run has not, and can be cancelled outright). ``ready``:
    it has begun work (its SparkSession is up), so tasks may be revoked from others for it.
    ``failures`` and ``failed_at``, for a failed worker: how many of the id's runs in a row
    have failed (:func:`~.backoff.failure_streak`) and when the last one did (epoch seconds).
    """

    worker_id: str
    tasks: frozenset[str] = frozenset()
    assigned: frozenset[str] | None = None
    held: frozenset[str] = frozenset()
    state: WorkerState = WorkerState.RUNNING
    started: bool = True
    ready: bool = True
    failures: int = 0
    failed_at: float | None = None

    def __post_init__(self) -> None:
        # Accept any iterable of task ids; store frozensets so plans compare by value.
        object.__setattr__(self, "tasks", frozenset(self.tasks))
        object.__setattr__(self, "held", frozenset(self.held))
        if self.assigned is not None:
            object.__setattr__(self, "assigned", frozenset(self.assigned))
        object.__setattr__(self, "state", WorkerState(self.state))

    @property
    def target(self) -> frozenset[str]:
        return self.tasks if self.assigned is None else self.assigned

    @property
    def is_live(self) -> bool:
        """Running or retiring: its process may still be working on something."""
        return self.state is not WorkerState.FAILED

    @property
    def busy(self) -> frozenset[str]:
        """Tasks this worker may be processing now (nothing, once failed)."""
        return self.tasks | self.held if self.is_live else frozenset()


@dataclass(frozen=True)
class WorkerLaunch:
    worker_id: str
    tasks: frozenset[str]
    assigned: frozenset[str]


@dataclass(frozen=True)
class WorkerRetag:
    worker_id: str
    tasks: frozenset[str]
    assigned: frozenset[str]
    previous_tasks: frozenset[str]

    @property
    def granted(self) -> frozenset[str]:
        return self.tasks - self.previous_tasks

    @property
    def revoked(self) -> frozenset[str]:
        return self.previous_tasks - self.tasks


@dataclass(frozen=True)
class Handover:
    """``task`` goes to ``to_worker`` once every worker in ``waiting_for`` has released it."""

    task: str
    to_worker: str
    waiting_for: tuple[str, ...]


@dataclass(frozen=True)
class ReconciliationPlan:
    """What one tick changes. Apply ``retire`` as: tags emptied and marked retiring, at once
    (it also lists retiring workers whose tags were somehow left non-empty). Apply ``cancel``
    as: cancel the run, which has not started (a worker leaving before it began). ``deferred``:
    failed worker ids whose relaunch waits for their restart backoff; they keep their target.

    ``target`` is the balanced assignment the workers reach once the pending ``handovers``
    are granted; ``unassigned`` holds tasks no worker gets (only when scaled to zero).
    """

    desired_workers: int
    target: Mapping[str, frozenset[str]]
    launch: tuple[WorkerLaunch, ...]
    retag: tuple[WorkerRetag, ...]
    retire: tuple[str, ...]
    handovers: tuple[Handover, ...]
    unassigned: frozenset[str]
    cancel: tuple[str, ...] = ()
    deferred: tuple[str, ...] = ()

    @property
    def is_noop(self) -> bool:
        return not (self.launch or self.retag or self.retire or self.cancel)

    def tags_after(self, workers: Iterable[Worker]) -> dict[str, frozenset[str]]:
        """Every live worker's tags once the plan is applied (retired ones: empty)."""
        tags = {worker.worker_id: worker.tasks for worker in workers if worker.is_live}
        for worker_id in (*self.retire, *self.cancel):
            tags[worker_id] = frozenset()
        for change in self.retag:
            tags[change.worker_id] = change.tasks
        for launch in self.launch:
            tags[launch.worker_id] = launch.tasks
        return tags


def plan_reconciliation(
    tasks: Iterable[str],
    workers: Iterable[Worker],
    desired_workers: int,
    *,
    task_weights: Mapping[str, float] | None = None,
    deferred: Iterable[str] = (),
) -> ReconciliationPlan:
    """The plan that moves ``workers`` toward ``desired_workers`` running workers sharing ``tasks``.

    ``workers`` has one entry per worker id (the newest run of each). When there are more
    running workers than desired, those not started yet leave first (cancelled), then those
    with the fewest assigned tasks (fewest moves), the highest ids among equals (ids stay
    compact). ``deferred``: ids that must not be launched on this tick (restart backoff).
    """
    if desired_workers < 0:
        raise ValueError(f"desired_workers must be >= 0, got {desired_workers}")
    task_list = sorted(set(tasks), key=task_sort_key)
    task_set = frozenset(task_list)
    by_id: dict[str, Worker] = {}
    for worker in workers:
        if worker.worker_id in by_id:
            raise ValueError(f"worker {worker.worker_id!r} listed twice; pass the newest run of each worker")
        by_id[worker.worker_id] = worker

    running = [w for w in by_id.values() if w.state is WorkerState.RUNNING]
    live_ids = {w.worker_id for w in by_id.values() if w.is_live}

    retire: list[str] = []
    if len(running) > desired_workers:
        by_highest_id = sorted(running, key=lambda w: worker_sort_key(w.worker_id), reverse=True)
        # Stable sorts: ties keep the order before them.
        retire_order = sorted(by_highest_id, key=lambda w: (w.started, len(w.target & task_set)))
        retire = [w.worker_id for w in retire_order[: len(running) - desired_workers]]
    # Re-issue an unfinished retirement: a retiring worker must not keep tags (nor a queued run
    # that was tagged retiring stay queued).
    retire += [w.worker_id for w in by_id.values()
               if w.state is WorkerState.RETIRING and (w.tasks or not w.started)]
    cancel = sorted((w for w in retire if not by_id[w].started), key=worker_sort_key)
    retire = sorted((w for w in retire if by_id[w].started), key=worker_sort_key)
    kept = [w for w in running if w.worker_id not in retire and w.worker_id not in cancel]
    new_ids = lowest_free_worker_ids(live_ids, max(0, desired_workers - len(kept)))
    members = sorted([w.worker_id for w in kept] + new_ids, key=worker_sort_key)
    waiting = frozenset(deferred) & frozenset(new_ids)

    previous = {w.worker_id: w.target for w in kept}
    for worker_id in new_ids:
        # A replacement inherits its failed namesake's tasks.
        if worker_id in by_id and by_id[worker_id].state is WorkerState.FAILED:
            previous[worker_id] = by_id[worker_id].target
    target = assign_tasks(task_list, members, previous, task_weights=task_weights) if members else {}

    busy_on: dict[str, set[str]] = {}
    for worker in by_id.values():
        for task in worker.busy:
            busy_on.setdefault(task, set()).add(worker.worker_id)

    # Receivers that can take a task over now; a task bound for any other stays where it is.
    ready = {w.worker_id for w in kept if w.started and w.ready}
    bound_for = {task: member for member in members for task in target[member]}
    active: dict[str, frozenset[str]] = {}
    handovers: list[Handover] = []
    for member in members:
        mine = []
        for task in sorted(target[member], key=task_sort_key):
            others = busy_on.get(task, set()) - {member}
            if others:
                handovers.append(Handover(task, member, tuple(sorted(others, key=worker_sort_key))))
            else:
                mine.append(task)
        if member in by_id and by_id[member].state is WorkerState.RUNNING:
            mine += [task for task in by_id[member].tasks
                     if task in bound_for and bound_for[task] != member and bound_for[task] not in ready
                     and not busy_on.get(task, set()) - {member}]
        active[member] = frozenset(mine)

    launch = tuple(WorkerLaunch(worker_id, active[worker_id], target[worker_id])
                   for worker_id in new_ids if worker_id not in waiting)
    retag = tuple(
        WorkerRetag(w.worker_id, active[w.worker_id], target[w.worker_id], w.tasks)
        for w in sorted(kept, key=lambda w: worker_sort_key(w.worker_id))
        if (w.tasks, w.target) != (active[w.worker_id], target[w.worker_id])
    )
    assigned_somewhere = frozenset(task for tasks_of in target.values() for task in tasks_of)
    return ReconciliationPlan(
        desired_workers=desired_workers,
        target=target,
        launch=launch,
        retag=retag,
        retire=tuple(retire),
        handovers=tuple(handovers),
        unassigned=task_set - assigned_somewhere,
        cancel=tuple(cancel),
        deferred=tuple(sorted(waiting, key=worker_sort_key)),
    )
