"""Local processes the stack starts (the broker, a Spark cluster, a Connect server, a code
location): the loopback host they bind, free ports, and what a pid runs now.
"""

from __future__ import annotations

import ctypes
import signal
import socket
import subprocess
import sys
from pathlib import Path

__all__ = ["HOST", "port_is_free", "free_port", "process_command_line", "terminate_with_parent"]

HOST = "127.0.0.1"


def port_is_free(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def process_command_line(pid: int) -> str | None:
    """The command line of a live (not zombie) process, or None if there is none."""
    proc = Path(f"/proc/{pid}")
    if proc.exists():
        try:
            stat = (proc / "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                return None
            return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            return None
    if not Path("/proc/self").exists():  # no procfs (macOS): ask ps
        result = subprocess.run(["ps", "-o", "stat=,command=", "-p", str(pid)], capture_output=True, text=True)
        line = result.stdout.strip()
        if result.returncode != 0 or not line or line.startswith("Z"):
            return None
        return line.split(None, 1)[1] if " " in line else ""
    return None


def terminate_with_parent() -> None:
    """In the child before exec: ask Linux to send SIGTERM when the parent process dies."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
