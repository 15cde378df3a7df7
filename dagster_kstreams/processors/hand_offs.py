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

One source record may be handed over as several rows (several hand-offs; a ``flat_map_values``
among the engine's processors gives several records of one), which must enter in the order Kafka
Streams forwards them: depth first, each processor's children in their order, each exploded record
down all of its children before the next. An engine keeps that order as a row's *path*
(:func:`path_step`): the steps taken from the source, a child's index among its parent's children
or an exploded record's index in its array, each written as a fixed-width string, so that the paths
of one source record's rows sort as those rows are forwarded (a string compares as the list of its
steps would, whatever sort the engine's rows go through next).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["HandOff", "PATH_STEP_FORMAT", "path_step"]

# A step of a handed row's path: eight hex digits (a child's index, an array element's index).
PATH_STEP_FORMAT = "%08x"


@dataclass(frozen=True)
class HandOff:
    """Where a handed record enters a program: its key and value read with these serdes, then given
    to ``children`` (program indexes) in order. ``name``: the processor it leaves (for messages)."""

    name: str
    key_serde: Any
    value_serde: Any
    children: tuple[int, ...]


def path_step(index: int) -> str:
    """One step of a handed row's path: a fixed width, so that paths compare as their steps do."""
    if not 0 <= index <= 0xFFFFFFFF:
        raise ValueError(f"a path step is an index from 0 to 2**32 - 1, not {index}")
    return PATH_STEP_FORMAT % index
