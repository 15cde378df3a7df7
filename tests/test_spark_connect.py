"""Tasks run through a Spark Connect server (``sc://``), against a real broker and a real server.

The server (the ``connect_server`` fixture: ``local[2]`` with the Kafka connector) runs each
task's query, and its ``foreachBatch`` writer in a Python process of the server
(:mod:`dagster_kstreams.spark.remote_writer`); the worker learns progress from the checkpoint.
The same word count runs from the same input once through Connect (in a process of its own:
:mod:`connect_word_count`) and once on the classic ``local[2]`` session, and the whole record
sequence of every partition of its repartition and output topics must be the same.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.connect_word_count import LINES, lines, run
from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.spark.checkpoint import CheckpointReader
from dagster_kstreams.spark.errors import SparkSessionError
from dagster_kstreams.spark.session import build_spark_session
from dagster_kstreams.spark.transactional_writer import AT_LEAST_ONCE, EXACTLY_ONCE_V2

HELPER = Path(__file__).with_name("connect_word_count.py")


def _by_partition(bootstrap: str, topic: str) -> dict[int, list[tuple[bytes, bytes]]]:
    sequences: dict[int, list[tuple[bytes, bytes]]] = {}
    for record in read_topic(bootstrap, topic):
        sequences.setdefault(record.partition, []).append((record.key, record.value))
    return sequences


def _through_connect(url: str, *arguments: str) -> dict:
    done = subprocess.run([sys.executable, str(HELPER), url, *arguments], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.integration
@pytest.mark.parametrize("guarantee", [EXACTLY_ONCE_V2, AT_LEAST_ONCE])
def test_a_word_count_through_connect_writes_what_local_mode_writes(
    guarantee, kafka_bootstrap, kafka_admin, unique_topic, spark, connect_server, tmp_path
):
    source = unique_topic("connect-lines")
    kafka_admin.create_topics({source: 2})
    produce(kafka_bootstrap, source, lines())
    outputs, seconds = {}, {}
    for name in ("connect", "local"):
        sink, app_id = unique_topic(f"connect-counts-{name}"), unique_topic(f"connect-app-{name}")
        kafka_admin.create_topics({sink: 2})
        arguments = (kafka_bootstrap, source, sink, app_id, str(tmp_path / name), guarantee)
        ran = _through_connect(connect_server, *arguments) if name == "connect" else run(spark, *arguments)
        seconds[name] = ran["seconds"]
        # Through Connect, progress is read back from the checkpoint: every record counted, none left.
        upstream = [result for result in ran["results"] if result["subtopology"] == 0]
        assert sum(result["records_in"] for result in upstream) == LINES
        assert all(result["batches"] == 2 for result in upstream)  # 300 lines a partition, 150 a batch
        repartition = ran["repartition"]
        for topic in (source, repartition):
            assert kafka_admin.lag(app_id, topic) == {TopicPartition(topic, 0): 0, TopicPartition(topic, 1): 0}
        outputs[name] = (_by_partition(kafka_bootstrap, repartition), _by_partition(kafka_bootstrap, sink))
        counts = final_values(read_topic(kafka_bootstrap, sink), bytes.decode, lambda v: struct.unpack(">q", v)[0])
        assert counts == dict(Counter(word for _, value, _, _ in lines() for word in value.decode().split()))
    assert outputs["connect"] == outputs["local"]
    print(f"\n{guarantee}: word count through Connect {seconds['connect']:.1f} s, local[2] {seconds['local']:.1f} s "
          f"(load average {os.getloadavg()[0]:.1f})")


def test_an_unreachable_connect_server_is_named_in_one_line():
    with pytest.raises(SparkSessionError) as unreachable:
        build_spark_session("sc://127.0.0.1:1")
    assert str(unreachable.value) == ("Spark Connect server 'sc://127.0.0.1:1' is unreachable (127.0.0.1:1: Connection "
                                      "refused): is a Spark Connect server running there?")


@pytest.mark.integration
def test_connect_is_refused_in_one_line_in_a_process_that_runs_a_classic_session(spark, connect_server):
    with pytest.raises(SparkSessionError, match="a classic SparkSession already runs in this process"):
        build_spark_session(connect_server)


def test_a_checkpoint_that_is_not_local_cannot_be_read_without_a_classic_session():
    with pytest.raises(SparkSessionError, match="not a local directory: it is read through Hadoop's FileSystem"):
        CheckpointReader(None, "hdfs://namenode/state/app/tasks/0_0/checkpoint")
