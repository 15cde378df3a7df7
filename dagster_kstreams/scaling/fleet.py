"""The fleet as the lag sensor sees it, and what one reconciliation changes in it: the workers'
runs (:class:`Worker`) and the plan's parts (launches, retags, handovers). The rules that make a
plan are :mod:`.plan`'s."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


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
