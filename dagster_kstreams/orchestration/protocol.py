"""The sensor↔worker protocol: what the lag sensor and the worker runs tell each other.

* **Run tags**, written by the sensor only: the app and worker id, the tasks a worker may process
  (``tasks``), the tasks it is meant to end up with (``assigned``), and its ``state``
  (``running``; ``standby``, with no tasks: a warm standby, up and waiting to be promoted;
  or ``retiring`` with no tasks: the worker exits). The run list shows the state tag, so a
  standby's promotion is visible there as its switch from ``standby`` to ``running``.
* **Instance key-value entries**, one key per run, written by the worker only: the tasks it holds
  (``held``), a heartbeat, its ``host:pid`` for operators, and when each stage of its start was
  reached (:mod:`.start_timing`). They are not run tags because
  ``add_run_tags`` rewrites the whole run body, so two writers (sensor and worker) could undo
  each other's change.
* **Task materializations**: a worker marks each with which run of that task in its process it
  was (:data:`TASK_BATCH_METADATA`), so the sensor can leave the cold first runs out of capacity,
  and with the task's share of the worker's time (:data:`WORKER_SECONDS_METADATA`), so that
  tasks running at once are not each taken for a whole worker.

Task lists travel as text: ``"0_1,1_0"``, numerically sorted (the scaling layer's task ids).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterable, Mapping
from typing import Optional

import dagster as dg

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.translator import sanitize_name
from dagster_kstreams.scaling import task_sort_key

__all__ = [
    "STATE_RETIRING",
    "STATE_RUNNING",
    "STATE_STANDBY",
    "TAG_APP",
    "TAG_ASSIGNED",
    "TAG_STATE",
    "TAG_TASKS",
    "TAG_WORKER",
    "TAG_WORKER_KEY",
    "TASK_BATCH_METADATA",
    "WORKER_SECONDS_METADATA",
    "app_id_tag",
    "app_tag",
    "format_tasks",
    "new_worker_tags",
    "parse_tasks",
    "read_heartbeats",
    "read_held",
    "read_processes",
    "read_start_marks",
    "report_heartbeat",
    "report_held",
    "report_process",
    "report_start_marks",
    "retiring_tags",
    "task_tags",
    "worker_job_name",
]

TAG_APP = "dagster_kstreams/app_id"
TAG_WORKER = "dagster_kstreams/worker"
# app and worker together: the key of a per-unique-value run concurrency limit of 1, so two runs
# of one worker id never run at once (tag_concurrency_limits, applyLimitPerUniqueValue).
TAG_WORKER_KEY = "dagster_kstreams/worker_key"
TAG_TASKS = "dagster_kstreams/tasks"
TAG_ASSIGNED = "dagster_kstreams/assigned"
TAG_STATE = "dagster_kstreams/state"

STATE_RUNNING = "running"
STATE_STANDBY = "standby"
STATE_RETIRING = "retiring"

# Metadata of a worker's task materialization: which run of that task in the worker's process it
# was (1: the first, which pays for the process's start-up; the lag sensor measures capacity
# from the later ones).
TASK_BATCH_METADATA = "worker_task_batch"
# ... and the task's share of the worker's time since its last report (processor sharing among the
# batches running at once: :mod:`dagster_kstreams.spark.busy_clock`).
WORKER_SECONDS_METADATA = "worker_seconds"

_HELD_KEY = "dagster_kstreams/held/{run_id}"
_HEARTBEAT_KEY = "dagster_kstreams/heartbeat/{run_id}"
_PROCESS_KEY = "dagster_kstreams/process/{run_id}"  # host:pid of the run, for operators
_START_KEY = "dagster_kstreams/start/{run_id}"  # {stage: epoch seconds} of the run's start


def app_tag(app: KStreamsApp) -> str:
    """The value of :data:`TAG_APP` on every run of the app's worker job."""
    return app_id_tag(app.app_id)


def app_id_tag(app_id: str) -> str:
    """The value of :data:`TAG_APP` for the application ``app_id`` (what :func:`app_tag` gives)."""
    return sanitize_name(app_id)


def worker_job_name(app: KStreamsApp) -> str:
    return f"{app_tag(app)}_workers"


# -- run tags (the sensor writes them) -------------------------------------------------------
def format_tasks(tasks: Iterable[str]) -> str:
    return ",".join(sorted(set(tasks), key=task_sort_key))


