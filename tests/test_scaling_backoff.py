"""Restart backoff: a worker id whose runs keep failing is relaunched ever later, never in a hot
loop, and keeps its tasks meanwhile; a single failure (a killed process) is replaced at once."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.scaling import (
    LagSnapshot,
    RunOutcome,
    ScalingConfig,
    TaskOffsets,
    Worker,
    WorkerState,
    decide_tick,
    failure_streak,
    relaunch_at,
    restart_delay,
)

CONFIG = ScalingConfig(min_workers=2, max_workers=2, restart_backoff_seconds=15, max_restart_backoff_seconds=600,
                       backoff_reset_seconds=600)
TASKS = [f"0_{p}" for p in range(4)]


def test_streak_counts_consecutive_failures_newest_first():
    failed, ok = RunOutcome(failed=True, seconds_run=5), RunOutcome(failed=False, seconds_run=500)
    assert failure_streak([], CONFIG) == 0
    assert failure_streak([ok, failed, failed], CONFIG) == 0
    assert failure_streak([failed, failed, ok, failed], CONFIG) == 2
    assert failure_streak([failed, RunOutcome(True, None), failed], CONFIG) == 3  # None: never started
    # A run that was healthy for the reset time before failing starts a new streak, itself first.
    assert failure_streak([failed, RunOutcome(True, 600), failed, failed], CONFIG) == 2


def test_delay_is_zero_for_a_first_failure_then_doubles_up_to_the_maximum():
    assert [restart_delay(n, CONFIG) for n in range(8)] == [0, 0, 15, 30, 60, 120, 240, 480]
    assert restart_delay(9, CONFIG) == restart_delay(10_000, CONFIG) == 600
    assert relaunch_at(1, 1000.0, CONFIG) == float("-inf")
    assert relaunch_at(3, 1000.0, CONFIG) == 1030.0
    assert relaunch_at(3, None, CONFIG) == float("-inf")  # no failure time: nothing to wait from


@given(st.integers(0, 200), st.integers(0, 200), st.floats(0, 100), st.floats(0, 1000))
def test_delay_never_shrinks_as_failures_go_on_and_stays_capped(a, b, base, extra):
    config = ScalingConfig(restart_backoff_seconds=base, max_restart_backoff_seconds=base + extra)
    low, high = sorted((a, b))
    assert 0 <= restart_delay(low, config) <= restart_delay(high, config) <= config.max_restart_backoff_seconds


def snapshot(now):
    return LagSnapshot(now, {task: TaskOffsets(10_000, 5_000) for task in TASKS})


def crash_loop(config, ticks, tick_seconds=10, run_seconds=5):
    """worker-1's runs fail ``run_seconds`` after each launch (a poison record), worker-0 is
    healthy. The sensor's view each tick: the newest run of each id, with the id's streak."""
    state = None
    healthy = Worker("worker-0", tasks={"0_0", "0_2"}, held={"0_0", "0_2"})
    history = []  # worker-1's run outcomes, newest first
    launched_at = None
    launches = []
    for tick in range(ticks):
        now = tick * tick_seconds
        if launched_at is not None and now - launched_at >= run_seconds:
            history.insert(0, RunOutcome(failed=True, seconds_run=run_seconds))
            failed_at, launched_at = launched_at + run_seconds, None
        workers = [healthy]
        if launched_at is not None:
            workers.append(Worker("worker-1", tasks={"0_1", "0_3"}, held={"0_1", "0_3"}))
        elif history:
            workers.append(Worker("worker-1", tasks={"0_1", "0_3"}, state=WorkerState.FAILED,
                                  failures=failure_streak(history, config), failed_at=failed_at))
        decision = decide_tick(snapshot(now), workers, config, state)
        state = decision.state
        plan = decision.plan
        # The healthy worker keeps its tasks and is never handed the failing one's.
        assert not plan.retag and not plan.retire and not plan.cancel
        if any(launch.worker_id == "worker-1" for launch in plan.launch):
            (launch,) = plan.launch
            assert launch.tasks == {"0_1", "0_3"}
            launches.append(now)
            launched_at = now
        elif history and launched_at is None:
            assert plan.deferred == ("worker-1",)
            assert decision.summary()["deferred"] == ["worker-1"]
    return launches


def test_a_crash_looping_worker_is_relaunched_ever_later():
    launches = crash_loop(CONFIG, ticks=360)  # an hour of 10 s ticks
    # Without backoff it would be relaunched on every tick (360 times, see below).
    gaps = [b - a for a, b in zip(launches, launches[1:])]
    assert launches[0] == 0 and gaps[0] == 10  # the first failure is replaced on the next tick
    assert gaps == sorted(gaps) and gaps[-1] >= 600
    assert len(launches) <= 12


def test_without_backoff_it_would_hot_loop():
    # The same loop with the backoff switched off: the test above can tell the difference.
    config = replace(CONFIG, restart_backoff_seconds=0, max_restart_backoff_seconds=0)
    assert len(crash_loop(config, ticks=360)) == 360


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40), st.floats(0, 5000), st.floats(0, 5000))
def test_a_failed_worker_is_relaunched_exactly_when_its_backoff_is_over(streak, failed_at, elapsed):
    failed = Worker("worker-1", tasks={"0_1", "0_3"}, state=WorkerState.FAILED, failures=streak, failed_at=failed_at)
    healthy = Worker("worker-0", tasks={"0_0", "0_2"}, held={"0_0", "0_2"})
    now = failed_at + elapsed
    plan = decide_tick(snapshot(now), [healthy, failed], CONFIG).plan
    relaunched = [launch.worker_id for launch in plan.launch] == ["worker-1"]
    assert relaunched == (elapsed >= restart_delay(streak, CONFIG))
    assert relaunched != (plan.deferred == ("worker-1",))
