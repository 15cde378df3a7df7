"""What the processors layer raises: a topology it cannot run, and a user function that failed."""

from __future__ import annotations

__all__ = ["UnsupportedTopologyError", "ProcessingError"]


class UnsupportedTopologyError(ValueError):
    """The topology uses an operation the runner cannot execute with Kafka Streams' semantics
    (named in the message). Raised at definition time, when the programs are built."""


class ProcessingError(RuntimeError):
    """A user function failed; the message names the processor and the source record."""
