"""Applications of several sub-topologies: each is sized by its own capacity (measured, remembered
or the default), and their shares are summed into whole workers."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.scaling import (LagSnapshot, ScalingConfig, SubtopologyDemand, TaskOffsets, ThroughputSample,
                                      measured_capacities, recommend, subtopology_demands)
from scaling_policy_inputs import capacities, configs, workers_for


def offsets(lags_by_task: dict[str, int], end: int = 10**6) -> LagSnapshot:
    return LagSnapshot(100.0, {task: TaskOffsets(end, end - lag) for task, lag in lags_by_task.items()})


def test_each_subtopology_is_sized_by_its_own_capacity():
    # Word count: sub-topology 0 splits lines (slow per record), 1 counts the words (fast per
    # record, ~9.5 per line). Adding their lags as records would mix lines and words.
    config = ScalingConfig(max_workers=8, catch_up_seconds=10, min_sample_seconds=5)
    snapshot = offsets({**{f"0_{p}": 1_000 for p in range(4)}, **{f"1_{p}": 9_500 for p in range(4)}})
    samples = [ThroughputSample(90, "run-a", "0_0", records=4_000, seconds=10),    # 400 lines/s
               ThroughputSample(90, "run-a", "1_0", records=80_000, seconds=10)]   # 8000 words/s
    recommendation, _ = recommend(snapshot, 1, config, throughput=samples)

    lines, words = recommendation.demands["0"], recommendation.demands["1"]
    assert (lines.lag, lines.capacity, lines.capacity_measured) == (4_000, 400.0, True)
    assert (words.lag, words.capacity) == (38_000, 8_000.0)
    assert lines.workers == pytest.approx(1.0) and words.workers == pytest.approx(0.475)
    assert recommendation.required_workers == pytest.approx(1.475)
    assert recommendation.unstabilized_workers == 2
    # One capacity over all records (84k in 20 s = 4200/s) for all lag (42k in 10 s) says 1.
    assert workers_for(42_000, 0.0, 84_000 / 20, 8, config) == 1


def test_an_unmeasured_subtopology_uses_its_remembered_capacity_then_the_default():
    config = ScalingConfig(default_worker_records_per_second=100.0, catch_up_seconds=10,
                           lag_waits_for_measured_capacity=False)
    snapshot = offsets({"0_0": 1_000, "1_0": 1_000, "2_0": 1_000})
    demands = subtopology_demands(snapshot, config, measured={"0": 1_000.0}, remembered={"0": 5.0, "1": 500.0})
    assert {sub: (d.capacity, d.capacity_measured) for sub, d in demands.items()} == {
        "0": (1_000.0, True), "1": (500.0, False), "2": (100.0, False)}
    assert [demands[sub].workers for sub in "012"] == [0.1, 0.2, 1.0]


def test_capacity_is_measured_per_subtopology():
    config = ScalingConfig(min_sample_seconds=0)
    samples = [ThroughputSample(10, "run", "0_0", 1_000, 10), ThroughputSample(10, "run", "0_1", 3_000, 10),
               ThroughputSample(10, "run", "1_0", 50_000, 10)]
    assert measured_capacities(samples, 20, config) == {"0": 200.0, "1": 5_000.0}
    assert measured_capacities([], 20, config) == {}


def test_sums_of_shares_that_make_whole_workers_are_not_rounded_up():
    config = ScalingConfig(max_workers=8, catch_up_seconds=3, lag_waits_for_measured_capacity=False)
    # Shares 0.1 + 0.2 + ... as floats sum to a hair over the whole number.
    snapshot = offsets({f"{sub}_0": lag for sub, lag in enumerate([30, 60, 90, 120, 300, 300, 300])})
    recommendation, _ = recommend(snapshot, 1, replace(config, default_worker_records_per_second=100.0))
    assert recommendation.required_workers == pytest.approx(4.0)
    assert recommendation.unstabilized_workers == 4


task_lags = st.dictionaries(st.sampled_from([f"{s}_{p}" for s in range(3) for p in range(4)]),
                            st.integers(0, 10**7), min_size=1)


@settings(max_examples=200, deadline=None)
@given(task_lags, st.dictionaries(st.sampled_from(["0", "1", "2"]), capacities), configs())
def test_a_subtopology_added_to_an_application_never_lowers_its_count(lags_by_task, measured, config):
    everything = subtopology_demands(offsets(lags_by_task), config, remembered=measured)
    for sub in everything:
        alone = {task: lag for task, lag in lags_by_task.items() if task.startswith(f"{sub}_")}
        part, _ = recommend(offsets(alone), 0, config, throughput=(),
                            last_measured_capacities=measured)
        whole, _ = recommend(offsets(lags_by_task), 0, config, throughput=(),
                             last_measured_capacities=measured)
        assert part.unstabilized_workers <= whole.unstabilized_workers
        assert part.demands[sub] == whole.demands[sub] == everything[sub]
    idle = {**lags_by_task, "9_0": 0}
    with_idle, _ = recommend(offsets(idle), 0, config, last_measured_capacities=measured)
    without, _ = recommend(offsets(lags_by_task), 0, config, last_measured_capacities=measured)
    assert with_idle.required_workers == without.required_workers
    assert isinstance(with_idle.demands["9"], SubtopologyDemand) and with_idle.demands["9"].workers == 0
