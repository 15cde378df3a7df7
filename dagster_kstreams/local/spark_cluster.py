"""A standalone Spark cluster on 127.0.0.1 from the pip package: one master, one worker.

Worker runs whose ``KStreamsSparkResource(master="spark://...")`` points here are each their own
Spark application, with executors on this cluster's worker, as they would be on a real one. It
is started with the package's ``spark-class`` (``org.apache.spark.deploy.master.Master`` and
``...worker.Worker``), each a JVM in its own session, recorded in a pid file of its state
directory; ``stop`` signals exactly those pids, and only while they still run these classes.
The master's ports go into ``cluster.json`` beside them, so that a ``status`` or ``stop`` given no
ports finds the cluster ``start`` made on other ports, as the local broker's pid file does.

The processes get the caller's environment without ``PYTHONPATH`` and ``PYSPARK_PYTHON``: an
executor must find the project through what its application ships (``spark.submit.pyFiles``,
``dagster_kstreams.spark.project_archive``), as on a cluster of other machines.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pyspark

from dagster_kstreams.base.home import LocalStackError, state_home
from dagster_kstreams.local.processes import HOST, port_is_free, process_command_line, terminate_with_parent

__all__ = ["LocalSparkCluster", "SparkClusterStatus", "DEFAULT_MASTER_PORT", "DEFAULT_WEBUI_PORT"]

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
DEFAULT_MASTER_PORT = 7077
DEFAULT_WEBUI_PORT = 8080
CLUSTER_FILE = "cluster.json"  # in the state directory: the running master's ports
_ENVIRONMENT_LEFT_OUT = ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME")


def spark_class() -> Path:
    """The pip package's ``spark-class`` (it finds its Spark home beside itself)."""
    return Path(pyspark.__file__).parent / "bin" / "spark-class"


@dataclass(frozen=True)
class SparkClusterStatus:
    running: bool
    master_url: str
    webui_url: str
    cores: int
    state_dir: Path

    def describe(self) -> str:
        if self.running:
            return f"Spark cluster running: master {self.master_url}, {self.cores} cores, UI {self.webui_url}"
        return f"Spark cluster not running (state {self.state_dir})"


