"""How the count follows a changing rate: after a burst one step down, not a staircase
(scale_down_follows_latest_rate), the scale-up and scale-down dead bands, no flapping on a noisy
steady stream, and no scale-down while the rate rises (scale_down_waits_while_rate_rises)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.scaling import ScalingConfig, StabilizationState, recommend, stabilize
from scaling_policy_inputs import follow, rate_ticks, snapshot


@settings(max_examples=300, deadline=None)
@given(
    ticks=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=1, max_size=40),
    start=st.integers(0, 40),
    tick_seconds=st.floats(1, 60),
    window=st.floats(0, 300),
    dead_band=st.floats(0, 0.9),
)
def test_a_scale_down_keeps_the_windows_highest_count_and_retires_at_least_the_dead_band(
    ticks, start, tick_seconds, window, dead_band
):
    # The plain window: a burst's end, which may scale down sooner, is test_scaling_policy_burst_end.py's.
    config = ScalingConfig(max_workers=40, scale_down_stabilization_seconds=window, scale_down_dead_band=dead_band,
                           burst_end_window_seconds=0)
    current, state, kept = start, StabilizationState(), []
    for i, (recommended, remembered) in enumerate(ticks):
        now = i * tick_seconds
        decided, state = stabilize(recommended, current, now, state, config, remembered=remembered)
        kept.append((now, min(recommended, remembered)))
        if recommended >= current:
            assert decided == recommended  # up (or steady) at once, on the average's count
        elif decided < current:
            assert now >= window
            assert decided == max(n for t, n in kept if t > now - window or t == now)
            assert current - decided >= max(1, math.ceil(dead_band * current - 1e-9))
        else:
            assert decided == current
        current = decided


def test_after_a_burst_the_count_falls_in_one_step_not_a_staircase():
    config = ScalingConfig(max_workers=64, default_worker_records_per_second=1000)
    counts = follow(rate_ticks([(2000, 30)] * 12 + [(20_000, 30)] * 10 + [(2000, 30)] * 20), config)
    downs = [(t, n) for (_, before), (t, n) in zip(counts, counts[1:]) if n < before]
    # 20,000/s at 0.9 of 1,000/s each is 22.2 workers: 22 once the rate is read in full (within the
    # up dead band of 22).
    assert max(n for _, n in counts) == 22
    # Straight to 2,000/s' count, once the fall has lasted burst_end_window_seconds (120 s) ...
    assert downs == [(780.0, 3)]
    # ... or, without that rule, 300 s after the burst's last tick.
    plain = follow(rate_ticks([(2000, 30)] * 12 + [(20_000, 30)] * 10 + [(2000, 30)] * 20),
                   replace(config, burst_end_window_seconds=0))
    assert [(t, n) for (_, before), (t, n) in zip(plain, plain[1:]) if n < before] == [(960.0, 3)]
    # Remembering the averaged rate instead steps down with its decay.
    staircase = follow(rate_ticks([(2000, 30)] * 12 + [(20_000, 30)] * 10 + [(2000, 30)] * 20),
                        replace(config, scale_down_follows_latest_rate=False))
    assert len([1 for (_, before), (_, n) in zip(staircase, staircase[1:]) if n < before]) > 1


@settings(max_examples=80, deadline=None)
@given(
    rate=st.floats(500, 50_000),
    gaps=st.lists(st.floats(15, 45), min_size=30, max_size=50),
    noise=st.lists(st.floats(0, 0.1), min_size=50, max_size=50),
    whole_tasks=st.booleans(),
)
def test_a_steady_stream_read_with_noise_at_irregular_ticks_never_flaps(rate, gaps, noise, whole_tasks):
    """Readings within 10% of the true rate (issue 13's bound), ticks 15-45 s apart."""
    config = ScalingConfig(max_workers=64, default_worker_records_per_second=1000, whole_task_workers=whole_tasks)
    counts = follow(rate_ticks([(rate, gap) for gap in gaps], noise=noise), config)
    changes = [(t, 1 if n > before else -1) for (_, before), (t, n) in zip(counts, counts[1:]) if n != before]
    for (t0, d0), (t1, d1) in zip(changes, changes[1:]):
        assert not (d1 != d0 and t1 - t0 < 300), f"flap: {changes}"


def test_a_scale_up_needs_more_than_the_dead_band_beyond_the_current_count():
    config = ScalingConfig(max_workers=16, catch_up_seconds=1, default_worker_records_per_second=1000,
                           lag_waits_for_measured_capacity=False)
    # 8 tasks x lag / 1 s / 1,000/s: 6.5 workers is within 10% of 6, 6.7 is not.
    within, _ = recommend(snapshot(0, 812), 6, config)
    beyond, _ = recommend(snapshot(0, 838), 6, config)
    assert (within.required_workers, within.desired_workers) == (pytest.approx(6.496), 6)
    assert (beyond.required_workers, beyond.desired_workers) == (pytest.approx(6.704), 7)
    # No band below the lower bound: an application without workers gets its first one.
    first, _ = recommend(snapshot(0, 10), 0, config)
    assert first.desired_workers == 1
    # Without the band, any shortfall scales up.
    unbanded, _ = recommend(snapshot(0, 812), 6, replace(config, scale_up_dead_band=0))
    assert unbanded.desired_workers == 7


@settings(max_examples=200, deadline=None)
@given(rate=st.floats(100, 30_000), current=st.integers(1, 64), utilization=st.floats(0.5, 1.0),
       band=st.floats(0, 0.5))
def test_a_count_the_scale_up_band_holds_runs_at_most_the_target_utilization_times_the_band(
        rate, current, utilization, band):
    """With no lag, the band holds a count exactly while its workers would be at most
    ``target_utilization x (1 + band)`` busy (0.99 with the defaults: held, they keep up); the rates
    drawn need at most 60 of the 64 workers allowed."""
    config = ScalingConfig(max_workers=64, default_worker_records_per_second=1000, rate_smoothing_seconds=0,
                           target_utilization=utilization, scale_up_dead_band=band)
    previous, now = rate_ticks([(rate, 30)])
    recommendation, _ = recommend(now, current, config, previous_snapshot=previous)
    busy = recommendation.input_rate / (current * 1000)
    if recommendation.desired_workers == current:
        assert busy <= utilization * (1 + band) * (1 + 1e-9)
    else:
        assert recommendation.desired_workers > current and busy > utilization * (1 + band) * (1 - 1e-9)


@settings(max_examples=60, deadline=None)
@given(
    start=st.floats(500, 5_000),
    rises=st.lists(st.floats(1.05, 1.3), min_size=15, max_size=30),
    gaps=st.lists(st.floats(15, 45), min_size=30, max_size=30),
    fleet=st.integers(8, 40),
)
def test_a_rising_rate_never_scales_down(start, rises, gaps, fleet):
    """However far above the need the fleet starts, a rate that rises on every tick never retires a
    worker: the average lags it, and a count sized on the average would be undone by the rise."""
    config = ScalingConfig(max_workers=64, default_worker_records_per_second=1000)
    rates = [start * math.prod(rises[:i + 1]) for i in range(len(rises))]
    counts = follow(rate_ticks(list(zip(rates, gaps))), config, current=fleet)
    assert all(after >= before for (_, before), (_, after) in zip([(0.0, fleet), *counts], counts)), counts


def test_a_fleet_sized_above_a_ramp_scales_down_into_it_only_without_the_rule():
    """The 256-partition ramp's flap (bench/README.md): 8 workers, a steady 5,000/s that needs 6, for
    a window; then a ramp. Without the rule the first scale-down lands on the ramp and is undone."""
    config = ScalingConfig(max_workers=64, default_worker_records_per_second=1000)
    ramp = [(5_000, 30)] * 10 + [(5_000 * (1 + 0.15 * i), 30) for i in range(1, 15)]
    held = follow(rate_ticks(ramp), config, current=8)
    assert all(after >= before for (_, before), (_, after) in zip(held, held[1:]))
    flapped = follow(rate_ticks(ramp), replace(config, scale_down_waits_while_rate_rises=False), current=8)
    downs = [t for (_, before), (t, n) in zip(flapped, flapped[1:]) if n < before]
    ups = [t for (_, before), (t, n) in zip(flapped, flapped[1:]) if n > before]
    assert downs and ups and min(ups) - max(downs) < 300, flapped


def test_a_steady_rate_still_scales_down_after_one_window():
    config = ScalingConfig(max_workers=64, default_worker_records_per_second=1000)
    counts = follow(rate_ticks([(5_000, 30)] * 14), config, current=8)
    assert counts[-1][1] == 6 and min(t for t, n in counts if n == 6) <= 360
