"""Tasks run through a Spark Connect server (``sc://``), against a real broker and a real server.

The server (the ``connect_server`` fixture: ``local[2]`` with the Kafka connector) runs each
task's query, and its ``foreachBatch`` writer in a Python process of its own
(:mod:`dagster_kstreams.spark.remote_writer`); the worker learns progress from the checkpoint.
Each test runs the same word count from the same input once through Connect and once on a classic
``local[2]`` session, and compares the whole record sequence of every output partition.
"""

from __future__ import annotations

import struct
import time
from collections import Counter

import pytest

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.spark.checkpoint import CheckpointReader
from dagster_kstreams.spark.errors import SparkSessionError
from dagster_kstreams.spark.jvm import is_connect
from dagster_kstreams.spark.session import build_spark_session
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.spark.transactional_writer import AT_LEAST_ONCE, EXACTLY_ONCE_V2
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Consumed, Produced
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.serdes import Serdes

LINES = 600
BATCH = 150
BASE_TIME = 1_700_000_000_000


def _split(line: str) -> list[str]:
    return line.split()


def _by_word(_key: str, word: str) -> str:
    return word


def _word_count(source: str, sink: str) -> StreamsBuilder:
    builder = StreamsBuilder()
    (builder.stream(source, Consumed.with_(Serdes.String(), Serdes.String()))
     .flat_map_values(_split)
     .group_by(_by_word, Grouped.with_(Serdes.String(), Serdes.String()))
     .count()
     .to_stream()
     .to(sink, Produced.with_(Serdes.String(), Serdes.Long())))
    return builder


def _lines() -> list[tuple[bytes, bytes, int, int]]:
    return [(f"k{i}".encode(), f"w{i % 7} w{i % 11} w{i % 13}".encode(), i % 2, BASE_TIME + i) for i in range(LINES)]


def _by_partition(bootstrap: str, topic: str) -> dict[int, list[tuple[bytes, bytes]]]:
    sequences: dict[int, list[tuple[bytes, bytes]]] = {}
    for record in read_topic(bootstrap, topic):
        sequences.setdefault(record.partition, []).append((record.key, record.value))
    return sequences


@pytest.fixture(scope="module")
def connect_session(connect_server):
    session = build_spark_session(connect_server)
    assert is_connect(session)
    return session


@pytest.mark.integration
@pytest.mark.parametrize("guarantee", [EXACTLY_ONCE_V2, AT_LEAST_ONCE])
def test_a_word_count_through_connect_writes_what_local_mode_writes(
    guarantee, kafka_bootstrap, kafka_admin, unique_topic, spark, connect_session, tmp_path
):
    source = unique_topic("connect-lines")
    kafka_admin.create_topics({source: 2})
    lines = _lines()
    produce(kafka_bootstrap, source, lines)
    outputs, seconds = {}, {}
    for name, session in (("connect", connect_session), ("local", spark)):
        sink, app_id = unique_topic(f"connect-counts-{name}"), unique_topic(f"connect-app-{name}")
        kafka_admin.create_topics({sink: 2})
        runner = TaskRunner(_word_count(source, sink), app_id, kafka_bootstrap, state_location=str(tmp_path / name),
                            spark=session, max_records_per_batch=BATCH, processing_guarantee=guarantee)
        started = time.monotonic()
        results = runner.run_all(parallelism=1)  # one task after another: the same batches either way
        seconds[name] = time.monotonic() - started
        # Progress read back from the checkpoint: every record of each task counted, none left.
        upstream = [result for result in results if result.subtopology == 0]
        assert sum(result.records_in for result in upstream) == LINES
        assert all(result.batches == 2 for result in upstream)  # 300 lines a partition, 150 a batch
        assert kafka_admin.lag(app_id, source) == {TopicPartition(source, 0): 0, TopicPartition(source, 1): 0}
        [repartition] = runner.application.repartition_topics
        assert kafka_admin.lag(app_id, repartition) == {TopicPartition(repartition, 0): 0,
                                                        TopicPartition(repartition, 1): 0}
        outputs[name] = (_by_partition(kafka_bootstrap, repartition), _by_partition(kafka_bootstrap, sink))
        counts = final_values(read_topic(kafka_bootstrap, sink), bytes.decode, lambda v: struct.unpack(">q", v)[0])
        assert counts == dict(Counter(word for _, value, _, _ in lines for word in value.decode().split()))
    assert outputs["connect"] == outputs["local"]
    print(f"\n{guarantee}: word count through Connect {seconds['connect']:.1f} s, local[2] {seconds['local']:.1f} s")


@pytest.mark.integration
def test_a_task_through_connect_continues_from_its_checkpoint(
    kafka_bootstrap, kafka_admin, unique_topic, connect_session, tmp_path
):
    source, sink, app_id = unique_topic("connect-more"), unique_topic("connect-more-out"), unique_topic("connect-more")
    kafka_admin.create_topics({source: 2, sink: 2})
    lines = _lines()
    produce(kafka_bootstrap, source, lines[:300])

    def runner():
        return TaskRunner(_word_count(source, sink), app_id, kafka_bootstrap, state_location=str(tmp_path),
                          spark=connect_session, max_records_per_batch=BATCH)

    runner().run_all(parallelism=1)
    produce(kafka_bootstrap, source, lines[300:])
    second = runner().run_all(parallelism=1)
    assert sum(result.records_in for result in second if result.subtopology == 0) == 300  # only the new ones
    counts = final_values(read_topic(kafka_bootstrap, sink), bytes.decode, lambda v: struct.unpack(">q", v)[0])
    assert counts == dict(Counter(word for _, value, _, _ in lines for word in value.decode().split()))


def test_an_unreachable_connect_server_is_named_in_one_line():
    with pytest.raises(SparkSessionError) as unreachable:
        build_spark_session("sc://127.0.0.1:1")
    assert str(unreachable.value) == ("Spark Connect server 'sc://127.0.0.1:1' is unreachable (127.0.0.1:1: Connection "
                                      "refused): is a Spark Connect server running there?")


def test_a_state_location_that_is_not_local_is_refused_through_connect_in_one_line(connect_session):
    with pytest.raises(SparkSessionError, match="not a local directory: it is read through Hadoop's FileSystem"):
        CheckpointReader(connect_session, "hdfs://namenode/state/app/tasks/0_0/checkpoint")
