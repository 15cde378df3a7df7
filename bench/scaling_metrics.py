"""What ``bench/simulate_scaling.py`` reports about one run: decisions, flaps, convergence, cost.

Definitions (issue 13):

* a **decision** is a sensor tick whose desired worker count differs from the tick before's (the
  first tick compares with the count the run started with);
* **converged**, per workload change (``events``): the decisions from that change until the next
  one (or the end), after which the count stays put; a workload whose rate keeps moving (a ramp, a
  wave) has one phase per leg, and a rule that follows it step by step shows many;
* a **flap** is a decision whose direction (up or down) reverses the decision before it within
  ``window`` seconds (the stabilization window);
* **overshoot**: the most active workers beyond the count needed at the workload's peak rate at the
  target utilization, ``ceil(peak rate / (capacity x target_utilization))`` (0 if never beyond);
* **peak lag** over the whole run, and from the first workload change on (the start, where a rule
  settles on its count for the base rate, left out);
* **lag-seconds**: the lag summed over every step times the step (records x seconds);
* **worker-seconds**: every worker run's life, launch to exit, standbys included.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Decision:
    time: float
    before: int
    after: int

    @property
    def direction(self) -> int:
        return 1 if self.after > self.before else -1


def decisions(ticks: Sequence[tuple[float, int]], initial: int) -> list[Decision]:
    """The ticks ``(time, desired)`` that changed the desired count."""
    found, previous = [], initial
    for time, desired in ticks:
        if desired != previous:
            found.append(Decision(time, previous, desired))
            previous = desired
    return found


def flaps(found: Sequence[Decision], window: float) -> int:
    """Direction reversals within ``window`` seconds of the decision before."""
    return sum(1 for before, after in zip(found, found[1:])
               if after.direction != before.direction and after.time - before.time < window)


def decisions_per_phase(found: Sequence[Decision], events: Sequence[float], end: float) -> list[int]:
    """How many decisions each workload change took to settle: those between it and the next."""
    bounds = [*events, end]
    return [sum(1 for d in found if bounds[i] <= d.time < bounds[i + 1]) for i in range(len(events))]


def overshoot(peak_active: int, peak_rate: float, capacity: float, target_utilization: float) -> int:
    needed = math.ceil(peak_rate / (capacity * target_utilization))
    return max(0, peak_active - needed)


@dataclass(frozen=True)
class RunSummary:
    """One rule on one workload and size: the figures of the results table."""

    rule: str
    workload: str
    partitions: int
    decisions: int
    converged: list[int]
    flaps: int
    peak_workers: int
    overshoot: int
    peak_lag: int
    peak_lag_after_change: int
    lag_seconds: float
    worker_seconds: float
    tasks_moved: int

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def summarize(rule: str, workload: str, partitions: int, *, ticks: Sequence[tuple[float, int]], initial: int,
              events: Sequence[float], end: float, window: float, times: Sequence[float], lags: Sequence[float],
              active: Sequence[int], step: float, worker_seconds: float, tasks_moved: int, peak_rate: float,
              capacity: float,
              target_utilization: float) -> RunSummary:
    found = decisions(ticks, initial)
    peak_active = max(active, default=0)
    return RunSummary(
        rule=rule, workload=workload, partitions=partitions, decisions=len(found),
        converged=decisions_per_phase(found, events, end), flaps=flaps(found, window),
        peak_workers=peak_active, overshoot=overshoot(peak_active, peak_rate, capacity, target_utilization),
        peak_lag=int(max(lags, default=0)),
        peak_lag_after_change=int(max((lag for t, lag in zip(times, lags) if t > events[0]), default=0)),
        lag_seconds=sum(lags) * step, worker_seconds=worker_seconds,
        tasks_moved=tasks_moved)
