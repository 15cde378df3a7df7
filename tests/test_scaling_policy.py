"""Desired worker count: the formula, its bounds and monotonicity, the config's checks, and one
policy tick end to end. (Capacity, stabilization, several sub-topologies, rate changes, whole tasks
and a start backlog: the test_scaling_policy_*.py modules.)"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.scaling import (LagSnapshot, ScalingConfig, StabilizationState, TaskOffsets, ThroughputSample,
                                      recommend, worker_bounds)
from scaling_policy_inputs import capacities, configs, lags, rates, snapshot, task_counts, workers_for


def test_formula_adds_headroom_for_input_and_catch_up_for_lag():
    config = ScalingConfig(max_workers=10, catch_up_seconds=300, target_utilization=0.7)
    # 700 rec/s of input at 70% utilization needs 1000 rec/s; 600k lag in 300 s needs 2000 rec/s.
    assert workers_for(600_000, 700.0, 1000.0, task_count=12, config=config) == 3
    assert workers_for(600_001, 700.0, 1000.0, task_count=12, config=config) == 4


def test_catching_up_at_full_capacity_keeps_the_headroom_for_the_input():
    config = ScalingConfig(max_workers=10, catch_up_seconds=300, target_utilization=0.7,
                           catch_up_at_full_capacity=True)
    # 700 rec/s of input at 70% utilization needs 1000 rec/s: one worker while nothing is behind.
    assert workers_for(0, 700.0, 1000.0, task_count=12, config=config) == 1
    # 690k lag in 300 s is 2300 rec/s on top of the 700 arriving, at full capacity: 3 workers.
    assert workers_for(690_000, 700.0, 1000.0, task_count=12, config=config) == 3
    assert workers_for(690_001, 700.0, 1000.0, task_count=12, config=config) == 4


def test_count_is_capped_by_tasks_and_max_workers():
    config = ScalingConfig(max_workers=10)
    assert workers_for(10**12, 0.0, 1.0, task_count=4, config=config) == 4
    assert workers_for(10**12, 0.0, 1.0, task_count=40, config=config) == 10


def test_idle_application_scales_to_min_workers_and_to_zero_only_if_allowed():
    assert workers_for(0, 0.0, 1000.0, task_count=6, config=ScalingConfig(min_workers=0)) == 0
    assert workers_for(0, 0.0, 1000.0, task_count=6, config=ScalingConfig(min_workers=2)) == 2
    # Any lag at all needs a worker, even when min_workers is 0.
    assert workers_for(1, 0.0, 1000.0, task_count=6, config=ScalingConfig(min_workers=0)) == 1
    # No tasks, no workers, whatever min_workers says.
    assert workers_for(0, 0.0, 1000.0, task_count=0, config=ScalingConfig(min_workers=3, max_workers=5)) == 0


@settings(max_examples=300, deadline=None)
@given(lags, rates, capacities, task_counts, configs())
def test_count_respects_every_bound(lag, rate, capacity, tasks, config):
    count = workers_for(lag, rate, capacity, tasks, config)
    assert 0 <= count <= min(tasks, config.max_workers)
    assert count >= min(config.min_workers, tasks)
    if tasks and (lag or rate):
        assert count >= 1
    assert worker_bounds(tasks, bool(lag or rate), config)[0] <= count


@settings(max_examples=300, deadline=None)
@given(lags, lags, rates, capacities, task_counts, configs())
def test_more_lag_never_means_fewer_workers(lag_a, lag_b, rate, capacity, tasks, config):
    low, high = sorted((lag_a, lag_b))
    assert workers_for(low, rate, capacity, tasks, config) <= workers_for(high, rate, capacity, tasks, config)


@settings(max_examples=200, deadline=None)
@given(lags, rates, rates, capacities, capacities, task_counts, configs())
def test_more_input_or_less_capacity_never_means_fewer_workers(lag, rate_a, rate_b, cap_a, cap_b, tasks, config):
    low_rate, high_rate = sorted((rate_a, rate_b))
    low_cap, high_cap = sorted((cap_a, cap_b))
    assert workers_for(lag, low_rate, cap_a, tasks, config) <= workers_for(lag, high_rate, cap_a, tasks, config)
    assert workers_for(lag, rate_a, high_cap, tasks, config) <= workers_for(lag, rate_a, low_cap, tasks, config)


def test_config_rejects_nonsense():
    for bad in (
        dict(min_workers=-1),
        dict(max_workers=0),
        dict(min_workers=3, max_workers=2),
        dict(catch_up_seconds=0),
        dict(target_utilization=0),
        dict(target_utilization=1.5),
        dict(scale_down_stabilization_seconds=-1),
        dict(warmup_batches=-1),
        dict(restart_backoff_seconds=-1),
        dict(restart_backoff_seconds=20, max_restart_backoff_seconds=10),
        dict(backoff_reset_seconds=0),
        dict(default_worker_records_per_second=0),
        dict(throughput_window_seconds=0),
        dict(min_sample_seconds=-1),
    ):
        with pytest.raises(ValueError):
            ScalingConfig(**bad)


def test_burst_scales_up_within_one_tick_and_dip_does_not_scale_down():
    config = ScalingConfig(
        min_workers=1,
        max_workers=8,
        catch_up_seconds=60,
        scale_down_stabilization_seconds=300,
        default_worker_records_per_second=1000,
        lag_waits_for_measured_capacity=False,  # lag at the default capacity (waiting for a measurement: below)
    )
    quiet, state = recommend(snapshot(0, 0), current_workers=1, config=config)
    assert quiet.desired_workers == 1 and quiet.action == "steady"

    # 8 tasks x 30k lag = 240k to drain in 60 s = 4000 rec/s = 4 workers at 1000 rec/s.
    burst, state = recommend(snapshot(30, 30_000), current_workers=1, config=config, state=state)
    assert burst.desired_workers == 4 and burst.action == "scale up"

    dip, state = recommend(snapshot(60, 0), current_workers=4, config=config, state=state)
    assert dip.unstabilized_workers == 1
    assert dip.desired_workers == 4 and dip.action == "hold (scale-down stabilizing)"

    later, _ = recommend(snapshot(330, 0), current_workers=4, config=config, state=state)
    assert later.desired_workers == 1 and later.action == "scale down"


def test_input_rate_and_measured_capacity_drive_the_count():
    config = ScalingConfig(max_workers=16, target_utilization=0.5, catch_up_seconds=60)
    earlier = snapshot(0, 0, tasks=4, end=0)
    later = snapshot(10, 0, tasks=4, end=10_000)  # 4 x 1000 rec/s of input, nothing behind
    measured = [ThroughputSample(5, "worker-0", "0_0", records=20_000, seconds=20)]  # 1000 rec/s
    recommendation, _ = recommend(later, 1, config, previous_snapshot=earlier, throughput=measured)
    assert recommendation.input_rate == 4000.0
    assert recommendation.demands["0"].capacity == 1000.0 and recommendation.demands["0"].capacity_measured
    # 4000 / 0.5 = 8000 rec/s needed, but only 4 tasks can be spread.
    assert recommendation.unstabilized_workers == 4


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 10**7), min_size=1, max_size=12),
    st.lists(st.integers(0, 10**7), min_size=12, max_size=12),
    st.integers(0, 16),
    configs(),
    st.lists(st.tuples(st.floats(0, 1000), st.integers(0, 16)), max_size=6),
)
def test_more_lag_never_means_fewer_workers_after_stabilization(lags_a, extra, current, config, history):
    state = StabilizationState(tuple(sorted(history)), observed_since=0.0)
    end = 10**8
    low = LagSnapshot(1000.0, {f"0_{p}": TaskOffsets(end, end - lag) for p, lag in enumerate(lags_a)})
    high = LagSnapshot(
        1000.0, {f"0_{p}": TaskOffsets(end, end - lag - extra[p]) for p, lag in enumerate(lags_a)}
    )
    low_rec, _ = recommend(low, current, config, state=state)
    high_rec, _ = recommend(high, current, config, state=state)
    assert low_rec.desired_workers <= high_rec.desired_workers
