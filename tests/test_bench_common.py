"""bench/common.py: a group coordinator that never gets ready ends a benchmark with one line."""

from __future__ import annotations

import time

import pytest

from bench.common import bench_workspace, wait_for_group_coordinator
from dagster_kstreams.local.processes import free_port


def test_coordinator_wait_gives_up_at_its_deadline_in_one_line():
    port = free_port()  # nothing listens there: every answer is a timeout
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_info:
        with bench_workspace("bench-test-", f"127.0.0.1:{port}", port):
            wait_for_group_coordinator(f"127.0.0.1:{port}", "g", "t", timeout_s=2)
    waited = time.monotonic() - started
    message = str(exit_info.value.code)
    assert message == f"bench: error: the group coordinator of 'g' on 127.0.0.1:{port} was not ready after 2s " \
                      "(last answer: _TIMED_OUT)"
    assert 2 <= waited < 15

