"""Durations given to the DSL, in milliseconds as Kafka Streams keeps them
(``ApiUtils.validateMillisecondDuration``)."""
from __future__ import annotations

from datetime import timedelta
from typing import Optional

__all__ = ["duration_millis"]


def duration_millis(duration: timedelta | int | None, what: str) -> Optional[int]:
    """``duration`` in whole milliseconds (an int is taken as milliseconds; None stays None).

    Raises ``TypeError`` for anything else and ``ValueError`` for a negative duration.
    """
    if duration is None:
        return None
    if isinstance(duration, timedelta):
        ms = duration // timedelta(milliseconds=1)
    elif isinstance(duration, int) and not isinstance(duration, bool):
        ms = duration
    else:
        raise TypeError(f"{what} must be a datetime.timedelta, got {type(duration).__name__}")
    if ms < 0:
        raise ValueError(f"{what} must not be negative: {duration}")
    return ms
