"""Whole tasks (whole_task_workers, scaling/granularity.py): a worker runs whole tasks, so a count
that leaves its busiest worker surely behind is raised to the fewest that does not."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.scaling import LagSnapshot, ScalingConfig, TaskOffsets, recommend
from dagster_kstreams.scaling.granularity import (busiest_worker_tasks, is_short_of_whole_tasks, lightest_load,
                                                  workers_for_whole_tasks)
from scaling_policy_inputs import follow, rate_ticks


task_load_lists = st.lists(st.floats(0, 2, allow_nan=False), min_size=1, max_size=80)


def _busiest_load_bound(loads, workers):
    """What the busiest worker surely carries: its ceil(T / w) tasks' lightest load."""
    return lightest_load(loads, busiest_worker_tasks(len(loads), workers))


@settings(max_examples=300, deadline=None)
@given(loads=task_load_lists, workers=st.integers(1, 80), upper=st.integers(1, 80))
def test_whole_task_workers_adds_only_workers_the_loads_prove_necessary(loads, workers, upper):
    chosen = workers_for_whole_tasks(loads, workers, upper)
    assert chosen >= workers and (chosen == workers or chosen <= upper)
    if chosen > workers:
        # Every count below it (from the one asked) leaves a busiest worker that surely falls behind...
        assert all(_busiest_load_bound(loads, w) > 1 for w in range(workers, chosen))
        # ... and it is the fewest that does not (or the most allowed, or a task a worker each).
        assert _busiest_load_bound(loads, chosen) <= 1 + 1e-9 or chosen == min(upper, len(loads))


@settings(max_examples=300, deadline=None)
@given(load=st.floats(0.001, 1.5), tasks=st.integers(1, 300), workers=st.integers(1, 300))
def test_with_even_loads_the_busiest_worker_keeps_up(load, tasks, workers):
    """Even loads (the simulation's partitions): the count's busiest worker holds no more than one
    worker's input, whenever some count up to the task count allows it."""
    chosen = workers_for_whole_tasks([load] * tasks, workers, tasks)
    if load <= 1:
        assert busiest_worker_tasks(tasks, chosen) * load <= 1 + 1e-9
        # and no fewer workers would do, unless the count asked for was already more
        assert chosen == workers or busiest_worker_tasks(tasks, chosen - 1) * load > 1


def test_sixty_three_workers_for_256_tasks_become_64():
    """bench/README.md's ramp: 256 tasks of 500 records/s on workers of 2,431.6: 5 tasks are 2,500."""
    loads = [500 / 2431.6] * 256
    assert is_short_of_whole_tasks(loads, 63) and not is_short_of_whole_tasks(loads, 64)
    assert workers_for_whole_tasks(loads, 56, 64) == 64
    assert workers_for_whole_tasks(loads, 56, 60) == 60  # never beyond the upper bound
    # One heavy task among light ones: the lightest five fit a worker, so nothing is proven.
    assert workers_for_whole_tasks([5.0] + [0.1] * 255, 56, 64) == 56


def test_a_whole_task_count_passes_the_scale_up_dead_band_like_any_other():
    """256 tasks at 500/s (capacity 2,431.6): the total asks for 58.5 workers, but any count from 52 to
    63 leaves workers with 5 tasks, beyond one worker: 64, when that clears the band."""
    config = ScalingConfig(max_workers=64, default_worker_records_per_second=2431.6, whole_task_workers=True)
    before = LagSnapshot(0.0, {f"0_{p}": TaskOffsets(0, 0) for p in range(256)})
    after = LagSnapshot(30.0, {f"0_{p}": TaskOffsets(15_000, 15_000) for p in range(256)})
    decided, _ = recommend(after, 56, config, previous_snapshot=before)
    assert decided.required_workers == pytest.approx(128_000 / 0.9 / 2431.6)
    assert decided.desired_workers == 64  # beyond 56 x 1.1
    total_only, _ = recommend(after, 56, replace(config, whole_task_workers=False), previous_snapshot=before)
    assert total_only.desired_workers == 56  # 58.5 is within the band of 56
    # From 60, 64 is within the band (a reading a few percent high would ask as much): held.
    held, _ = recommend(after, 60, config, previous_snapshot=before)
    assert held.desired_workers == 60
    # A skewed stream with the same total (half the partitions idle) proves nothing.
    skewed = LagSnapshot(30.0, {f"0_{p}": TaskOffsets(30_000 if p % 2 else 0, 30_000 if p % 2 else 0)
                                for p in range(256)})
    unproven, _ = recommend(skewed, 56, config, previous_snapshot=before)
    assert unproven.desired_workers == 56


def test_one_high_reading_that_proves_a_whole_task_shortfall_is_not_undone_by_the_next():
    """64 tasks at 21,020/s, capacity 1,000: 24 workers hold 3 tasks at most, 98.5% of a worker. One
    reading 7.5% high proves them short (32 workers); the count stays, as the busiest stays within the
    band of falling behind (the noise test's flap: 24, 32, 24, 32 before this hysteresis)."""
    config = ScalingConfig(max_workers=64, default_worker_records_per_second=1000, whole_task_workers=True)
    noise = [0.0] * 8 + [0.1] + [0.0] * 40
    counts = [n for _, n in follow(rate_ticks([(21_020, 20)] * 40, noise=noise), config)]
    assert counts[:9] == [24] * 9 and counts[9:] == [32] * 31
