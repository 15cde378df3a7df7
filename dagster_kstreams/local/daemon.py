"""`dagster-daemon run` for one Dagster instance, started and stopped with everything it spawned.

The elastic-worker test and the autoscaling benchmark run the real daemon (sensor daemon, run
coordinator, run launcher); worker runs are its grandchildren, each with a JVM. Stopping the
daemon's process group is not enough: launched runs may have left it. Every one of them carries
the instance's ``DAGSTER_HOME`` in its environment, so that is how the leftovers are found.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Optional

import dagster as dg

DAEMON = str(Path(sys.executable).parent / "dagster-daemon")


def create_instance_storage(home: Path) -> None:
    """Create the instance's SQLite storages (runs, events, schedules) before the daemon starts:
    the daemon's threads creating them at once collide ("table job_ticks already exists")."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.get_runs(limit=1)
        instance.all_instigator_state()


def processes_with_home(home: Path) -> list[int]:
    """Every process started for the instance at ``home`` (daemon, code server, runs, their JVMs)."""
    marker = f"DAGSTER_HOME={home}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def _default_signals() -> None:
    # A daemon started from a test or a thread may inherit ignored SIGINT; it must stop on it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class DagsterDaemon:
    """``dagster-daemon run -w workspace`` for the instance at ``home``, logging to ``log``.

    ``stop()`` interrupts the daemon (it stops its threads and code server), then kills its
    process group and any process still carrying ``DAGSTER_HOME=home``: runs it launched and
    their JVMs.
    """

    def __init__(self, home: Path, workspace: Path, log: IO[bytes], *, cwd: Optional[Path] = None,
                 env: Optional[Mapping[str, str]] = None):
        self.home = Path(home)
        create_instance_storage(self.home)
        environment = {**(env if env is not None else os.environ), "DAGSTER_HOME": str(self.home)}
        self.process = subprocess.Popen(
            [DAEMON, "run", "-w", str(workspace)], cwd=cwd or Path(workspace).parent, env=environment,
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, preexec_fn=_default_signals)

    def poll(self) -> Optional[int]:
        return self.process.poll()

    def stop(self, grace_seconds: float = 20.0) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=grace_seconds)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)
        for pid in processes_with_home(self.home):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def __enter__(self) -> "DagsterDaemon":
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()
