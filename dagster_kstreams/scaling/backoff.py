"""Restart backoff: a worker whose runs keep failing is not relaunched in a hot loop.

A worker run that fails on every start (a record it cannot process, a broken deployment) would
otherwise be replaced on every sensor tick, each replacement paying a SparkSession start to
fail again. As Kubernetes does for a crash-looping container, the replacement of a worker id
waits ``restart_backoff_seconds`` after its second consecutive failure, twice that after the
third, and so on up to ``max_restart_backoff_seconds``. The first failure (a killed process,
a lost host) is replaced at once. A failed run that had been running for
``backoff_reset_seconds`` or longer counts as a fresh first failure: it was healthy for a
while, and the streak behind it is history.

While a worker id waits, it keeps its tasks (the plan defers its launch rather than handing
its tasks to healthy workers, which a poison record would bring down in turn).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .config import ScalingConfig


@dataclass(frozen=True)
class RunOutcome:
    """One past run of a worker id: whether it failed, and how long it ran (None: never started)."""

    failed: bool
    seconds_run: float | None = None


def failure_streak(runs_newest_first: Iterable[RunOutcome], config: ScalingConfig) -> int:
    """Consecutive failures of a worker id, counted from its newest run back.

    A run that did not fail ends the streak; so does a failed run that had run for at least
    ``backoff_reset_seconds`` (it counts itself, as a first failure).
    """
    streak = 0
    for run in runs_newest_first:
        if not run.failed:
            break
        streak += 1
        if run.seconds_run is not None and run.seconds_run >= config.backoff_reset_seconds:
            break
    return streak


def restart_delay(streak: int, config: ScalingConfig) -> float:
    """Seconds a worker id with ``streak`` consecutive failures waits before its relaunch."""
    if streak <= 1:
        return 0.0
    # Doubling from the second failure on; capped before the power can overflow.
    doublings = min(streak - 2, 64)
    return min(config.max_restart_backoff_seconds, config.restart_backoff_seconds * 2.0 ** doublings)


def relaunch_at(streak: int, failed_at: float | None, config: ScalingConfig) -> float:
    """Epoch seconds from which a failed worker id may be relaunched (its failure time + delay)."""
    delay = restart_delay(streak, config)
    if delay == 0 or failed_at is None:  # no failure time known: nothing to wait from
        return float("-inf")
    return failed_at + delay
