"""What a task's run reports: :class:`TaskProgress` after every batch, :class:`TaskResult` at
its end. Task ids are strings here: these records go to Dagster metadata, the CLI and JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["TaskProgress", "TaskResult"]


@dataclass(frozen=True)
class TaskProgress:
    """Reported after every batch of a run."""

    task_id: str
    batch_id: int
    records_done: int
    seconds: float
    records_per_second: float
    lag_left: int


@dataclass
class TaskResult:
    """What one run of a task did.

    ``offsets_from``/``offsets_to`` map each source partition to the next offset to process
    before/after the run (``offsets_to`` is also what the consumer group holds afterwards).
    ``records_out`` counts written records per sink topic. ``records_dropped_late`` counts
    records a windowed processor dropped because their window had closed (beyond its grace
    period). ``lag_left`` is end offset minus ``offsets_to`` per source partition, measured
    when the run ended. ``worker_seconds``: the task's share of its process's time over
    ``seconds`` (:mod:`~dagster_kstreams.spark.busy_clock`; less than ``seconds`` when other tasks
    ran at once), None when not measured.
    """

    task_id: str
    subtopology: int
    partition: int
    offsets_from: dict[TopicPartition, int]
    offsets_to: dict[TopicPartition, int]
    records_in: int
    records_out: dict[str, int]
    batches: int
    seconds: float
    lag_left: dict[TopicPartition, int] = field(default_factory=dict)
    records_dropped_late: int = 0
    worker_seconds: float | None = None

    @property
    def task(self) -> TaskId:
        return TaskId(self.subtopology, self.partition)

    @property
    def records_per_second(self) -> float:
        return self.records_in / self.seconds if self.seconds > 0 else 0.0

    @property
    def total_lag_left(self) -> int:
        return sum(self.lag_left.values())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (for Dagster metadata and the CLI)."""

        def offsets(mapping: Mapping[TopicPartition, int]) -> dict[str, int]:
            return {f"{tp.topic}-{tp.partition}": offset for tp, offset in mapping.items()}

        return {
            "task_id": self.task_id,
            "subtopology": self.subtopology,
            "partition": self.partition,
            "offsets_from": offsets(self.offsets_from),
            "offsets_to": offsets(self.offsets_to),
            "records_in": self.records_in,
            "records_out": dict(self.records_out),
            "batches": self.batches,
            "seconds": round(self.seconds, 3),
            "records_per_second": round(self.records_per_second, 1),
            "lag_left": offsets(self.lag_left),
            "total_lag_left": self.total_lag_left,
            "records_dropped_late": self.records_dropped_late,
            "worker_seconds": None if self.worker_seconds is None else round(self.worker_seconds, 3),
        }
