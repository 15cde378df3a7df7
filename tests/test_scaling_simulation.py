"""The scaling simulation's model keeps its guarantees (``bench/scaling_model.py``), and the rules it
compares compute what their formulas say. Nothing here asks which rule wins."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.scaling_metrics import (Decision, changes_of_need, decisions, decisions_per_change, decisions_per_phase,
                                   end_lag_growth, flaps, overshoot)
from bench.scaling_model import ModelInvariantError, ModelParameters, ScalingModel, water_fill
from bench.scaling_rules import FlinkStyleRule, KedaRule, busy_time_capacity, keda_replicas
from bench.scaling_workloads import RULES, WORKLOADS, scaling_settings, simulate
from dagster_kstreams.scaling import (LagSnapshot, ReconciliationPlan, ScalingConfig, TaskOffsets, ThroughputSample,
                                      WorkerRetag, WorkerState)

PARAMS = ModelParameters()


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1e6), st.lists(st.floats(0, 1e6), max_size=20))
def test_water_fill_shares_the_budget_without_exceeding_any_backlog(budget, lags):
    taken = water_fill(budget, lags)
    assert all(0 <= t <= lag + 1e-6 for t, lag in zip(taken, lags))
    assert sum(taken) <= budget * (1 + 1e-9) + 1e-6
    # Whatever is left over, every task got its whole backlog.
    if sum(taken) < budget * (1 - 1e-9) - 1e-6:
        assert all(math.isclose(t, lag, rel_tol=1e-9, abs_tol=1e-6) for t, lag in zip(taken, lags))


class _Checks:
    """Per step: conservation, one worker per task, no work before a worker is ready."""

    def __init__(self, rate, backlog: float = 0.0):
        self.rate = rate
        self.expected_produced = backlog
        self.steps = 0

    def __call__(self, model: ScalingModel) -> None:
        step_start = model.now - model.params.step_seconds
        self.expected_produced += self.rate(step_start) * model.params.step_seconds
        assert math.isclose(sum(model.produced[task] for task in model.sources), self.expected_produced, rel_tol=1e-9)
        snapshot = model.snapshot()
        for task in model.tasks:
            lag = model.produced[task] - model.processed[task]
            assert -1e-6 <= lag
            assert math.isclose(model.processed[task] + lag, model.produced[task])
            offsets = snapshot.tasks[task]
            assert offsets.committed_offset + offsets.lag == offsets.end_offset
        runs = {run.run_id: run for run in model.runs}
        assert len(set(model.processing)) == len(model.processing)  # a dict: one run per task
        for task, run_id in model.processing.items():
            run = runs[run_id]
            assert run.ready_at <= step_start, f"{run_id} processed {task} before it was ready"
            assert run.warmup_left == 0 and run.start_left[task] <= 0
            assert task in run.tags
        self.steps += 1


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("workload", ["burst", "failure", "pipeline"])
def test_simulation_keeps_the_models_guarantees(workload, rule):
    config = ScalingConfig(max_workers=8)
    base = 50.0 * 16
    checks = _Checks(lambda t: base * WORKLOADS[workload].rate_factor(t), base * WORKLOADS[workload].backlog_seconds)
    summary, trace = simulate(WORKLOADS[workload], 16, rule, config, on_step=checks)
    assert checks.steps == len(trace.times) == int(WORKLOADS[workload].duration)
    assert summary.peak_lag >= 0 and summary.worker_seconds > 0
    assert max(trace.active) <= 8 + 1  # a retiring worker can outlive its successor's launch by a step


def test_reports_account_for_every_record_processed():
    model = ScalingModel(4, lambda t: 4000.0, PARAMS)
    model.launch("worker-0", ["0_0", "0_1"], warm=True)
    model.launch("worker-1", ["0_2", "0_3"])  # cold: ready after 6.1 s, then its session's warm-up
    for _ in range(60):
        model.step()
    for task in model.tasks:
        reported = sum(s.records for s in model.samples if s.task_id == task)
        run = next(r for r in model.runs if task in r.held)
        assert reported <= model.processed[task] < reported + run.since_report[task][0] + 1
    first = [s for s in model.samples if s.worker_id.startswith("worker-1")]
    assert min(s.time for s in first) > PARAMS.cold_ready_seconds + PARAMS.session_warmup_seconds
    assert {s.task_batch for s in first if s.time == min(x.time for x in first)} == {1}


def test_a_pipelines_downstream_gets_what_its_upstream_processed_and_the_reports_say_so():
    model = ScalingModel(4, lambda t: 400.0, PARAMS, selectivity=2.0, backlog=40_000.0)
    model.launch("worker-0", model.tasks, warm=True)
    assert model.upstreams == {"1": ("0",)} and model.work_rate(0.0) == 1200.0
    for _ in range(30):
        model.step()
    upstream = sum(model.processed[task] for task in model.sources)
    assert math.isclose(sum(model.produced[task] for task in model.downstream), 2.0 * upstream)
    assert all(s.records_out == {"1": 2 * s.records} for s in model.samples if s.task_id.startswith("0_"))
    assert all(s.records_out is None for s in model.samples if s.task_id.startswith("1_"))
    assert ScalingModel(4, lambda t: 400.0, PARAMS).upstreams == {}


def test_a_plan_granting_a_busy_task_to_a_second_worker_is_caught():
    model = ScalingModel(2, lambda t: 100.0, PARAMS)
    model.launch("worker-0", ["0_0", "0_1"], warm=True)
    model.launch("worker-1", [], warm=True)
    model.step()
    bad = ReconciliationPlan(desired_workers=2, target={}, launch=(), handovers=(), unassigned=frozenset(),
                             retire=(), retag=(WorkerRetag("worker-1", frozenset({"0_1"}), frozenset({"0_1"}),
                                                           frozenset()),))
    model.apply(bad)
    with pytest.raises(ModelInvariantError, match="0_1 processed by worker-0#0 and worker-1#1"):
        model.step()


def test_a_dead_worker_looks_alive_until_the_heartbeat_timeout():
    model = ScalingModel(2, lambda t: 100.0, PARAMS)
    model.launch("worker-0", ["0_0", "0_1"], warm=True)
    model.step()
    model.kill("worker-0")
    for _ in range(int(PARAMS.heartbeat_timeout_seconds)):
        model.step()
        assert model.processing == {}
    (seen,) = model.sensor_view()
    assert seen.state is WorkerState.RUNNING and seen.held == {"0_0", "0_1"}
    model.step()
    (seen,) = model.sensor_view()
    assert seen.state is WorkerState.FAILED and seen.held == frozenset()


def test_keda_replicas_follow_its_formula():
    assert keda_replicas(0, 1000, partitions=64, max_replicas=64) == 1
    assert keda_replicas(1, 1000, partitions=64, max_replicas=64) == 1
    assert keda_replicas(1001, 1000, partitions=64, max_replicas=64) == 2
    assert keda_replicas(10_000, 1000, partitions=64, max_replicas=64) == 10
    assert keda_replicas(10**9, 1000, partitions=64, max_replicas=100) == 64
    assert keda_replicas(10**9, 1000, partitions=256, max_replicas=64) == 64


def _snapshot(time: float, lag: int, partitions: int = 64) -> LagSnapshot:
    per_task = lag // partitions
    return LagSnapshot(time, {f"0_{p}": TaskOffsets(per_task + (lag % partitions if p == 0 else 0), 0)
                              for p in range(partitions)})


def test_keda_goes_up_at_once_and_down_only_to_the_highest_of_its_window():
    rule = KedaRule(lag_threshold=1000, max_workers=64, initial_workers=2)
    assert rule.desired(_snapshot(30, 10_000), current=2) == 10
    assert rule.desired(_snapshot(60, 3_000), current=10) == 10
    assert rule.desired(_snapshot(329, 0), current=10) == 10
    assert rule.desired(_snapshot(335, 0), current=10) == 3  # 10 at t=30 left the 300 s window
    assert rule.desired(_snapshot(400, 0), current=3) == 1


def test_flink_style_holds_within_its_utilization_boundary_and_after_a_change():
    config = ScalingConfig(max_workers=64, catch_up_seconds=300, target_utilization=0.7,
                           default_worker_records_per_second=1000)
    rule = FlinkStyleRule(config, stabilization_seconds=300)
    rule.end_offsets = [(0.0, 0)]
    # 5,000/s arriving, no lag: 10 workers would run at 0.5 (within 0.4-1.0): held.
    assert rule.desired(LagSnapshot(10, {"0_0": TaskOffsets(50_000, 50_000)}), 10, []) == 10
    # 9,000/s on 5 workers: 1.8 utilization: up to ceil(9000 / 700) = 13.
    rule = FlinkStyleRule(config)
    rule.end_offsets = [(0.0, 0)]
    snapshot = LagSnapshot(10, {f"0_{p}": TaskOffsets(90_000 // 16, 90_000 // 16) for p in range(16)})
    assert rule.desired(snapshot, 5, []) == 13
    assert rule.desired(LagSnapshot(20, snapshot.tasks), 13, []) == 13  # stabilizing: no decision


def test_busy_time_capacity_counts_warm_reports_whether_behind_or_not():
    config = ScalingConfig()
    samples = [ThroughputSample(100, "w#0", "0_0", 1000, 5, task_batch=1, worker_seconds=2.0, lag_left=0),
               ThroughputSample(105, "w#0", "0_0", 2000, 5, task_batch=2, worker_seconds=1.0, lag_left=0)]
    assert busy_time_capacity(samples, 110, config) == 2000.0


def test_decisions_flaps_and_phases_follow_their_definitions():
    ticks = [(30, 2), (60, 5), (90, 5), (120, 4), (150, 6), (900, 3)]
    found = decisions(ticks, initial=2)
    assert found == [Decision(60, 2, 5), Decision(120, 5, 4), Decision(150, 4, 6), Decision(900, 6, 3)]
    assert flaps(found, window=300) == 2  # up->down at 120, down->up at 150; 900 is past the window
    assert decisions_per_phase(found, events=[0, 600], end=1000) == [3, 1]
    assert overshoot(peak_active=12, peak_rate=7000, capacity=1000, target_utilization=0.7) == 2


def test_a_warm_worker_processes_its_tasks_from_the_first_step_and_a_cold_one_after_its_start():
    model = ScalingModel(2, lambda t: 1000.0, PARAMS)
    model.launch("worker-0", ["0_0"], warm=True)
    model.launch("worker-1", ["0_1"])
    model.step()
    assert model.processing == {"0_0": "worker-0#0"}
    ready = PARAMS.cold_ready_seconds + PARAMS.session_warmup_seconds + PARAMS.task_start_seconds
    while model.now < ready:
        model.step()
        assert "0_1" not in model.processing
    model.step()
    assert model.processing == {"0_0": "worker-0#0", "0_1": "worker-1#1"}


def test_changes_of_need_count_a_phases_event_and_each_step_inside_it():
    times = [float(t) for t in range(1, 11)]
    # A step at the event (t=3) is the event itself; 5 and 8 are steps inside the second phase.
    needs = [2, 2, 9, 9, 10, 10, 10, 11, 11, 11]
    assert changes_of_need(times, needs, events=[0.0, 3.0], end=11.0) == [1, 3]
    assert decisions_per_change([2, 3], [1, 3]) == 2.0
    assert decisions_per_change([3, 1], [1, 3]) == 3.0


def test_lag_growth_at_the_end_is_over_the_last_300_seconds():
    times = [float(t) for t in range(1, 1001)]
    assert end_lag_growth(times, [0.0] * 700 + [3.0 * i for i in range(300)]) == pytest.approx(897 / 300)
    assert end_lag_growth(times, [5_000.0 - t for t in times]) == pytest.approx(-1.0)
    assert end_lag_growth([], []) == 0.0


def test_settings_are_parsed_as_their_defaults_type_and_nonsense_is_one_line():
    assert scaling_settings(["whole_task_workers=false", "max_workers=12", "target_utilization=0.8"]) == {
        "whole_task_workers": False, "max_workers": 12, "target_utilization": 0.8}
    for wrong in (["no_such=1"], ["max_workers=many"], ["whole_task_workers=maybe"], ["max_workers"]):
        with pytest.raises(SystemExit, match="--set"):
            scaling_settings(wrong)
