"""KafkaAdmin and confluent-kafka against the real broker: topics, end offsets, group offsets, lag."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from dagster_kstreams.kafka.admin import KafkaAdmin, KafkaAdminError, TopicPartition
from dagster_kstreams.local.processes import free_port

pytestmark = pytest.mark.integration

PARTITIONS = 3


def _produce_keyed(bootstrap: str, topic: str, count: int) -> list[tuple[bytes, bytes]]:
    """Keyed records placed by the client's partitioner; returns what was written."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    records = [(f"user-{index % 7}".encode(), f"event-{index}".encode()) for index in range(count)]
    for key, value in records:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(15) == 0
    return records


def _read_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list[tuple[int, int, bytes, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}", "enable.auto.commit": False})
    consumer.assign([KafkaTopicPartition(topic, p, 0) for p in range(partitions)])
    rows = []
    try:
        for _ in range(100):
            if len(rows) >= expected:
                break
            for message in consumer.consume(num_messages=500, timeout=0.5):
                assert message.error() is None, message.error()
                rows.append((message.partition(), message.offset(), message.key(), message.value()))
    finally:
        consumer.close()
    return rows


@pytest.fixture(scope="module")
def keyed_topic(kafka_bootstrap, kafka_admin, unique_topic):
    topic = unique_topic("keyed")
    kafka_admin.create_topic(topic, PARTITIONS)
    records = _produce_keyed(kafka_bootstrap, topic, 60)
    return topic, records


def test_keyed_records_round_trip_and_end_offsets_count_them(kafka_bootstrap, kafka_admin, keyed_topic):
    topic, records = keyed_topic
    rows = _read_all(kafka_bootstrap, topic, PARTITIONS, len(records))

    assert sorted((key, value) for _, _, key, value in rows) == sorted(records)
    partitions_of_key: dict[bytes, set[int]] = {}
    for partition, _, key, _ in rows:
        partitions_of_key.setdefault(key, set()).add(partition)
    assert all(len(partitions) == 1 for partitions in partitions_of_key.values()), "a key must stay in one partition"
    assert len({p for p, *_ in rows}) > 1, "7 keys over 3 partitions should not all land in one"
    # Per partition, offsets are 0..n-1 and values keep the produced order.
    per_partition = Counter(partition for partition, *_ in rows)
    for partition in range(PARTITIONS):
        offsets = sorted(offset for p, offset, *_ in rows if p == partition)
        assert offsets == list(range(per_partition[partition]))

    end = kafka_admin.end_offsets(topic)
    assert end == {TopicPartition(topic, p): per_partition[p] for p in range(PARTITIONS)}
    assert kafka_admin.beginning_offsets(topic) == {TopicPartition(topic, p): 0 for p in range(PARTITIONS)}


def test_committed_offsets_of_a_consumer_group_and_lag(kafka_bootstrap, kafka_admin, keyed_topic, unique_topic):
    topic, records = keyed_topic
    group = unique_topic("group")
    end = kafka_admin.end_offsets(topic)
    assert kafka_admin.committed_offsets(group, topic) == {}
    assert kafka_admin.lag(group, topic) == end

    # A real consumer commits partition 0 to 2 and partition 1 to its end; partition 2 stays uncommitted.
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(
            offsets=[KafkaTopicPartition(topic, 0, 2), KafkaTopicPartition(topic, 1, end[TopicPartition(topic, 1)])],
            asynchronous=False,
        )
    finally:
        consumer.close()
    assert kafka_admin.committed_offsets(group, topic) == {
        TopicPartition(topic, 0): 2,
        TopicPartition(topic, 1): end[TopicPartition(topic, 1)],
    }
    assert kafka_admin.committed_offsets(group) == kafka_admin.committed_offsets(group, topic)
    assert kafka_admin.lag(group, topic) == {
        TopicPartition(topic, 0): end[TopicPartition(topic, 0)] - 2,
        TopicPartition(topic, 1): 0,
        TopicPartition(topic, 2): end[TopicPartition(topic, 2)],
    }

    # The admin client moves the group's offsets itself (nobody is a member of the group).
    kafka_admin.commit_offsets(group, {TopicPartition(topic, 2): 1, (topic, 0): 0})
    committed = kafka_admin.committed_offsets(group, topic)
    assert committed[TopicPartition(topic, 2)] == 1
    assert committed[TopicPartition(topic, 0)] == 0


def test_create_topics_is_idempotent_and_checks_partition_count(kafka_admin, unique_topic):
    topic = unique_topic("idempotent")
    kafka_admin.create_topics({topic: 2})
    kafka_admin.create_topics({topic: 2})
    assert kafka_admin.partition_count(topic) == 2
    assert topic in kafka_admin.list_topics()
    with pytest.raises(KafkaAdminError, match=f"topic '{topic}' already exists with 2 partitions, not 4"):
        kafka_admin.create_topics({topic: 4})
    kafka_admin.delete_topics([topic])


def test_missing_topic_is_an_error_naming_it(kafka_admin, unique_topic):
    missing = unique_topic("missing")
    with pytest.raises(KafkaAdminError, match=f"topic '{missing}' does not exist"):
        kafka_admin.partition_counts([missing])
    with pytest.raises(KafkaAdminError, match=f"topic '{missing}' does not exist"):
        kafka_admin.end_offsets(missing)


def test_negative_offset_commit_is_rejected_by_partition(kafka_admin):
    with pytest.raises(KafkaAdminError, match="offset for orders-3 in group 'g' must be >= 0, got -5"):
        kafka_admin.commit_offsets("g", {TopicPartition("orders", 3): -5})


def test_unreachable_broker_is_a_quick_error_naming_bootstrap_servers():
    bootstrap = f"127.0.0.1:{free_port()}"  # nothing listens there
    admin = KafkaAdmin(bootstrap, timeout_s=2)
    with pytest.raises(KafkaAdminError, match=bootstrap.replace(".", r"\.")):
        admin.partition_counts(["anything"])
    with pytest.raises(KafkaAdminError, match=bootstrap.replace(".", r"\.")):
        admin.list_topics()


def test_transient_errors_are_retried_and_others_reported_at_once():
    admin = KafkaAdmin("127.0.0.1:1", timeout_s=5)  # no request is sent: only the retry policy runs
    answers = iter([KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.NOT_COORDINATOR, None])

    def flaky():
        code = next(answers)
        if code is not None:
            raise KafkaException(KafkaError(code))
        return "done"

    assert admin._retrying(flaky, "reading offsets") == "done"

    def broken():
        raise KafkaException(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED))

    with pytest.raises(KafkaAdminError, match="reading offsets failed on 127.0.0.1:1"):
        admin._retrying(broken, "reading offsets")


