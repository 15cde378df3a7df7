"""The worker start breakdown's arithmetic and this process's start time (the stages themselves are
recorded by real worker runs in test_elastic_workers.py)."""

from __future__ import annotations

import os
import time

from dagster_kstreams.orchestration.start_timing import describe_start, process_started_at, start_seconds

COLD = {"created": 100.0, "process_started": 101.0, "launched": 101.5, "process_up": 104.0, "code_loaded": 110.0,
        "spark_started": 110.5, "spark_ready": 125.0, "worker_ready": 126.0, "tasks_granted": 126.2,
        "first_batch": 131.0}


def test_each_stage_counts_from_the_one_before_it_that_was_reached():
    assert start_seconds(COLD) == {"created": 0.0, "process_started": 1.0, "launched": 0.5, "process_up": 2.5,
                                   "code_loaded": 6.0, "spark_started": 0.5, "spark_ready": 14.5,
                                   "worker_ready": 1.0, "tasks_granted": 0.2, "first_batch": 4.8}
    partial = {stage: COLD[stage] for stage in ("created", "code_loaded", "spark_ready")}
    assert start_seconds(partial) == {"created": 0.0, "code_loaded": 10.0, "spark_ready": 15.0}


def test_the_line_says_how_long_getting_up_took_and_a_standbys_wait_apart():
    text = describe_start(COLD)
    assert text.startswith("created -> process_started 1.0s -> launched 0.5s")
    assert "(up in 26.0s)" in text and "tasks_granted -> first_batch 4.8s (31.0s after created)" in text
    assert "waited" not in text
    standby = {**COLD, "tasks_granted": 300.0, "first_batch": 302.5}
    assert "waited 174.0s for tasks; tasks_granted -> first_batch 2.5s" in describe_start(standby)


def test_this_process_started_before_now_and_after_boot():
    started = process_started_at()
    assert started is not None and time.time() - 24 * 3600 * 365 < started <= time.time()
    assert process_started_at(os.getppid()) <= started  # the parent began first
