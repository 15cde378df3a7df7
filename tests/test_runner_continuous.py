"""Tasks that keep running (TaskRunner.start_task) and run_all with sub-topologies pipelined."""

from __future__ import annotations

import time


import pytest

from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.spark.checkpoint import CheckpointReader
from dagster_kstreams.spark.errors import TaskFailedError
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import StreamsBuilder

pytestmark = pytest.mark.integration


def _counting(source: str, sink: str) -> StreamsBuilder:
    builder = StreamsBuilder()
    builder.stream(source).group_by_key().count().to_stream().to(sink)
    return builder


def _long(value: bytes) -> int:
    return int.from_bytes(value, "big", signed=True)


def _until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_a_started_task_processes_records_as_they_arrive_and_stops_gracefully(
        kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path):
    source, sink, app_id = unique_topic("cont-in"), unique_topic("cont-out"), unique_topic("cont")
    kafka_admin.create_topics({source: 1, sink: 1})
    runner = TaskRunner(_counting(source, sink), app_id, kafka_bootstrap, state_location=str(tmp_path), spark=spark)
    running = runner.start_task("0_0")
    try:
        with pytest.raises(TaskFailedError, match="already running in this process"):
            runner.run_task("0_0")
        windows = []
        for round_ in range(3):
            produce(kafka_bootstrap, source, [(b"k", b"x")] * 5 + [(f"r{round_}".encode(), b"x")])
            expected = {"k": 5 * (round_ + 1), **{f"r{r}": 1 for r in range(round_ + 1)}}
            # No new run: the running query picks the records up.
            _until(lambda: final_values(read_topic(kafka_bootstrap, sink), bytes.decode, _long) == expected,
                   60, f"round {round_} counted")
            _until(lambda: running.processed and sum(running.processed.values()) == 6 * (round_ + 1), 30,
                   "the offsets committed")
            windows.append(running.take_result())
        # Windows follow each other: each starts where the last ended, and together cover the input.
        assert [sum(w.offsets_from.values()) for w in windows] == [0] + [sum(w.offsets_to.values()) for w in windows[:-1]]
        assert sum(w.records_in for w in windows) == 18 and all(w.records_in == 6 for w in windows)
        assert all(w.seconds > 0 and w.total_lag_left == 0 for w in windows)
        # Alone in its runner, the task is charged its whole batches' time as its share.
        assert all(w.worker_seconds == pytest.approx(w.seconds, abs=0.01) for w in windows)
        assert sum(kafka_admin.lag(app_id, [source]).values()) == 0
    finally:
        running.stop()
    assert not running.active and running.failure() is None
    # Stopped gracefully: Spark's checkpoint committed the last batch too (nothing to replay),
    # so the checkpoint starts where the group's offsets are.
    committed = CheckpointReader(spark, runner.checkpoint_location("0_0")).committed_source_offsets()
    assert committed == {(source, 0): 18}
    # Released: the task runs again (here as a drain), continuing where it stopped.
    produce(kafka_bootstrap, source, [(b"k", b"x")])
    result = runner.run_task("0_0")
    assert result.records_in == 1
    assert final_values(read_topic(kafka_bootstrap, sink), bytes.decode, _long)["k"] == 16


def test_run_all_pipelines_a_repartition_and_counts_exactly(kafka_bootstrap, kafka_admin, unique_topic, spark,
                                                            tmp_path):
    source, sink, app_id = unique_topic("pipe-in"), unique_topic("pipe-out"), unique_topic("pipe")
    kafka_admin.create_topics({source: 2, sink: 2})
    builder = StreamsBuilder()
    builder.stream(source).flat_map_values(lambda line: line.split()).group_by(lambda _, word: word) \
        .count().to_stream().to(sink)
    lines = [f"w{i % 7} w{i % 3} w{i % 5}" for i in range(3000)]
    produce(kafka_bootstrap, source, [(str(i).encode(), line.encode()) for i, line in enumerate(lines)])
    runner = TaskRunner(builder, app_id, kafka_bootstrap, state_location=str(tmp_path), spark=spark,
                        max_records_per_batch=500)
    results = runner.run_all()
    assert [r.task_id for r in results] == ["0_0", "0_1", "1_0", "1_1"]
    assert sum(r.records_in for r in results if r.subtopology == 0) == 3000
    upstream_batches = sum(r.batches for r in results if r.subtopology == 0)
    # Every word once; the offsets read also count a commit marker per upstream batch and partition.
    assert 9000 <= sum(r.records_in for r in results if r.subtopology == 1) <= 9000 + 2 * upstream_batches
    expected: dict[str, int] = {}
    for line in lines:
        for word in line.split():
            expected[word] = expected.get(word, 0) + 1
    assert final_values(read_topic(kafka_bootstrap, sink), bytes.decode, _long) == expected
    assert all(r.total_lag_left == 0 for r in results)
