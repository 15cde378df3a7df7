"""The end of a burst: once the counts asked for have fallen to a ``burst_end_fall``-th of the
window's highest, and stayed there for ``burst_end_window_seconds``, a scale-down no longer waits
out the whole stabilization window (which holds a fleet through a dip, not after a fall)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.scaling import ScalingConfig
from scaling_policy_inputs import run_policy


def _config(**settings) -> ScalingConfig:
    return ScalingConfig(**{"max_workers": 64, "scale_down_stabilization_seconds": 300,
                            "burst_end_window_seconds": 90, "burst_end_fall": 3, **settings})


def test_a_fall_to_a_third_scales_down_once_it_has_lasted_the_short_window():
    # 30 s ticks: the burst's 12 until t=330, then 3 from t=360; the counts of (330, 420] are all 3.
    counts = run_policy([12] * 12 + [3] * 8, start_workers=12, config=_config(), tick_seconds=30)
    assert counts == [12] * 14 + [3] * 6
    # Without the rule, the last 12 leaves the window at t=630.
    plain = run_policy([12] * 12 + [3] * 8, 12, _config(burst_end_window_seconds=0), 30)
    assert plain == [12] * 20


def test_a_dip_to_half_waits_out_the_whole_window():
    counts = run_policy([12] * 12 + [6] * 12, start_workers=12, config=_config(), tick_seconds=30)
    assert counts == [12] * 21 + [6] * 3  # the last 12 (t=330) leaves the window at t=630


def test_a_fall_seen_once_does_not_scale_down():
    counts = run_policy([12] * 12 + [3, 12, 3, 12] * 3, start_workers=12, config=_config(), tick_seconds=30)
    assert counts == [12] * 24


def test_a_policy_that_has_not_watched_a_whole_window_does_not_scale_down_at_the_fall():
    counts = run_policy([12] * 3 + [3] * 6, start_workers=12, config=_config(), tick_seconds=30)
    assert counts == [12] * 9  # observed since t=0: nothing goes down before t=300


@settings(max_examples=400, deadline=None)
@given(
    recommendations=st.lists(st.integers(0, 40), min_size=1, max_size=40),
    start=st.integers(0, 40),
    tick_seconds=st.floats(5, 60),
    short=st.floats(0, 200),
    fall=st.floats(1.5, 5),
)
def test_a_scale_down_before_the_window_allows_follows_a_fall_and_keeps_what_the_short_window_asked(
    recommendations, start, tick_seconds, short, fall
):
    window = 300
    config = ScalingConfig(max_workers=40, scale_down_stabilization_seconds=window, burst_end_window_seconds=short,
                           burst_end_fall=fall)
    counts = run_policy(recommendations, start, config, tick_seconds)
    previous = start
    for i, count in enumerate(counts):
        now = i * tick_seconds
        if count < previous:
            asked = lambda seconds: max(r for j, r in enumerate(recommendations[: i + 1])  # noqa: E731
                                        if now - j * tick_seconds < seconds or j == i)
            assert count >= asked(min(short, window)) if short else count >= asked(window)
            if count < min(previous, asked(window)):
                assert short and asked(short) * fall <= asked(window), "scaled down sooner with no fall"
        previous = count
