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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .assignment import assign_tasks
from .fleet import Handover, ReconciliationPlan, Worker, WorkerLaunch, WorkerRetag, WorkerState
from .ids import lowest_free_worker_ids, task_sort_key, worker_sort_key

# The fleet's data classes are importable from here too, where callers have always found them.
__all__ = ["Handover", "ReconciliationPlan", "Worker", "WorkerLaunch", "WorkerRetag", "WorkerState",
           "plan_reconciliation", "replan_handovers"]


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
    by_id = _by_id(workers)
    deferred = frozenset(deferred)

    running = [w for w in by_id.values() if w.state is WorkerState.RUNNING]
    leaving = _leaving(running, desired_workers, task_set)
    leaving_ids = {w.worker_id for w in leaving}
    kept = [w for w in running if w.worker_id not in leaving_ids]
    places = _Places.filled(by_id, kept, desired_workers, deferred)
    target = assign_tasks(task_list, places.members, places.previous_targets(by_id, kept),
                          task_weights=task_weights) if places.members else {}
    pool = _StandbyPool.brought_back(places, leaving, standby_workers if task_list else 0)
    retire, cancel = _retirements(by_id, leaving, pool)

    active_ids = [w.worker_id for w in kept] + list(places.promoted)
    ready = {worker_id for worker_id in active_ids if by_id[worker_id].started and by_id[worker_id].ready}
    active, handovers = _tags_now(by_id, places.members, target, ready)
    waiting = deferred & frozenset((*places.new_ids, *pool.launched))
    launch = tuple(WorkerLaunch(worker_id, active[worker_id], target[worker_id])
                   for worker_id in places.new_ids if worker_id not in waiting)
    launch += tuple(WorkerLaunch(worker_id, frozenset(), frozenset(), WorkerState.STANDBY)
                    for worker_id in pool.launched if worker_id not in waiting)
    wanted = {worker_id: (active[worker_id], target[worker_id], WorkerState.RUNNING) for worker_id in active_ids}
    wanted |= {worker_id: (frozenset(), frozenset(), WorkerState.STANDBY) for worker_id in pool.kept}
    assigned_somewhere = frozenset(task for tasks_of in target.values() for task in tasks_of)
    return ReconciliationPlan(
        desired_workers=desired_workers,
        target=target,
        launch=launch,
        retag=_retags(by_id, wanted),
        retire=retire,
        handovers=tuple(handovers),
        unassigned=task_set - assigned_somewhere,
        cancel=cancel,
        deferred=tuple(sorted(waiting, key=worker_sort_key)),
    )


def _by_id(workers: Iterable[Worker]) -> dict[str, Worker]:
    by_id: dict[str, Worker] = {}
    for worker in workers:
        if worker.worker_id in by_id:
            raise ValueError(f"worker {worker.worker_id!r} listed twice; pass the newest run of each worker")
        by_id[worker.worker_id] = worker
    return by_id


def _leaving(running: list[Worker], desired_workers: int, task_set: frozenset[str]) -> list[Worker]:
    """The running workers beyond ``desired_workers``: not started first, then the fewest tasks,
    then the highest ids."""
    if len(running) <= desired_workers:
        return []
    by_highest_id = sorted(running, key=lambda w: worker_sort_key(w.worker_id), reverse=True)
    # Stable sorts: ties keep the order before them.
    leaving = sorted(by_highest_id, key=lambda w: (w.started, len(w.target & task_set)))
    return leaving[: len(running) - desired_workers]


