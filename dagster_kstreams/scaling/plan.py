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

Warm standbys (``standby_workers``): worker runs in state ``standby``, up with a SparkSession
and no tasks. When active workers are missing (scale-up, or a worker failed), standbys fill the
places first: a failed worker's place before a new one (it has orphaned tasks), the standbys
readiest first (beating, then started, then queued). A promoted standby keeps its own id,
inherits the failed worker's tasks (granted at once: a failed run holds nothing) or takes its
share of the moved ones (revoked from their workers at once if it is ready, as for any ready
receiver), and is retagged ``running``. Only places still empty launch new runs. A failed id in
restart backoff is never filled by a standby: its tasks wait for it, as without standbys (a record
that crashes its worker would crash the standby too).

Then the standby pool is brought back to ``standby_workers``: an active worker that leaves while
standbys are short becomes one (tags emptied, state ``standby``: it keeps its SparkSession)
instead of retiring, and any still missing are launched, under the lowest ids no live worker or
member uses (a failed worker's id once its tasks have gone to a standby). Surplus standbys leave
like surplus workers: queued ones are cancelled, started ones retired. An application with no
tasks keeps no standby.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .assignment import assign_tasks
from .ids import lowest_free_worker_ids, task_sort_key, worker_sort_key


class WorkerState(str, enum.Enum):
    RUNNING = "running"
    STANDBY = "standby"  # up with no tasks, waiting to be promoted
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
        """Running, standby or retiring: its process may still be working on something."""
        return self.state is not WorkerState.FAILED

    @property
    def busy(self) -> frozenset[str]:
        """Tasks this worker may be processing now (nothing, once failed)."""
        return self.tasks | self.held if self.is_live else frozenset()


@dataclass(frozen=True)
class WorkerLaunch:
    """A new run: an active worker (``RUNNING``) or a standby (``STANDBY``, no tasks)."""

    worker_id: str
    tasks: frozenset[str]
    assigned: frozenset[str]
    state: WorkerState = WorkerState.RUNNING


@dataclass(frozen=True)
class WorkerRetag:
    """New tags for a live run: its tasks, its target and its state (``RUNNING`` or ``STANDBY``)."""

    worker_id: str
    tasks: frozenset[str]
    assigned: frozenset[str]
    previous_tasks: frozenset[str]
    state: WorkerState = WorkerState.RUNNING
    previous_state: WorkerState = WorkerState.RUNNING

    @property
    def granted(self) -> frozenset[str]:
        return self.tasks - self.previous_tasks

    @property
    def revoked(self) -> frozenset[str]:
        return self.previous_tasks - self.tasks

    @property
    def promoted(self) -> bool:
        """A standby becoming an active worker."""
        return self.previous_state is WorkerState.STANDBY and self.state is WorkerState.RUNNING

    @property
    def demoted(self) -> bool:
        """An active worker becoming a standby."""
        return self.previous_state is WorkerState.RUNNING and self.state is WorkerState.STANDBY


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
    failed worker ids whose relaunch waits for their restart backoff; they keep their target
    (a standby's id in backoff is not launched either). Apply ``retag`` as: the run's tasks,
    target and state replaced (a promoted standby becomes ``running``, a demoted worker
    ``standby``); ``launch`` as: a new run with those tags.

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

    @property
    def promoted(self) -> tuple[str, ...]:
        """Standbys that become active workers on this tick."""
        return tuple(change.worker_id for change in self.retag if change.promoted)

    @property
    def demoted(self) -> tuple[str, ...]:
        """Active workers that become standbys on this tick."""
        return tuple(change.worker_id for change in self.retag if change.demoted)

    @property
    def standby_launches(self) -> tuple[str, ...]:
        return tuple(launch.worker_id for launch in self.launch if launch.state is WorkerState.STANDBY)

    @property
    def running_retags(self) -> tuple[WorkerRetag, ...]:
        """The retags of workers that are (or become) running: grants, revocations, promotions."""
        return tuple(change for change in self.retag if change.state is WorkerState.RUNNING)

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
    standby_workers: int = 0,
) -> ReconciliationPlan:
    """The plan that moves ``workers`` toward ``desired_workers`` active workers sharing ``tasks``,
    and ``standby_workers`` standbys beside them (module docstring).

    ``workers`` has one entry per worker id (the newest run of each). When there are more
    running workers than desired, those not started yet leave first (cancelled), then those
    with the fewest assigned tasks (fewest moves), the highest ids among equals (ids stay
    compact). ``deferred``: ids that must not be launched on this tick (restart backoff).
    """
    if desired_workers < 0:
        raise ValueError(f"desired_workers must be >= 0, got {desired_workers}")
    if standby_workers < 0:
        raise ValueError(f"standby_workers must be >= 0, got {standby_workers}")
    task_list = sorted(set(tasks), key=task_sort_key)
    task_set = frozenset(task_list)
    by_id: dict[str, Worker] = {}
    for worker in workers:
        if worker.worker_id in by_id:
            raise ValueError(f"worker {worker.worker_id!r} listed twice; pass the newest run of each worker")
        by_id[worker.worker_id] = worker
    deferred = frozenset(deferred)

    running = [w for w in by_id.values() if w.state is WorkerState.RUNNING]
    standbys = [w for w in by_id.values() if w.state is WorkerState.STANDBY]
    live_ids = {w.worker_id for w in by_id.values() if w.is_live}

    leaving: list[Worker] = []
    if len(running) > desired_workers:
        by_highest_id = sorted(running, key=lambda w: worker_sort_key(w.worker_id), reverse=True)
        # Stable sorts: ties keep the order before them.
        leaving = sorted(by_highest_id, key=lambda w: (w.started, len(w.target & task_set)))
        leaving = leaving[: len(running) - desired_workers]
    kept = [w for w in running if w.worker_id not in {l.worker_id for l in leaving}]

    # Empty places: standbys fill them, failed workers' places (orphaned tasks) first; a place in
    # restart backoff keeps its tasks for its own id.
    vacancies = lowest_free_worker_ids(live_ids, max(0, desired_workers - len(kept)))
    failed_namesakes = {v for v in vacancies if v in by_id and by_id[v].state is WorkerState.FAILED}
    fillable = sorted((v for v in vacancies if v not in deferred),
                      key=lambda v: (v not in failed_namesakes, worker_sort_key(v)))
    readiest = sorted(standbys, key=lambda w: (not w.started, not w.ready, worker_sort_key(w.worker_id)))
    promoted = {standby.worker_id: place for standby, place in zip(readiest, fillable)}
    new_ids = [v for v in vacancies if v not in promoted.values()]
    members = sorted([w.worker_id for w in kept] + list(promoted) + new_ids, key=worker_sort_key)
    waiting = deferred & frozenset(new_ids)

    previous = {w.worker_id: w.target for w in kept}
    for worker_id in new_ids:
        # A replacement inherits its failed namesake's tasks.
        if worker_id in failed_namesakes:
            previous[worker_id] = by_id[worker_id].target
    for standby, place in promoted.items():
        # ... and so does a standby filling the failed worker's place.
        previous[standby] = by_id[place].target if place in failed_namesakes else frozenset()
    target = assign_tasks(task_list, members, previous, task_weights=task_weights) if members else {}

    # The standby pool: short, an active worker on its way out stays as a standby (warm ones
    # first); still short, new ones are launched; over, the least ready leave.
    remaining = [w.worker_id for w in readiest if w.worker_id not in promoted]
    short = (standby_workers if task_list else 0) - len(remaining)
    demoted = [w.worker_id for w in sorted(leaving, key=lambda w: (not w.started, not w.ready))][: max(0, short)]
    surplus = remaining[len(remaining) + short:] if short < 0 else []
    short -= len(demoted)
    standby_ids = lowest_free_worker_ids(live_ids | set(members), max(0, short))
    waiting |= deferred & frozenset(standby_ids)

    retire = [worker_id for worker_id in [*(w.worker_id for w in leaving), *surplus] if worker_id not in demoted]
    # Re-issue an unfinished retirement: a retiring worker must not keep tags (nor a queued run
    # that was tagged retiring stay queued).
    retire += [w.worker_id for w in by_id.values()
               if w.state is WorkerState.RETIRING and (w.tasks or not w.started)]
    cancel = sorted((w for w in retire if not by_id[w].started), key=worker_sort_key)
    retire = sorted((w for w in retire if by_id[w].started), key=worker_sort_key)

    busy_on: dict[str, set[str]] = {}
    for worker in by_id.values():
        for task in worker.busy:
            busy_on.setdefault(task, set()).add(worker.worker_id)

    # Receivers that can take a task over now; a task bound for any other stays where it is.
    active_ids = [w.worker_id for w in kept] + list(promoted)
    ready = {worker_id for worker_id in active_ids if by_id[worker_id].started and by_id[worker_id].ready}
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
    launch += tuple(WorkerLaunch(worker_id, frozenset(), frozenset(), WorkerState.STANDBY)
                    for worker_id in standby_ids if worker_id not in waiting)
    wanted_tags = {worker_id: (active[worker_id], target[worker_id], WorkerState.RUNNING) for worker_id in active_ids}
    wanted_tags |= {worker_id: (frozenset(), frozenset(), WorkerState.STANDBY)
                    for worker_id in [*demoted, *remaining] if worker_id not in surplus}
    retag = tuple(
        WorkerRetag(worker_id, tags, assigned, by_id[worker_id].tasks, state, by_id[worker_id].state)
        for worker_id, (tags, assigned, state) in sorted(wanted_tags.items(), key=lambda kv: worker_sort_key(kv[0]))
        if (by_id[worker_id].tasks, by_id[worker_id].target, by_id[worker_id].state) != (tags, assigned, state)
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


def replan_handovers(tasks: Iterable[str], workers: Iterable[Worker], plan: ReconciliationPlan, *,
                     task_weights: Mapping[str, float] | None = None,
                     standby_workers: int = 0) -> ReconciliationPlan | None:
    """For a tick that waits for its handovers: ``plan`` made again from the fleet as it is now
    (``workers``), with ``plan``'s worker count, or None when none of ``plan``'s handovers is
    bound for a ready worker (its receivers are still starting: nothing to wait for). Apply only
    its :meth:`~ReconciliationPlan.running_retags` (what the old workers released is granted);
    launches and retirements are the next tick's, so a grant is the one that tick would make."""
    workers = list(workers)
    ready = {worker.worker_id for worker in workers if worker.started and worker.ready}
    if not any(handover.to_worker in ready for handover in plan.handovers):
        return None
    return plan_reconciliation(tasks, workers, plan.desired_workers, task_weights=task_weights,
                               deferred=plan.deferred, standby_workers=standby_workers)
