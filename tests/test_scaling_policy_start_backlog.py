"""A start backlog: lag waits for a measured capacity before it adds workers, the input's rate does
not, and one worker that drains the backlog within the catch-up target keeps it alone."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dagster_kstreams.scaling import (LagSnapshot, ScalingConfig, StabilizationState, TaskOffsets, ThroughputSample,
                                      recommend, smoothed_rates)
from scaling_policy_inputs import configs, workers_for


# users_per_country in `make demo` (assets/__init__.py): two sub-topologies of 2 tasks each.
DEMO = ScalingConfig(min_workers=0, max_workers=4, catch_up_seconds=30, scale_down_stabilization_seconds=180,
                     default_worker_records_per_second=500, min_sample_seconds=15, warmup_batches=1)


def _demo_snapshot(time: float, end: int, committed: int) -> LagSnapshot:
    """Sub-topology 0 reads ``users`` (2 partitions); the repartition topic of sub-topology 1 is empty."""
    return LagSnapshot(time, {"0_0": TaskOffsets(end, committed), "0_1": TaskOffsets(end, committed),
                              "1_0": TaskOffsets(0, 0), "1_1": TaskOffsets(0, 0)})


def _start_backlog_counts(config, reports=()):
    """The demo's steady 200 records/s (``generate users --rate 200 --burst-every 0``) while its one
    worker starts: ticks every 12 s, nothing committed yet (session 15's run before the fix: lag
    1,221 -> 31,901 in 2.5 minutes, capacity the default 500/s, a second worker at lag 9,940 and a
    third at 31,901)."""
    counts, state, previous, current = [], StabilizationState(), None, 1
    rates, weight = {}, 0.0
    for tick in range(14):
        now = 12.0 * tick
        snap = _demo_snapshot(now, 600 + 1_200 * tick, 0)
        recommendation, state = recommend(snap, current, config, previous_snapshot=previous, state=state,
                                          throughput=[r for r in reports if r.time <= now],
                                          last_input_rates=rates, last_input_rate_weight=weight)
        if previous is not None:
            _, weight = smoothed_rates({}, {}, now - previous.time, config, weight)
        rates = {sub: demand.input_rate for sub, demand in recommendation.demands.items()}
        current = recommendation.desired_workers
        counts.append(current)
        previous = snap
    return counts, recommendation


def test_a_start_backlog_waits_for_the_first_measurement_and_one_worker_keeps_it():
    counts, last = _start_backlog_counts(DEMO)
    assert counts == [1] * 14
    assert last.total_lag == 2 * (600 + 1_200 * 13) and not last.demands["0"].lag_counted
    assert last.required_workers == pytest.approx(200 / 0.9 / 500, rel=0.02)  # the input alone
    # Without the wait, the lag at the default capacity launches a second worker, then a third.
    before, _ = _start_backlog_counts(replace(DEMO, lag_waits_for_measured_capacity=False))
    assert max(before) >= 3
    # Once the worker reports its warm batches (1,300 records/s of its time while it drains the
    # backlog, as session 15's worker did under load 33), the lag counts, and one worker drains
    # 32k records within the 30 s target: still one.
    draining = [ThroughputSample(100.0 + 5 * i, "run-0", f"0_{i % 2}", records=3_250, seconds=5, task_batch=2 + i,
                                 worker_seconds=2.5, lag_left=30_000) for i in range(8)]
    counts, last = _start_backlog_counts(DEMO, draining)
    assert counts == [1] * 14
    assert last.demands["0"].lag_counted and last.demands["0"].capacity == pytest.approx(1_300)


def test_before_a_measurement_a_burst_still_scales_up_on_its_rate():
    """10x (2,000 records/s) at the default 500/s: the input alone needs 4.4 workers (max 4)."""
    before = _demo_snapshot(0.0, 10_000, 10_000)
    after = _demo_snapshot(10.0, 20_000, 10_000)  # 1,000 records/s on each partition
    burst, _ = recommend(after, 1, DEMO, previous_snapshot=before)
    assert burst.desired_workers == 4 and not burst.demands["0"].lag_counted


def test_once_measured_a_backlog_one_worker_cannot_drain_in_time_scales_up():
    before = _demo_snapshot(0.0, 15_000, 0)
    after = _demo_snapshot(10.0, 16_000, 4_000)  # 200 records/s, 24,000 behind
    measured = {"0": 1_000.0}  # 24,000 / 30 s + 200/s = 1,000/s: exactly one worker
    held, _ = recommend(after, 1, DEMO, previous_snapshot=before, last_measured_capacities=measured)
    assert held.desired_workers == 1
    more = _demo_snapshot(10.0, 16_000, 0)  # 32,000 behind: 1,267/s, 1.27 workers
    scaled, _ = recommend(more, 1, DEMO, previous_snapshot=before, last_measured_capacities=measured)
    assert scaled.desired_workers == 2


@settings(max_examples=300, deadline=None)
@given(
    capacity=st.floats(10, 1e5),
    arrived=st.lists(st.integers(0, 10**6), min_size=1, max_size=8),
    seconds=st.floats(1, 120),
    backlog=st.floats(0, 1),
    target=st.floats(0.05, 1.0),
    catch_up=st.floats(1, 3600),
    bands=st.tuples(st.floats(0, 0.5), st.floats(0, 0.5)),
    full_capacity=st.booleans(),
)
def test_a_backlog_one_worker_at_its_measured_capacity_drains_within_the_target_never_launches_a_second(
        capacity, arrived, seconds, backlog, target, catch_up, bands, full_capacity):
    """Input ``r`` within the target utilization of one worker's measured capacity ``C`` and a lag
    ``L`` it drains within the catch-up target (``L <= catch_up x (C - r)``): one worker, with the
    default sum whenever the scale-up band is at least ``1 - target_utilization`` (0.1 and 0.9 by
    default), catching up at full capacity whatever the bands."""
    up_band = bands[0] if full_capacity else min(0.99, 1 - target + 1e-6 + bands[0])
    config = ScalingConfig(min_workers=0, max_workers=8, target_utilization=target, catch_up_seconds=catch_up,
                           scale_up_dead_band=up_band, scale_down_dead_band=bands[1],
                           catch_up_at_full_capacity=full_capacity)
    rate = sum(arrived) / seconds
    assume(rate <= target * capacity)
    lag = math.floor(backlog * catch_up * (capacity - rate))
    tasks = len(arrived)
    shares = [lag // tasks + (1 if p < lag % tasks else 0) for p in range(tasks)]
    before = LagSnapshot(0.0, {f"0_{p}": TaskOffsets(shares[p], 0) for p in range(tasks)})
    after = LagSnapshot(seconds, {f"0_{p}": TaskOffsets(shares[p] + arrived[p], arrived[p]) for p in range(tasks)})
    assume(after.total_lag == lag)
    recommendation, _ = recommend(after, 1, config, previous_snapshot=before,
                                  last_measured_capacities={"0": capacity})
    assert recommendation.desired_workers == 1


@settings(max_examples=300, deadline=None)
@given(lag_per_task=st.integers(0, 10**8), rate=st.floats(0, 1e5), current=st.integers(1, 8), config=configs())
def test_before_any_measurement_lag_never_adds_a_worker_beyond_what_the_input_needs(lag_per_task, rate, current,
                                                                                     config):
    before = LagSnapshot(0.0, {f"0_{p}": TaskOffsets(lag_per_task, 0) for p in range(8)})
    arrived = round(rate * 10 / 8)
    after = LagSnapshot(10.0, {f"0_{p}": TaskOffsets(arrived + lag_per_task, arrived) for p in range(8)})
    recommendation, _ = recommend(after, current, config, previous_snapshot=before)
    by_input = workers_for(0, arrived * 8 / 10, config.default_worker_records_per_second, 8, config)
    assert recommendation.desired_workers <= max(current, by_input, 1 if lag_per_task else 0)
