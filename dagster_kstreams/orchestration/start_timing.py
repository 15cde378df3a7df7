"""Where a worker run's start goes, stage by stage, from the lag sensor's decision to its first batch.

A worker launched for a backlog helps only once it processes records, so its start is the price
of every scale-up (and, without a warm standby, of every failover). Each stage is an epoch time;
a stage not reached (or not knowable here) is absent:

==================  ==============================================================  ===================
``created``         the run was created: the lag sensor's decision                  run record
``process_started`` the run launcher started its process (after the run queue)      ``/proc`` (Linux)
``launched``        the launcher reported the launch                                ``RUN_STARTING``
``process_up``      Dagster's run worker runs in it (Python and Dagster imported)   engine event
``code_loaded``     the code location's definitions are loaded and the run begins   ``RUN_START``
``spark_started``   the Spark resource begins building the SparkSession             the worker
``spark_ready``     the SparkSession is up                                          the worker
``worker_ready``    topics checked, task runner built: it beats (a standby waits)   the worker
``warmed_up``       a standby ran each sub-topology's query once (spark.warm_up)    the worker
``tasks_granted``   it first read tasks in its tags (a standby: its promotion)      the worker
``first_batch``     the first micro-batch of one of its tasks was committed          the worker
==================  ==============================================================  ===================

The worker records its own stages (:class:`StartClock`, a key-value entry of the instance through
:func:`~dagster_kstreams.orchestration.protocol.report_start_marks`) and logs the breakdown when
it is ready and again at its first batch; :func:`start_breakdown` joins them with Dagster's own
events for any run, which is what ``bench/worker_start.py`` prints.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import dagster as dg

from dagster_kstreams.orchestration.protocol import read_start_marks, report_start_marks

__all__ = ["STAGES", "StartClock", "describe_start", "process_started_at", "start_breakdown", "start_seconds"]

STAGES = ("created", "process_started", "launched", "process_up", "code_loaded", "spark_started", "spark_ready",
          "worker_ready", "warmed_up", "tasks_granted", "first_batch")
# The stages of getting up; a standby then waits between worker_ready and tasks_granted.
_UP_TO_READY = STAGES[: STAGES.index("worker_ready") + 1]
_PROCESS_UP_MESSAGE = "Started process for run"


def process_started_at(pid: Optional[int] = None) -> Optional[float]:
    """When the process ``pid`` (default: this one) began, epoch seconds; None where ``/proc`` is
    not there to say (not Linux)."""
    try:
        stat = Path(f"/proc/{pid or os.getpid()}/stat").read_text()
        boot = next(line for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime "))
    except (OSError, StopIteration):
        return None
    # Field 22, counted after the command name (which may hold spaces, inside parentheses).
    ticks = int(stat.rsplit(")", 1)[1].split()[19])
    return int(boot.split()[1]) + ticks / os.sysconf("SC_CLK_TCK")


def start_breakdown(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    """Every stage the run has reached (see the module docstring), in stage order."""
    record = instance.get_run_record_by_id(run_id)
    if record is None:
        raise ValueError(f"no run {run_id!r} in this Dagster instance")
    found: dict[str, float] = {"created": record.create_timestamp.timestamp()}
    for stage, event_type in (("launched", dg.DagsterEventType.RUN_STARTING),
                              ("code_loaded", dg.DagsterEventType.RUN_START)):
        events = instance.get_records_for_run(run_id, of_type=event_type, limit=1).records
        if events:
            found[stage] = events[0].timestamp
    for event in instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, limit=20).records:
        dagster_event = event.event_log_entry.dagster_event
        if ((dagster_event.message if dagster_event else None) or "").startswith(_PROCESS_UP_MESSAGE):
            found["process_up"] = event.timestamp
            break
    found.update(read_start_marks(instance, [run_id]).get(run_id, {}))
    return {stage: found[stage] for stage in STAGES if stage in found}


def start_seconds(breakdown: Mapping[str, float]) -> dict[str, float]:
    """Each reached stage's seconds since the stage before it that was reached (``created``: 0)."""
    seconds, before = {}, None
    for stage in STAGES:
        if stage in breakdown:
            seconds[stage] = 0.0 if before is None else round(breakdown[stage] - before, 2)
            before = breakdown[stage]
    return seconds


def describe_start(breakdown: Mapping[str, float]) -> str:
    """One line: ``created -> process_started 1.0s -> ... -> worker_ready 0.8s (up in 31.2s); tasks_granted ->
    first_batch 2.1s``. A standby's wait between ready and its promotion is said as such."""
    steps = start_seconds(breakdown)
    up = [f"{stage} {steps[stage]:.1f}s" for stage in _UP_TO_READY if stage in steps and stage != "created"]
    text = " -> ".join(["created", *up])
    if "worker_ready" in breakdown and "created" in breakdown:
        text += f" (up in {breakdown['worker_ready'] - breakdown['created']:.1f}s)"
    if "warmed_up" in breakdown and "worker_ready" in breakdown:
        text += f"; warmed up in {breakdown['warmed_up'] - breakdown['worker_ready']:.1f}s"
    if "tasks_granted" in breakdown:
        ready = breakdown.get("warmed_up", breakdown.get("worker_ready"))
        if ready is not None and breakdown["tasks_granted"] - ready > 1:
            text += f"; waited {breakdown['tasks_granted'] - ready:.1f}s for tasks"
        if "first_batch" in breakdown:
            text += f"; tasks_granted -> first_batch {breakdown['first_batch'] - breakdown['tasks_granted']:.1f}s"
            if "created" in breakdown:
                text += f" ({breakdown['first_batch'] - breakdown['created']:.1f}s after created)"
    return text


class StartClock:
    """The stages a worker run reaches itself, each recorded once, when reached.

    ``spark_resource``: the run's Spark resource; :class:`KStreamsSparkResource
    <dagster_kstreams.orchestration.resources.KStreamsSparkResource>` says when it built the
    session (``session_timing``); with another resource the session counts as ready when the
    worker's op begins."""

    def __init__(self, instance: dg.DagsterInstance, run_id: str, spark_resource: Any):
        self.instance, self.run_id = instance, run_id
        self.marks: dict[str, float] = {}
        started = process_started_at()
        if started is not None:
            self.marks["process_started"] = started
        timing = getattr(spark_resource, "session_timing", None)
        if timing is not None:
            self.marks["spark_started"], self.marks["spark_ready"] = timing
        else:
            self.marks["spark_ready"] = time.time()
        report_start_marks(instance, run_id, self.marks)

    def reach(self, stage: str, at: Optional[float] = None) -> bool:
        """Record ``stage`` (now, or ``at``) unless it was reached before; True if it is new."""
        if stage not in STAGES:
            raise ValueError(f"unknown start stage {stage!r}; known: {', '.join(STAGES)}")
        if stage in self.marks:
            return False
        self.marks[stage] = time.time() if at is None else at
        report_start_marks(self.instance, self.run_id, self.marks)
        return True

    def describe(self) -> str:
        return describe_start(start_breakdown(self.instance, self.run_id))

    def metadata(self) -> dict[str, dg.MetadataValue]:
        """Seconds of each stage (since the one before it), as run metadata the UI can show."""
        return {f"start_{stage}_s": dg.MetadataValue.float(float(seconds))
                for stage, seconds in start_seconds(start_breakdown(self.instance, self.run_id)).items()
                if stage != "created"}
