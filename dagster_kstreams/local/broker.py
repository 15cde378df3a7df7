"""A single-node KRaft Kafka broker for a laptop or a test run, bound to 127.0.0.1.

The broker is the real Apache Kafka (``kafka.Kafka``) on the classpath resolved by
``dagster_kstreams.base.jars``. Its state lives in one directory: ``server.properties``,
the pid file, logs and (by default) the data directory. ``stop`` signals exactly the pid
it recorded, and only after checking that this pid still runs this broker's config.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient

from dagster_kstreams.base.home import LocalStackError, state_home
from dagster_kstreams.base.jars import jar_paths
from dagster_kstreams.local.processes import HOST, port_is_free, process_command_line, terminate_with_parent

BROKER_MAIN_CLASS = "kafka.Kafka"
STORAGE_TOOL_CLASS = "kafka.tools.StorageTool"
MINIMUM_JAVA_MAJOR = 17
# The broker's JVM heap: a development broker that runs for days through test suites holds metadata
# of thousands of topics, and ran out of 512 MB.
DEFAULT_HEAP = "1g"
DEFAULT_PORT = 9092

# Small internal topics and no rebalance delay: a one-node broker for development and tests.
_DEFAULT_BROKER_CONFIG = {
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "8",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "8",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
}


@dataclass(frozen=True)
class BrokerStatus:
    running: bool
    pid: int | None
    bootstrap_servers: str
    state_dir: Path
    data_dir: Path
    log_file: Path

    def describe(self) -> str:
        if self.running:
            return (
                f"Kafka broker running: pid {self.pid}, bootstrap {self.bootstrap_servers}, "
                f"data {self.data_dir}, log {self.log_file}"
            )
        return f"Kafka broker not running (state {self.state_dir})"


def kafka_cluster_id() -> str:
    """A random cluster id in Kafka's format (URL-safe base64 of 16 bytes, no padding)."""
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not candidate.startswith("-"):  # Kafka's Uuid.randomUuid avoids these too
            return candidate


def check_java() -> str:
    """The path of a Java 17+ executable, or a LocalStackError saying what is missing."""
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        raise LocalStackError(
            f"Java is not installed (no java on PATH or in JAVA_HOME); "
            f"the Kafka broker needs Java {MINIMUM_JAVA_MAJOR}+"
        )
    result = subprocess.run([java, "-version"], capture_output=True, text=True)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if not match:
        raise LocalStackError(f"could not read the Java version from `{java} -version`")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0_..." style
        major = int(match.group(2))
    if major < MINIMUM_JAVA_MAJOR:
        raise LocalStackError(f"{java} is Java {major}; the Kafka broker needs Java {MINIMUM_JAVA_MAJOR}+")
    return java


def _telling_line(output: str) -> str:
    """The line of a JVM tool's output that says what went wrong (not a stack frame)."""
    lines = [line.strip() for line in output.splitlines() if line.strip() and not line.strip().startswith("at ")]
    for line in lines:
        if re.search(r"(Exception|Error)\b", line):
            return line[:300]
    return lines[-1][:300] if lines else "no output"


