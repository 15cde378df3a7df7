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


def test_the_bench_pins_itself_first_then_added_workers_to_the_cpus_it_split_off():
    # The bench's order (autoscaling.main): split the CPUs, pin itself to the first, later pin a
    # worker process to the others. Asking for "the other CPUs" after pinning itself sees none.
    script = (
        "import os, subprocess\n"
        "from bench.cpu_pinning import pin_process_tree, pin_self, split_cpus\n"
        "first, spare = split_cpus()\n"
        "pin_self(first)\n"
        "worker = subprocess.Popen(['sleep', '30'])\n"
        "assert os.sched_getaffinity(worker.pid) == {first}\n"
        "target = spare or {first}\n"
        "assert pin_process_tree(worker.pid, target) == 1\n"
        "assert os.sched_getaffinity(worker.pid) == target, os.sched_getaffinity(worker.pid)\n"
        "assert split_cpus() == (first, set())\n"
        "worker.kill()\n"
        "print('ok', first, sorted(spare))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("ok"), done.stderr
