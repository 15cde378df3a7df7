"""`dagster-kstreams local up | down | status` and the jar sets, run as a user would run them."""

from __future__ import annotations

import json
import os
import random
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from dagster_kstreams.local.broker import LocalBroker, kafka_cluster_id
from dagster_kstreams.local.processes import process_command_line, port_is_free
from dagster_kstreams.base.jars import jars_dir, resolve_jars

REPO = Path(__file__).resolve().parents[1]
# This suite's own range for brokers it starts (make test's broker is on 19092).
PORT_RANGE = range(29000, 30000, 2)


def _free_port_pair() -> tuple[int, int]:
    candidates = list(PORT_RANGE)
    random.shuffle(candidates)
    for port in candidates:
        if port_is_free(port) and port_is_free(port + 1):
            return port, port + 1
    raise RuntimeError("no free port pair in 29000-29999")


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dagster_kstreams.cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=env or os.environ.copy(),
        stdin=subprocess.DEVNULL,
    )


_FRESH_BROKER_GROUP_OFFSETS = """
import sys
from dagster_kstreams.kafka.admin import KafkaAdmin
from confluent_kafka import Producer
admin = KafkaAdmin(sys.argv[1])
admin.create_topic("t", 2)
producer = Producer({"bootstrap.servers": sys.argv[1]})
for partition in (0, 0, 1):
    producer.produce("t", value=b"x", partition=partition)
assert producer.flush(10) == 0
admin.commit_offsets("fresh-group", {("t", 0): 1, ("t", 1): 1})
print({str(tp): offset for tp, offset in sorted(admin.committed_offsets("fresh-group", "t").items())})
print({str(tp): lag for tp, lag in sorted(admin.lag("fresh-group", "t").items())})
"""


