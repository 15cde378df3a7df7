"""A task's micro-batch as the engine hands it to a compiled program (``process_task_batch``): the
frame the logic tests of user processors and transformers build from rows, their batched runs, and the
refusals they read."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes


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


def batched_outputs(program, rows, batches: int) -> tuple[list, Any]:
    """``rows`` through ``program`` in ``batches`` micro-batches of equal size (the last one shorter), the
    task's state carried from each to the next: every output in emit order as ``(topic, key bytes, value
    bytes)``, and the task's state after the last."""
    outputs, stored, size = [], None, max(1, -(-len(rows) // batches))
    for first in range(0, len(rows), size):
        out, stored = program.process_task_batch(task_frame(rows[first:first + size], first), stored)
        if out is not None:
            out = out.sort_values("emit_order", kind="stable")
            outputs += list(zip(out["topic"], out["key"], out["value"]))
    return outputs, stored


def decoded(outputs) -> list[tuple]:
    """``(key, value)`` strings of :func:`batched_outputs`' outputs (None stays None)."""
    return [(None if k is None else k.decode(), None if v is None else v.decode()) for _, k, v in outputs]


def refusal(build) -> str:
    """The message of what the Spark runner refuses, when defined, of the topology ``build(builder)`` makes."""
    builder = StreamsBuilder()
    build(builder)
    with pytest.raises(UnsupportedTopologyError) as refused:
        compile_topology(builder, "app", default_key_serde=Serdes.String(), default_value_serde=Serdes.String()).check()
    return str(refused.value)
