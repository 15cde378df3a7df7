"""A task's micro-batch as the engine hands it to a compiled program (``process_task_batch``): the
frame the logic tests of user processors and transformers build from rows."""

from __future__ import annotations

import pandas as pd


def task_frame(rows, first_offset: int = 0, topic: str = "in") -> pd.DataFrame:
    """Rows ``(key, value, event time[, topic])`` at offsets from ``first_offset``, in that order; a row
    without its topic is ``topic``'s."""
    offsets = list(range(first_offset, first_offset + len(rows)))
    return pd.DataFrame({
        "key": [None if r[0] is None else r[0].encode() for r in rows],
        "value": [None if r[1] is None else r[1].encode() for r in rows],
        "topic": [r[3] if len(r) > 3 else topic for r in rows], "partition": [0] * len(rows), "offset": offsets,
        "timestamp": [None] * len(rows), "event_time": [r[2] for r in rows],
        "merge_time": [r[2] for r in rows], "seq": offsets,
    })
