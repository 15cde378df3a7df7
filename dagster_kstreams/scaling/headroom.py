"""Warm standbys as headroom: how many *active* workers a fleet with standbys needs.

Without standbys the count keeps the active workers at ``target_utilization``
(:func:`.demand.required_rate`): the headroom is for a rate that rises before the next tick, and it
must be in the active workers because a new worker takes most of a minute to launch and start its
SparkSession. A warm standby (``ScalingConfig.standby_workers``) is up already and is promoted on
the tick that sees the rise (:mod:`.plan`; its tasks start in under a second each). So with ``S``
standbys the headroom is in the standbys: the active workers need only cover the input (and the
catch-up of a backlog) at full capacity, as long as the active workers and the standbys together
still cover it at the target utilization::

    active = max(input + lag / catch-up, all at full capacity,
                 required rate at the target utilization - S)      (in workers, then rounded up)

and never below ``min_workers`` (:func:`.policy.desired_workers` bounds it). With ``S = 0`` this
is the count at the target utilization, unchanged. With a standby the fleet is no larger than
without one (``active + S`` is the count at the target utilization, or more when the target's
headroom is under ``S`` workers), and the headroom is paid for once, in the standby, rather than
twice: ``bench/README.md``, "Simulated again (session 23)".
"""

from __future__ import annotations

from collections.abc import Iterable

from .config import ScalingConfig
from .demand import SubtopologyDemand, required_rate


def full_capacity_rate(total_lag: int, input_rate: float, config: ScalingConfig) -> float:
    """Records per second that keep up with the input and drain the lag within the catch-up time,
    with no headroom: what active workers running flat out must process."""
    return input_rate + total_lag / config.catch_up_seconds


def active_workers(at_target: float, at_full_capacity: float, standby_workers: int) -> float:
    """The active workers' share (a fraction of workers) when ``standby_workers`` standbys stand by:
    enough to run the work at full capacity, and with the standbys enough to run it at the target
    utilization (``at_target``)."""
    return max(at_full_capacity, at_target - standby_workers)


def active_workers_needed(demands: Iterable[SubtopologyDemand], config: ScalingConfig, *,
                          at_latest: bool = False, with_lag: bool = True) -> float:
    """The active workers the sub-topologies' demands need together (a fraction, before rounding up).

    Each at its averaged input rate (``at_latest``: the lower of it and the last interval's) and its
    counted lag (``with_lag`` False: none, the steady count), over its own capacity."""
    at_target = at_full_capacity = 0.0
    for demand in demands:
        rate = min(demand.input_rate, demand.latest_input_rate) if at_latest else demand.input_rate
        lag = demand.counted_lag if with_lag else 0
        at_target += required_rate(lag, rate, config) / demand.capacity
        at_full_capacity += full_capacity_rate(lag, rate, config) / demand.capacity
    return active_workers(at_target, at_full_capacity, config.standby_workers)
