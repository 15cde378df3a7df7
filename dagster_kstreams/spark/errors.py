"""What a task's run raises when it fails, and the one line that says why."""

from __future__ import annotations

import re

from dagster_kstreams.topology.task_id import TaskId

__all__ = ["TaskFailedError", "TaskFencedError", "failure_reason"]


class TaskFailedError(RuntimeError):
    """A task's run failed. ``reason`` is the one-line cause (it names the record's topic,
    partition and offset when a record could not be deserialized or processed)."""

    def __init__(self, task_id: TaskId | str, application_id: str, reason: str):
        self.task_id, self.application_id, self.reason = str(task_id), application_id, reason
        super().__init__(f"task {task_id} of application {application_id!r} failed: {reason}")


class TaskFencedError(TaskFailedError):
    """Another process started this task while this run had it: Kafka fenced this run's
    transactional id (``transactional_id``), so the run stopped without committing (``stage``
    says where). The task is lost to this process; whoever started it last owns it."""

    def __init__(self, task_id: TaskId | str, application_id: str, transactional_id: str, stage: str):
        self.task_id, self.application_id = str(task_id), application_id
        self.transactional_id, self.stage = transactional_id, stage
        self.reason = (f"another process took the task over: it started the task after this run did, and Kafka "
                       f"fenced this run's transactional id {transactional_id!r}; this run stopped {stage}")
        RuntimeError.__init__(
            self, f"task {task_id} of application {application_id!r} was taken over by another process: "
                  f"it started the task after this run did, and Kafka fenced this run's transactional id "
                  f"{transactional_id!r}; this run stopped {stage}")


_REASON = re.compile(r"(DeserializationError|ProcessingError): (.+)")


def failure_reason(error: BaseException) -> str:
    """The one line a user needs from a failed streaming query (Python or JVM)."""
    text = str(error)
    match = _REASON.search(text)
    if match:
        return f"{match.group(1)}: {match.group(2).strip()}"
    for line in text.splitlines():
        line = line.strip()
        if line and ("Exception" in line or "Error" in line):
            return line[:500]
    return text.strip().splitlines()[0][:500] if text.strip() else type(error).__name__
