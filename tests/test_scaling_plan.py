"""Reconciliation plans: launch, retag, retire, and the two-phase handover that keeps a task on
one worker at a time. Property tests drive a small simulated fleet through random ticks."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.scaling.plan import (
    Handover,
    ReconciliationPlan,
    Worker,
    WorkerState,
    plan_reconciliation,
)

RUNNING, STANDBY, RETIRING, FAILED = WorkerState.RUNNING, WorkerState.STANDBY, WorkerState.RETIRING, WorkerState.FAILED


def tasks_of(count, sub_topology=0):
    return [f"{sub_topology}_{p}" for p in range(count)]


def settled(assignment):
    """Workers that have acknowledged their tags: tags, target and held all agree."""
    return [Worker(worker_id, tasks=set(tasks), held=set(tasks)) for worker_id, tasks in assignment.items()]


# --- the simulated fleet ------------------------------------------------------------------


def apply_plan(workers, plan):
    """What the sensor does with a plan; failed runs it has handled drop out of view."""
    by_id = {w.worker_id: w for w in workers if w.is_live}
    for worker_id in plan.retire:
        by_id[worker_id] = replace(by_id[worker_id], tasks=frozenset(), assigned=frozenset(), state=RETIRING)
    for worker_id in plan.cancel:  # a cancelled queued run: the sensor sees it as failed next tick
        by_id[worker_id] = replace(by_id[worker_id], state=FAILED)
    for change in plan.retag:
        by_id[change.worker_id] = replace(by_id[change.worker_id], tasks=change.tasks, assigned=change.assigned,
                                          state=change.state)
    for launch in plan.launch:
        # Queued until it starts its first batch.
        by_id[launch.worker_id] = Worker(launch.worker_id, tasks=launch.tasks, assigned=launch.assigned,
                                         state=launch.state, started=False)
    return list(by_id.values())


def start_batches(workers, acknowledging):
    """Workers in ``acknowledging`` start a batch (queued ones start running): report their tags
    as held; retiring ones exit."""
    result = []
    for worker in workers:
        if worker.worker_id not in acknowledging or not worker.is_live:
            result.append(worker)
        elif worker.state is not RETIRING:
            result.append(replace(worker, held=worker.tasks, started=True))
    return result


def may_process(workers):
    return {w.worker_id: w.busy for w in workers if w.is_live}


def assert_no_task_on_two_workers(sets_by_worker):
    for (a, tasks_a), (b, tasks_b) in itertools.combinations(sets_by_worker.items(), 2):
        assert not tasks_a & tasks_b, f"{sorted(tasks_a & tasks_b)} on both {a} and {b}"


def assert_plan_is_sound(plan: ReconciliationPlan, tasks, workers, desired):
    assert len(plan.target) == desired
    assigned = [t for ts in plan.target.values() for t in ts]
    if desired:
        assert sorted(assigned) == sorted(tasks), "every task assigned exactly once"
        counts = [len(ts) for ts in plan.target.values()]
        assert max(counts) - min(counts) <= 1
        assert not plan.unassigned
    else:
        assert plan.unassigned == set(tasks)
    tags_after = plan.tags_after(workers)
    assert_no_task_on_two_workers(tags_after)
    busy_before = may_process(workers)
    for worker_id, tags in tags_after.items():
        granted = tags - busy_before.get(worker_id, frozenset())
        for other, busy in busy_before.items():
            if other != worker_id:
                assert not granted & busy, f"{worker_id} granted {sorted(granted & busy)} still busy on {other}"
    # Tags hold the target, plus tasks a worker keeps until their new owner is ready (started
    # and beating): kept, never granted.
    ready = {w.worker_id for w in workers if w.state is RUNNING and w.started and w.ready}
    bound_for = {task: member for member, tasks_of in plan.target.items() for task in tasks_of}
    before = {w.worker_id: w.tasks for w in workers}
    for worker_id, tags in tags_after.items():
        kept_back = {task for task in tags - plan.target.get(worker_id, frozenset())
                     if task in bound_for and bound_for[task] not in ready}
        assert tags - kept_back <= plan.target.get(worker_id, frozenset())
        assert kept_back <= before.get(worker_id, frozenset())


fleet_events = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=6),  # desired workers
        st.integers(min_value=0, max_value=2),  # partitions added this tick
        st.sets(st.sampled_from([f"worker-{i}" for i in range(8)]), max_size=2),  # runs that fail
        st.sets(st.sampled_from([f"worker-{i}" for i in range(8)])),  # workers that start a batch
    ),
    min_size=1,
    max_size=12,
)


def run_fleet(events, initial_tasks, standby_workers=0):
    """Random ticks: scale, add partitions, fail runs, let some workers acknowledge."""
    tasks = tasks_of(initial_tasks)
    workers = []
    for desired, added, failing, acknowledging in events:
        tasks = tasks_of(len(tasks) + added)
        workers = [replace(w, state=FAILED) if w.worker_id in failing and w.is_live else w for w in workers]
        plan = plan_reconciliation(tasks, workers, desired, standby_workers=standby_workers)
        assert_plan_is_sound(plan, tasks, workers, desired)
        workers = apply_plan(workers, plan)
        assert_no_task_on_two_workers(may_process(workers))
        workers = start_batches(workers, acknowledging)
        assert_no_task_on_two_workers(may_process(workers))
    return tasks, workers


@settings(max_examples=200, deadline=None)
@given(fleet_events, st.integers(min_value=0, max_value=12), st.integers(min_value=0, max_value=2))
def test_no_task_is_ever_on_two_workers_and_every_plan_is_balanced(events, initial_tasks, standby_workers):
    run_fleet(events, initial_tasks, standby_workers)


@settings(max_examples=150, deadline=None)
@given(fleet_events, st.integers(min_value=0, max_value=12), st.integers(min_value=0, max_value=6),
       st.integers(min_value=0, max_value=2))
def test_fleet_settles_within_three_ticks_once_workers_acknowledge(events, initial_tasks, desired, standby_workers):
    # Launch (the new workers start), revoke what moves to them once they are ready (their old
    # workers release it at their next batch), grant it.
    tasks, workers = run_fleet(events, initial_tasks, standby_workers)
    everyone = {w.worker_id for w in workers}
    for _ in range(3):
        plan = plan_reconciliation(tasks, workers, desired, standby_workers=standby_workers)
        workers = start_batches(apply_plan(workers, plan), everyone | {w.worker_id for w in plan.launch})
        everyone = {w.worker_id for w in workers}

    final = plan_reconciliation(tasks, workers, desired, standby_workers=standby_workers)
    assert final.is_noop and not final.handovers
    active = [w for w in workers if w.state is RUNNING]
    standbys = [w for w in workers if w.state is STANDBY]
    assert len(active) == desired and len(standbys) == (standby_workers if tasks else 0)
    assert len(workers) == len(active) + len(standbys) and not any(w.tasks for w in standbys)
    tags = [t for w in workers for t in w.tasks]
    assert sorted(tags) == (sorted(tasks) if desired else [])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([f"worker-{i}" for i in range(6)]),
            st.sets(st.sampled_from(tasks_of(10))),
            st.sets(st.sampled_from(tasks_of(10))),
            st.sampled_from(list(WorkerState)),
            st.booleans(),
        ),
        max_size=6,
        unique_by=lambda row: row[0],
    ),
    st.integers(min_value=0, max_value=6),
    st.integers(min_value=0, max_value=2),
)
def test_even_from_a_tangled_fleet_a_plan_grants_nothing_busy_elsewhere(rows, desired, standby_workers):
    # Overlapping tags and reports (a bug elsewhere, a lost tick): the plan must not make it worse.
    workers = [Worker(worker_id, tasks=tags, held=held, state=state, started=started)
               for worker_id, tags, held, state, started in rows]
    plan = plan_reconciliation(tasks_of(10), workers, desired, standby_workers=standby_workers)
    assert_plan_is_sound(plan, tasks_of(10), workers, desired)
    # Only runs that never started are cancelled; started ones retire gracefully.
    by_id = {w.worker_id: w for w in workers}
    assert all(not by_id[w].started and by_id[w].is_live for w in plan.cancel)
    assert all(by_id[w].started for w in plan.retire)
    # Queued workers leave before any started one does.
    running = [w for w in workers if w.state is RUNNING]
    surplus = len(running) - desired
    queued = [w for w in running if not w.started]
    if 0 < surplus <= len(queued):
        assert not set(plan.retire) & {w.worker_id for w in running}
    # Whatever leaves, the running count reaches what is wanted, and so does the standby count
    # (standbys fill places first; an active worker that leaves tops the pool up first).
    after = apply_plan(workers, plan)
    assert len([w for w in after if w.state is RUNNING]) == desired
    assert len([w for w in after if w.state is STANDBY]) == standby_workers
    assert all(not w.tasks for w in after if w.state is STANDBY)
    standbys = [w for w in workers if w.state is STANDBY]
    assert len(plan.promoted) == min(len(standbys), max(0, desired - len(running)))


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=1, max_value=20), st.integers(min_value=2, max_value=6), st.data())
def test_failed_worker_is_replaced_under_its_id_with_its_tasks_and_nobody_else_moves(task_count, worker_count, data):
    first = plan_reconciliation(tasks_of(task_count), [], worker_count)
    workers = settled({launch.worker_id: launch.tasks for launch in first.launch})
    failed = data.draw(st.sampled_from(sorted(w.worker_id for w in workers)))
    workers = [replace(w, state=FAILED) if w.worker_id == failed else w for w in workers]

    plan = plan_reconciliation(tasks_of(task_count), workers, worker_count)

    (launch,) = plan.launch
    assert launch.worker_id == failed
    assert launch.tasks == first.target[failed]
    assert not plan.retag and not plan.retire and not plan.handovers

    # With one worker fewer wanted, the survivors get its tasks at once: a failed run holds nothing.
    plan = plan_reconciliation(tasks_of(task_count), workers, worker_count - 1)
    assert not plan.launch and not plan.handovers
    granted = set().union(*(change.granted for change in plan.retag))
    assert granted == first.target[failed]


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=1, max_value=20), st.integers(min_value=2, max_value=6), st.data())
def test_vanished_worker_tasks_are_granted_on_the_next_tick(task_count, worker_count, data):
    first = plan_reconciliation(tasks_of(task_count), [], worker_count)
    workers = settled({launch.worker_id: launch.tasks for launch in first.launch})
    vanished = data.draw(st.sampled_from(sorted(w.worker_id for w in workers)))
    survivors = [w for w in workers if w.worker_id != vanished]
    orphans = first.target[vanished]

    # Either a replacement (same count wanted) or the survivors (one fewer wanted) take the orphans.
    for desired in (worker_count, worker_count - 1):
        plan = plan_reconciliation(tasks_of(task_count), survivors, desired)
        tags_after = plan.tags_after(survivors)
        assert orphans <= set().union(*tags_after.values())
        assert not plan.handovers


# --- worked examples ------------------------------------------------------------------------


def test_settled_fleet_needs_nothing():
    workers = settled({"worker-0": {"0_0", "0_2"}, "worker-1": {"0_1", "0_3"}})
    plan = plan_reconciliation(tasks_of(4), workers, 2)
    assert plan.is_noop and not plan.handovers


def test_scale_up_launches_first_then_hands_tasks_over_once_released():
    workers = settled({"worker-0": {"0_0", "0_1", "0_2"}, "worker-1": {"0_3", "0_4", "0_5"}})

    plan = plan_reconciliation(tasks_of(6), workers, 3)

    (launch,) = plan.launch
    assert launch.worker_id == "worker-2"
    assert launch.tasks == set() and launch.assigned == {"0_2", "0_5"}
    # worker-2 is not ready (it starts its SparkSession for a minute): nothing is revoked yet,
    # the tasks bound for it keep being processed where they are.
    assert {r.worker_id: (r.revoked, r.tasks) for r in plan.retag} == {
        "worker-0": (set(), {"0_0", "0_1", "0_2"}), "worker-1": (set(), {"0_3", "0_4", "0_5"})}
    assert plan.handovers == (
        Handover("0_2", "worker-2", ("worker-0",)),
        Handover("0_5", "worker-2", ("worker-1",)),
    )
    workers = start_batches(apply_plan(workers, plan), {"worker-0", "worker-1"})
    assert plan_reconciliation(tasks_of(6), workers, 3).is_noop  # still starting

    # worker-2 has started: now the tasks leave their old workers.
    workers = start_batches(workers, {"worker-2"})
    plan = plan_reconciliation(tasks_of(6), workers, 3)
    assert {r.worker_id: r.revoked for r in plan.retag} == {"worker-0": {"0_2"}, "worker-1": {"0_5"}}

    # worker-0 has started its next batch without 0_2; worker-1 is still in the old one.
    workers = apply_plan(workers, plan)
    workers = start_batches(workers, {"worker-0", "worker-2"})
    plan = plan_reconciliation(tasks_of(6), workers, 3)
    assert [(r.worker_id, r.granted) for r in plan.retag] == [("worker-2", {"0_2"})]
    assert plan.handovers == (Handover("0_5", "worker-2", ("worker-1",)),)

    workers = start_batches(apply_plan(workers, plan), {"worker-0", "worker-1", "worker-2"})
    plan = plan_reconciliation(tasks_of(6), workers, 3)
    assert [(r.worker_id, r.granted) for r in plan.retag] == [("worker-2", {"0_5"})]
    assert not plan.handovers


def test_a_worker_that_left_the_queue_but_has_not_beaten_yet_is_not_ready():
    workers = settled({"worker-0": {"0_0", "0_1"}}) + [Worker("worker-1", assigned={"0_1"}, ready=False)]
    plan = plan_reconciliation(tasks_of(2), workers, 2)
    assert all(not r.revoked for r in plan.retag) and plan.handovers == (Handover("0_1", "worker-1", ("worker-0",)),)
    workers[1] = replace(workers[1], ready=True)
    plan = plan_reconciliation(tasks_of(2), workers, 2)
    assert [(r.worker_id, r.revoked) for r in plan.retag] == [("worker-0", {"0_1"})]


def test_scale_down_retires_gracefully_and_survivors_take_over_after_it_exits():
    workers = settled({"worker-0": {"0_0", "0_3"}, "worker-1": {"0_1", "0_4"}, "worker-2": {"0_2"}})

    plan = plan_reconciliation(tasks_of(5), workers, 2)

    # worker-2 has the fewest tasks; it finishes its batch while its task waits.
    assert plan.retire == ("worker-2",)
    assert plan.handovers == (Handover("0_2", "worker-0", ("worker-2",)),)
    assert [(r.worker_id, r.granted, r.revoked) for r in plan.retag] == [("worker-0", set(), set())]

    workers = start_batches(apply_plan(workers, plan), {"worker-0", "worker-1", "worker-2"})
    assert [w.worker_id for w in workers] == ["worker-0", "worker-1"]
    plan = plan_reconciliation(tasks_of(5), workers, 2)
    assert [(r.worker_id, r.granted) for r in plan.retag] == [("worker-0", {"0_2"})]


def test_the_worker_with_fewest_tasks_retires_first():
    workers = settled({"worker-0": {"0_0"}, "worker-1": {"0_1", "0_3"}, "worker-2": {"0_2", "0_4"}})
    assert plan_reconciliation(tasks_of(5), workers, 2).retire == ("worker-0",)


def test_equal_loads_retire_the_highest_ids():
    workers = settled({f"worker-{i}": {f"0_{i}"} for i in range(4)})
    assert plan_reconciliation(tasks_of(4), workers, 2).retire == ("worker-2", "worker-3")


def test_retiring_worker_keeps_its_id_until_it_exits():
    workers = [
        Worker("worker-0", tasks={"0_0"}, held={"0_0"}),
        Worker("worker-1", held={"0_1"}, state=RETIRING),
    ]
    plan = plan_reconciliation(tasks_of(2), workers, 2)
    assert [launch.worker_id for launch in plan.launch] == ["worker-2"]
    assert plan.handovers == (Handover("0_1", "worker-2", ("worker-1",)),)


def test_scale_to_zero_retires_everyone_and_leaves_tasks_unassigned():
    workers = settled({"worker-0": {"0_0"}, "worker-1": {"0_1"}})
    plan = plan_reconciliation(tasks_of(2), workers, 0)
    assert plan.retire == ("worker-0", "worker-1")
    assert plan.unassigned == {"0_0", "0_1"} and plan.target == {}


def test_a_queued_worker_leaves_first_and_is_cancelled_not_tagged_retiring():
    # worker-2 was launched a tick ago and still waits in the run queue; the burst is over.
    workers = settled({"worker-0": {"0_0", "0_3"}, "worker-1": {"0_1"}})
    workers.append(Worker("worker-2", tasks={"0_2"}, started=False))

    plan = plan_reconciliation(tasks_of(4), workers, 2)

    # worker-1 has fewer tasks, but worker-2 has not started: it goes, without a handover wait
    # on any started worker, and it is cancelled rather than tagged retiring.
    assert plan.cancel == ("worker-2",) and plan.retire == ()
    assert plan.handovers == (Handover("0_2", "worker-1", ("worker-2",)),)
    # Cancelled, it is a failed run on the next tick: its task is granted at once.
    workers = apply_plan(workers, plan)
    plan = plan_reconciliation(tasks_of(4), workers, 2)
    assert [(r.worker_id, r.granted) for r in plan.retag] == [("worker-1", {"0_2"})]
    assert not plan.cancel and not plan.handovers and not plan.launch


def test_a_queued_worker_tagged_retiring_is_cancelled():
    # Retired (tags emptied) while queued, before cancelling existed: cancel it now.
    workers = settled({"worker-0": {"0_0", "0_1"}}) + [Worker("worker-1", state=RETIRING, started=False)]
    plan = plan_reconciliation(tasks_of(2), workers, 1)
    assert plan.cancel == ("worker-1",) and plan.retire == () and not plan.launch


def test_a_deferred_worker_keeps_its_tasks_and_is_not_launched():
    workers = settled({"worker-0": {"0_0", "0_2"}, "worker-1": {"0_1", "0_3"}})
    workers[1] = replace(workers[1], state=FAILED)
    plan = plan_reconciliation(tasks_of(4), workers, 2, deferred={"worker-1"})
    assert plan.launch == () and plan.deferred == ("worker-1",)
    # Its tasks wait for it: the healthy worker is not handed what keeps failing.
    assert plan.target["worker-1"] == {"0_1", "0_3"} and not plan.retag
    # Once the backoff is over it comes back with them.
    (launch,) = plan_reconciliation(tasks_of(4), workers, 2).launch
    assert (launch.worker_id, launch.tasks) == ("worker-1", {"0_1", "0_3"})
    # A deferred id that is not wanted anyway changes nothing.
    assert plan_reconciliation(tasks_of(4), workers, 1, deferred={"worker-1"}).deferred == ()


def test_contradictory_input_is_refused():
    with pytest.raises(ValueError, match="listed twice"):
        plan_reconciliation(tasks_of(1), [Worker("worker-0"), Worker("worker-0", state=FAILED)], 1)
    with pytest.raises(ValueError, match="desired_workers"):
        plan_reconciliation(tasks_of(1), [], -1)
