"""What the policy plans with: lag and input rates from offset snapshots, and a worker's capacity
measured from its reports (warm, long, backlogged batches only), its floor and its fallbacks."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from dagster_kstreams.scaling import (LagSnapshot, ScalingConfig, TaskOffsets, ThroughputSample, capacity_floor,
                                      capacity_to_plan_with, input_rates, measured_capacity, recommend)
from scaling_policy_inputs import workers_for


def test_snapshot_lag_and_uncommitted_tasks():
    snapshot = LagSnapshot.from_offsets(
        100.0,
        end_offsets={"0_0": 50, "0_1": 70, "0_2": 5},
        committed_offsets={"0_0": 40, "0_1": None, "0_2": 9},
        beginning_offsets={"0_1": 20},
    )
    # "0_2": committed past the end (topic recreated) is no negative lag.
    assert snapshot.lags() == {"0_0": 10, "0_1": 50, "0_2": 0}
    assert snapshot.total_lag == 60
    assert TaskOffsets(end_offset=3, committed_offset=0).lag == 3


def test_input_rate_from_consecutive_snapshots():
    earlier = LagSnapshot(100.0, {"0_0": TaskOffsets(1000, 0), "0_1": TaskOffsets(500, 0)})
    later = LagSnapshot(110.0, {"0_0": TaskOffsets(1500, 0), "0_1": TaskOffsets(400, 0), "0_2": TaskOffsets(9, 0)})
    assert input_rates(earlier, later) == {"0_0": 50.0, "0_1": 0.0}
    assert input_rates(None, later) == {}
    assert input_rates(later, later) == {}


def test_capacity_is_volume_weighted_over_recent_long_batches():
    config = ScalingConfig(throughput_window_seconds=60, min_sample_seconds=10)
    samples = [
        ThroughputSample(time=950, worker_id="worker-0", task_id="0_0", records=9000, seconds=10),
        ThroughputSample(time=990, worker_id="worker-1", task_id="0_1", records=1000, seconds=10),
        # Idle batch: measures overhead, not capacity.
        ThroughputSample(time=995, worker_id="worker-1", task_id="0_2", records=0, seconds=15),
        # Short batch: dominated by the batch's fixed cost.
        ThroughputSample(time=995, worker_id="worker-1", task_id="0_3", records=20, seconds=2),
        # Too old.
        ThroughputSample(time=900, worker_id="worker-0", task_id="0_0", records=1, seconds=100),
    ]
    assert measured_capacity(samples, now=1000, config=config) == 500.0
    assert measured_capacity(samples[2:], now=1000, config=config) is None


def test_a_workers_cold_batches_do_not_count():
    # worker-1 has just started: the first run of each of its tasks paid for its JVM, its
    # SparkSession and restoring the task's state; only later runs measure how fast it is.
    config = ScalingConfig(throughput_window_seconds=600, min_sample_seconds=10, warmup_batches=1)
    warm = [ThroughputSample(100, "worker-0", "0_0", records=20_000, seconds=10, task_batch=7)]
    cold = [ThroughputSample(110, "worker-1", "0_1", records=2_000, seconds=70, task_batch=1),
            ThroughputSample(120, "worker-1", "0_2", records=1_000, seconds=40, task_batch=1)]
    assert measured_capacity(warm + cold, now=200, config=config) == 2000.0
    assert measured_capacity(cold, now=200, config=config) is None
    # Its second run of 0_1 is warm.
    second = ThroughputSample(150, "worker-1", "0_1", records=10_000, seconds=10, task_batch=2)
    assert measured_capacity(warm + cold + [second], now=200, config=config) == 1500.0
    # warmup_batches=0 counts everything; two warm-up batches leave out the second run too.
    assert measured_capacity(warm + cold, now=200, config=replace(config, warmup_batches=0)) == 23_000 / 120
    assert measured_capacity(warm + cold + [second], now=200, config=replace(config, warmup_batches=2)) == 2000.0
    # Samples that do not say which run they were (older reports) count as warm.
    assert measured_capacity([replace(cold[0], task_batch=None)], now=200, config=config) == 2000 / 70


def test_tasks_running_at_once_are_measured_as_one_worker():
    # One worker, four backlogged tasks at once for 15 s (three reports of 5 s each): each task's
    # own batches took 15 s for 7,500 records, but the worker did 30,000 in those 15 s.
    config = ScalingConfig(throughput_window_seconds=600, min_sample_seconds=10, warmup_batches=1)
    reports = [ThroughputSample(100 + 5 * round_, "worker-0", f"0_{p}", records=2_500, seconds=5.0,
                                task_batch=round_ + 2, worker_seconds=1.25, lag_left=50_000)
               for round_ in range(3) for p in range(4)]
    assert measured_capacity(reports, now=200, config=config) == 2000.0
    # Each task's own rate would have said 500/s, and four times as many workers.
    assert sum(r.records for r in reports) / sum(r.seconds for r in reports) == 500.0
    # Fewer than min_sample_seconds of the worker's time so far: not measured yet.
    assert measured_capacity(reports[:4], now=200, config=config) is None


def test_a_task_that_keeps_up_does_not_measure_capacity():
    # 1,000 records in 5 s of small batches with 30 still waiting: that is the input rate.
    config = ScalingConfig(throughput_window_seconds=600, min_sample_seconds=1, warmup_batches=0)
    keeping_up = [ThroughputSample(100 + i, "worker-0", "0_0", records=1_000, seconds=5.0, task_batch=5,
                                   worker_seconds=5.0, lag_left=30) for i in range(10)]
    assert measured_capacity(keeping_up, now=200, config=config) is None
    # Behind by about one report (a slow batch on a busy machine): still not a measure.
    one_behind = [replace(sample, lag_left=1_500) for sample in keeping_up]
    assert measured_capacity(one_behind, now=200, config=config) is None
    behind = replace(keeping_up[0], lag_left=16_000, records=4_000)
    assert measured_capacity([*keeping_up, behind], now=200, config=config) == 800.0
    # A report that says nothing of its lag is not taken for backlogged.
    assert measured_capacity([replace(behind, lag_left=None)], now=200, config=config) is None


def test_reports_of_a_worker_that_keeps_up_lift_a_too_low_default_never_lower_it():
    # A steady 600 records/s absorbed by one worker in 60% of its time: it could do at least
    # 1,000/s. Planning with the 500/s default would have asked for two workers.
    config = ScalingConfig(throughput_window_seconds=600, min_sample_seconds=10, warmup_batches=1,
                           default_worker_records_per_second=500, target_utilization=1.0, max_workers=4)
    keeping_up = [ThroughputSample(100 + 5 * i, "worker-0", "0_0", records=3_000, seconds=3.0, task_batch=i + 2,
                                   worker_seconds=3.0, lag_left=30) for i in range(5)]
    assert capacity_floor(keeping_up, now=130, config=config) == 1_000.0
    assert measured_capacity(keeping_up, now=130, config=config) is None
    snapshot = LagSnapshot(130, {"0_0": TaskOffsets(50_000, 50_000), "0_1": TaskOffsets(50_000, 50_000)})
    before = LagSnapshot(120, {"0_0": TaskOffsets(47_000, 47_000), "0_1": TaskOffsets(47_000, 47_000)})
    alone, _ = recommend(snapshot, 1, config, previous_snapshot=before)
    informed, _ = recommend(snapshot, 1, config, previous_snapshot=before, throughput=keeping_up)
    assert (alone.unstabilized_workers, informed.unstabilized_workers) == (2, 1)
    assert informed.demands["0"].capacity == 1_000.0 and not informed.demands["0"].capacity_measured
    # Not enough worker time yet, cold reports, drains: no floor. A floor below never lowers.
    assert capacity_floor(keeping_up[:3], now=130, config=config) is None
    assert capacity_floor([replace(r, task_batch=1) for r in keeping_up], now=130, config=config) is None
    assert capacity_floor([replace(r, worker_seconds=None) for r in keeping_up], now=130, config=config) is None
    assert capacity_to_plan_with(None, 2_000.0, config, floor=1_000.0) == 2_000.0
    assert capacity_to_plan_with(None, None, config, floor=100.0) == 500.0


samples_strategy = st.lists(
    st.builds(ThroughputSample, time=st.floats(0, 1000), worker_id=st.sampled_from(["worker-0", "worker-1"]),
              task_id=st.sampled_from(["0_0", "1_0"]), records=st.integers(0, 10**6), seconds=st.floats(0, 600),
              task_batch=st.none() | st.integers(1, 5)),
    max_size=12,
)


@given(samples_strategy, samples_strategy, st.integers(0, 4))
def test_cold_batches_never_change_the_measured_capacity(samples, extra, warmup):
    config = ScalingConfig(throughput_window_seconds=2000, min_sample_seconds=5, warmup_batches=warmup)
    cold = [replace(sample, task_batch=min(sample.task_batch or 1, warmup)) for sample in extra if warmup >= 1]
    assert all(not sample.is_warm(config) for sample in cold)
    assert measured_capacity(samples + cold, now=1000, config=config) == measured_capacity(samples, 1000, config)


def test_capacity_falls_back_to_the_last_measurement_then_the_default():
    config = ScalingConfig(default_worker_records_per_second=123.0)
    assert capacity_to_plan_with(500.0, 700.0, config) == 500.0
    assert capacity_to_plan_with(None, 700.0, config) == 700.0
    assert capacity_to_plan_with(None, None, config) == 123.0


def test_small_batches_of_a_quiet_stream_do_not_ratchet_workers_up():
    # True rate 10k rec/s, 2 s of fixed cost per batch, 1000 rec/s of input per worker's share:
    # every batch is short, so it measures the fixed cost; the count must not follow it up.
    config = ScalingConfig(max_workers=16, min_sample_seconds=10, default_worker_records_per_second=5000)
    workers = 1
    for tick in range(10):
        per_worker_input = 1000 / workers
        records = int(per_worker_input * 2.1)
        seconds = 2 + records / 10_000
        samples = [ThroughputSample(tick * 30.0, f"worker-{i}", "0_0", records, seconds) for i in range(workers)]
        capacity = capacity_to_plan_with(measured_capacity(samples, tick * 30.0, config), None, config)
        workers = workers_for(0, 1000.0, capacity, task_count=16, config=config)
    assert workers == 1
