"""The share of a worker's time charged to each task whose batches run at once."""

from time import monotonic, sleep

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dagster_kstreams.topology.task_id import TaskId
from dagster_kstreams.spark.busy_clock import SharedBusyClock
from dagster_kstreams.spark.run_state import RunState


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_batches_running_at_once_split_the_time():
    time = FakeTime()
    clock = SharedBusyClock(time)
    clock.begin("0_0")
    time.now = 2.0  # 0_0 alone for 2 s
    clock.begin("0_1")
    time.now = 6.0  # both for 4 s: 2 s each
    clock.end("0_0")
    time.now = 7.0  # 0_1 alone for 1 s
    clock.end("0_1")
    time.now = 10.0  # nothing runs
    assert clock.share("0_0") == 4.0
    assert clock.share("0_1") == 3.0
    assert clock.share("1_0") == 0.0


def test_a_running_batch_is_charged_up_to_now():
    time = FakeTime()
    clock = SharedBusyClock(time)
    clock.begin("0_0")
    time.now = 1.5
    assert clock.share("0_0") == 1.5


# Each event: which task, begin or end, and how long after the previous event.
events = st.lists(st.tuples(st.sampled_from(["0_0", "0_1", "1_0", "1_1"]), st.booleans(),
                            st.floats(0, 10, allow_nan=False)), max_size=60)


@given(events)
def test_shares_add_up_to_the_time_anything_ran(steps):
    time = FakeTime()
    clock = SharedBusyClock(time)
    running: set[str] = set()
    busy = 0.0
    for task, begins, wait in steps:
        if running:
            busy += wait
        time.now += wait
        if begins and task not in running:
            clock.begin(task)
            running.add(task)
        elif not begins and task in running:
            clock.end(task)
            running.discard(task)
    total = sum(clock.share(task) for task in ["0_0", "0_1", "1_0", "1_1"])
    assert abs(total - busy) <= 1e-6 * max(1.0, busy)
    # No task is charged more than the time it ran alone would have been: at most the busy time.
    assert all(clock.share(task) <= busy + 1e-9 for task in ["0_0", "0_1", "1_0", "1_1"])


def test_a_report_taken_mid_batch_charges_no_more_share_than_busy_time():
    # A worker reports while a batch runs: both the share and the busy time count it up to now,
    # so no report says the task took more of the worker than its batches took (and none goes
    # negative after).
    clock = SharedBusyClock()
    state = RunState(TaskId(0, 0), started=monotonic(), assigned=[], offsets_from={}, end_offsets={},
                     max_records=None, progress=None, fence=None, busy_clock=clock)
    windows = []
    for _ in range(3):
        assert state.begin_batch()
        sleep(0.02)
        windows.append(state.take_window())
        sleep(0.02)
        state.end_batch()
    windows.append(state.take_window())
    for window in windows:  # both clocks read at one instant
        assert 0 <= window.worker_seconds <= window.busy_seconds + 1e-9
    assert windows[0].busy_seconds >= 0.02
    assert sum(window.busy_seconds for window in windows) == pytest.approx(state.busy_seconds)
