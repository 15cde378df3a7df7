"""The autoscaling benchmark's pure parts (its schedule and figures); the benchmark itself runs
by hand (bench/README.md), not in the suite."""

from __future__ import annotations

from bench.autoscaling_figures import OneBurst, Sample, Tick, WorkerRun, figures, table, verdicts, worker_seconds


def test_one_burst_starts_when_told_and_lasts_its_seconds():
    schedule = OneBurst(rate=50, factor=10, burst_seconds=60)
    assert schedule.rate_at(100) == 50  # no burst until started
    schedule.start(30)
    assert [schedule.rate_at(t) for t in (29.9, 30, 89.9, 90)] == [50, 500, 500, 50]


def test_figures_of_a_burst():
    # Steady lag peaks at 100 before the burst (t=30..90); back under 100 at t=150.
    lags = {0: 80, 10: 100, 20: 90, 30: 500, 60: 4000, 90: 3000, 120: 800, 150: 95, 160: 300}
    samples = [Sample(t, lag, lag // 2, 1 if t < 60 else 3) for t, lag in lags.items()]
    ticks = [Tick(-5, 0, 1, 0), Tick(5, 1, 1, 0), Tick(35, 1, 3, 900), Tick(40, 3, 3, 900), Tick(140, 3, 1, 900)]
    runs = [WorkerRun("worker-0", -80, None, "STARTED"), WorkerRun("worker-1", 35, 145, "SUCCESS"),
            WorkerRun("worker-2", 35, None, "STARTED")]
    result = figures(samples, ticks, runs, burst_start=30, burst_seconds=60, end=170)
    assert result.lag_target == 100
    assert result.recovery_after_burst_s == 60 and result.recovery_from_burst_start_s == 120
    assert result.peak_lag == 4000
    assert result.scaling_decisions == 2  # t=35 (up) and t=140 (down); t=-5 is before the window
    # With a standby, the plotted workers count it: a fleet of 1 + 1 standby is no decision.
    with_standby = [Tick(5, 2, 1, 0), Tick(35, 2, 3, 900), Tick(40, 4, 3, 900)]
    assert figures(samples, with_standby, runs, burst_start=30, burst_seconds=60, end=170,
                   standbys=1).scaling_decisions == 1
    assert result.runs_launched == 2 and result.max_workers_seen == 3
    assert result.worker_seconds == 170 + 110 + 135
    assert result.capacity_measured_at_s is None  # every tick planned with the default
    measured = [*ticks[:3], Tick(40, 3, 3, 1400, measured=True), Tick(140, 3, 1, 1300, measured=True)]
    assert figures(samples, measured, runs, burst_start=30, burst_seconds=60, end=170).capacity_measured_at_s == 40
    # Never back under the target: said so, not a number.
    assert figures(samples[:-2], ticks, runs, burst_start=30, burst_seconds=60, end=170).recovery_after_burst_s is None
    assert "not within the run" in table({"fixed": {"figures": figures(samples[:-2], ticks, runs, burst_start=30,
                                                                          burst_seconds=60, end=170).__dict__}})


def test_worker_seconds_clip_to_the_window():
    assert worker_seconds([WorkerRun("w", -10, 5, "SUCCESS"), WorkerRun("w", 50, 200, "FAILURE")], 0, 100) == 55


def _mode(recovery, peak, worker_seconds):
    return {"figures": {"recovery_after_burst_s": recovery, "peak_lag": peak, "worker_seconds": worker_seconds}}


def test_an_elastic_mode_beats_the_fixed_worker_only_sooner_lower_and_at_most_twice_the_cost():
    result = verdicts({"fixed": _mode(120, 90_000, 300), "autoscale": _mode(60, 50_000, 600),
                       "standby": _mode(50, 40_000, 601), "slow": _mode(None, 10_000, 300),
                       "high": _mode(30, 90_000, 300)})
    assert result["autoscale"]["beats_fixed"] and result["autoscale"]["worker_seconds_over_fixed"] == 2.0
    assert not result["standby"]["beats_fixed"]  # sooner and lower, but more than twice the worker-seconds
    assert not result["slow"]["beats_fixed"] and not result["high"]["beats_fixed"]
    assert verdicts({"fixed": _mode(None, 90_000, 300), "autoscale": _mode(200, 80_000, 400)})["autoscale"]["beats_fixed"]
    assert verdicts({"autoscale": _mode(60, 50_000, 600)}) == {}  # nothing to compare with
