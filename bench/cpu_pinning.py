"""Cores of their own for the workers a sensor adds: a small cluster on one machine (issue 13).

On a 2-core machine a second worker process has no core to add: the broker, the generator, the
daemon and the first worker already use both, so autoscaling there only measures two processes
sharing the same cores. With pinning, the bench process and everything it starts (the broker,
the daemon, the first worker run, which the daemon launches) run on CPU 0, and every other
worker run, with all its threads and child processes (the Spark JVM, Python workers), on the
remaining CPUs: "machine 0" runs the fixed setup, and a worker the sensor adds lands on
"machine 1", as it would on a cluster. The fixed mode leaves CPU 1 idle: that is the point of
comparing against one fixed worker.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["descendants", "pin_process_tree", "pin_self", "split_cpus"]

PROC = Path("/proc")


def split_cpus() -> tuple[int, set[int]]:
    """This process's first CPU and the others it may use (empty on one CPU). Taken once, before
    :func:`pin_self`: afterwards this process may use only the first."""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[0], set(cpus[1:])


def pin_self(cpu: int) -> None:
    """Pin the calling thread (and so the threads and processes it starts later) to ``cpu``."""
    os.sched_setaffinity(0, {cpu})


def descendants(pid: int, proc: Path = PROC) -> list[int]:
    """``pid`` and every process below it, from the parent links in ``/proc/<pid>/stat``."""
    children: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # The command name (field 2) is in parentheses and may hold spaces: the parent id is the
        # second field after the last ')'.
        parent = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def pin_process_tree(pid: int, cpus: Iterable[int], proc: Path = PROC) -> int:
    """Every thread of ``pid`` and of its descendants on ``cpus``; returns how many threads were
    pinned. Threads and processes that end meanwhile are skipped."""
    cpus = set(cpus)
    if not cpus:
        raise ValueError("no CPU to pin to")
    pinned = 0
    for process in descendants(pid, proc):
        try:
            threads = [int(task.name) for task in (proc / str(process) / "task").iterdir()]
        except OSError:
            continue
        for thread in threads:
            try:
                if os.sched_getaffinity(thread) != cpus:
                    os.sched_setaffinity(thread, cpus)
                pinned += 1
            except OSError:
                continue
    return pinned
