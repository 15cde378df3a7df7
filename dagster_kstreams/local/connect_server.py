"""A Spark Connect server on 127.0.0.1 from the pip package, with the Kafka connector.

``sc://127.0.0.1:<port>`` then takes ``KStreamsSparkResource(master=...)`` and ``dagster-kstreams
run --master``. It is the pip package's ``spark-class org.apache.spark.sql.connect.service.SparkConnectServer``
(what ``start-connect-server.sh`` runs) on ``local[N]``, with the connector's jars in ``--jars``
and its Python workers (which run the tasks' ``foreachBatch`` writers and Python passes) on this
interpreter, with this copy of the package first on their ``PYTHONPATH``: they import the
``dagster_kstreams`` the caller imports, not another one installed.
One JVM in its own session, recorded in a pid file of its state directory; :meth:`stop` signals
exactly that pid, and only while it still runs that class.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from dagster_kstreams.base.home import LocalStackError, state_home
from dagster_kstreams.base.jars import jar_paths
from dagster_kstreams.local.processes import HOST, port_is_free, process_command_line, terminate_with_parent
from dagster_kstreams.local.spark_cluster import spark_class
from dagster_kstreams.spark.session import DEFAULT_CONNECT_PORT

__all__ = ["LocalConnectServer", "CONNECT_SERVER_CLASS", "DEFAULT_CONNECT_PORT"]

CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the directory that holds dagster_kstreams/


class LocalConnectServer:
    """A Connect server on ``local[cores]`` at ``sc://127.0.0.1:<port>``."""

    def __init__(self, state_dir: Optional[Path] = None, port: int = DEFAULT_CONNECT_PORT, cores: int = 2,
                 stop_with_parent: bool = False, startup_timeout_s: float = 120.0):
        self.state_dir = Path(state_dir) if state_dir else state_home() / "connect-server"
        self.port, self.cores = port, cores
        self.stop_with_parent, self.startup_timeout_s = stop_with_parent, startup_timeout_s

    @property
    def url(self) -> str:
        return f"sc://{HOST}:{self.port}"

    @property
    def _pid_file(self) -> Path:
        return self.state_dir / "connect-server.pid"

    @property
    def log_file(self) -> Path:
        return self.state_dir / "connect-server.log"

    def running_pid(self) -> Optional[int]:
        try:
            pid = int(self._pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if CONNECT_SERVER_CLASS in (process_command_line(pid) or "") else None

    def start(self) -> str:
        """Start the server unless it runs, wait until it accepts connections; its ``sc://`` URL."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        process = None
        if self.running_pid() is None:
            if not port_is_free(self.port):
                raise LocalStackError(f"Spark Connect server: the port {HOST}:{self.port} is taken by another process")
            process = self._launch()
        self._wait_until_ready(process)
        return self.url

    def _launch(self) -> subprocess.Popen:
        settings = {
            "spark.master": f"local[{self.cores}]",
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": HOST,
            "spark.driver.bindAddress": HOST,
            "spark.ui.enabled": "false",
            "spark.pyspark.python": sys.executable,
            "spark.pyspark.driver.python": sys.executable,
            "spark.jars": ",".join(jar_paths("spark-kafka")),
            # A task's checkpoint files without a .crc beside each (spark/session.py says why).
            "spark.hadoop.fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.RawLocalFs",
        }
        arguments = [str(spark_class()), "org.apache.spark.deploy.SparkSubmit", "--class", CONNECT_SERVER_CLASS]
        for key, value in settings.items():
            arguments += ["--conf", f"{key}={value}"]
        arguments.append("spark-internal")
        # The server's Python processes start in its state directory: this copy of the package
        # first on their path, else an installed one (another checkout's, say) would be imported.
        python_path = os.pathsep.join(filter(None, [str(_PACKAGE_ROOT), os.environ.get("PYTHONPATH")]))
        environment = {**os.environ, "SPARK_LOCAL_IP": HOST, "PYSPARK_PYTHON": sys.executable,
                       "PYTHONPATH": python_path}
        with self.log_file.open("ab") as log:
            process = subprocess.Popen(arguments, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=environment, cwd=self.state_dir, start_new_session=True,
                                       preexec_fn=terminate_with_parent if self.stop_with_parent else None)
        self._pid_file.write_text(str(process.pid))
        return process

    def _wait_until_ready(self, process: Optional[subprocess.Popen]) -> None:
        """Until the server listens. One this call launched (``process``) has exited when its process
        has. Its command line, which :meth:`running_pid` reads for one started elsewhere, can read empty
        for an instant while ``spark-class`` execs the JVM (Linux sets a new program's arguments after
        swapping its memory in): a fresh-clone CI said a server had exited at start whose JVM had started."""
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            exited = process.poll() is not None if process is not None else self.running_pid() is None
            if exited:
                raise LocalStackError(f"the Spark Connect server exited at start (log {self.log_file})")
            try:
                socket.create_connection((HOST, self.port), timeout=1.0).close()
                return
            except OSError:
                time.sleep(0.3)
        raise LocalStackError(f"the Spark Connect server at {self.url} did not listen after "
                              f"{self.startup_timeout_s:.0f}s (log {self.log_file})")

    def stop(self, timeout_s: float = 20.0) -> bool:
        """Stop the server; True if it was running."""
        pid = self.running_pid()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            while process_command_line(pid) is not None and time.monotonic() < deadline:
                try:
                    os.waitpid(pid, os.WNOHANG)  # our child: collect it, no zombie
                except ChildProcessError:
                    pass
                time.sleep(0.1)
            if process_command_line(pid) is not None:
                os.kill(pid, signal.SIGKILL)
        self._pid_file.unlink(missing_ok=True)
        return pid is not None
