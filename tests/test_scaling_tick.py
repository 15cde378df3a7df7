"""A lag sensor's ticks end to end: burst, dip, sustained calm, a failure, and the cursor."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.scaling import (
    LagSnapshot,
    ScalingConfig,
    ScalingState,
    StabilizationState,
    TaskOffsets,
    ThroughputSample,
    Worker,
    WorkerState,
    decide_tick,
)

CONFIG = ScalingConfig(
    min_workers=1,
    max_workers=4,
    catch_up_seconds=60,
    scale_down_stabilization_seconds=120,
    default_worker_records_per_second=1000,
    # These ticks follow lag at the default capacity; waiting for a measurement has its own tests.
    lag_waits_for_measured_capacity=False,
)
TASKS = [f"{sub}_{p}" for sub in range(2) for p in range(4)]


def snapshot(time, lag_per_task, end=10**6):
    return LagSnapshot(time, {task: TaskOffsets(end, end - lag_per_task) for task in TASKS})


def apply_and_acknowledge(workers, plan):
    """The sensor applies the plan; every worker then starts a batch (retiring ones exit)."""
    by_id = {w.worker_id: w for w in workers if w.state is not WorkerState.FAILED}
    for worker_id in plan.retire:
        by_id[worker_id] = replace(by_id[worker_id], tasks=frozenset(), state=WorkerState.RETIRING)
    for change in plan.retag:
        by_id[change.worker_id] = replace(by_id[change.worker_id], tasks=change.tasks, assigned=change.assigned)
    for launch in plan.launch:
        by_id[launch.worker_id] = Worker(launch.worker_id, tasks=launch.tasks, assigned=launch.assigned)
    return [replace(w, held=w.tasks) for w in by_id.values() if w.state is WorkerState.RUNNING]


def run_ticks(lags, tick_seconds=30, cursor_round_trip=False, input_per_tick=0):
    workers, state, history = [], None, []
    for i, lag in enumerate(lags):
        if cursor_round_trip:
            state = ScalingState.from_json(state.to_json() if state else None)
        now = i * tick_seconds
        decision = decide_tick(snapshot(now, lag, end=10**6 + i * input_per_tick), workers, CONFIG, state)
        state = decision.state
        workers = apply_and_acknowledge(workers, decision.plan)
        history.append((decision.recommendation.desired_workers, decision.summary()["action"]))
    return history, workers


def test_burst_dip_and_calm():
    # 8 tasks x 7500 lag = 60k in 60 s = 1000 rec/s: one worker; x 22500 = 3 workers.
    history, workers = run_ticks([7500, 22500, 0, 22500, 0, 0, 0, 0, 0, 0])
    assert [desired for desired, _ in history] == [1, 3, 3, 3, 3, 3, 3, 1, 1, 1]
    assert history[1][1] == "scale up"
    assert history[2][1] == "hold (scale-down stabilizing)"
    # The last high recommendation (t=90) has left the 120 s window at t=210 (tick 7).
    assert history[7][1] == "scale down"
    assert [w.worker_id for w in workers] == ["worker-0"]
    assert workers[0].tasks == set(TASKS)


@pytest.mark.parametrize("input_per_tick", [0, 45_000])
def test_cursor_round_trip_changes_nothing(input_per_tick):
    lags = [7500, 22500, 0, 22500, 0, 0, 0, 0, 0, 0, 90000, 0]
    with_cursor = run_ticks(lags, cursor_round_trip=True, input_per_tick=input_per_tick)
    assert with_cursor == run_ticks(lags, input_per_tick=input_per_tick)


def test_input_rate_alone_keeps_workers_busy():
    # 45k records per task per 30 s tick = 12k rec/s in all, at 70% utilization: > 4 workers' worth.
    history, _ = run_ticks([0] * 4, input_per_tick=45_000)
    assert [desired for desired, _ in history] == [1, 4, 4, 4]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1e9), st.integers(0, 64)), max_size=5),
    st.none() | st.floats(0, 1e9),
    st.dictionaries(st.sampled_from(["0", "1", "7"]), st.floats(0.001, 1e9)),
    st.none()
    | st.builds(
        LagSnapshot,
        st.floats(0, 1e9),
        st.dictionaries(
            st.sampled_from(TASKS), st.builds(TaskOffsets, st.integers(0, 2**62), st.integers(0, 2**62))
        ),
    ),
)
def test_state_survives_the_cursor(recommendations, since, capacities, last_snapshot):
    rates = {sub: float(len(sub)) * 12.5 for sub in capacities}
    state = ScalingState(StabilizationState(tuple(recommendations), since), last_snapshot, capacities, rates, 0.75)
    assert ScalingState.from_json(state.to_json()) == state


def test_a_cursor_from_before_per_subtopology_capacities_is_read_without_its_capacity():
    # Version 1 kept one capacity for all sub-topologies: it is measured again rather than
    # applied to records of every kind.
    old = ('{"version": 1, "measured_capacity": 1234.5, "last_snapshot": {"time": 5.0, "tasks": {"0_0": [10, 4]}}, '
           '"stabilization": {"recommendations": [[5.0, 2]], "observed_since": 1.0}}')
    state = ScalingState.from_json(old)
    assert state.measured_capacities == {}
    assert state.last_snapshot == LagSnapshot(5.0, {"0_0": TaskOffsets(10, 4)})
    assert state.stabilization == StabilizationState(((5.0, 2),), 1.0)


def test_failed_worker_tasks_are_reassigned_on_the_next_tick():
    state, workers = None, []
    for i in range(3):
        decision = decide_tick(snapshot(i * 30, 22500), workers, CONFIG, state)
        state, workers = decision.state, apply_and_acknowledge(workers, decision.plan)
    assert len(workers) == 3
    lost = workers[1]
    workers = [replace(w, state=WorkerState.FAILED) if w is lost else w for w in workers]

    decision = decide_tick(snapshot(90, 22500), workers, CONFIG, state)

    (launch,) = decision.plan.launch
    assert (launch.worker_id, launch.tasks) == (lost.worker_id, lost.tasks)
    assert decision.recommendation.action == "scale up"


def test_measured_capacity_is_remembered_after_its_samples_age_out():
    config = replace(CONFIG, throughput_window_seconds=60, default_worker_records_per_second=1000)
    fast = [ThroughputSample(0, "worker-0", task, records=400_000, seconds=20) for task in ("0_0", "1_0")]  # 20k/s
    first = decide_tick(snapshot(0, 22500), [], config, None, throughput=fast)
    assert first.recommendation.demands["0"].capacity == 20_000 and first.recommendation.desired_workers == 1

    later = decide_tick(snapshot(300, 22500), [], config, first.state, throughput=fast)
    assert not later.recommendation.demands["0"].capacity_measured
    assert later.recommendation.demands["0"].capacity == 20_000
    assert later.recommendation.desired_workers == 1

    forgotten = decide_tick(snapshot(300, 22500), [], config, None, throughput=fast)
    assert forgotten.recommendation.desired_workers == 3


def test_workers_launched_for_a_burst_do_not_look_slow_while_they_start():
    # worker-0 is warm at 1000 rec/s. A burst brings worker-1 and worker-2; the first run of each
    # of their tasks took a minute (JVM and SparkSession start, state restore) for few records.
    # Counting those would put the capacity at ~400 rec/s and ask for the maximum at once.
    config = replace(CONFIG, throughput_window_seconds=600, min_sample_seconds=10)
    warm = [ThroughputSample(t, "run-0", "0_0", records=20_000, seconds=20, task_batch=5) for t in (100, 130)]
    cold = [ThroughputSample(160, f"run-{w}", task, records=2_000, seconds=60, task_batch=1)
            for w in (1, 2) for task in ("0_1", "0_2")]
    lag_per_task = 15_000  # 120k in total: 2000 rec/s over the 60 s catch-up time, two workers
    with_cold = decide_tick(snapshot(200, lag_per_task), [], config, None, throughput=warm + cold)
    assert with_cold.recommendation.demands["0"].capacity == 1000.0
    assert with_cold.recommendation.desired_workers == 2
    counted = decide_tick(snapshot(200, lag_per_task), [], replace(config, warmup_batches=0), None,
                          throughput=warm + cold)
    assert counted.recommendation.desired_workers == 4  # what the cold batches would have done


def test_malformed_cursor_is_reported():
    assert ScalingState.from_json(None) == ScalingState()
    assert ScalingState.from_json("") == ScalingState()
    for bad in ("{", '{"version": 99}', '{"version": 1}', "[]"):
        with pytest.raises(ValueError):
            ScalingState.from_json(bad)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 200_000), min_size=1, max_size=15))
def test_fleet_matches_the_decision_and_stays_within_bounds(lags):
    history, workers = run_ticks(lags)
    for desired, _ in history:
        assert 1 <= desired <= min(CONFIG.max_workers, len(TASKS))
    # Every worker has acknowledged its tags by now; the last decision's count is what runs.
    assert len(workers) == history[-1][0]


@settings(max_examples=100, deadline=None)
@given(st.integers(20_000, 200_000), st.integers(0, 7_000), st.integers(2, 20))
def test_alternating_lag_never_retires_a_worker(high_lag, low_lag, ticks):
    # Highs two ticks (60 s) apart, inside the 120 s window: no plan may retire anyone.
    workers, state = [], None
    for i in range(ticks):
        lag = high_lag if i % 2 == 0 else low_lag
        decision = decide_tick(snapshot(i * 30, lag), workers, CONFIG, state)
        assert decision.plan.retire == ()
        state, workers = decision.state, apply_and_acknowledge(workers, decision.plan)


# -- the input rate the sensor reads -------------------------------------------------------------
ONE_SUB = ["0_0", "0_1"]


def _rates_read(ticks, end_offset_at, config=CONFIG):
    """The averaged input rate of sub-topology 0 the policy reads on each tick (the first reads none)."""
    state, read = None, []
    for now in ticks:
        tasks = {task: TaskOffsets(end_offset_at(now) // 2, end_offset_at(now) // 2) for task in ONE_SUB}
        decision = decide_tick(LagSnapshot(now, tasks), [], config, state)
        state = ScalingState.from_json(decision.state.to_json())  # as the sensor's cursor carries it
        read.append(decision.recommendation.demands["0"].input_rate)
    return read


tick_gaps = st.lists(st.floats(1.0, 30.0), min_size=3, max_size=40)


@settings(max_examples=60, deadline=None)
@given(gaps=tick_gaps, rate=st.integers(10, 5000))
def test_a_steady_stream_reads_its_rate_on_every_tick_whatever_the_tick_times(gaps, rate):
    ticks = [sum(gaps[:i]) for i in range(len(gaps) + 1)]
    read = _rates_read(ticks, lambda t: 2 * round(rate * t / 2))
    for value in read[1:]:
        assert abs(value - rate) <= 0.02 * rate + 2 / min(gaps)  # only the rounding of offsets to records


@settings(max_examples=60, deadline=None)
@given(gaps=st.lists(st.floats(3.0, 8.0), min_size=12, max_size=40), phase=st.floats(0, 1))
def test_a_producer_that_sends_once_a_second_reads_within_ten_percent_after_a_few_ticks(gaps, phase):
    """200 records/s, sent as one batch of 200 every second (end offsets move in steps), sensor
    ticks 3-8 s apart at irregular times: every tick after the first few reads 200/s +- 10%."""
    ticks = [phase + sum(gaps[:i]) for i in range(len(gaps) + 1)]
    read = _rates_read(ticks, lambda t: 200 * int(t + 1))
    for value in read[4:]:
        assert 180 <= value <= 220, read


def test_a_rate_that_doubles_is_followed_within_a_minute():
    ticks = [5.0 * i for i in range(40)]
    read = _rates_read(ticks, lambda t: 100 * t if t <= 50 else 5000 + 200 * (t - 50))
    assert abs(read[10] - 100) < 1  # t = 50: still the old rate
    assert abs(read[10 + 12] - 200) < 0.1 * 200  # a minute later: the new one


def test_without_averaging_each_tick_reads_the_rate_since_the_last():
    config = ScalingConfig(**{**CONFIG.__dict__, "rate_smoothing_seconds": 0})
    read = _rates_read([0.0, 5.0, 10.0], lambda t: 200 * int(t + 1) if t < 6 else 200 * int(t + 1) + 500, config)
    assert read[1:] == [200.0, 300.0]
