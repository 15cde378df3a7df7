"""Kafka's default partitioner in Python, checked against Kafka itself three ways:
Kafka's own test vectors, the Java implementation on random keys, and a real broker."""

from __future__ import annotations

import random

import pytest
from confluent_kafka import Producer
from hypothesis import given
from hypothesis import strategies as st

import oracle_harness
from dagster_kstreams.kafka.partitioner import default_partition, murmur2, to_positive

# org.apache.kafka.common.utils.UtilsTest#testMurmur2 (apache/kafka, clients module).
KAFKA_MURMUR2_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]

JAVA_INT_MIN = -(2**31)
JAVA_INT_MAX = 2**31 - 1


@pytest.mark.parametrize(("key", "expected"), KAFKA_MURMUR2_VECTORS)
def test_murmur2_matches_kafka_test_vectors(key, expected):
    assert murmur2(key) == expected


def test_murmur2_accepts_bytearray_and_memoryview_like_bytes():
    key = b"a-little-bit-longer-string"
    assert murmur2(bytearray(key)) == murmur2(memoryview(key)) == murmur2(key)


def test_to_positive_clears_only_the_sign_bit():
    assert to_positive(JAVA_INT_MIN) == 0
    assert to_positive(-1) == JAVA_INT_MAX
    assert to_positive(12345) == 12345


def test_missing_key_and_bad_partition_count_are_errors():
    with pytest.raises(ValueError, match="no key"):
        default_partition(None, 3)
    with pytest.raises(ValueError, match="num_partitions"):
        default_partition(b"k", 0)


@given(st.binary(max_size=64))
def test_murmur2_is_a_java_int(key):
    assert JAVA_INT_MIN <= murmur2(key) <= JAVA_INT_MAX


@given(st.binary(max_size=64), st.integers(min_value=1, max_value=10_000))
def test_partition_is_in_range_and_deterministic(key, num_partitions):
    partition = default_partition(key, num_partitions)
    assert 0 <= partition < num_partitions
    assert default_partition(bytes(key), num_partitions) == partition


@given(st.binary(max_size=64))
def test_one_partition_takes_every_key(key):
    assert default_partition(key, 1) == 0


@given(st.binary(min_size=1, max_size=64), st.integers(min_value=0, max_value=63))
def test_changing_one_byte_changes_the_hash(key, position):
    # For a fixed length every step of murmur2 is a bijection of the running hash, so a one-byte
    # change must change the result. (Catches dropped or mis-indexed tail bytes.)
    position %= len(key)
    changed = bytearray(key)
    changed[position] ^= 0x01
    assert murmur2(bytes(changed)) != murmur2(key)


def _random_keys(count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    keys = [b"", b"\x00", b"\xff" * 7]
    # Every tail length (0-3) and lengths around the 4-byte block boundary, plus text keys.
    keys += [rng.randbytes(rng.randrange(0, 48)) for _ in range(count // 2)]
    keys += [f"user-{rng.randrange(10**9)}".encode() for _ in range(count // 2)]
    return keys


@pytest.mark.parametrize("num_partitions", [1, 3, 12, 1000])
def test_matches_the_java_client_on_random_keys(num_partitions):
    keys = _random_keys(3000, seed=num_partitions)
    java = oracle_harness.java_murmur2_partitions(keys, num_partitions)
    python = [(murmur2(key), default_partition(key, num_partitions)) for key in keys]
    mismatches = [(key, j, p) for key, j, p in zip(keys, java, python) if j != p]
    assert not mismatches, f"{len(mismatches)} keys differ, first: {mismatches[:3]}"


@pytest.mark.integration
def test_librdkafka_murmur2_random_producer_lands_where_default_partition_says(
    kafka_bootstrap, kafka_admin, unique_topic
):
    num_partitions = 7
    topic = unique_topic("partitioner")
    kafka_admin.create_topic(topic, partitions=num_partitions)

    keys = [f"key-{i}".encode() for i in range(500)] + _random_keys(200, seed=7)
    keys = [key for key in keys if key]  # librdkafka sends an empty key as no key
    landed: dict[bytes, int] = {}
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            landed[msg.key()] = msg.partition()

    producer = Producer(
        {"bootstrap.servers": kafka_bootstrap, "partitioner": "murmur2_random", "linger.ms": 5}
    )
    for key in keys:
        producer.produce(topic, key=key, value=b"v", on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert not errors

    expected = {key: default_partition(key, num_partitions) for key in keys}
    assert landed == expected

    # The broker agrees: each partition's log holds exactly the records aimed at it.
    expected_counts = [0] * num_partitions
    for key in keys:
        expected_counts[expected[key]] += 1
    end_offsets = kafka_admin.end_offsets(topic)
    assert [end_offsets[(topic, p)] for p in range(num_partitions)] == expected_counts


@pytest.mark.integration
def test_spark_kafka_sink_lands_keyed_records_where_default_partition_says(
    spark, kafka_bootstrap, kafka_admin, unique_topic
):
    # The Spark path writes with Spark's Kafka sink (the Java producer, no partition column),
    # so a topic it writes must be co-partitioned with what default_partition predicts.
    num_partitions = 5
    topic = unique_topic("spark-partitioner")
    kafka_admin.create_topic(topic, partitions=num_partitions)
    keys = [f"user-{i}".encode() for i in range(300)]

    records = spark.createDataFrame([(key, b"v") for key in keys], "key binary, value binary")
    (
        records.write.format("kafka")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("topic", topic)
        .save()
    )
    landed = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .select("key", "partition")
        .collect()
    )

    assert len(landed) == len(keys)
    assert {bytes(row.key): row.partition for row in landed} == {
        key: default_partition(key, num_partitions) for key in keys
    }
