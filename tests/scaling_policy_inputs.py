"""What the scaling policy's tests feed it: hypothesis strategies for lags, rates, capacities, task
counts and configs; the count for one sub-topology; lag snapshots of a stream; the sensor's loop
over snapshots, its workers following each decision; and the stabilization alone over counts."""

from __future__ import annotations

from hypothesis import strategies as st

from dagster_kstreams.scaling import (LagSnapshot, ScalingConfig, StabilizationState, TaskOffsets, desired_workers,
                                      recommend, required_rate, smoothed_rates, stabilize)


lags = st.integers(min_value=0, max_value=10**9)
rates = st.floats(min_value=0, max_value=1e6, allow_nan=False)
capacities = st.floats(min_value=0.01, max_value=1e6, allow_nan=False)
task_counts = st.integers(min_value=0, max_value=64)


@st.composite
def configs(draw):
    max_workers = draw(st.integers(min_value=1, max_value=32))
    return ScalingConfig(
        min_workers=draw(st.integers(min_value=0, max_value=max_workers)),
        max_workers=max_workers,
        catch_up_seconds=draw(st.floats(min_value=1, max_value=3600)),
        target_utilization=draw(st.floats(min_value=0.05, max_value=1.0)),
        scale_down_stabilization_seconds=draw(st.floats(min_value=0, max_value=600)),
    )


def workers_for(lag: int, rate: float, capacity: float, task_count: int, config: ScalingConfig) -> int:
    """The count for an application of one sub-topology."""
    return desired_workers(required_rate(lag, rate, config) / capacity, bool(lag or rate), task_count, config)


def snapshot(time, lag_per_task, tasks=8, end=10**6):
    return LagSnapshot(time, {f"0_{p}": TaskOffsets(end, end - lag_per_task) for p in range(tasks)})


def rate_ticks(rates_and_gaps, tasks=64, noise=()):
    """Snapshots of a stream whose workers keep up: per tick ``(records/s, seconds since the last)``;
    ``noise``: per tick, the records a producer holds back into the next interval, as a fraction of
    15 s of input (ticks are at least 15 s apart, so a reading is off by at most that fraction)."""
    time, end, carried = 0.0, 0, 0.0
    yield LagSnapshot(time, {f"0_{p}": TaskOffsets(0, 0) for p in range(tasks)})
    for i, (rate, gap) in enumerate(rates_and_gaps):
        shifted = rate * 15 * (noise[i] if i < len(noise) else 0.0)
        time += gap
        end += round((rate * gap + carried - shifted) / tasks)
        carried = shifted
        yield LagSnapshot(time, {f"0_{p}": TaskOffsets(end, end) for p in range(tasks)})


def follow(snapshots, config, current=1):
    """The sensor's loop on these snapshots: the count after each tick, its workers following it."""
    state, previous, counts = StabilizationState(), None, []
    rates, weight = {}, 0.0
    for snap in snapshots:
        if previous is not None:
            recommendation, state = recommend(snap, current, config, previous_snapshot=previous, state=state,
                                              last_input_rates=rates, last_input_rate_weight=weight)
            _, weight = smoothed_rates({}, {}, snap.time - previous.time, config, weight)
            rates = {sub: demand.input_rate for sub, demand in recommendation.demands.items()}
            current = recommendation.desired_workers
            counts.append((snap.time, current))
        previous = snap
    return counts


def run_policy(recommendations, start_workers, config, tick_seconds):
    """Feed recommendations to :func:`stabilize` one tick apart; the worker count after each tick."""
    current, state, counts = start_workers, StabilizationState(), []
    for i, recommended in enumerate(recommendations):
        current, state = stabilize(recommended, current, i * tick_seconds, state, config)
        counts.append(current)
    return counts
