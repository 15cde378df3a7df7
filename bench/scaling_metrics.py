"""What ``bench/simulate_scaling.py`` reports about one run: decisions, flaps, convergence, cost.

Definitions (issue 13):

* a **decision** is a sensor tick whose desired worker count differs from the tick before's (the
  first tick compares with the count the run started with);
* **converged**, per workload change (``events``): the decisions from that change until the next
  one (or the end), after which the count stays put; a workload whose rate keeps moving (a ramp, a
  wave) has one phase per leg, and a rule that follows it step by step shows many;
* **changes of need** per phase: a ramp or a wave is not one change but many. The fewest workers
  that keep up, ``ceil(rate / capacity)`` (no headroom, so the same for every rule), steps up or down
  many times within such a leg; a phase counts 1 (its event) plus every step of that count inside
  it. **Decisions per change** is a phase's decisions over its changes of need, the worst phase
  counting: issue 13's "converged in at most 2 decisions" is this figure at most 2. A burst's phase
  has one change, so its decisions are counted as they are; a rule that overshoots a ramp in a few
  large steps is not penalized, one that follows it step by step makes about 1 decision per change,
  and a staircase (or a flap) within a leg shows as more than 1;
* a **flap** is a decision whose direction (up or down) reverses the decision before it within
  ``window`` seconds (``FLAP_WINDOW_SECONDS``, 300 s, the HPA's and the library's default
  stabilization window, the same for every rule and configuration: a rule with a shorter window is
  not let off flaps a longer one would count);
* **overshoot**: the most active workers beyond the count needed at the workload's peak rate at the
  target utilization, ``ceil(peak rate / (capacity x target_utilization))`` (0 if never beyond);
* **peak lag** over the whole run, and from the first workload change on (the start, where a rule
  settles on its count for the base rate, left out);
* **lag-seconds**: the lag summed over every step times the step (records x seconds);
* **worker-seconds**: every worker run's life, launch to exit, standbys included;
* **lag growth at the end**: records per second the lag grew over the run's last
  ``END_GROWTH_SECONDS`` (300 s): above 0 at a steady rate, some tasks fall behind without end, which
  neither peak lag nor lag-seconds shows when it starts late in a run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


FLAP_WINDOW_SECONDS = 300.0
END_GROWTH_SECONDS = 300.0


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


def changes_of_need(times: Sequence[float], needs: Sequence[int], events: Sequence[float], end: float) -> list[int]:
    """Per phase (as :func:`decisions_per_phase`): 1 for its event plus each step of ``needs`` (the
    fewest workers that keep up, sampled at ``times``) strictly inside it."""
    bounds = [*events, end]
    counts = [1] * len(events)
    for (_, before), (time, after) in zip(zip(times, needs), list(zip(times, needs))[1:]):
        if after == before:
            continue
        for i in range(len(events)):
            if bounds[i] < time < bounds[i + 1]:
                counts[i] += 1
    return counts


def decisions_per_change(converged: Sequence[int], changes: Sequence[int]) -> float:
    """The worst phase's decisions over its changes of need (0 with no phase)."""
    return max((decided / changed for decided, changed in zip(converged, changes)), default=0.0)


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
    need_changes: list[int]
    decisions_per_change: float
    flaps: int
    peak_workers: int
    overshoot: int
    peak_lag: int
    peak_lag_after_change: int
    lag_seconds: float
    worker_seconds: float
    tasks_moved: int
    end_lag_growth: float = 0.0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def summarize(rule: str, workload: str, partitions: int, *, ticks: Sequence[tuple[float, int]], initial: int,
              events: Sequence[float], end: float, window: float, times: Sequence[float], lags: Sequence[float],
              active: Sequence[int], step: float, worker_seconds: float, tasks_moved: int, peak_rate: float,
              capacity: float, target_utilization: float, needs: Sequence[int]) -> RunSummary:
    """``window``: the flap window (:data:`FLAP_WINDOW_SECONDS`); ``needs``: the fewest workers that
    keep up at each of ``times``."""
    found = decisions(ticks, initial)
    peak_active = max(active, default=0)
    converged = decisions_per_phase(found, events, end)
    changes = changes_of_need(times, needs, events, end)
    return RunSummary(
        rule=rule, workload=workload, partitions=partitions, decisions=len(found),
        converged=converged, need_changes=changes, decisions_per_change=decisions_per_change(converged, changes),
        flaps=flaps(found, window),
        peak_workers=peak_active, overshoot=overshoot(peak_active, peak_rate, capacity, target_utilization),
        peak_lag=int(max(lags, default=0)),
        peak_lag_after_change=int(max((lag for t, lag in zip(times, lags) if t > events[0]), default=0)),
        lag_seconds=sum(lags) * step, worker_seconds=worker_seconds,
        tasks_moved=tasks_moved, end_lag_growth=end_lag_growth(times, lags))


def end_lag_growth(times: Sequence[float], lags: Sequence[float], span: float = END_GROWTH_SECONDS) -> float:
    """Records per second the lag grew over the last ``span`` seconds of the run (0 with no samples)."""
    if not times:
        return 0.0
    start = times[-1] - span
    first = next(i for i, time in enumerate(times) if time >= start - 1e-9)
    elapsed = times[-1] - times[first]
    return (lags[-1] - lags[first]) / elapsed if elapsed > 0 else 0.0
