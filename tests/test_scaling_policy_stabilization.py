"""Scale-down stabilization: up on the tick that sees it, down only to the highest recommendation of
a fully observed window, and the state carried across ticks in a JSON cursor."""

from __future__ import annotations

import json

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dagster_kstreams.scaling import ScalingConfig, StabilizationState, stabilize
from scaling_policy_inputs import run_policy


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 32), st.integers(0, 32), st.floats(0, 600), st.floats(0, 1e6))
def test_scale_up_happens_on_the_tick_that_sees_it(recommended, current, window, now):
    assume(recommended > current)
    config = ScalingConfig(max_workers=32, scale_down_stabilization_seconds=window)
    decided, _ = stabilize(recommended, current, now, StabilizationState(), config)
    assert decided == recommended


@settings(max_examples=200, deadline=None)
@given(
    high=st.integers(2, 16),
    low=st.integers(0, 15),
    tick_seconds=st.floats(1, 60),
    windows_per_gap=st.floats(1.01, 10),
    ticks=st.integers(2, 40),
)
def test_alternating_lag_within_the_window_never_scales_down(high, low, tick_seconds, windows_per_gap, ticks):
    assume(low < high)
    # Two ticks separate consecutive highs; the window is longer than that gap.
    config = ScalingConfig(max_workers=16, scale_down_stabilization_seconds=2 * tick_seconds * windows_per_gap)
    alternating = [high if i % 2 == 0 else low for i in range(ticks)]
    counts = run_policy(alternating, start_workers=1, config=config, tick_seconds=tick_seconds)
    assert counts == [high] * ticks


@settings(max_examples=300, deadline=None)
@given(
    recommendations=st.lists(st.integers(0, 12), min_size=1, max_size=40),
    start=st.integers(0, 12),
    tick_seconds=st.floats(0.5, 60),
    window=st.floats(0, 300),
)
def test_scale_down_only_to_the_highest_recommendation_of_a_fully_observed_window(
    recommendations, start, tick_seconds, window
):
    # The plain window: a burst's end, which may scale down sooner, is test_scaling_policy_burst_end.py's.
    config = ScalingConfig(max_workers=12, scale_down_stabilization_seconds=window, burst_end_window_seconds=0)
    counts = run_policy(recommendations, start, config, tick_seconds)
    previous = start
    for i, count in enumerate(counts):
        now = i * tick_seconds
        if count < previous:
            assert now >= window, "scaled down before watching a whole window"
            in_window = [
                r for j, r in enumerate(recommendations[: i + 1]) if j == i or now - window < j * tick_seconds
            ]
            assert count == max(in_window)
        else:
            # Not down: up to the recommendation at once, or hold.
            assert count == max(previous, recommendations[i])
        previous = count


def test_sustained_low_lag_scales_down_after_one_window():
    config = ScalingConfig(max_workers=8, scale_down_stabilization_seconds=300)
    counts = run_policy([6] + [2] * 12, start_workers=1, config=config, tick_seconds=30)
    # The 6 recommended at t=0 leaves the window at t=300 (tick 10).
    assert counts == [6] * 10 + [2] * 3


def test_restarted_policy_does_not_scale_down_on_its_first_tick():
    config = ScalingConfig(max_workers=8, scale_down_stabilization_seconds=300)
    decided, state = stabilize(1, 5, 10_000.0, StabilizationState(), config)
    assert decided == 5
    decided, _ = stabilize(1, 5, 10_300.0, state, config)
    assert decided == 1


def test_ceiling_retires_surplus_without_waiting():
    config = ScalingConfig(max_workers=8, scale_down_stabilization_seconds=300)
    decided, _ = stabilize(2, 6, 0.0, StabilizationState(), config, ceiling=3)
    assert decided == 3


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e9), st.integers(0, 100)), max_size=10), st.none() | st.floats(0, 1e9))
def test_stabilization_state_survives_a_json_cursor(recommendations, since):
    state = StabilizationState(tuple(recommendations), since)
    assert StabilizationState.from_dict(json.loads(json.dumps(state.to_dict()))) == state
