"""Tasks run through a Spark Connect server (``sc://``), against a real broker and a real server.

The server (the ``connect_server`` fixture: ``local[2]`` with the Kafka connector) runs each
task's query, and its ``foreachBatch`` writer in a Python process of the server
(:mod:`dagster_kstreams.spark.remote_writer`); the worker learns progress from the checkpoint.
The same word count runs from the same input through Connect under each guarantee (in a process
of its own, :mod:`connect_word_count`) and on the classic ``local[2]`` session under exactly-once:
under exactly-once the whole record sequence of every partition of its repartition and output
topics must be the same as local mode's; under at-least-once, the counts. One local run, one
Connect client process: the Connect test costs what two word counts through Connect cost.
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
from dagster_kstreams.base.home import LocalStackError
from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.local.connect_server import LocalConnectServer
from dagster_kstreams.local.processes import free_port
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


def _through_connect(url: str, bootstrap: str, source: str, *runs: tuple[str, str, str, str]) -> list[dict]:
    arguments = [argument for run_arguments in runs for argument in run_arguments]
    done = subprocess.run([sys.executable, str(HELPER), url, bootstrap, source, *arguments], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check_run(ran: dict, kafka_bootstrap: str, kafka_admin, source: str, app_id: str, sink: str) -> None:
    # Through Connect, progress is read back from the checkpoint: every record counted, none left.
    upstream = [result for result in ran["results"] if result["subtopology"] == 0]
    assert sum(result["records_in"] for result in upstream) == LINES
    assert all(result["batches"] == 2 for result in upstream)  # 300 lines a partition, 150 a batch
    for topic in (source, ran["repartition"]):
        assert kafka_admin.lag(app_id, topic) == {TopicPartition(topic, 0): 0, TopicPartition(topic, 1): 0}
    counts = final_values(read_topic(kafka_bootstrap, sink), bytes.decode, lambda v: struct.unpack(">q", v)[0])
    assert counts == dict(Counter(word for _, value, _, _ in lines() for word in value.decode().split()))


@pytest.mark.integration
def test_a_word_count_through_connect_writes_what_local_mode_writes(
    kafka_bootstrap, kafka_admin, unique_topic, spark, connect_server, tmp_path
):
    """Exactly-once: the same records, in the same order on every partition, as on ``local[2]``.
    At-least-once (the server's writer with Spark's Kafka sink and its write intents): the same counts."""
    source = unique_topic("connect-lines")
    kafka_admin.create_topics({source: 2})
    produce(kafka_bootstrap, source, lines())
    runs = {}
    for name in ("local", "connect", "connect-at-least-once"):
        sink, app_id = unique_topic(f"connect-counts-{name}"), unique_topic(f"connect-app-{name}")
        kafka_admin.create_topics({sink: 2})
        guarantee = AT_LEAST_ONCE if name.endswith("at-least-once") else EXACTLY_ONCE_V2
        runs[name] = (sink, app_id, str(tmp_path / name), guarantee)
    ran = dict(zip(("connect", "connect-at-least-once"), _through_connect(
        connect_server, kafka_bootstrap, source, runs["connect"], runs["connect-at-least-once"])))
    ran["local"] = run(spark, kafka_bootstrap, source, *runs["local"])
    for name, (sink, app_id, _state, _guarantee) in runs.items():
        _check_run(ran[name], kafka_bootstrap, kafka_admin, source, app_id, sink)
    outputs = {name: (_by_partition(kafka_bootstrap, ran[name]["repartition"]),
                      _by_partition(kafka_bootstrap, runs[name][0])) for name in ("local", "connect")}
    assert outputs["connect"] == outputs["local"]
    print("\nword count through Connect {connect:.1f} s exactly-once, {connect-at-least-once:.1f} s at-least-once; "
          "local[2] {local:.1f} s exactly-once (load average {load:.1f})".format(
              load=os.getloadavg()[0], **{name: result["seconds"] for name, result in ran.items()}))


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


@pytest.mark.integration
def test_a_connect_server_that_exits_at_start_is_said_in_one_line_naming_its_log(tmp_path):
    server = LocalConnectServer(tmp_path / "connect", port=free_port(), cores=0)  # local[0]: Spark refuses it
    with pytest.raises(LocalStackError) as exited:
        server.start()
    assert str(exited.value) == f"the Spark Connect server exited at start (log {server.log_file})"
    assert "Asked to run locally with 0 threads" in server.log_file.read_text()  # the log says why
    server.stop()
