"""Spark's Kafka source reads exactly one partition's offset range from the real broker."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyspark
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from confluent_kafka import Producer

from dagster_kstreams.local.processes import free_port, port_is_free
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
    # No console progress bar in a run's log, unless asked for.
    assert conf["spark.ui.showConsoleProgress"] == "false"
    assert spark_conf("local[1]", {"spark.ui.showConsoleProgress": "true"})["spark.ui.showConsoleProgress"] == "true"


def test_local_batch_results_skip_the_block_manager_unless_the_user_says_otherwise(spark):
    # A 1m default sent bigger batch results through a put and a fetch of the block manager; under
    # load one was lost ("TaskResultLost") and failed a word-count run.
    assert spark_conf("local[2]")["spark.task.maxDirectResultSize"] == "64m"
    assert spark.sparkContext.getConf().get("spark.task.maxDirectResultSize") == "64m"
    assert spark_conf("local[2]", {"spark.task.maxDirectResultSize": "2m"})["spark.task.maxDirectResultSize"] == "2m"
    assert "spark.task.maxDirectResultSize" not in spark_conf("spark://10.0.0.5:7077")  # results cross the network
    rows = spark.range(300_000).selectExpr("id", "repeat('x', 20) AS pad").toArrow()  # results past the old 1m bound
    assert rows.num_rows == 300_000


def test_the_local_file_system_is_one_rocksdb_can_upload_snapshots_from(spark):
    """RocksDB's state store uploads its snapshots with ``FileSystem.copyFromLocalFile``, which
    casts ``FileSystem.getLocal`` to ``LocalFileSystem``: a raw local file system for ``file:``
    (``fs.file.impl``) fails every snapshot of every stateful task."""
    jvm = spark.sparkContext._jvm
    local = jvm.org.apache.hadoop.fs.FileSystem.getLocal(spark.sparkContext._jsc.hadoopConfiguration())
    assert jvm.java.lang.Class.forName("org.apache.hadoop.fs.LocalFileSystem").isInstance(local)


def test_a_local_session_checkpoints_through_the_projects_file_system_unless_told_otherwise():
    """A local driver sets new files' permissions in process (no `chmod` forked per checkpoint file),
    from the project's jar on its own class path; executors elsewhere keep Hadoop's file system."""
    local = spark_conf("local[2]")
    assert local["spark.hadoop.fs.file.impl"] == "dagster.kstreams.NioLocalFileSystem"
    assert Path(local["spark.driver.extraClassPath"]).name == "dagster-kstreams-hadoop.jar"
    assert Path(local["spark.driver.extraClassPath"]).is_file()
    # Nothing of spark.jars goes there: a class loaded from the driver's class path cannot see them
    # (the producer interceptor, on it, failed to find Kafka's ProducerInterceptor).
    assert not set(local["spark.driver.extraClassPath"].split(os.pathsep)) & set(local["spark.jars"].split(","))
    own = spark_conf("local[2]", {"spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.LocalFileSystem",
                                  "spark.driver.extraClassPath": "/opt/mine.jar"})
    assert own["spark.hadoop.fs.file.impl"] == "org.apache.hadoop.fs.LocalFileSystem"
    assert own["spark.driver.extraClassPath"].split(os.pathsep) == ["/opt/mine.jar", local["spark.driver.extraClassPath"]]
    standalone = spark_conf("spark://10.0.0.5:7077")
    assert "spark.hadoop.fs.file.impl" not in standalone
    assert standalone["spark.driver.extraClassPath"] == local["spark.driver.extraClassPath"]  # one class archive
    assert "spark.driver.extraClassPath" not in spark_conf("spark://10.0.0.5:7077", {"spark.submit.deployMode": "cluster"})


def test_the_local_file_system_sets_permissions_as_hadoops_does(spark, tmp_path):
    jvm = spark.sparkContext._jvm
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"), spark.sparkContext._jsc.hadoopConfiguration())
    assert fs.getClass().getName() == "dagster.kstreams.NioLocalFileSystem"
    path = jvm.org.apache.hadoop.fs.Path(f"file://{tmp_path}/offsets")
    stream = fs.create(path, False)
    stream.write(b"v1")
    stream.close()
    assert (tmp_path / "offsets").stat().st_mode & 0o777 == 0o644  # Hadoop's 666 less its 022 umask
    assert (tmp_path / ".offsets.crc").is_file()  # still checksummed, as Hadoop's default
    for mode in (0o600, 0o751, 0o444, 0o017):
        fs.setPermission(path, jvm.org.apache.hadoop.fs.permission.FsPermission(f"{mode:03o}"))
        assert (tmp_path / "offsets").stat().st_mode & 0o777 == mode
        assert fs.getFileStatus(path).getPermission().toShort() == mode


@pytest.mark.parametrize("master", ["", "local[x]", "mesos://host:5050", "spark:/nohost"])
def test_bad_master_is_a_clear_error_naming_it(master):
    with pytest.raises(SparkSessionError, match=re.escape(f"Spark master {master!r}")):
        build_spark_session(master)


def test_a_standalone_master_nobody_listens_at_is_a_clear_error_before_spark_starts():
    master = f"spark://127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    with pytest.raises(SparkSessionError, match=re.escape(f"Spark master {master!r} is unreachable")):
        build_spark_session(master)
    assert time.monotonic() - started < 5  # Spark itself would retry for a minute


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


_STANDALONE_READ = """
import json, sys
from dagster_kstreams.spark.session import build_spark_session
master, bootstrap, topic = sys.argv[1:4]
spark = build_spark_session(master, {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                                     "spark.ui.enabled": "false", "spark.executor.memory": "512m", "spark.cores.max": "1"})
rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
        .option("assign", json.dumps({topic: [0]}))
        .option("startingOffsets", json.dumps({topic: {"0": 1}}))
        .option("endingOffsets", json.dumps({topic: {"0": 4}}))
        .load().collect())
executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
print(json.dumps({"rows": sorted([r.offset, bytes(r.value).decode()] for r in rows), "executors": executors}))
spark.stop()
"""


def _wait_for_alive_worker(web_port: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/json/", timeout=2) as response:
                if json.load(response).get("aliveworkers", 0) >= 1:
                    return
        except (OSError, ValueError):
            pass  # not up yet (a UI still starting can answer with its HTML page)
        time.sleep(0.5)
    raise AssertionError(f"no Spark worker registered with the master (web UI port {web_port}) in {timeout_s}s")


def test_kafka_read_on_a_standalone_spark_cluster_ships_the_connector_to_executors(kafka_bootstrap, kafka_admin, unique_topic, tmp_path):
    """A non-local master: the executors (other JVMs) get the connector through spark.jars."""
    topic = unique_topic("spark-standalone")
    kafka_admin.create_topic(topic, 1)
    written = _produce_to_partitions(kafka_bootstrap, topic, partitions=1, per_partition=6)

    ports = [port for port in random.sample(range(29500, 29600), 20) if port_is_free(port)][:3]
    master_port, master_web_port, worker_web_port = ports
    spark_class = str(Path(sys.executable).parent / "spark-class")
    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(tmp_path), "SPARK_WORKER_DIR": str(tmp_path / "work")}
    master_url = f"spark://127.0.0.1:{master_port}"
    processes = []
    try:
        for command in (
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(master_port), "--webui-port", str(master_web_port)],
            [spark_class, "org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(worker_web_port)],
        ):
            log = open(tmp_path / f"{command[1].rsplit('.', 1)[1]}.log", "wb")
            processes.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True))
            if len(processes) == 1:
                _wait_for_port(master_port, processes[0])
        _wait_for_alive_worker(master_web_port)
        result = subprocess.run(
            [sys.executable, "-c", _STANDALONE_READ, master_url, kafka_bootstrap, topic],
            capture_output=True, text=True, timeout=240, env=env, stdin=subprocess.DEVNULL,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        report = json.loads(result.stdout.strip().splitlines()[-1])
    finally:
        for process in reversed(processes):
            os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    assert report["rows"] == [[offset, written[0][offset][1].decode()] for offset in range(1, 4)]
    assert report["executors"] >= 2  # the driver plus at least one executor JVM


def _wait_for_port(port: int, process, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, f"Spark master exited with code {process.returncode}"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise AssertionError(f"Spark master did not listen on 127.0.0.1:{port} within {timeout_s}s")
