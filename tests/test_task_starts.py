"""Tasks started at once (``task_starts.start_at_once``): every start ends before it returns, the
started and the failed come back in the order given, and starts overlap, at most a bound at a time."""

import threading
import time

from dagster_kstreams.spark.task_starts import STARTING_AT_ONCE, start_at_once
from dagster_kstreams.topology.task_id import TaskId


def test_every_start_is_called_and_results_keep_the_given_order():
    tasks = [TaskId(1, 3), TaskId(0, 1), TaskId(0, 0)]
    started, failed = start_at_once({task: (lambda task=task: f"running {task}") for task in tasks})
    assert list(started) == tasks
    assert started == {task: f"running {task}" for task in tasks}
    assert failed == {}


def test_a_failed_start_is_returned_and_the_others_still_start():
    error = RuntimeError("fenced")

    def fails():
        raise error

    started, failed = start_at_once({TaskId(0, 0): lambda: "a", TaskId(0, 1): fails, TaskId(0, 2): lambda: "c"})
    assert started == {TaskId(0, 0): "a", TaskId(0, 2): "c"}
    assert failed == {TaskId(0, 1): error}


def test_starts_overlap_in_time():
    # Two starts that each wait for the other: one after another, neither would get past the barrier.
    barrier = threading.Barrier(2, timeout=10)
    started, failed = start_at_once({TaskId(0, p): (lambda: barrier.wait()) for p in range(2)})
    assert failed == {} and len(started) == 2


def test_at_most_the_bound_start_at_a_time():
    lock = threading.Lock()
    now = most = 0

    def start():
        nonlocal now, most
        with lock:
            now += 1
            most = max(most, now)
        time.sleep(0.05)
        with lock:
            now -= 1

    started, _ = start_at_once({TaskId(0, p): start for p in range(3 * STARTING_AT_ONCE)})
    assert len(started) == 3 * STARTING_AT_ONCE
    assert 1 < most <= STARTING_AT_ONCE


def test_nothing_to_start():
    assert start_at_once({}) == ({}, {})
