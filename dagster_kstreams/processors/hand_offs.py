"""Records an engine hands to a program part way into its processors, instead of at a source.

An engine may run the first processors of a sub-topology itself (Spark: PySpark Column expressions
in front of the sub-topology's state, as a DataFrame plan: :mod:`dagster_kstreams.spark.column_hand_off`)
and hand each record that leaves them to the processors that follow, as Kafka Streams' processor
forwards it to its children. A :class:`HandOff` says where such a record goes on and how to read it:
the record's key and value arrive as bytes, written by the engine with ``key_serde`` and
``value_serde``, and are read back with them (under the task's deserialization handler, as a
source's are) before ``children`` see them, in their order. The record keeps its source record's
context (topic, partition, offset, timestamp, headers, position): a hand-off is no source.

A source's whole record can be handed too (``children`` = the source's children, its serdes): it
goes on exactly as if read at the source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["HandOff"]


@dataclass(frozen=True)
class HandOff:
    """Where a handed record enters a program: its key and value read with these serdes, then given
    to ``children`` (program indexes) in order. ``name``: the processor it leaves (for messages)."""

    name: str
    key_serde: Any
    value_serde: Any
    children: tuple[int, ...]