class LocalBroker:
    """One KRaft broker+controller process on 127.0.0.1.

    ``state_dir`` holds server.properties, the pid file and logs; ``data_dir`` (default
    ``state_dir/data``) holds the log segments and KRaft metadata and survives restarts.
    """

    def __init__(
        self,
        port: int = DEFAULT_PORT,
        state_dir: Path | str | None = None,
        data_dir: Path | str | None = None,
        controller_port: int | None = None,
        heap: str = DEFAULT_HEAP,
        broker_config: dict[str, str] | None = None,
        jars_home: Path | None = None,
        startup_timeout_s: float = 90.0,
        stop_with_parent: bool = False,
    ) -> None:
        self.port = port
        self.controller_port = controller_port if controller_port is not None else port + 1
        if self.controller_port == self.port:
            raise LocalStackError(f"controller port {self.controller_port} must differ from the broker port")
        self.state_dir = Path(state_dir).resolve() if state_dir else state_home() / "broker"
        self.data_dir = Path(data_dir).resolve() if data_dir else self.state_dir / "data"
        self.heap = heap
        self.broker_config = dict(broker_config or {})
        self.jars_home = jars_home
        self.startup_timeout_s = startup_timeout_s
        # For brokers owned by one process (a test session): if that process dies hard, the
        # kernel stops the broker too instead of leaving it orphaned (Linux only).
        self.stop_with_parent = stop_with_parent
        self._process: subprocess.Popen[bytes] | None = None

    # -- paths -------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.state_dir / "broker.pid"

    @property
    def config_file(self) -> Path:
        return self.state_dir / "server.properties"

    @property
    def log_file(self) -> Path:
        return self.state_dir / "logs" / "server.log"

    @property
    def console_file(self) -> Path:
        return self.state_dir / "logs" / "console.out"

    # -- queries -----------------------------------------------------------------------
    def _recorded_pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _recorded_bootstrap(self) -> str:
        try:
            parts = self.pid_file.read_text().split()
            return parts[1] if len(parts) > 1 else self.bootstrap_servers
        except OSError:
            return self.bootstrap_servers

    def _is_our_broker(self, pid: int) -> bool:
        command_line = process_command_line(pid)
        return command_line is not None and BROKER_MAIN_CLASS in command_line and str(self.config_file) in command_line

    def running_pid(self) -> int | None:
        """The pid of this state directory's broker if it runs, else None."""
        pid = self._recorded_pid()
        return pid if pid is not None and self._is_our_broker(pid) else None

    def _running_data_dir(self) -> Path:
        """The data directory in the running broker's server.properties (it may differ from ours)."""
        try:
            for line in self.config_file.read_text().splitlines():
                if line.startswith("log.dirs="):
                    return Path(line.partition("=")[2])
        except OSError:
            pass
        return self.data_dir

    def status(self) -> BrokerStatus:
        pid = self.running_pid()
        return BrokerStatus(
            running=pid is not None,
            pid=pid,
            bootstrap_servers=self._recorded_bootstrap() if pid else self.bootstrap_servers,
            state_dir=self.state_dir,
            data_dir=self._running_data_dir() if pid else self.data_dir,
            log_file=self.log_file,
        )

    def answers_metadata(self, timeout_s: float = 2.0, bootstrap_servers: str | None = None) -> bool:
        client = AdminClient(
            {
                "bootstrap.servers": bootstrap_servers or self.bootstrap_servers,
                "socket.timeout.ms": int(timeout_s * 1000),
                # Connection-refused noise while the broker boots is expected.
                "log_level": 0,
            }
        )
        try:
            metadata = client.list_topics(timeout=timeout_s)
        except Exception:  # KafkaException on timeout/transport error: not up (yet)
            return False
        return bool(metadata.brokers)

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> BrokerStatus:
        """Start the broker and wait until it answers a metadata request.

        Starting a broker that already runs (same state directory) does nothing.
        """
        if (pid := self.running_pid()) is not None:
            status = self.status()
            if not self.answers_metadata(bootstrap_servers=status.bootstrap_servers):
                self._wait_until_ready(pid, process=None, bootstrap_servers=status.bootstrap_servers)
            return status
        java = check_java()
        for name, port in (("broker", self.port), ("controller", self.controller_port)):
            if not port_is_free(port):
                raise LocalStackError(
                    f"{name} port {port} on {HOST} is already in use (another Kafka?); "
                    f"choose another with --port/--controller-port"
                )
        classpath = os.pathsep.join(jar_paths("broker", self.jars_home))
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._write_config()
        log4j_config = self._write_log4j_config()
        jvm_options = [
            f"-Xmx{self.heap}",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j_config}",
            f"-Dkafka.logs.dir={self.log_file.parent}",
        ]
        if not (self.data_dir / "meta.properties").exists():
            self._format_storage(java, classpath, jvm_options)
        with open(self.console_file, "ab") as console:
            self._process = subprocess.Popen(
                [java, *jvm_options, "-cp", classpath, BROKER_MAIN_CLASS, str(self.config_file)],
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                # Its own session: Ctrl-C in the terminal that ran `local up` must not reach it.
                start_new_session=True,
                preexec_fn=terminate_with_parent if self.stop_with_parent else None,
            )
        self.pid_file.write_text(f"{self._process.pid} {self.bootstrap_servers}\n")
        try:
            self._wait_until_ready(self._process.pid, self._process)
        except BaseException:
            self.stop()
            raise
        return self.status()

    def _wait_until_ready(
        self, pid: int, process: subprocess.Popen[bytes] | None, bootstrap_servers: str | None = None
    ) -> None:
        bootstrap_servers = bootstrap_servers or self.bootstrap_servers
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise LocalStackError(
                    f"Kafka broker exited during startup with code {process.returncode}: "
                    f"{self._last_error_line()} (see {self.log_file})"
                )
            if process is None and not self._is_our_broker(pid):
                raise LocalStackError(f"Kafka broker (pid {pid}) is gone; see {self.log_file}")
            if self.answers_metadata(timeout_s=1.0, bootstrap_servers=bootstrap_servers):
                return
            time.sleep(0.3)
        raise LocalStackError(
            f"Kafka broker on {bootstrap_servers} did not answer a metadata request within "
            f"{self.startup_timeout_s:.0f}s; see {self.log_file}"
        )

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop the broker this state directory started; True if one was running."""
        pid = self._recorded_pid()
        if pid is None:
            return False
        if not self._is_our_broker(pid):
            # Stale pid file (crash, reboot): the pid may now belong to someone else.
            self._reap(pid)
            self.pid_file.unlink(missing_ok=True)
            return False
        os.kill(pid, signal.SIGTERM)
        if not self._wait_gone(pid, timeout_s):
            os.kill(pid, signal.SIGKILL)
            self._wait_gone(pid, 10.0)
        self.pid_file.unlink(missing_ok=True)
        self._process = None
        return True

    def _reap(self, pid: int) -> None:
        """Collect the exit status if the broker is our child, so no zombie is left."""
        if self._process is not None and self._process.pid == pid:
            self._process.poll()
            return
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass

    def _wait_gone(self, pid: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self._reap(pid)
            if process_command_line(pid) is None:
                return True
            time.sleep(0.1)
        return False

    # -- files -------------------------------------------------------------------------
    def _write_config(self) -> None:
        config = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{HOST}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            **_DEFAULT_BROKER_CONFIG,
            **self.broker_config,
        }
        self.config_file.write_text("".join(f"{key}={value}\n" for key, value in config.items()))

    def _write_log4j_config(self) -> Path:
        path = self.state_dir / "log4j2.properties"
        path.write_text(
            "status = warn\n"
            "appender.file.type = File\n"
            "appender.file.name = FILE\n"
            f"appender.file.fileName = {self.log_file}\n"
            "appender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\n"
            "rootLogger.appenderRef.file.ref = FILE\n"
        )
        return path

    def _format_storage(self, java: str, classpath: str, jvm_options: list[str]) -> None:
        result = subprocess.run(
            [
                java,
                *jvm_options,
                "-cp",
                classpath,
                STORAGE_TOOL_CLASS,
                "format",
                "--cluster-id",
                kafka_cluster_id(),
                "--config",
                str(self.config_file),
                "--ignore-formatted",
            ],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        if result.returncode != 0:
            raise LocalStackError(
                f"formatting Kafka storage in {self.data_dir} failed: {_telling_line(result.stderr + result.stdout)}"
            )

    def _last_error_line(self) -> str:
        for source in (self.log_file, self.console_file):
            try:
                lines = source.read_text(errors="replace").splitlines()
            except OSError:
                continue
            for line in reversed(lines):
                if " ERROR " in line or "Exception" in line:
                    return line.strip()[:300]
        return "no error in the log"
