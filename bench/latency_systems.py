"""The two systems the latency bench measures, each started, checked and stopped the same way:
dagster-kstreams (a code location, a Dagster instance and ``dagster-daemon run``: the lag sensor
launches one worker run) and Kafka Streams 4.3.1 (``kstreams.oracle.LatencyApp``, tests/oracle)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

import dagster as dg

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the Kafka Streams harness lives there

import oracle_harness  # noqa: E402

from dagster_kstreams.local.code_location_server import CodeLocationServer  # noqa: E402
from dagster_kstreams.local.daemon import DagsterDaemon  # noqa: E402

DAGSTER = "dagster-kstreams"
KAFKA_STREAMS = "kafka-streams"
SYSTEMS = (DAGSTER, KAFKA_STREAMS)

CODE_LOCATION = '''
import dagster as dg

from assets.users_per_country import build_defs
from dagster_kstreams.orchestration.resources import KafkaResource, KStreamsSparkResource
from dagster_kstreams.orchestration.workers import ElasticWorkers
from dagster_kstreams.scaling import ScalingConfig

S = {settings!r}

defs = build_defs(
    app_id=S["app_id"],
    users=S["source"],
    users_per_country=S["sink"],
    state_location=S["state"],
    processing_guarantee=S["processing_guarantee"],
    partitions=S["partitions"],
    elastic_workers=ElasticWorkers(
        scaling=ScalingConfig(min_workers=1, max_workers=1),
        sensor_interval_seconds=S["sensor_interval"],
        default_status=dg.DefaultSensorStatus.RUNNING,
        heartbeat_interval_seconds=2,
        heartbeat_timeout_seconds=60,
        startup_timeout_seconds=300,
        **S["worker_options"],
    ),
    resources={{
        "kafka": KafkaResource(bootstrap_servers=S["bootstrap"]),
        "pyspark": KStreamsSparkResource(master=S["master"], spark_config=S["spark_config"]),
    }},
)
'''

SPARK_CONFIG = {
    "spark.ui.enabled": "false", "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
    "spark.driver.memory": "1g",
}

DAGSTER_YAML = (REPO / "deploy" / "dagster.yaml").read_text()


class DagsterSystem:
    label = "dagster-kstreams (1 worker, dagster-daemon)"

    def __init__(self, args, bootstrap: str, directory: Path, names: dict):
        self.args, self.bootstrap, self.directory, self.names = args, bootstrap, directory, names
        self.daemon = None
        self.code_server = None
        self.log_file = None
        self.settings = {
            "source": names["input"], "sink": names["output"], "app_id": names["app_id"],
            "state": str(directory / "state"), "bootstrap": bootstrap, "master": args.master,
            "spark_config": {**SPARK_CONFIG, **json.loads(args.spark_conf or "{}")},
            "sensor_interval": args.sensor_interval, "worker_options": dict(args.worker_option),
            "processing_guarantee": args.processing_guarantee, "partitions": args.partitions,
        }
        self.reads_at_commit = args.processing_guarantee == "exactly_once_v2"
        if self.reads_at_commit:
            self.label = "dagster-kstreams (1 worker, daemon, exactly-once)"

    def start(self) -> None:
        home = self.directory / "dagster_home"
        home.mkdir(parents=True)
        (home / "dagster.yaml").write_text(DAGSTER_YAML)
        code = self.directory / "bench_defs.py"
        code.write_text(CODE_LOCATION.format(settings=self.settings))
        workspace = self.directory / "workspace.yaml"
        self.log_file = (self.directory / "daemon.log").open("wb")
        env = {**os.environ, "DAGSTER_HOME": str(home),
               "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        if self.args.code_location == "server":
            self.code_server = CodeLocationServer(code, "bench", self.log_file, cwd=self.directory, env=env)
            self.code_server.wait_ready()
            self.code_server.write_workspace(workspace)
        else:
            workspace.write_text(f"load_from:\n  - python_file: {code}\n")
        self.daemon = DagsterDaemon(home, workspace, self.log_file, cwd=self.directory, env=env)

    def check(self) -> None:
        if self.daemon is not None and self.daemon.poll() is not None:
            raise RuntimeError(f"dagster-daemon exited: {self.tail()}")

    def tail(self) -> str:
        path = self.directory / "daemon.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> dict:
        info = {"settings": {k: v for k, v in self.settings.items() if k not in ("state", "bootstrap")}}
        try:
            info["worker_runs"] = self._runs()
        except Exception as error:  # informational only
            info["worker_runs"] = repr(error)
        if self.daemon is not None:
            self.daemon.stop()
        if self.code_server is not None:
            self.code_server.stop()
        if self.log_file is not None:
            self.log_file.close()
        return info

    def _runs(self) -> list:
        with dg.DagsterInstance.from_config(str(self.directory / "dagster_home")) as instance:
            return [{"run_id": r.dagster_run.run_id, "status": r.dagster_run.status.value,
                     "worker": r.dagster_run.tags.get("dagster_kstreams/worker", "?")}
                    for r in instance.get_run_records(dg.RunsFilter())]


class KafkaStreamsSystem:
    def __init__(self, args, bootstrap: str, directory: Path, names: dict):
        self.args, self.bootstrap, self.directory, self.names = args, bootstrap, directory, names
        self.label = f"Kafka Streams 4.3.1 (cache off, commit {args.ks_commit_interval_ms} ms)"
        self.reads_at_commit = False
        self.process: Optional[subprocess.Popen] = None
        self.lines: list[str] = []
        self.stderr = None

    def start(self) -> None:
        self.stderr = (self.directory / "streams.stderr").open("wb")
        self.process = oracle_harness.start_latency_app(
            self.bootstrap, str(self.directory / "state"), self.names["app_id"], self.names["input"],
            self.names["output"], commit_interval_ms=self.args.ks_commit_interval_ms, stderr=self.stderr)
        reader = threading.Thread(target=self._read_stdout, name="streams-stdout", daemon=True)
        reader.start()

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.strip())

    def check(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"Kafka Streams exited with {self.process.returncode}: {self.tail()}")

    def tail(self) -> str:
        path = self.directory / "streams.stderr"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> dict:
        info: dict = {"commit.interval.ms": self.args.ks_commit_interval_ms}
        if self.process is not None:
            if self.process.poll() is None:
                try:
                    self.process.stdin.write("stop\n")
                    self.process.stdin.close()
                except OSError:
                    pass
                try:
                    self.process.wait(timeout=90)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            time.sleep(0.2)
            for line in self.lines:
                try:
                    parsed = json.loads(line)
                except ValueError:
                    continue
                if parsed.get("stopped"):
                    info.update(parsed)
        if self.stderr is not None:
            self.stderr.close()
        return info
