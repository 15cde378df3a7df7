"""Whether a backlog is being drained: the tick on which the count it was given must hold.

The catch-up term of the count (lag over ``catch_up_seconds``, :func:`.demand.required_rate`, the
Flink autoscaler's and DS2's) is transient by design: it sizes the fleet to drain a backlog within
the target, and it shrinks as the backlog does. Remembered tick by tick in the scale-down window
(Kubernetes HPA's), that shrinking term brought the count down in a staircase, one step per window
and dead band (``bench/README.md``, "Simulated again (session 16)": 6, 5, 4, 3 workers at t=450, 630
and 840 s for a 600 s backlog on 64 partitions), each step moving tasks, and their state, mid-drain.

With ``scale_down_after_backlog_drains`` (:mod:`.policy`) a tick on which a backlog is being drained
makes no scale-down, and the window remembers it at its *steady count*, what the input alone needs;
once the backlog is drained the count falls to the steady count in one step, as far as the window
allows. A backlog is being drained when both hold:

* its catch-up term still adds workers: the count with the lag is above the steady count. Once it
  is not, the lag is back under the target (the steady count drains it within ``catch_up_seconds``),
  and the backlog is no longer a reason to keep workers;
* the lag fell since the last tick (each sub-topology's in the work it takes, over its capacity): a
  lag that holds still or grows is not being drained, so a lag that never clears (records in flight
  that tip the count over a whole worker) cannot hold a fleet forever; on such ticks the usual rules
  apply.
"""

from __future__ import annotations

from collections.abc import Mapping

from .demand import SubtopologyDemand, lags_by_subtopology
from .measurements import LagSnapshot


def lag_work(lags: Mapping[str, int], demands: Mapping[str, SubtopologyDemand]) -> float:
    """Worker-seconds of work in ``lags`` (records by sub-topology), each at its sub-topology's
    capacity; a lag the count does not count yet (:attr:`SubtopologyDemand.lag_counted`) is left out."""
    return sum(lags.get(sub, 0) / demand.capacity for sub, demand in demands.items() if demand.lag_counted)


def lag_fell(snapshot: LagSnapshot, previous_snapshot: LagSnapshot | None,
             demands: Mapping[str, SubtopologyDemand]) -> bool:
    """Whether the lag, in the work it takes, is lower than at ``previous_snapshot`` (False without one)."""
    if previous_snapshot is None:
        return False
    return lag_work(lags_by_subtopology(snapshot), demands) < lag_work(lags_by_subtopology(previous_snapshot), demands)


def backlog_is_draining(count_with_lag: int, steady_count: int, snapshot: LagSnapshot,
                        previous_snapshot: LagSnapshot | None, demands: Mapping[str, SubtopologyDemand]) -> bool:
    """Whether the lag's catch-up term still adds workers to ``steady_count`` (the count the input
    alone needs) and the lag fell since the last tick (the module docstring)."""
    return count_with_lag > steady_count and lag_fell(snapshot, previous_snapshot, demands)
