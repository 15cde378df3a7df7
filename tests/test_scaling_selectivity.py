"""A downstream sub-topology's input rate bounded by its upstream's (DS2's selectivity): the
measurement from the workers' reports, the bound, and the count it gives while an upstream drains
a backlog."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.scaling import (
    LagSnapshot,
    ScalingConfig,
    ScalingState,
    TaskOffsets,
    ThroughputSample,
    bounded_rates,
    decide_tick,
    measured_selectivities,
    offset_selectivities,
    rate_bounds,
    required_rate,
)
from dagster_kstreams.scaling.plan import Worker, WorkerState
from dagster_kstreams.scaling.selectivity import SELECTIVITY_MIN_RECORDS

PIPELINE = {"1": ("0",)}  # sub-topology 1 reads only what sub-topology 0 writes


def report(task: str, records: int, out: dict[str, int] | None, time: float = 100.0, **extra) -> ThroughputSample:
    return ThroughputSample(time=time, worker_id="w", task_id=task, records=records, seconds=5.0,
                            records_out=out, **extra)


def test_selectivity_is_records_out_for_the_reader_per_record_in():
    samples = [report("0_0", 600, {"1": 1800}), report("0_1", 400, {"1": 1200}), report("1_0", 10_000, {})]
    assert measured_selectivities(samples, PIPELINE, 100.0, ScalingConfig()) == {("0", "1"): 3.0}


def test_a_report_that_wrote_nothing_for_the_reader_counts_as_none_written():
    samples = [report("0_0", 500, {"1": 500}), report("0_1", 500, {})]  # a filter that dropped a partition's
    assert measured_selectivities(samples, PIPELINE, 100.0, ScalingConfig()) == {("0", "1"): 0.5}


def test_no_selectivity_from_too_few_records_old_reports_or_reports_that_do_not_say():
    config = ScalingConfig(throughput_window_seconds=60)
    few = [report("0_0", SELECTIVITY_MIN_RECORDS - 1, {"1": 10})]
    old = [report("0_0", 10_000, {"1": 10_000}, time=10.0)]
    silent = [report("0_0", 10_000, None)]
    for samples in (few, old, silent, []):
        assert measured_selectivities(samples, PIPELINE, 100.0, config) == {}


def test_cold_reports_measure_selectivity_too():
    samples = [report("0_0", 1000, {"1": 2000}, task_batch=1)]
    assert measured_selectivities(samples, PIPELINE, 100.0, ScalingConfig(warmup_batches=1)) == {("0", "1"): 2.0}


def test_bound_is_the_upstream_rate_times_its_selectivity_summed_over_upstreams():
    rates = {"0": 100.0, "1": 50.0, "2": 9_000.0}
    bounds = rate_bounds(rates, {"2": ("0", "1")}, {("0", "2"): 2.0, ("1", "2"): 1.0})
    assert bounds == {"2": 250.0}
    assert bounded_rates(rates, bounds) == {"0": 100.0, "1": 50.0, "2": 250.0}


def test_bound_only_caps_a_lower_measured_rate_stands():
    rates = {"0": 100.0, "1": 30.0}
    assert bounded_rates(rates, rate_bounds(rates, PIPELINE, {("0", "1"): 1.0}))["1"] == 30.0


def test_a_chain_is_bounded_by_the_first_upstreams_rate():
    rates = {"0": 100.0, "1": 5_000.0, "2": 5_000.0}
    bounds = rate_bounds(rates, {"1": ("0",), "2": ("1",)}, {("0", "1"): 2.0, ("1", "2"): 0.5})
    assert bounds == {"1": 200.0, "2": 100.0}


def test_no_bound_without_every_upstreams_selectivity_or_on_a_cycle():
    rates = {"0": 100.0, "1": 5_000.0, "2": 7.0}
    assert rate_bounds(rates, {"1": ("0", "2")}, {("0", "1"): 1.0}) == {}
    assert rate_bounds(rates, {"1": ("1",)}, {("1", "1"): 1.0}) == {}
    assert rate_bounds(rates, {"1": ("2",), "2": ("1",)}, {("2", "1"): 1.0, ("1", "2"): 1.0}) == {}
    assert rate_bounds({"1": 5.0}, PIPELINE, {("0", "1"): 1.0}) == {}  # the upstream's rate is unknown


def catch_up_ticks(source_rate: float, pace: float, selectivity: float, ticks: int, config: ScalingConfig,
                   *, tasks: int = 4, interval: float = 30.0, capacity: float = 2_000.0, down_lag: int = 0,
                   upstreams=PIPELINE, reports_say: bool = True, reported: float | None = None):
    """Ticks of an application whose sub-topology 0 gets ``source_rate`` records/s and drains a
    backlog at ``pace`` times it, writing ``selectivity`` records per record for sub-topology 1
    (which keeps up, ``down_lag`` behind); both reported at ``capacity`` records/s of worker time,
    the upstream's reports with what they wrote (``reported`` records per record, if given) unless not
    ``reports_say``."""
    state, decisions = ScalingState(), []
    workers = [Worker("worker-0", tasks=frozenset(f"{sub}_{p}" for sub in "01" for p in range(tasks)),
                      state=WorkerState.RUNNING, started=True, ready=True)]
    backlog = 10**9
    for tick in range(ticks + 1):
        now = 1_000.0 + tick * interval
        end0 = int(backlog + source_rate * interval * tick / tasks)
        committed0 = int(pace * source_rate * interval * tick / tasks)
        end1 = int(pace * source_rate * selectivity * interval * tick / tasks) + down_lag // tasks
        snapshot = LagSnapshot(now, {**{f"0_{p}": TaskOffsets(end0, committed0) for p in range(tasks)},
                                     **{f"1_{p}": TaskOffsets(end1, end1 - down_lag // tasks) for p in range(tasks)}})
        read = int(pace * source_rate * interval / tasks)
        samples = [ThroughputSample(now - 1, "run", f"0_{p}", read, interval, task_batch=5,
                                    worker_seconds=read / capacity, lag_left=backlog,
                                    records_out={"1": int(read * (reported or selectivity))} if reports_say else None)
                   for p in range(tasks)]
        samples += [ThroughputSample(now - 1, "run", f"1_{p}", int(read * selectivity), interval, task_batch=5,
                                     worker_seconds=read * selectivity / capacity, lag_left=0) for p in range(tasks)]
        decision = decide_tick(snapshot, workers, config, state, samples, upstreams=upstreams)
        state = decision.state
        if tick:
            decisions.append(decision)
    return decisions


def test_an_upstreams_catch_up_is_backlog_downstream_not_a_rate_to_provision_for():
    """The demo's case: a steady 200 records/s, its start backlog drained at 5x; one record out
    per record in. Without the bound sub-topology 1 reads 1,000 records/s; with it, 200."""
    config = ScalingConfig(max_workers=16, catch_up_seconds=30, target_utilization=0.9)
    unbounded = catch_up_ticks(200, 5, 1.0, 4, ScalingConfig(**{**config.__dict__, "bound_downstream_rates": False}),
                               capacity=300)
    bounded = catch_up_ticks(200, 5, 1.0, 4, config, capacity=300)
    assert unbounded[-1].recommendation.demands["1"].input_rate == pytest.approx(1000, rel=0.01)
    assert unbounded[-1].recommendation.demands["1"].rate_bound is None
    demand = bounded[-1].recommendation.demands["1"]
    assert demand.input_rate == pytest.approx(200, rel=0.01)
    assert demand.rate_bound == pytest.approx(200, rel=0.01)
    assert demand.workers < unbounded[-1].recommendation.demands["1"].workers / 4
    assert demand.workers == pytest.approx(200 / 0.9 / demand.capacity, rel=0.01)


def test_without_an_upstream_the_measured_rate_stands():
    decisions = catch_up_ticks(200, 5, 1.0, 3, ScalingConfig(max_workers=16), upstreams={})
    assert decisions[-1].recommendation.demands["1"].input_rate == pytest.approx(1000, rel=0.01)


def test_before_the_upstreams_reports_say_the_offsets_give_the_selectivity():
    """The ticks between an upstream's first batch and its first report: what the downstream's topics
    grew by per record the upstream committed."""
    decisions = catch_up_ticks(200, 5, 2.0, 3, ScalingConfig(max_workers=16), reports_say=False)
    demand = decisions[-1].recommendation.demands["1"]
    assert demand.rate_bound == pytest.approx(400, rel=0.01)
    assert demand.input_rate == pytest.approx(400, rel=0.01)


def test_offsets_give_a_selectivity_for_one_upstream_that_committed_enough():
    before = LagSnapshot(0.0, {"0_0": TaskOffsets(1000, 0), "0_1": TaskOffsets(1000, 0), "1_0": TaskOffsets(0, 0)})
    after = LagSnapshot(30.0, {"0_0": TaskOffsets(1100, 300), "0_1": TaskOffsets(1100, 300),
                               "1_0": TaskOffsets(1800, 0)})
    assert offset_selectivities(before, after, PIPELINE) == {("0", "1"): 3.0}
    assert offset_selectivities(None, after, PIPELINE) == {}
    assert offset_selectivities(before, after, {"1": ("0", "2")}) == {}  # which upstream wrote what: unknown
    assert offset_selectivities(before, after, {"1": ("1",)}) == {}
    little = LagSnapshot(30.0, {**after.tasks, "0_0": TaskOffsets(1100, 10), "0_1": TaskOffsets(1100, 10)})
    assert offset_selectivities(before, little, PIPELINE) == {}  # 20 records committed: too few


def test_the_reports_selectivity_wins_over_the_offsets():
    decisions = catch_up_ticks(200, 5, 2.0, 3, ScalingConfig(max_workers=16), reported=1.5)
    assert decisions[-1].recommendation.demands["1"].rate_bound == pytest.approx(300, rel=0.01)


@settings(max_examples=150, deadline=None)
@given(source_rate=st.floats(min_value=10, max_value=50_000),
       pace=st.floats(min_value=1, max_value=20),
       selectivity=st.floats(min_value=0.05, max_value=10),
       capacity=st.floats(min_value=100, max_value=20_000),
       down_lag=st.integers(min_value=0, max_value=10**6),
       ticks=st.integers(min_value=1, max_value=6))
def test_a_downstream_never_gets_more_than_its_upstreams_source_rate_calls_for(source_rate, pace, selectivity,
                                                                               capacity, down_lag, ticks):
    """Whatever pace the upstream drains at, the downstream's share of the count is at most what the
    source rate times the selectivity (as measured, in whole records) and its own lag call for."""
    config = ScalingConfig(max_workers=64)
    for decision in catch_up_ticks(source_rate, pace, selectivity, ticks, config, capacity=capacity,
                                   down_lag=down_lag):
        demands = decision.recommendation.demands
        upstream, downstream = demands["0"], demands["1"]
        read = int(pace * source_rate * 30.0 / 4)
        measured = int(read * selectivity) / read
        assert downstream.rate_bound == pytest.approx(upstream.input_rate * measured)
        allowed = required_rate(downstream.counted_lag, upstream.input_rate * measured, config) / downstream.capacity
        assert downstream.input_rate <= upstream.input_rate * measured * (1 + 1e-9) + 1e-9
        assert downstream.latest_input_rate <= upstream.latest_input_rate * measured * (1 + 1e-9) + 1e-9
        assert downstream.workers <= allowed * (1 + 1e-9) + 1e-9
        # and the source's rate is what the upstream reads from outside, not its catch-up pace
        assert upstream.input_rate == pytest.approx(source_rate, rel=0.02, abs=1.0)
        needed = math.ceil(upstream.workers + allowed - 1e-9)
        assert decision.recommendation.unstabilized_workers <= max(1, min(needed, 8, config.max_workers))


@settings(max_examples=200, deadline=None)
@given(rates=st.dictionaries(st.sampled_from("0123"), st.floats(min_value=0, max_value=1e6), min_size=1),
       upstreams=st.dictionaries(st.sampled_from("0123"), st.sets(st.sampled_from("0123"), min_size=1, max_size=3)),
       selectivity=st.floats(min_value=0, max_value=100))
def test_bounding_only_ever_lowers_a_rate_and_keeps_every_sub_topology(rates, upstreams, selectivity):
    selectivities = {(up, down): selectivity for down, ups in upstreams.items() for up in ups}
    bounded = bounded_rates(rates, rate_bounds(rates, upstreams, selectivities))
    assert bounded.keys() == rates.keys()
    assert all(0 <= bounded[sub] <= rates[sub] for sub in rates)
    assert all(bounded[sub] == rates[sub] for sub in rates if sub not in upstreams)