def test_a_running_tasks_admin_waits_out_an_unreachable_broker_and_a_quick_one_does_not():
    def restarting(codes):
        answers = iter(codes)

        def attempt():
            code = next(answers)
            if code is not None:
                raise KafkaException(KafkaError(code))
            return "offsets"
        return attempt

    # What a broker answers while it shuts down, then nothing, then what it answers while it starts.
    down = [KafkaError.FENCED_LEADER_EPOCH, KafkaError._TRANSPORT, KafkaError.OFFSET_NOT_AVAILABLE,
            KafkaError.NOT_COORDINATOR, None]
    quick = KafkaAdmin("127.0.0.1:1", timeout_s=5)  # no request is sent: only the retry policy runs
    assert quick._retrying(restarting(down[:1] + down[-3:]), "listing offsets") == "offsets"  # leaders moving
    with pytest.raises(KafkaAdminError, match=r"Kafka at 127\.0\.0\.1:1 is unreachable \(listing offsets"):
        quick._retrying(restarting(down), "listing offsets")
    patient = quick.waiting_out_outages(30)
    assert patient._retrying(restarting(down), "listing offsets") == "offsets"
    # Back, but its partitions without leaders yet: librdkafka's "No leaders found" (_NOENT).
    leaderless = [KafkaError._TRANSPORT, KafkaError._NOENT, KafkaError._NOENT, None]
    assert patient._retrying(restarting(leaderless), "listing offsets") == "offsets"
    with pytest.raises(KafkaAdminError, match="listing offsets failed on 127.0.0.1:1"):
        quick._retrying(restarting(leaderless[1:]), "listing offsets")  # a quick call reports it at once

    def never_back():
        raise KafkaException(KafkaError(KafkaError._TRANSPORT))

    started = time.monotonic()
    with pytest.raises(KafkaAdminError, match=r"is unreachable for 1s \(listing offsets"):
        KafkaAdmin("127.0.0.1:1", timeout_s=0.2, outage_s=0.8)._retrying(never_back, "listing offsets")
    assert 0.7 < time.monotonic() - started < 3


class _Metadata:
    topics = {"orders": None, "__consumer_offsets": None}


class _AnswersAfter:
    """An AdminClient whose first metadata requests fail with ``codes``, as librdkafka's do."""

    def __init__(self, *codes: int):
        self.codes, self.requests = list(codes), 0

    def list_topics(self, timeout: float):
        self.requests += 1
        if self.codes:
            raise KafkaException(KafkaError(self.codes.pop(0)))
        return _Metadata()


def test_a_broker_that_was_slow_to_answer_is_asked_again_and_one_that_is_down_is_not():
    admin = KafkaAdmin("127.0.0.1:1", timeout_s=0.2)  # no request is sent: the fake client answers
    admin._client = paused = _AnswersAfter(KafkaError._TIMED_OUT, KafkaError._TIMED_OUT)
    assert admin.list_topics() == {"orders"} and paused.requests == 3
    admin._client = stuck = _AnswersAfter(*[KafkaError._TIMED_OUT] * 3)
    with pytest.raises(KafkaAdminError, match=r"Kafka at 127\.0\.0\.1:1 is unreachable \(listing topics\)"):
        admin.list_topics()
    assert stuck.requests == 3
    admin._client = down = _AnswersAfter(KafkaError._TRANSPORT, KafkaError._TRANSPORT)
    with pytest.raises(KafkaAdminError, match="unreachable"):
        admin.list_topics()
    assert down.requests == 1