@dataclass(frozen=True)
class _Places:
    """The active workers' places: kept workers, standbys promoted into empty places (``promoted``:
    standby id -> the place it fills) and new ids for the rest."""

    live_ids: frozenset[str]
    readiest_standbys: tuple[str, ...]
    failed_namesakes: frozenset[str]
    promoted: dict[str, str]
    new_ids: tuple[str, ...]
    members: tuple[str, ...]

    @classmethod
    def filled(cls, by_id: Mapping[str, Worker], kept: list[Worker], desired_workers: int,
               deferred: frozenset[str]) -> _Places:
        """Standbys fill the empty places, failed workers' places (orphaned tasks) first, the
        readiest standbys first; a place in restart backoff keeps its tasks for its own id."""
        live_ids = frozenset(w.worker_id for w in by_id.values() if w.is_live)
        standbys = [w for w in by_id.values() if w.state is WorkerState.STANDBY]
        vacancies = lowest_free_worker_ids(live_ids, max(0, desired_workers - len(kept)))
        failed_namesakes = frozenset(v for v in vacancies if v in by_id and by_id[v].state is WorkerState.FAILED)
        fillable = sorted((v for v in vacancies if v not in deferred),
                          key=lambda v: (v not in failed_namesakes, worker_sort_key(v)))
        readiest = sorted(standbys, key=lambda w: (not w.started, not w.ready, worker_sort_key(w.worker_id)))
        promoted = {standby.worker_id: place for standby, place in zip(readiest, fillable)}
        new_ids = tuple(v for v in vacancies if v not in promoted.values())
        members = tuple(sorted([w.worker_id for w in kept] + list(promoted) + list(new_ids), key=worker_sort_key))
        return cls(live_ids, tuple(w.worker_id for w in readiest), failed_namesakes, promoted, new_ids, members)

    def previous_targets(self, by_id: Mapping[str, Worker], kept: list[Worker]) -> dict[str, frozenset[str]]:
        """What stickiness starts from: a kept worker's target; a failed worker's replacement, or
        the standby filling its place, inherits its tasks."""
        previous = {w.worker_id: w.target for w in kept}
        for worker_id in self.new_ids:
            if worker_id in self.failed_namesakes:
                previous[worker_id] = by_id[worker_id].target
        for standby, place in self.promoted.items():
            previous[standby] = by_id[place].target if place in self.failed_namesakes else frozenset()
        return previous


@dataclass(frozen=True)
class _StandbyPool:
    """The standbys after this tick: ``kept`` (the remaining ones and demoted workers), ``surplus``
    ones that leave, ``demoted`` active workers, and ``launched`` new ids."""

    kept: tuple[str, ...]
    surplus: tuple[str, ...]
    demoted: tuple[str, ...]
    launched: tuple[str, ...]

    @classmethod
    def brought_back(cls, places: _Places, leaving: list[Worker], wanted: int) -> _StandbyPool:
        """Short, an active worker on its way out stays as a standby (warm ones first); still
        short, new ones are launched; over, the least ready leave."""
        remaining = [worker_id for worker_id in places.readiest_standbys if worker_id not in places.promoted]
        short = wanted - len(remaining)
        demoted = [w.worker_id for w in sorted(leaving, key=lambda w: (not w.started, not w.ready))][: max(0, short)]
        surplus = remaining[len(remaining) + short:] if short < 0 else []
        short -= len(demoted)
        launched = lowest_free_worker_ids(places.live_ids | set(places.members), max(0, short))
        kept = tuple(worker_id for worker_id in [*demoted, *remaining] if worker_id not in surplus)
        return cls(kept, tuple(surplus), tuple(demoted), tuple(launched))


def _retirements(by_id: Mapping[str, Worker], leaving: list[Worker],
                 pool: _StandbyPool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(retire, cancel): the workers and standbys that leave, and unfinished retirements again (a
    retiring worker must not keep tags, nor a queued run tagged retiring stay queued); those whose
    run has not started are cancelled."""
    retire = [worker_id for worker_id in [*(w.worker_id for w in leaving), *pool.surplus]
              if worker_id not in pool.demoted]
    retire += [w.worker_id for w in by_id.values()
               if w.state is WorkerState.RETIRING and (w.tasks or not w.started)]
    cancel = sorted((w for w in retire if not by_id[w].started), key=worker_sort_key)
    return tuple(sorted((w for w in retire if by_id[w].started), key=worker_sort_key)), tuple(cancel)


def _tags_now(by_id: Mapping[str, Worker], members: tuple[str, ...], target: Mapping[str, frozenset[str]],
              ready: set[str]) -> tuple[dict[str, frozenset[str]], list[Handover]]:
    """Each member's tags on this tick, and the handovers still pending: a task goes into a
    member's tags only when no other live worker has it busy; a task bound for a receiver that is
    not ready stays in its current worker's tags."""
    busy_on: dict[str, set[str]] = {}
    for worker in by_id.values():
        for task in worker.busy:
            busy_on.setdefault(task, set()).add(worker.worker_id)
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
    return active, handovers


def _retags(by_id: Mapping[str, Worker],
            wanted: Mapping[str, tuple[frozenset[str], frozenset[str], WorkerState]]) -> tuple[WorkerRetag, ...]:
    """The live runs whose tags, target or state differ from ``wanted``."""
    return tuple(
        WorkerRetag(worker_id, tags, assigned, by_id[worker_id].tasks, state, by_id[worker_id].state)
        for worker_id, (tags, assigned, state) in sorted(wanted.items(), key=lambda kv: worker_sort_key(kv[0]))
        if (by_id[worker_id].tasks, by_id[worker_id].target, by_id[worker_id].state) != (tags, assigned, state)
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
