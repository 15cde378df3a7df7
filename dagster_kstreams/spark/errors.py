"""What a task's run raises when it fails, and the one line that says why."""

from __future__ import annotations

import re
from typing import Optional

from dagster_kstreams.topology.task_id import TaskId

__all__ = ["SparkSessionError", "TaskFailedError", "TaskFencedError", "failure_reason", "lost_work", "python_worker_late",
           "used_concurrently"]


class SparkSessionError(RuntimeError):
    """Spark could not be configured or started, or a session cannot do what was asked of it; the
    message names the setting at fault."""


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


# The raised message, not a plan's text: a failed job's message can print the query plan, whose
# raise_error(concat("DeserializationError: ", CASE WHEN ...)) holds the name followed by ", ".
_REASON = re.compile(r"(DeserializationError|ProcessingError): ([^\s,].*)")
# A TaskFailedError raised inside the query (by the batch's commit) already says which task failed.
_TASK_FAILED = re.compile(r"^task \S+ of application '[^']*' failed: ")
# "SomeError: message" or "Caused by: org.x.SomeException: message", as Python and the JVM print them.
_EXCEPTION_LINE = re.compile(r"^(?:Caused by: )?((?:[\w$]+\.)*[\w$]*(?:Error|Exception|Exit|Interrupt)): (\S.*)$")
# Wrappers that say only that something below failed.
_WRAPPERS = frozenset({
    "Py4JJavaError", "SparkException", "StreamingQueryException", "PythonException", "ExecutionException",
    "CompletionException", "UncheckedExecutionException", "SparkRuntimeException", "InvocationTargetException",
    "QueryExecutionException", "PySparkRuntimeError",
})
# Causes whose fix is a setting: said with the message.
_HINTS = {
    "RecordTooLargeException": ("increase the producer's max.request.size (kafka_config / --kafka-config) and the "
                                "topic's max.message.bytes"),
    # Spark's Kafka clients (Java) giving up on a broker that stayed away.
    "TimeoutException": "Kafka did not answer in time: is the broker up? a running task waits task_timeout_s "
                        "(--task-timeout) for it",
}
# A batch's result that Spark kept in its block manager and could not read back (evicted under
# memory pressure, or its fetch failed): said with the settings that keep results out of it.
_RESULT_LOST = "TaskResultLost (result lost from block manager)"
_RESULT_LOST_REASON = ("Spark lost a batch's result (TaskResultLost: result lost from block manager): increase "
                       "spark.driver.memory or spark.task.maxDirectResultSize, or lower max_records_per_batch; "
                       "the batch was not committed: the task's next run processes it again")
# A Python worker killed while it ran the batch (by the kernel's out-of-memory killer, an operator),
# or one whose native code crashed. Spark's own line ends in a hint about a traceback there is none of.
_WORKER_CRASHED = "Python worker exited unexpectedly (crashed)"
_WORKER_CRASHED_REASON = ("a Spark Python worker running the batch exited unexpectedly (killed, out of memory, or "
                          "crashed in native code): the batch was not committed: the task's next run processes it "
                          "again")
# A Python worker Spark started (for a batch, or through Spark Connect for the query's foreachBatch)
# that did not connect back within the 10 s PythonWorkerFactory waits (hard-coded in Spark 4.2): a machine
# too busy to start a Python process in time, seen in CI under a load of 20 on 2 cores. Nothing ran.
_WORKER_LATE = "Timed out while waiting for the Python worker to connect back"
_WORKER_LATE_REASON = ("a Spark Python worker did not connect back within the 10 s Spark waits for one (the machine "
                       "was too busy to start it): the batch was not committed: the task's next run processes it again")
# An executor gone (its machine, its JVM) with the batch's work, after Spark's own retries of the task.
_EXECUTOR_LOST = "ExecutorLostFailure"
# Spark losing work it had done, not a record or the code failing: the batch was not committed,
# and running it again from the checkpoint gives the same result, as a rerun after a crash does.
_LOST_WORK = {
    _RESULT_LOST: "the batch's result (TaskResultLost)",
    _WORKER_CRASHED: "the Python worker that ran the batch (it exited unexpectedly)",
    _EXECUTOR_LOST: "the executor that ran the batch (ExecutorLostFailure)",
    _WORKER_LATE: "the Python worker started for the batch (it did not connect back within 10 s)",
}


# Spark takes no lock on a checkpoint: two processes writing the same one at once fail the slower.
# A new checkpoint's offset log that is not empty when a run's query starts on it (the run removed
# what a killed run left before) holds another process's first entry, written meanwhile.
# The first marker found names the race in the message; a log file's is said with its path.
_CONCURRENT_USE = ("CONCURRENT_STREAM_LOG_UPDATE", "concurrently using metadata", "SparkConcurrentModificationException",
                   "STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY", "Multiple streaming queries are concurrently using")
_CONCURRENT_LOG = re.compile(r"Multiple streaming queries are concurrently using \S+?(?=\.?(?:\s|$))")
_CONCURRENT_REASON = ("another process started or ran this task's checkpoint at the same moment (Spark: {detail}); "
                      "the process that started the task last owns it: run the task again if that one stopped")


def used_concurrently(error: BaseException) -> bool:
    """Whether a query failed because another process wrote the same checkpoint at the same moment."""
    text = str(error)
    return any(marker in text for marker in _CONCURRENT_USE)


def lost_work(error: BaseException) -> Optional[str]:
    """What Spark lost of a batch's work (a task's result, a Python worker, an executor) if that is
    why a query failed, rather than a record, the code or another process; else None."""
    text = str(error)
    return next((lost for marker, lost in _LOST_WORK.items() if marker in text), None)


def python_worker_late(error: BaseException) -> bool:
    """Whether a query failed, or did not start, because a Python worker Spark started did not
    connect back in time: starting it again is worth it (:func:`~.checkpoint.start_on_checkpoint`)."""
    return _WORKER_LATE in str(error)


def failure_reason(error: BaseException) -> str:
    """The one line a user needs from a failed streaming query (Python or JVM): the innermost
    exception that is not a mere wrapper, with what to change when the fix is a setting. Never a
    source line (``raise X(``) or a stack frame."""
    text = str(error)
    match = _REASON.search(text)
    if match:
        return f"{match.group(1)}: {match.group(2).strip()}"
    if used_concurrently(error):
        detail = next(marker for marker in _CONCURRENT_USE if marker in text)
        named = _CONCURRENT_LOG.search(text) if detail == _CONCURRENT_USE[-1] else None
        return _CONCURRENT_REASON.format(detail=named.group(0) if named else detail)
    if _RESULT_LOST in text:
        return _RESULT_LOST_REASON
    if _WORKER_CRASHED in text:
        return _WORKER_CRASHED_REASON
    if _WORKER_LATE in text:
        return _WORKER_LATE_REASON
    causes = []
    for line in text.splitlines():
        found = _EXCEPTION_LINE.match(line.strip())
        if found:
            causes.append((found.group(1).rsplit(".", 1)[-1], found.group(2).strip()))
    meaningful = [cause for cause in causes if cause[0] not in _WRAPPERS]
    if meaningful or causes:
        name, message = (meaningful or causes)[-1]
        if name == "TaskFailedError" and _TASK_FAILED.match(message):
            return _TASK_FAILED.sub("", message)[:500]
        hint = _HINTS.get(name)
        reason = f"{name}: {message}" + (f" ({hint})" if hint else "")
        return reason[:500]
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:500] if first else type(error).__name__
