"""A code location served by its own long-lived gRPC server, as deployments and ``dagster dev`` run it.

Given a workspace of Python files, ``dagster-daemon run`` spawns a code server for each and
replaces it with a new one every 60 seconds (Dagster's ``RELOAD_WORKSPACE_INTERVAL``): a fresh
process that imports the code location again, PySpark and all, about 3 CPU seconds each time
on the latency bench's machine, taken from the worker runs on the same cores. A daemon pointed at
a running server (``grpc_server:`` in the workspace) only asks it for the definitions again.
The server launches the runs, so they carry its environment (``DAGSTER_HOME`` included: see
:func:`~dagster_kstreams.local.daemon.processes_with_home`).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Optional

from dagster_kstreams.local.processes import HOST, free_port

__all__ = ["CodeLocationServer"]

DAGSTER = str(Path(sys.executable).parent / "dagster")


class CodeLocationServer:
    """``dagster api grpc -f python_file`` on a free loopback port, logging to ``log``.

    The server loads the code location before it answers, so :meth:`wait_ready` returning means a
    daemon started on :meth:`write_workspace`'s file finds the definitions at once.
    """

    def __init__(self, python_file: Path, location_name: str, log: IO[bytes], *, cwd: Path,
                 env: Mapping[str, str]):
        self.location_name = location_name
        self.port = free_port()
        self.process = subprocess.Popen(
            [DAGSTER, "api", "grpc", "--python-file", str(python_file), "--host", HOST, "--port", str(self.port),
             "--location-name", location_name, "--log-level", "warning"],
            cwd=cwd, env=dict(env), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)

    def wait_ready(self, timeout_seconds: float = 300.0) -> None:
        """Until the server answers a health check; raises if it exits or does not answer in time."""
        deadline = time.monotonic() + timeout_seconds
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"code server for {self.location_name!r} exited with {self.process.returncode} "
                                   "before it served (see its log)")
            check = subprocess.run([DAGSTER, "api", "grpc-health-check", "--host", HOST, "--port", str(self.port)],
                                   capture_output=True)
            if check.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"code server for {self.location_name!r} on {HOST}:{self.port} did not answer "
                                   f"within {timeout_seconds:.0f} s")
            time.sleep(1.0)

    def write_workspace(self, path: Path) -> Path:
        """A workspace file pointing the daemon (or webserver) at this server."""
        path.write_text("load_from:\n  - grpc_server:\n"
                        f"      host: {HOST}\n      port: {self.port}\n      location_name: {self.location_name}\n")
        return path

    def stop(self, grace_seconds: float = 10.0) -> Optional[int]:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=grace_seconds)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return self.process.returncode
