"""The share of a worker's time charged to each task whose batches run at once."""

from hypothesis import given
from hypothesis import strategies as st

from dagster_kstreams.spark.busy_clock import SharedBusyClock


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