def _assert_one_line_error(result: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("dagster-kstreams: error: ")
    assert fragment in lines[0], lines[0]


@pytest.mark.integration
def test_up_twice_is_harmless_and_down_leaves_no_process(tmp_path: Path):
    port, controller_port = _free_port_pair()
    options = ["--port", str(port), "--controller-port", str(controller_port), "--state-dir", str(tmp_path / "broker"),
               "--heap", "768m"]

    first = _cli("local", "up", *options)
    assert first.returncode == 0, first.stderr
    assert f"bootstrap servers: 127.0.0.1:{port}" in first.stdout
    pid = int(re.search(r"pid (\d+)", first.stdout).group(1))
    assert "kafka.Kafka" in (process_command_line(pid) or "")
    assert "-Xmx768m" in process_command_line(pid)

    # Right after start, while the group coordinator may still be loading, and at the same time:
    # the word count benchmark (its wait for the group coordinator; the systems it compares are
    # skipped but the raw read), and group offsets (a crash in the client library, librdkafka's
    # admin OffsetFetch path, would kill that subprocess).
    bench_output = tmp_path / "wordcount.json"
    bench = subprocess.Popen(
        [sys.executable, "-m", "bench.wordcount", "--records", "2000", "--bootstrap", f"127.0.0.1:{port}",
         "--skip", "kafka-streams", "--skip", "spark-handwritten", "--skip", "dagster-kstreams",
         "--output", str(bench_output)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )
    try:
        fresh = subprocess.run(
            [sys.executable, "-c", _FRESH_BROKER_GROUP_OFFSETS, f"127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )
        assert fresh.returncode == 0, fresh.stderr[-2000:]
        committed, lag = fresh.stdout.strip().splitlines()
        assert committed == "{'t-0': 1, 't-1': 1}"
        assert lag == "{'t-0': 1, 't-1': 0}"  # partition 0 holds 2 records, partition 1 one
        _bench_out, bench_err = bench.communicate(timeout=120)
    finally:
        if bench.poll() is None:
            bench.kill()
    assert bench.returncode == 0, bench_err[-2000:]
    result = json.loads(bench_output.read_text())
    assert result["records"] == 2000
    assert result["systems"]["confluent-kafka read (ceiling)"]["records"] == 2000

    second = _cli("local", "up", *options)
    assert second.returncode == 0, second.stderr
    assert f"already running: Kafka broker pid {pid}" in second.stdout

    status = _cli("local", "status", *options)
    assert status.returncode == 0
    assert f"running: pid {pid}, bootstrap 127.0.0.1:{port}" in status.stdout
    assert "(answers metadata requests)" in status.stdout
    assert LocalBroker(port=port, controller_port=controller_port, state_dir=tmp_path / "broker").answers_metadata()

    down = _cli("local", "down", *options)
    assert down.returncode == 0, down.stderr
    assert "stopped" in down.stdout
    assert process_command_line(pid) is None
    assert port_is_free(port) and port_is_free(controller_port)
    assert not (tmp_path / "broker" / "broker.pid").exists()

    assert _cli("local", "status", *options).returncode == 3
    again = _cli("local", "down", *options)
    assert again.returncode == 0 and "not running" in again.stdout


def test_taken_port_is_a_one_line_error(tmp_path: Path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        result = _cli("local", "up", "--port", str(taken), "--state-dir", str(tmp_path))
    _assert_one_line_error(result, f"broker port {taken} on 127.0.0.1 is already in use")


def test_invalid_broker_setting_is_a_one_line_error_naming_it(tmp_path: Path):
    port, controller_port = _free_port_pair()
    result = _cli(
        "local", "up", "--port", str(port), "--controller-port", str(controller_port),
        "--state-dir", str(tmp_path), "--broker-config", "num.network.threads=many",
    )
    _assert_one_line_error(result, "Invalid value many for configuration num.network.threads")
    assert not (tmp_path / "broker.pid").exists()


def test_missing_java_is_a_one_line_error(tmp_path: Path):
    env = {**os.environ, "PATH": str(tmp_path), "JAVA_HOME": ""}
    env.pop("JAVA_HOME")
    result = _cli("local", "up", "--port", "29998", "--state-dir", str(tmp_path / "b"), env=env)
    _assert_one_line_error(result, "Java is not installed")


def test_missing_maven_is_a_one_line_error_when_jars_are_not_resolved(tmp_path: Path):
    env = {**os.environ, "PATH": str(tmp_path), "DAGSTER_KSTREAMS_HOME": str(tmp_path / "home")}
    result = _cli("local", "jars", "spark-kafka", env=env)
    _assert_one_line_error(result, "Maven (mvn) is not on PATH")


def test_resolved_jars_are_reused_without_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    resolved = resolve_jars("spark-kafka")  # resolves once (or finds the cache)
    names = {path.name for path in resolved}
    assert "spark-sql-kafka-0-10_2.13-4.2.0.jar" in names
    assert "spark-token-provider-kafka-0-10_2.13-4.2.0.jar" in names
    assert any(name.startswith("kafka-clients-") for name in names)
    assert any(name.startswith("commons-pool2-") for name in names)
    # Spark itself and what pyspark's jars/ already has must not be duplicated.
    assert not any(name.startswith(("spark-core", "spark-sql_", "scala-library", "hadoop-client")) for name in names)
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn: a second resolution must not need it
    assert resolve_jars("spark-kafka") == resolved
    assert resolved[0].parent == jars_dir("spark-kafka")


def test_broker_jar_set_has_the_broker_and_storage_tool_and_a_log4j2_binding():
    names = {path.name for path in resolve_jars("broker")}
    assert "kafka_2.13-4.3.1.jar" in names
    assert any(name.startswith("log4j-slf4j2-impl-") for name in names)
    assert any(re.fullmatch(r"slf4j-api-2\..*\.jar", name) for name in names)


def test_cluster_id_has_kafka_uuid_format():
    ids = {kafka_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", cluster_id) for cluster_id in ids)


def test_down_never_signals_a_process_it_did_not_start(tmp_path: Path):
    # A stale pid file whose pid now belongs to something else (here: a sleep we own).
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / "broker.pid").write_text(f"{bystander.pid} 127.0.0.1:29990\n")
        result = _cli("local", "down", "--state-dir", str(tmp_path))
        assert result.returncode == 0, result.stderr
        assert "not running" in result.stdout
        assert bystander.poll() is None, "local down killed a process that is not its broker"
        assert not (tmp_path / "broker.pid").exists()
    finally:
        bystander.kill()
        bystander.wait()
