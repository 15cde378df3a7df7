"""The key a stateful task's state is grouped by.

Usually the source record's key bytes (``key``): Spark groups a keyed sub-topology by them, and a
task-grouped one keeps each key's state under them. A stateful sub-topology whose sources read
keys with different serdes (a merge, a cogroup: Kafka Streams' stores write every key with their
own key serde, :mod:`dagster_kstreams.processors.state_key_serde`) sets
:attr:`~dagster_kstreams.processors.program.SubtopologyProgram.state_key_serde`: its records
then carry :data:`STATE_KEY_COLUMN`, the key as the store writes it
(:meth:`~dagster_kstreams.processors.program.SubtopologyProgram.state_keys`); Spark groups by it,
and each record's ``context.raw_key`` is it (:mod:`dagster_kstreams.spark.frames`). Such a
sub-topology reads several topics (sources with different serdes), so its records are put in
processing order first: the column is computed in that same Python pass, no pass of its own
(:func:`state_key_column_of`, :func:`~dagster_kstreams.spark.source.in_processing_order`), and
only such programs compute it.
"""

from __future__ import annotations

from typing import Any, Optional

import pyarrow as pa
import pyspark.sql.types as T

__all__ = ["STATE_KEY_COLUMN", "state_key_column", "state_key_column_of"]

STATE_KEY_COLUMN = "state_key"
_FIELD = T.StructField(STATE_KEY_COLUMN, T.BinaryType(), True)


def state_key_column(program: Any) -> str:
    """The column ``program``'s state is grouped by."""
    return "key" if program.state_key_serde is None else STATE_KEY_COLUMN


def state_key_column_of(program: Any) -> Optional[tuple[T.StructField, Any]]:
    """``(field, function of a pyarrow Table -> the state keys of its rows)`` for a program whose
    state is not grouped by the source key's bytes (None otherwise): a column to compute in a pass
    the records go through anyway (``event_time.with_processing_order``'s ``extra_column``)."""
    if program.state_key_serde is None:
        return None

    def state_keys(table) -> pa.Array:
        keys = table.column("key").to_pylist()
        return pa.array(program.state_keys(keys, table.column("topic").to_pylist()), type=pa.binary())

    return _FIELD, state_keys
