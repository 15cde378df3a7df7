"""The autoscaling bench's CPU pinning on this machine's real /proc (bench/cpu_pinning.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from bench.cpu_pinning import descendants, pin_process_tree


def test_a_process_tree_is_pinned_thread_by_thread_children_included():
    cpus = sorted(os.sched_getaffinity(0))
    target = {cpus[-1]}
    # A parent whose child starts before the pinning: both must end up on the target CPU.
    parent = subprocess.Popen([sys.executable, "-c",
                               "import subprocess, sys, time; subprocess.Popen(['sleep', '30']); "
                               "print('ready', flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "ready"
        tree = descendants(parent.pid)
        assert tree[0] == parent.pid and len(tree) == 2
        assert pin_process_tree(parent.pid, target) >= 2
        assert all(os.sched_getaffinity(pid) == target for pid in tree)
        assert os.sched_getaffinity(0) == set(cpus)  # the caller keeps its own CPUs
    finally:
        for pid in descendants(parent.pid)[1:]:
            os.kill(pid, 9)
        parent.kill()
        parent.wait()
