"""A run's progress learnt from what is durable, for a task whose batches are written elsewhere.

Through Spark Connect a task's batches are written in the Connect server's Python process
(:mod:`~dagster_kstreams.spark.remote_writer`), so the worker's
:class:`~dagster_kstreams.spark.run_state.RunState` hears of no batch. :class:`CommittedProgress`
reads it back: every batch the checkpoint's commit log has and the run has not counted yet, with
its end offsets from the offset log (what the writer committed to the group with it) and the time
Spark's progress report says the batch took.
"""

from __future__ import annotations

from typing import Any, Optional

from dagster_kstreams.spark.checkpoint import CheckpointReader
from dagster_kstreams.spark.run_state import RunState

__all__ = ["CommittedProgress"]


class CommittedProgress:
    """Counts into ``run`` the batches committed since the run started (``refresh``)."""

    def __init__(self, reader: CheckpointReader, run: RunState):
        self.reader, self.run = reader, run
        self._last: Optional[int] = reader.last_committed_batch()  # before the run: not its batches

    def refresh(self, query: Any) -> None:
        batches = self.reader.committed_batches(self._last)
        if not batches:
            return
        durations = {int(report.batchId): report.durationMs.get("triggerExecution", 0) / 1000
                     for report in query.recentProgress}
        for batch in batches:
            self.run.batch_done_elsewhere(batch, self.reader.batch_end_offsets(batch, self.run.assigned),
                                          durations.get(batch, 0.0))
            self._last = batch
