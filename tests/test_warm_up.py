"""A standby's warm-up (``spark/warm_up.py``) against a real broker and Spark: each sub-topology's
query runs once, whatever happens to another's."""

from __future__ import annotations

import time

import pytest

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.records import produce
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.spark.warm_up import WarmUp
from dagster_kstreams.topology import StreamsBuilder

pytestmark = pytest.mark.integration


def test_a_warm_up_late_for_deleted_records_fails_that_query_and_warms_the_next(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path, monkeypatch
):
    """Records deleted after the warm-up read where to start (a repartition topic's consumer purges
    what it processed, here the input's retention): that sub-topology's query fails on them rather
    than read on past a warning of data loss, and the next sub-topology is warmed all the same."""
    words, counts = unique_topic("words"), unique_topic("counts")
    kafka_admin.create_topics({words: 1, counts: 1})
    produce(kafka_bootstrap, words, [(f"k{i}".encode(), f"w{i % 7}".encode()) for i in range(200)])
    builder = StreamsBuilder()
    builder.stream(words).group_by(lambda key, value: value).count().to_stream().to(counts)
    runner = TaskRunner(builder.build(), unique_topic("app"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    runner.run_all()  # the internal topics exist and hold records, as when a standby starts

    kafka_admin.delete_records_before({TopicPartition(words, 0): 150})
    read_offsets = runner.admin.beginning_offsets
    # The offsets as read just before the deletion: the warm-up starts at 100 of the input.
    monkeypatch.setattr(runner.admin, "beginning_offsets", lambda topics: {
        tp: 0 if tp.topic == words else offset for tp, offset in read_offsets(topics).items()})
    warm_up = WarmUp(runner, records=100).start()
    deadline = time.monotonic() + 300
    while not warm_up.done and time.monotonic() < deadline:
        time.sleep(0.2)
    assert warm_up.done and not warm_up.completed
    assert warm_up.warmed == [1]
    assert warm_up.error is not None and warm_up.error.startswith("StreamingQueryException")
