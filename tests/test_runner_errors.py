"""Records that cannot be deserialized: fail naming the record, or skip them to a dead-letter topic."""

from __future__ import annotations

import pytest

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.dead_letter import (
    HEADER_OFFSET,
    HEADER_PARTITION,
    HEADER_TOPIC,
)
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.spark.errors import TaskFailedError
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology.consumed_produced import Consumed
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes

pytestmark = pytest.mark.integration


def _long(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


def _sums_topology(source: str, sums: str):
    builder = StreamsBuilder()
    builder.stream(source, Consumed.with_(Serdes.String(), Serdes.Long())) \
        .group_by_key().reduce(lambda total, value: total + value).to_stream().to(sums)
    return builder


def _records():
    # Offset 3 of partition 0 holds a 3-byte value: not a Long.
    return [
        (b"a", _long(1), 0), (b"b", _long(2), 0), (b"a", _long(3), 0),
        (b"a", b"\x00\x01\x02", 0),
        (b"b", _long(5), 0), (b"a", _long(6), 0),
    ]


def test_fail_handler_names_topic_partition_and_offset(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path):
    source, sums = unique_topic("amounts"), unique_topic("sums")
    kafka_admin.create_topics({source: 1, sums: 1})
    produce(kafka_bootstrap, source, _records())
    app_id = unique_topic("app")
    runner = TaskRunner(_sums_topology(source, sums), app_id, kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    with pytest.raises(TaskFailedError) as failure:
        runner.run_task("0_0")
    message = str(failure.value)
    assert f"topic '{source}' partition 0 offset 3" in message
    assert "value" in message and "Long" in message
    # Nothing of the failed batch is committed: the group is where the task started.
    assert kafka_admin.committed_offsets(app_id, source) == {TopicPartition(source, 0): 0}


def test_log_and_continue_sends_the_raw_record_to_the_dead_letter_topic(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    source, sums, dead_letters = unique_topic("amounts"), unique_topic("sums"), unique_topic("dlq")
    kafka_admin.create_topics({source: 1, sums: 1})
    produce(kafka_bootstrap, source, _records())
    app_id = unique_topic("app")
    runner = TaskRunner(_sums_topology(source, sums), app_id, kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark,
                        deserialization_exception_handler="log_and_continue", dead_letter_topic=dead_letters)
    result = runner.run_task("0_0")
    assert result.records_in == 6
    assert result.records_out.get(dead_letters) == 1
    sums_by_key = final_values(read_topic(kafka_bootstrap, sums), bytes.decode,
                               lambda data: int.from_bytes(data, "big", signed=True))
    assert sums_by_key == {"a": 1 + 3 + 6, "b": 2 + 5}
    (dead,) = read_topic(kafka_bootstrap, dead_letters)
    assert (dead.key, dead.value) == (b"a", b"\x00\x01\x02")
    headers = dict(dead.headers)
    assert headers[HEADER_TOPIC] == source.encode()
    assert headers[HEADER_PARTITION] == b"0"
    assert headers[HEADER_OFFSET] == b"3"
    assert kafka_admin.committed_offsets(app_id, source) == {TopicPartition(source, 0): 6}


def test_missing_output_topic_is_named(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path):
    source, sums = unique_topic("amounts"), unique_topic("never-created")
    kafka_admin.create_topics({source: 1})
    runner = TaskRunner(_sums_topology(source, sums), unique_topic("app"), kafka_bootstrap,
                        state_location=str(tmp_path / "state"), spark=spark)
    with pytest.raises(TaskFailedError, match=f"output topic.*'{sums}'.*do not exist"):
        runner.run_task("0_0")