def parse_tasks(text: Optional[str]) -> frozenset[str]:
    return frozenset(task for task in (text or "").split(",") if task)


def task_tags(tasks: Iterable[str], assigned: Iterable[str], state: str = STATE_RUNNING) -> dict[str, str]:
    """A worker's grant: what it may process now, what it is meant to end up with, and its state
    (``running``, or ``standby`` with no tasks). One tag write, so a promoted standby never shows
    tasks while still a standby."""
    if state not in (STATE_RUNNING, STATE_STANDBY):
        raise ValueError(f"a worker with tasks is {STATE_RUNNING!r} or {STATE_STANDBY!r}, not {state!r}")
    return {TAG_TASKS: format_tasks(tasks), TAG_ASSIGNED: format_tasks(assigned), TAG_STATE: state}


def new_worker_tags(app: KStreamsApp, worker_id: str, tasks: Iterable[str], assigned: Iterable[str],
                    state: str = STATE_RUNNING) -> dict[str, str]:
    """Tags of a new worker run (``state="standby"``: a warm standby, with no tasks)."""
    tag = app_tag(app)
    return {TAG_APP: tag, TAG_WORKER: worker_id, TAG_WORKER_KEY: f"{tag}/{worker_id}",
            **task_tags(tasks, assigned, state)}


def retiring_tags() -> dict[str, str]:
    """Tags that retire a worker: no tasks, state ``retiring``."""
    return {TAG_TASKS: "", TAG_ASSIGNED: "", TAG_STATE: STATE_RETIRING}


# -- key-value entries (the worker writes them) ----------------------------------------------
def report_held(instance: dg.DagsterInstance, run_id: str, tasks: Iterable[str]) -> None:
    instance.run_storage.set_cursor_values({_HELD_KEY.format(run_id=run_id): format_tasks(tasks)})


def read_held(instance: dg.DagsterInstance, run_ids: Iterable[str]) -> dict[str, frozenset[str]]:
    """What each run last reported holding (a run that never reported holds nothing yet)."""
    keys = {_HELD_KEY.format(run_id=run_id): run_id for run_id in run_ids}
    values = instance.run_storage.get_cursor_values(set(keys)) if keys else {}
    return {run_id: parse_tasks(values.get(key)) for key, run_id in keys.items()}


def report_heartbeat(instance: dg.DagsterInstance, run_id: str) -> None:
    instance.run_storage.set_cursor_values({_HEARTBEAT_KEY.format(run_id=run_id): repr(time.time())})


def read_heartbeats(instance: dg.DagsterInstance, run_ids: Iterable[str]) -> dict[str, float]:
    return {run_id: float(value) for run_id, value in _read(instance, _HEARTBEAT_KEY, run_ids).items()}


def report_process(instance: dg.DagsterInstance, run_id: str) -> None:
    """Records ``host:pid`` of the calling process as the run's."""
    instance.run_storage.set_cursor_values({_PROCESS_KEY.format(run_id=run_id): f"{socket.gethostname()}:{os.getpid()}"})


def read_processes(instance: dg.DagsterInstance, run_ids: Iterable[str]) -> dict[str, str]:
    """``host:pid`` of each worker run that has started."""
    return _read(instance, _PROCESS_KEY, run_ids)


def report_start_marks(instance: dg.DagsterInstance, run_id: str, marks: Mapping[str, float]) -> None:
    """Records when the run reached each stage of its start (:mod:`.start_timing`), epoch seconds."""
    instance.run_storage.set_cursor_values({_START_KEY.format(run_id=run_id): json.dumps(dict(marks))})


def read_start_marks(instance: dg.DagsterInstance, run_ids: Iterable[str]) -> dict[str, dict[str, float]]:
    """What each run recorded with :func:`report_start_marks` (runs that recorded nothing left out)."""
    return {run_id: {stage: float(at) for stage, at in json.loads(value).items()}
            for run_id, value in _read(instance, _START_KEY, run_ids).items()}


def _read(instance: dg.DagsterInstance, key_format: str, run_ids: Iterable[str]) -> dict[str, str]:
    """The entries present under ``key_format`` by run id."""
    keys = {key_format.format(run_id=run_id): run_id for run_id in run_ids}
    values = instance.run_storage.get_cursor_values(set(keys)) if keys else {}
    return {keys[key]: value for key, value in values.items()}
