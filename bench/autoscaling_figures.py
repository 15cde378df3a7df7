"""The autoscaling bench's schedule and figures (pure logic, tests/test_bench_autoscaling.py): one
burst in the generator's rate, and from the samples, sensor ticks and worker runs of a mode its
recovery, peak lag, scaling decisions and worker-seconds, and each elastic mode's verdict against
the fixed worker (``bench/autoscaling.py``'s docstring says what each figure means)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional


class OneBurst:
    """The generator's rate: steady, then one burst once :meth:`start` says when (seconds since the
    generator started). Duck-types :class:`dagster_kstreams.generator.BurstSchedule`."""

    def __init__(self, rate: float, factor: float, burst_seconds: float):
        self.rate, self.factor, self.burst_seconds = rate, factor, burst_seconds
        self.burst_from: Optional[float] = None

    def start(self, at: float) -> None:
        self.burst_from = at

    def rate_at(self, t: float) -> float:
        if self.burst_from is not None and self.burst_from <= t < self.burst_from + self.burst_seconds:
            return self.rate * self.factor
        return self.rate


@dataclass
class Sample:
    t: float  # seconds since the measurement started
    lag: int  # input + repartition topics (what the sensor sees)
    input_lag: int
    workers: int  # live worker runs (queued, starting or running)


@dataclass
class Tick:
    t: float
    workers: int
    desired: int
    capacity: float  # what the sensor planned with for sub-topology 0 (lines/s; the words have their own)
    measured: bool = False  # ... measured from the workers' reports, not the default


@dataclass
class WorkerRun:
    worker: str
    created: float  # seconds since the measurement started
    ended: Optional[float]
    status: str


@dataclass
class Figures:
    lag_target: int
    recovery_after_burst_s: Optional[float]
    recovery_from_burst_start_s: Optional[float]
    peak_lag: int
    scaling_decisions: int
    runs_launched: int
    max_workers_seen: int
    worker_seconds: float
    capacity_measured_at_s: Optional[float] = None  # first tick planning with a measured capacity
    extra: dict = field(default_factory=dict)


def lag_target(samples: Sequence[Sample], burst_start: float, given: Optional[int] = None) -> int:
    """The given target, else the highest lag of the steady phase before the burst (at least 1)."""
    if given is not None:
        return given
    return max([s.lag for s in samples if 0 <= s.t < burst_start] + [1])


def recovery_seconds(samples: Sequence[Sample], burst_end: float, target: int) -> Optional[float]:
    """Seconds from ``burst_end`` until the first sample at or after it with lag <= target."""
    for sample in sorted(samples, key=lambda s: s.t):
        if sample.t >= burst_end and sample.lag <= target:
            return sample.t - burst_end
    return None


def scaling_decisions(ticks: Sequence[Tick], start: float, end: float, standbys: int = 0) -> int:
    """Ticks in ``[start, end]`` that changed the fleet: desired active workers plus ``standbys``
    (the sensor's plotted ``workers`` counts them) differs from running."""
    return sum(1 for tick in ticks if start <= tick.t <= end and tick.desired + standbys != tick.workers)


def worker_seconds(runs: Sequence[WorkerRun], start: float, end: float) -> float:
    """Time alive of every worker run, clipped to ``[start, end]``."""
    total = 0.0
    for run in runs:
        alive_to = end if run.ended is None else min(run.ended, end)
        total += max(0.0, alive_to - max(run.created, start))
    return total


def figures(samples: Sequence[Sample], ticks: Sequence[Tick], runs: Sequence[WorkerRun], *, burst_start: float,
            burst_seconds: float, end: float, given_target: Optional[int] = None, standbys: int = 0) -> Figures:
    target = lag_target(samples, burst_start, given_target)
    burst_end = burst_start + burst_seconds
    after = recovery_seconds(samples, burst_end, target)
    return Figures(
        lag_target=target,
        recovery_after_burst_s=after,
        recovery_from_burst_start_s=None if after is None else after + burst_seconds,
        peak_lag=max([s.lag for s in samples if s.t >= burst_start] + [0]),
        scaling_decisions=scaling_decisions(ticks, 0.0, end, standbys),
        runs_launched=sum(1 for run in runs if 0.0 <= run.created <= end),
        max_workers_seen=max([s.workers for s in samples] + [0]),
        worker_seconds=round(worker_seconds(runs, 0.0, end), 1),
        capacity_measured_at_s=next((tick.t for tick in sorted(ticks, key=lambda tick: tick.t)
                                     if tick.measured and tick.t >= 0), None),
    )


def verdicts(modes: dict) -> dict:
    """For each elastic mode, issue 13's bar against the fixed worker (module docstring)."""
    if "fixed" not in modes:
        return {}
    fixed = modes["fixed"]["figures"]
    result = {}
    for name, mode in modes.items():
        if name == "fixed":
            continue
        own = mode["figures"]
        sooner = (own["recovery_after_burst_s"] is not None and (fixed["recovery_after_burst_s"] is None
                  or own["recovery_after_burst_s"] < fixed["recovery_after_burst_s"]))
        lower_peak = own["peak_lag"] < fixed["peak_lag"]
        cost = own["worker_seconds"] / fixed["worker_seconds"] if fixed["worker_seconds"] else None
        result[name] = {"back_under_target_sooner": sooner, "lower_peak_lag": lower_peak,
                        "worker_seconds_over_fixed": None if cost is None else round(cost, 2),
                        "beats_fixed": bool(sooner and lower_peak and cost is not None and cost <= 2.0)}
    return result


def table(modes: dict) -> str:
    def cell(value, unit=""):
        return "not within the run" if value is None else f"{value:,.0f}{unit}" if isinstance(value, float) \
            else f"{value:,}{unit}"

    rows = [
        ("time until lag is back under target, from the burst's end", "recovery_after_burst_s", " s"),
        ("... from the burst's start", "recovery_from_burst_start_s", " s"),
        ("lag target (steady-phase peak)", "lag_target", ""),
        ("peak lag", "peak_lag", ""),
        ("scaling decisions (sensor ticks that changed the count)", "scaling_decisions", ""),
        ("worker runs launched", "runs_launched", ""),
        ("most workers at once", "max_workers_seen", ""),
        ("worker-seconds", "worker_seconds", ""),
        ("capacity first measured (sub-topology 0), from the start", "capacity_measured_at_s", " s"),
    ]
    names = list(modes)
    lines = ["| | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label, key, unit in rows:
        lines.append(f"| {label} | " + " | ".join(cell(modes[name]["figures"][key], unit) for name in names) + " |")
    return "\n".join(lines)