class LocalSparkCluster:
    """A master and one worker with ``cores`` cores and ``memory`` for executors.

    ``cores`` is what the worker offers, not what the machine has: each worker run's application
    takes ``spark.cores.max`` of them (README, "Beyond one machine"), so a cluster for N worker
    runs and S standbys offers at least ``(N + S) * spark.cores.max``.

    Ports left None are those of the master this state directory runs (recorded by :meth:`start`),
    or else ``DEFAULT_MASTER_PORT`` and ``DEFAULT_WEBUI_PORT``.
    """

    def __init__(self, state_dir: Optional[Path] = None, port: Optional[int] = None,
                 webui_port: Optional[int] = None, cores: int = 4, memory: str = "4g",
                 stop_with_parent: bool = False, startup_timeout_s: float = 90.0):
        self.state_dir = Path(state_dir) if state_dir else state_home() / "spark-cluster"
        recorded = self._recorded_ports() if port is None or webui_port is None else {}
        self.port = port if port is not None else recorded.get("port", DEFAULT_MASTER_PORT)
        self.webui_port = webui_port if webui_port is not None else recorded.get("webui_port", DEFAULT_WEBUI_PORT)
        self.cores, self.memory = cores, memory
        self.stop_with_parent = stop_with_parent
        self.startup_timeout_s = startup_timeout_s
        self._launched: dict[str, subprocess.Popen] = {}  # the roles this object started

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    @property
    def webui_url(self) -> str:
        return f"http://{HOST}:{self.webui_port}"

    def _pid_file(self, role: str) -> Path:
        return self.state_dir / f"{role}.pid"

    def _log_file(self, role: str) -> Path:
        return self.state_dir / f"{role}.log"

    def _recorded_ports(self) -> dict[str, int]:
        """``{"port", "webui_port"}`` of the master this state directory runs; empty if none runs."""
        if self._running_pid("master") is None:
            return {}
        try:
            recorded = json.loads((self.state_dir / CLUSTER_FILE).read_text())
            return {name: int(recorded[name]) for name in ("port", "webui_port")}
        except (OSError, ValueError, KeyError, TypeError):
            return {}

    def _running_pid(self, role: str) -> Optional[int]:
        """The recorded pid of ``role`` if it still runs that Spark class."""
        try:
            pid = int(self._pid_file(role).read_text().strip())
        except (OSError, ValueError):
            return None
        main_class = MASTER_CLASS if role == "master" else WORKER_CLASS
        return pid if main_class in (process_command_line(pid) or "") else None

    def master_state(self, timeout_s: float = 2.0) -> Optional[dict[str, Any]]:
        """The master's JSON (``/json/``: workers, active and completed applications), or None."""
        try:
            with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=timeout_s) as response:
                return json.load(response)
        except (OSError, urllib.error.URLError, ValueError):
            return None

    def alive_cores(self) -> int:
        state = self.master_state() or {}
        return sum(worker.get("cores", 0) for worker in state.get("workers", []) if worker.get("state") == "ALIVE")

    def status(self) -> SparkClusterStatus:
        running = self._running_pid("master") is not None and self._running_pid("worker") is not None
        return SparkClusterStatus(running, self.master_url, self.webui_url,
                                  self.alive_cores() if running else 0, self.state_dir)

    def start(self) -> SparkClusterStatus:
        """Start the master and the worker (each unless it runs) and wait until the worker is ALIVE."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if self._running_pid("master") is None:
            for port, name in ((self.port, "master port"), (self.webui_port, "master web UI port")):
                if not port_is_free(port):
                    raise LocalStackError(f"Spark cluster: the {name} {HOST}:{port} is taken by another process")
            self._launch("master", [MASTER_CLASS, "--host", HOST, "--port", str(self.port),
                                    "--webui-port", str(self.webui_port)])
            (self.state_dir / CLUSTER_FILE).write_text(json.dumps({"port": self.port, "webui_port": self.webui_port}))
        if self._running_pid("worker") is None:
            work_dir = self.state_dir / "work"
            work_dir.mkdir(exist_ok=True)
            # Port 0: the worker and its UI on any free port, so that two clusters can share a host.
            self._launch("worker", [WORKER_CLASS, self.master_url, "--host", HOST, "--cores", str(self.cores),
                                    "--memory", self.memory, "--port", "0", "--webui-port", "0",
                                    "--work-dir", str(work_dir)])
        self._wait_until_ready()
        return self.status()

    def _launch(self, role: str, arguments: list[str]) -> None:
        environment = {key: value for key, value in os.environ.items() if key not in _ENVIRONMENT_LEFT_OUT}
        environment |= {"SPARK_LOCAL_IP": HOST, "SPARK_NO_DAEMONIZE": "1"}
        with self._log_file(role).open("ab") as log:
            process = subprocess.Popen(
                [str(spark_class()), *arguments], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=environment, cwd=self.state_dir, start_new_session=True,
                preexec_fn=terminate_with_parent if self.stop_with_parent else None)
        self._pid_file(role).write_text(str(process.pid))
        self._launched[role] = process

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            for role in ("master", "worker"):
                if self._exited(role):
                    raise LocalStackError(f"the Spark {role} exited at start: {self._last_line(role)} "
                                          f"(log {self._log_file(role)})")
            if self.alive_cores() >= self.cores:
                return
            time.sleep(0.3)
        raise LocalStackError(f"the Spark cluster at {self.master_url} had no ALIVE worker after "
                              f"{self.startup_timeout_s:.0f}s; see {self.state_dir}")

    def _exited(self, role: str) -> bool:
        """Whether ``role`` has stopped; for a process this object started, by its exit status: while
        ``spark-class`` execs Java, the process's command line reads empty for a moment."""
        process = self._launched.get(role)
        if process is not None:
            return process.poll() is not None
        return self._running_pid(role) is None

    def _last_line(self, role: str) -> str:
        try:
            lines = [line for line in self._log_file(role).read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return "no log"
        telling = [line for line in lines if "Exception" in line or "ERROR" in line]
        return (telling or lines or ["no output"])[-1].strip()[:300]

    def stop(self, timeout_s: float = 20.0) -> bool:
        """Stop the worker (its executors with it), then the master; True if either was running."""
        stopped = False
        for role in ("worker", "master"):
            pid = self._running_pid(role)
            if pid is not None:
                os.kill(pid, signal.SIGTERM)
                if not self._wait_gone(pid, timeout_s):
                    os.kill(pid, signal.SIGKILL)
                    self._wait_gone(pid, 10.0)
                stopped = True
            self._pid_file(role).unlink(missing_ok=True)
        (self.state_dir / CLUSTER_FILE).unlink(missing_ok=True)
        return stopped

    @staticmethod
    def _wait_gone(pid: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                os.waitpid(pid, os.WNOHANG)  # our child: collect it, no zombie
            except ChildProcessError:
                pass
            if process_command_line(pid) is None:
                return True
            time.sleep(0.1)
        return False
