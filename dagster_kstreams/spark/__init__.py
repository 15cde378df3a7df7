"""Running tasks on Spark: :class:`TaskRunner` and what a run reports or raises."""

from dagster_kstreams.spark.errors import TaskFailedError, TaskFencedError
from dagster_kstreams.spark.task_result import TaskProgress, TaskResult
from dagster_kstreams.spark.task_runner import TaskRunner

__all__ = ["TaskRunner", "TaskResult", "TaskProgress", "TaskFailedError", "TaskFencedError"]
