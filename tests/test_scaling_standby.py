"""Warm standbys in the plan: promoted first on scale-up and failover, replaced, demoted into,
and within the backoff. The simulated fleet is test_scaling_plan.py's."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.scaling import ScalingConfig, decide_tick
from dagster_kstreams.scaling.plan import Handover, Worker, plan_reconciliation
from dagster_kstreams.scaling import LagSnapshot, TaskOffsets
from test_scaling_plan import FAILED, RUNNING, STANDBY, apply_plan, settled, start_batches, tasks_of


def fleet(task_count, worker_count, standby_count):
    """A settled fleet: ``worker_count`` workers sharing the tasks, ``standby_count`` ready standbys."""
    first = plan_reconciliation(tasks_of(task_count), [], worker_count)
    workers = settled({launch.worker_id: launch.tasks for launch in first.launch})
    standbys = [Worker(f"worker-{worker_count + i}", state=STANDBY) for i in range(standby_count)]
    return workers + standbys


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 20), st.integers(1, 6), st.integers(1, 3), st.data())
def test_a_failed_workers_tasks_go_to_a_standby_at_once_and_a_new_standby_takes_its_id(
        task_count, worker_count, standby_count, data):
    workers = fleet(task_count, worker_count, standby_count)
    failed = data.draw(st.sampled_from([w.worker_id for w in workers if w.state is RUNNING]))
    orphans = next(w.tasks for w in workers if w.worker_id == failed)
    workers = [replace(w, state=FAILED) if w.worker_id == failed else w for w in workers]

    plan = plan_reconciliation(tasks_of(task_count), workers, worker_count, standby_workers=standby_count)

    # The lowest standby takes the failed worker's tasks, granted on this very plan (a failed run
    # holds nothing); no other worker's tags change, nothing waits.
    (change,) = plan.retag
    assert change.promoted and change.worker_id == f"worker-{worker_count}"
    assert change.tasks == change.assigned == orphans == change.granted
    assert not plan.handovers and not plan.retire and not plan.cancel
    # The standby pool is topped up, under the failed worker's id.
    (launch,) = plan.launch
    assert launch.state is STANDBY and launch.worker_id == failed and not launch.tasks
    assert plan.standby_launches == (failed,) and plan.promoted == (change.worker_id,)


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 20), st.integers(1, 2), st.data())
def test_scale_up_promotes_a_ready_standby_and_revokes_for_it_at_once(task_count, standby_count, data):
    worker_count = data.draw(st.integers(1, min(5, task_count - 1)))
    tasks = tasks_of(task_count)
    workers = fleet(task_count, worker_count, standby_count)
    desired = worker_count + 1
    plan = plan_reconciliation(tasks, workers, desired, standby_workers=standby_count)
    standby = f"worker-{worker_count}"
    assert plan.promoted == (standby,)
    assert [launch.state for launch in plan.launch] == [STANDBY]  # no cold active worker
    moving = plan.target[standby]
    assert moving and all(handover.to_worker == standby for handover in plan.handovers)
    # Ready: what moves to it leaves its old workers on this plan (not a tick later).
    revoked = set().union(*(change.revoked for change in plan.retag))
    assert revoked == moving

    # Once the old workers release them, they are granted; the fleet then settles with the pool full.
    workers = start_batches(apply_plan(workers, plan), {w.worker_id for w in workers} | set(plan.standby_launches))
    plan = plan_reconciliation(tasks, workers, desired, standby_workers=standby_count)
    assert {change.worker_id: change.granted for change in plan.retag} == {standby: moving}
    workers = apply_plan(workers, plan)
    assert plan_reconciliation(tasks, workers, desired, standby_workers=standby_count).is_noop
    assert sum(w.state is STANDBY for w in workers) == standby_count


def test_a_standby_still_starting_is_promoted_before_a_cold_launch_and_tasks_wait_for_it_where_they_are():
    workers = settled({"worker-0": {"0_0", "0_1"}}) + [Worker("worker-1", state=STANDBY, ready=False)]
    plan = plan_reconciliation(tasks_of(2), workers, 2, standby_workers=1)
    assert plan.promoted == ("worker-1",) and plan.standby_launches == ("worker-2",)
    assert [launch.state for launch in plan.launch] == [STANDBY]
    # Not ready: worker-0 keeps processing the task bound for it.
    assert plan.handovers == (Handover("0_1", "worker-1", ("worker-0",)),)
    assert all(not change.revoked for change in plan.retag)


def test_the_readiest_standby_is_promoted():
    workers = settled({"worker-0": {"0_0", "0_1"}}) + [
        Worker("worker-1", state=STANDBY, started=False), Worker("worker-2", state=STANDBY, ready=False),
        Worker("worker-3", state=STANDBY)]
    assert plan_reconciliation(tasks_of(2), workers, 2, standby_workers=3).promoted == ("worker-3",)


def test_scale_down_with_the_pool_short_demotes_instead_of_retiring():
    # The standby was just promoted and its replacement has not been launched yet... or failed.
    workers = settled({"worker-0": {"0_0", "0_2"}, "worker-1": {"0_1", "0_3"}})
    plan = plan_reconciliation(tasks_of(4), workers, 1, standby_workers=1)
    assert plan.demoted == ("worker-1",) and not plan.retire and not plan.launch
    assert plan.handovers == (Handover("0_1", "worker-0", ("worker-1",)), Handover("0_3", "worker-0", ("worker-1",)))
    # It releases its tasks at its next batch and stays up as the standby; worker-0 gets them.
    workers = start_batches(apply_plan(workers, plan), {"worker-0", "worker-1"})
    assert [(w.worker_id, w.state, w.tasks) for w in workers if w.worker_id == "worker-1"] == [
        ("worker-1", STANDBY, frozenset())]
    plan = plan_reconciliation(tasks_of(4), workers, 1, standby_workers=1)
    assert [(change.worker_id, change.granted) for change in plan.retag] == [("worker-0", {"0_1", "0_3"})]


def test_surplus_standbys_leave_queued_ones_first():
    workers = settled({"worker-0": {"0_0"}}) + [Worker("worker-1", state=STANDBY),
                                               Worker("worker-2", state=STANDBY, started=False)]
    plan = plan_reconciliation(tasks_of(1), workers, 1, standby_workers=1)
    assert plan.cancel == ("worker-2",) and not plan.retire and not plan.launch
    plan = plan_reconciliation(tasks_of(1), workers, 1, standby_workers=0)
    assert plan.cancel == ("worker-2",) and plan.retire == ("worker-1",)


def test_a_failed_worker_in_restart_backoff_keeps_its_tasks_from_the_standby():
    # A record that crashes its worker would crash the standby too.
    workers = fleet(4, 2, 1)
    workers = [replace(w, state=FAILED) if w.worker_id == "worker-1" else w for w in workers]
    plan = plan_reconciliation(tasks_of(4), workers, 2, deferred={"worker-1"}, standby_workers=1)
    assert not plan.promoted and not plan.launch and plan.deferred == ("worker-1",)
    assert plan.target["worker-1"] == {"0_1", "0_3"}


def test_a_standby_id_in_restart_backoff_is_not_relaunched():
    workers = settled({"worker-0": {"0_0"}}) + [Worker("worker-1", state=FAILED, failures=3)]
    plan = plan_reconciliation(tasks_of(1), workers, 1, deferred={"worker-1"}, standby_workers=1)
    assert not plan.launch and plan.deferred == ("worker-1",)
    (launch,) = plan_reconciliation(tasks_of(1), workers, 1, standby_workers=1).launch
    assert (launch.worker_id, launch.state) == ("worker-1", STANDBY)


def test_standbys_are_kept_at_zero_workers_but_not_without_tasks():
    workers = [Worker("worker-0", state=STANDBY)]
    assert plan_reconciliation(tasks_of(2), workers, 0, standby_workers=1).is_noop
    plan = plan_reconciliation([], workers, 0, standby_workers=1)
    assert plan.retire == ("worker-0",)


def test_the_tick_launches_standbys_beside_the_workers_and_counts_only_active_ones():
    config = ScalingConfig(min_workers=1, max_workers=2, standby_workers=1)
    snapshot = LagSnapshot(0.0, {f"0_{p}": TaskOffsets(0, 0) for p in range(4)})
    decision = decide_tick(snapshot, [], config)
    assert [(launch.worker_id, launch.state) for launch in decision.plan.launch] == [
        ("worker-0", RUNNING), ("worker-1", STANDBY)]
    # A standby is not a running worker to the policy: with one running and one standby, the
    # burst asks for a second, and the standby becomes it.
    workers = [Worker("worker-0", tasks=snapshot.tasks, held=snapshot.tasks), Worker("worker-1", state=STANDBY)]
    burst = LagSnapshot(30.0, {f"0_{p}": TaskOffsets(100_000, 0) for p in range(4)})
    decision = decide_tick(burst, workers, config, decision.state)
    assert decision.recommendation.current_workers == 1 and decision.plan.desired_workers == 2
    assert decision.plan.promoted == ("worker-1",) and decision.plan.standby_launches == ("worker-2",)
    assert decision.summary()["promote"] == ["worker-1"]
