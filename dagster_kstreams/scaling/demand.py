"""What each sub-topology asks of the fleet at a tick: its lag, input rate, capacity, and the
workers its required rate keeps busy (:class:`SubtopologyDemand`), per the formula in :mod:`.policy`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from .config import ScalingConfig
from .ids import subtopology_of
from .measurements import LagSnapshot, capacity_to_plan_with, input_rates, smoothed_rates
from .selectivity import bounded_rates, rate_bounds


def lags_by_subtopology(snapshot: LagSnapshot) -> dict[str, int]:
    """Each sub-topology's lag: its tasks' summed."""
    lags: dict[str, int] = {}
    for task, offsets in snapshot.tasks.items():
        sub = subtopology_of(task)
        lags[sub] = lags.get(sub, 0) + offsets.lag
    return lags


def required_rate(total_lag: int, input_rate: float, config: ScalingConfig) -> float:
    """Records per second needed to keep up with input and drain the lag within the catch-up time.

    The sum of the input at the target utilization (headroom for a rate that rises before the next
    tick) and the lag's catch-up rate (the Flink autoscaler's). With ``catch_up_at_full_capacity``,
    the more of the input at the target utilization and the input plus the catch-up rate at full
    capacity (a worker that is behind runs flat out until it has caught up): fewer workers while
    catching up, so catch-ups take longer, and more so with whole tasks, whose busiest workers are
    above the average."""
    steady = input_rate / config.target_utilization
    catch_up = total_lag / config.catch_up_seconds
    if config.catch_up_at_full_capacity:
        return max(steady, input_rate + catch_up)
    return steady + catch_up


@dataclass(frozen=True)
class SubtopologyDemand:
    """One sub-topology's share of the work at a tick.

    ``input_rate`` is averaged, ``latest_input_rate`` measured over the last interval only (the
    averaged one when there is no earlier snapshot); ``capacity``: records of this sub-topology one
    worker processes per second (measured, else remembered, else the default); ``workers``: how
    many workers its required rate keeps busy, a fraction. ``lag_counted`` False: the capacity is
    the bare default (nothing measured, remembered or reported), so the lag waits for the first
    measurement (``lag_waits_for_measured_capacity``) and only the input rate counts.
    ``rate_bound``: for a sub-topology fed by others, what they produce at their own input rate
    (``bound_downstream_rates``, :mod:`.selectivity`), which both rates are capped at; None when
    it has no bound.
    """

    lag: int
    input_rate: float
    latest_input_rate: float
    capacity: float
    capacity_measured: bool
    required_rate: float
    workers: float
    lag_counted: bool = True
    rate_bound: float | None = None

    @property
    def counted_lag(self) -> int:
        return self.lag if self.lag_counted else 0


def subtopology_demands(
    snapshot: LagSnapshot,
    config: ScalingConfig,
    *,
    previous_snapshot: LagSnapshot | None = None,
    measured: Mapping[str, float] | None = None,
    remembered: Mapping[str, float] | None = None,
    floors: Mapping[str, float] | None = None,
    previous_rates: Mapping[str, float] | None = None,
    previous_rate_weight: float = 0.0,
    upstreams: Mapping[str, Collection[str]] | None = None,
    selectivities: Mapping[tuple[str, str], float] | None = None,
) -> dict[str, SubtopologyDemand]:
    """Each sub-topology's lag, input rate, capacity and the workers it needs, keyed by its id.

    The input rate is measured between ``previous_snapshot`` and ``snapshot`` and averaged with
    ``previous_rates`` (the averaged rates of the tick before, by sub-topology, with their weight:
    :func:`smoothed_rates`). With ``bound_downstream_rates``, the rate (averaged, and the latest) of
    each sub-topology in ``upstreams`` (those fed only by others: the ids of the sub-topologies that
    write what it reads) is capped at their rate times their ``selectivities`` (records out for it
    per record in, keyed ``(upstream, downstream)``: :func:`~.selectivity.rate_bounds`)."""
    measured = measured or {}
    remembered = remembered or {}
    floors = floors or {}
    rates = input_rates(previous_snapshot, snapshot)
    lags = lags_by_subtopology(snapshot)
    arriving: dict[str, float] = {}
    for task in snapshot.tasks:
        sub = subtopology_of(task)
        arriving[sub] = arriving.get(sub, 0.0) + rates.get(task, 0.0)
    latest = dict(arriving)
    if previous_snapshot is not None:
        arriving, _ = smoothed_rates(previous_rates or {}, arriving, snapshot.time - previous_snapshot.time, config,
                                     previous_rate_weight)
    bounds: dict[str, float] = {}
    if config.bound_downstream_rates and upstreams:
        bounds = rate_bounds(arriving, upstreams, selectivities or {})
        arriving = bounded_rates(arriving, bounds)
        latest = bounded_rates(latest, rate_bounds(latest, upstreams, selectivities or {}))
    demands = {}
    for sub in lags:
        capacity = capacity_to_plan_with(measured.get(sub), remembered.get(sub), config, floors.get(sub))
        known = any(source.get(sub) is not None for source in (measured, remembered, floors))
        counted = known or not config.lag_waits_for_measured_capacity
        needed = required_rate(lags[sub] if counted else 0, arriving[sub], config)
        demands[sub] = SubtopologyDemand(lag=lags[sub], input_rate=arriving[sub], latest_input_rate=latest[sub],
                                         capacity=capacity,
                                         capacity_measured=sub in measured, required_rate=needed,
                                         workers=needed / capacity, lag_counted=counted,
                                         rate_bound=bounds.get(sub))
    return demands
