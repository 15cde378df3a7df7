"""The header that tells a replayed batch which of its records a killed attempt already wrote."""

from hypothesis import given
from hypothesis import strategies as st

from dagster_kstreams.spark.batch_writer import HEADER_WRITTEN, written_position

TAG = b"my-app/1_3"


@given(batch=st.integers(0, 10**9), position=st.integers(0, 2**62))
def test_position_of_this_task_and_batch(batch, position):
    headers = {HEADER_WRITTEN: TAG + f"@{batch}:{position}".encode()}
    assert written_position(headers, TAG, batch) == position


def test_other_batches_tasks_and_apps_are_not_ours():
    headers = {HEADER_WRITTEN: TAG + b"@12:7"}
    assert written_position(headers, TAG, 1) is None  # "12:" is not batch 1's prefix
    assert written_position(headers, TAG, 13) is None
    assert written_position(headers, b"my-app/1_30", 12) is None
    assert written_position(headers, b"my-app/1_", 12) is None
    assert written_position(headers, b"other/1_3", 12) is None
    assert written_position({}, TAG, 12) is None


def test_records_written_by_earlier_versions_still_count():
    # Two headers: the task, then "<batch>:<position>".
    legacy = {"__dagster_kstreams.task": TAG, "__dagster_kstreams.position": b"12:7"}
    assert written_position(legacy, TAG, 12) == 7
    assert written_position(legacy, TAG, 1) is None
    assert written_position(legacy, b"other/1_3", 12) is None
