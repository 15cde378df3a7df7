"""Reading a topic whose first records the broker deleted (retention, ``delete_records``).

A topic of records older than its retention loses them at the broker's next retention check
(every 5 minutes), whenever that falls: a reader that starts at offset 0 must read what is left,
not wait for records that will never come (the Connect word count's "timeout reading the
repartition topic" was this, with records stamped in 2023).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from dagster_kstreams.kafka.records import produce, read_from, read_topic


def _delete_before(bootstrap: str, topic: str, offset: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([KafkaTopicPartition(topic, 0, offset)], request_timeout=30).values():
        future.result()


@pytest.mark.integration
def test_records_deleted_before_a_read_are_skipped_not_waited_for(kafka_bootstrap, kafka_admin, unique_topic):
    topic = unique_topic("cut")
    kafka_admin.create_topics({topic: 1})
    produce(kafka_bootstrap, topic, [(f"k{i}".encode(), f"v{i}".encode(), 0) for i in range(10)])
    _delete_before(kafka_bootstrap, topic, 4)
    started = time.monotonic()
    assert [record.offset for record in read_topic(kafka_bootstrap, topic, timeout_s=20)] == list(range(4, 10))
    assert [record.offset for record in read_from(kafka_bootstrap, {(topic, 0): 0}, timeout_s=20)] == list(range(4, 10))
    _delete_before(kafka_bootstrap, topic, 10)
    assert read_topic(kafka_bootstrap, topic, timeout_s=20) == []
    assert read_from(kafka_bootstrap, {(topic, 0): 0}, timeout_s=20) == []
    assert time.monotonic() - started < 10
