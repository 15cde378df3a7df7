"""Warm standbys as headroom (scaling/headroom.py): with S standbys the active workers run the work at
full capacity, and with the standbys at the target utilization; a steady rate never flaps, a rise
promotes a standby on the tick that sees it, and active + standbys never fall below the count
without standbys."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.scaling import (LagSnapshot, ScalingConfig, SubtopologyDemand, TaskOffsets, Worker,
                                      WorkerState, active_workers, active_workers_needed, assign_tasks, decide_tick,
                                      desired_workers, full_capacity_rate, recommend, required_rate)
from scaling_policy_inputs import capacities, configs, follow, lags, rate_ticks, rates, task_counts

CAPACITY = 2431.6  # the simulation's worker (bench/scaling_model.py)


def demand(lag: int, rate: float, capacity: float, config: ScalingConfig, latest: float | None = None):
    needed = required_rate(lag, rate, config)
    return SubtopologyDemand(lag=lag, input_rate=rate, latest_input_rate=rate if latest is None else latest,
                             capacity=capacity, capacity_measured=True, required_rate=needed,
                             workers=needed / capacity)


def count(lag: int, rate: float, capacity: float, task_count: int, config: ScalingConfig) -> int:
    """The active count for an application of one sub-topology, before stabilization."""
    needed = active_workers_needed([demand(lag, rate, capacity, config)], config)
    return desired_workers(needed, bool(lag or rate), task_count, config)


@settings(max_examples=300, deadline=None)
@given(lag=lags, rate=rates, capacity=capacities, task_count=task_counts, config=configs(),
       standbys=st.integers(1, 4), full_capacity_catch_up=st.booleans())
def test_active_workers_plus_standbys_never_fall_below_the_count_without_standbys(
        lag, rate, capacity, task_count, config, standbys, full_capacity_catch_up):
    config = replace(config, catch_up_at_full_capacity=full_capacity_catch_up)
    without = count(lag, rate, capacity, task_count, config)
    with_standbys = count(lag, rate, capacity, task_count, replace(config, standby_workers=standbys))
    assert with_standbys + standbys >= without  # the fleet still covers the work at the target utilization
    assert with_standbys <= without  # and never runs more active workers than without standbys
    lower, upper = min(config.min_workers, task_count), min(config.max_workers, task_count)
    if lag or rate:
        lower = max(lower, min(1, upper))
    assert lower <= with_standbys <= max(lower, upper)
    # The active workers alone run the work at full capacity, unless a bound caps them.
    at_full = math.ceil(full_capacity_rate(lag, rate, config) / capacity - 1e-9)
    assert with_standbys >= min(at_full, upper)


@settings(max_examples=300, deadline=None)
@given(at_target=st.floats(0, 1e4), headroom=st.floats(0, 1), standbys=st.integers(0, 8))
def test_the_active_share_covers_full_capacity_and_with_the_standbys_the_target(at_target, headroom, standbys):
    at_full = at_target * (1 - headroom)  # the target's count always includes the full capacity's
    active = active_workers(at_target, at_full, standbys)
    assert active >= at_full
    assert active + standbys >= at_target
    assert active <= at_target
    assert active_workers(at_target, at_full, 0) == at_target


def test_without_standbys_the_count_is_the_target_utilizations():
    config = ScalingConfig(max_workers=64)
    demands = [demand(900_000, 32_000, CAPACITY, config), demand(0, 1_000, 500, config)]
    assert active_workers_needed(demands, config) == sum(d.workers for d in demands)


def test_a_standby_replaces_a_worker_of_headroom_in_the_64_partition_burst():
    # 32,000 records/s on workers of 2,431.6: 13.2 at full capacity, 14.6 at 0.9.
    config = ScalingConfig(max_workers=64)
    assert count(0, 32_000, CAPACITY, 64, config) == 15
    assert count(0, 32_000, CAPACITY, 64, replace(config, standby_workers=1)) == 14
    # A small fleet's headroom is less than a worker: the standby takes what there is of it.
    assert count(0, 3_200, CAPACITY, 64, config) == 2
    assert count(0, 3_200, CAPACITY, 64, replace(config, standby_workers=1)) == 2
    # The steady count in the scale-down window is the same count, at the latest rate.
    latest = demand(0, 32_000, CAPACITY, config, latest=3_200)
    assert active_workers_needed([latest], replace(config, standby_workers=1), at_latest=True) == pytest.approx(
        3_200 / CAPACITY)


@settings(max_examples=80, deadline=None)
@given(
    rate=st.floats(500, 50_000),
    gaps=st.lists(st.floats(15, 45), min_size=30, max_size=50),
    noise=st.lists(st.floats(0, 0.1), min_size=50, max_size=50),
    standbys=st.integers(1, 3),
)
def test_a_steady_stream_read_with_noise_never_flaps_with_standbys(rate, gaps, noise, standbys):
    """Readings within 10% of the true rate, ticks 15-45 s apart (the rate-changes module's case)."""
    config = ScalingConfig(max_workers=64, default_worker_records_per_second=1000, standby_workers=standbys)
    counts = follow(rate_ticks([(rate, gap) for gap in gaps], noise=noise), config)
    changes = [(t, 1 if n > before else -1) for (_, before), (t, n) in zip(counts, counts[1:]) if n != before]
    for (t0, d0), (t1, d1) in zip(changes, changes[1:]):
        assert not (d1 != d0 and t1 - t0 < 300), f"flap: {changes}"


def stream(time: float, offset: int, tasks: int = 64) -> LagSnapshot:
    return LagSnapshot(time, {f"0_{p}": TaskOffsets(offset, offset) for p in range(tasks)})


@pytest.mark.parametrize("standbys", [1, 2])
def test_a_rise_beyond_the_active_workers_promotes_a_standby_on_the_tick_that_sees_it(standbys):
    config = ScalingConfig(max_workers=64, default_worker_records_per_second=CAPACITY, rate_smoothing_seconds=0,
                           standby_workers=standbys)
    # 32,000 records/s on 64 partitions: 13.2 workers at full capacity, 14.6 at 0.9; 14 active workers
    # and the standbys keep it.
    tasks = stream(0, 0).tasks
    shares = assign_tasks(tasks, [f"worker-{i}" for i in range(14)])
    fleet = [Worker(worker, tasks=held, held=held) for worker, held in shares.items()]
    fleet += [Worker(f"worker-{14 + i}", state=WorkerState.STANDBY) for i in range(standbys)]
    decision = decide_tick(stream(0, 0), fleet, config)
    decision = decide_tick(stream(30, 32_000 * 30 // 64), fleet, config, decision.state)
    assert decision.recommendation.desired_workers == 14 and decision.plan.is_noop
    # The rate rises by a fifth, beyond what 14 workers process and beyond the scale-up band.
    decision = decide_tick(stream(60, (32_000 + 38_400) * 30 // 64), fleet, config, decision.state)
    added = decision.recommendation.desired_workers - 14
    assert added > 0
    standby_ids = {f"worker-{14 + i}" for i in range(standbys)}
    assert set(decision.plan.promoted) <= standby_ids and len(decision.plan.promoted) == min(standbys, added)
    cold = [launch for launch in decision.plan.launch if launch.state is WorkerState.RUNNING]
    assert len(cold) == added - len(decision.plan.promoted)
    assert len(decision.plan.standby_launches) == len(decision.plan.promoted)  # the pool is topped up


@settings(max_examples=150, deadline=None)
@given(rate=st.floats(100, 60_000), standbys=st.integers(1, 3))
def test_recommend_keeps_active_plus_standbys_at_or_above_the_target_count(rate, standbys):
    config = ScalingConfig(max_workers=64, default_worker_records_per_second=CAPACITY, rate_smoothing_seconds=0,
                           scale_up_dead_band=0)
    first, second = stream(0, 0), stream(30, round(rate * 30 / 64))
    without, _ = recommend(second, 0, config, previous_snapshot=first)
    with_standbys, _ = recommend(second, 0, replace(config, standby_workers=standbys), previous_snapshot=first)
    assert without.desired_workers - standbys <= with_standbys.desired_workers <= without.desired_workers
    assert with_standbys.required_workers == pytest.approx(without.required_workers)


@settings(max_examples=300, deadline=None)
@given(rate=st.floats(100, 150_000), standbys=st.integers(0, 3), current=st.integers(1, 64))
def test_a_count_the_scale_up_band_holds_keeps_up_at_full_capacity_standbys_or_not(rate, standbys, current):
    """The band is measured on the work at the target utilization: a held count's active workers are
    never short of the input (measured on the active count, a standby's fleet held 10% short)."""
    config = ScalingConfig(max_workers=64, default_worker_records_per_second=CAPACITY, rate_smoothing_seconds=0,
                           standby_workers=standbys)
    second = stream(30, round(rate * 30 / 64))
    recommendation, _ = recommend(second, current, config, previous_snapshot=stream(0, 0))
    if recommendation.desired_workers == current:
        assert recommendation.input_rate <= current * CAPACITY * (1 + 1e-9)
