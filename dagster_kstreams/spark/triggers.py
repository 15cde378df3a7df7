"""When a task's query runs its micro-batches: drain what is there, or keep running."""

from __future__ import annotations

from typing import Any

__all__ = ["Trigger", "AvailableNow", "ProcessingTime", "AVAILABLE_NOW"]


class Trigger:
    def apply(self, stream: Any) -> Any:
        """``stream`` (a ``DataStreamWriter``) with this trigger set."""
        raise NotImplementedError


class AvailableNow(Trigger):
    """Everything up to the end offsets seen when the query starts, then stop (a drain)."""

    def apply(self, stream: Any) -> Any:
        return stream.trigger(availableNow=True)


class ProcessingTime(Trigger):
    """Keep running: a micro-batch every ``seconds`` with what has arrived (0: as soon as the
    last one is done and there are new records)."""

    def __init__(self, seconds: float):
        if seconds < 0:
            raise ValueError(f"trigger_seconds must be >= 0, got {seconds}")
        self.seconds = seconds

    def apply(self, stream: Any) -> Any:
        return stream.trigger(processingTime=f"{round(self.seconds * 1000)} milliseconds")


AVAILABLE_NOW = AvailableNow()
