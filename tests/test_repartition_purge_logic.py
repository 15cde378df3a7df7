"""The repartition purge's own rules (spark/internal_topics.py): at most once per interval, only the
task's repartition partitions, and a purge that fails is said, never raised (the task goes on); its
interval is Kafka Streams' setting, in seconds."""

from __future__ import annotations

import logging
import math

from dagster_kstreams.cli import build_parser
from dagster_kstreams.kafka.admin import KafkaAdmin, TopicPartition
from dagster_kstreams.spark.internal_topics import PURGE_INTERVAL_S, REPARTITION_TOPIC_CONFIG, RepartitionPurge


def test_repartition_topics_are_created_as_kafka_streams_creates_them():
    assert REPARTITION_TOPIC_CONFIG == {"cleanup.policy": "delete", "segment.bytes": "52428800", "retention.ms": "-1"}


def test_a_purge_waits_its_interval_and_a_broker_that_does_not_answer_fails_no_task(caplog):
    now = [0.0]
    unreachable = KafkaAdmin("127.0.0.1:1", timeout_s=1.0)
    purge = RepartitionPurge("1_0", unreachable, [TopicPartition("app-store-repartition", 0)], interval_s=30.0,
                             clock=lambda: now[0])
    with caplog.at_level(logging.WARNING):
        now[0] = 29.0
        purge.after_commit({TopicPartition("app-store-repartition", 0): 10})  # within the interval: nothing asked
        assert not caplog.records
        now[0] = 30.0
        purge.after_commit({TopicPartition("app-store-repartition", 0): 10, TopicPartition("input", 0): 99})
    (warning,) = caplog.records
    assert "task 1_0: purging its consumed repartition records failed" in warning.getMessage()
    assert "app-store-repartition-0@10" in warning.getMessage() and "input" not in warning.getMessage()


def test_the_run_command_takes_kafka_streams_purge_interval_in_seconds_and_inf_for_never():
    run = ["run", "m:build", "--app-id", "app", "--all"]
    assert build_parser().parse_args(run).repartition_purge_interval == PURGE_INTERVAL_S == 30.0
    assert build_parser().parse_args([*run, "--repartition-purge-interval", "inf"]).repartition_purge_interval == math.inf
