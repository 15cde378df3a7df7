"""Spark's Kafka source reads exactly one partition's offset range from the real broker."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from confluent_kafka import Producer

from dagster_kstreams.spark.session import SparkSessionError, build_spark_session, spark_conf

pytestmark = pytest.mark.integration


def _produce_to_partitions(bootstrap: str, topic: str, partitions: int, per_partition: int) -> dict[int, list[tuple[bytes, bytes]]]:
    """Write ``per_partition`` keyed records to each partition (explicit partition), in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    written: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in range(partitions)}
    for partition in range(partitions):
        for index in range(per_partition):
            key = f"k{partition}-{index % 4}".encode()
            value = f"v{partition}-{index}".encode()
            producer.produce(topic, key=key, value=value, partition=partition)
            written[partition].append((key, value))
    assert producer.flush(15) == 0
    return written


def test_spark_reads_one_partition_offset_range(spark, kafka_bootstrap, kafka_admin, unique_topic):
    topic = unique_topic("spark-range")
    kafka_admin.create_topic(topic, 3)
    written = _produce_to_partitions(kafka_bootstrap, topic, partitions=3, per_partition=10)

    start, end = 2, 7
    rows = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("assign", json.dumps({topic: [1]}))
        .option("startingOffsets", json.dumps({topic: {"1": start}}))
        .option("endingOffsets", json.dumps({topic: {"1": end}}))
        .load()
        .select("key", "value", "partition", "offset")
        .orderBy("offset")
        .collect()
    )

    assert [(row.partition, row.offset) for row in rows] == [(1, offset) for offset in range(start, end)]
    assert [(bytes(row.key), bytes(row.value)) for row in rows] == written[1][start:end]


def test_spark_conf_puts_connector_on_spark_jars_and_keeps_user_settings():
    conf = spark_conf("local[1]", {"spark.jars": "/opt/extra.jar", "spark.sql.shuffle.partitions": "3"})
    jars = conf["spark.jars"].split(",")
    assert jars[0] == "/opt/extra.jar"
    assert any("spark-sql-kafka-0-10_2.13-4.2.0.jar" in jar for jar in jars)
    assert any("kafka-clients" in jar for jar in jars)
    assert conf["spark.master"] == "local[1]"
    assert conf["spark.sql.shuffle.partitions"] == "3"


@pytest.mark.parametrize("master", ["", "local[x]", "mesos://host:5050", "spark:/nohost"])
def test_bad_master_is_a_clear_error_naming_it(master):
    with pytest.raises(SparkSessionError, match=re.escape(f"Spark master {master!r}")):
        build_spark_session(master)


def test_setting_outside_spark_namespace_is_rejected_by_name():
    with pytest.raises(SparkSessionError, match="'shuffle.partitions'"):
        spark_conf("local[1]", {"shuffle.partitions": "2"})


spark_keys = st.from_regex(r"spark\.[a-z]{1,8}(\.[a-zA-Z]{1,8}){0,2}", fullmatch=True).filter(lambda key: key != "spark.jars")
jar_lists = st.lists(st.from_regex(r"/[a-z]{1,8}/[a-z]{1,8}\.jar", fullmatch=True), max_size=3, unique=True)


@settings(max_examples=50, deadline=None)
@given(user=st.dictionaries(spark_keys, st.text(min_size=1, max_size=8), max_size=5), user_jars=jar_lists)
def test_spark_conf_keeps_every_user_setting_and_adds_the_connector_once(user, user_jars):
    conf = spark_conf("local[2]", {**user, **({"spark.jars": ",".join(user_jars)} if user_jars else {})})
    for key, value in user.items():
        assert conf[key] == value
    jars = conf["spark.jars"].split(",")
    assert jars[: len(user_jars)] == user_jars
    assert len(jars) == len(set(jars))
    assert sum("spark-sql-kafka-0-10_2.13" in jar for jar in jars) == 1
