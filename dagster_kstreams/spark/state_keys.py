"""The key a stateful task's state is grouped by.

Usually the source record's key bytes (``key``): Spark groups a keyed sub-topology by them, and a
task-grouped one keeps each key's state under them. A sub-topology whose sources read keys with
different serdes while one store keeps them (a cogroup: Kafka Streams' store serializes every
input's key with its own key serde) sets
:attr:`~dagster_kstreams.processors.program.SubtopologyProgram.state_key_serde`: its records
then carry :data:`STATE_KEY_COLUMN`, the key as the store writes it, computed by one Arrow pass
(:func:`with_state_keys`) that only such programs pay for; Spark groups by it, and each record's
``context.raw_key`` is it (:mod:`dagster_kstreams.spark.frames`).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyspark.sql.types as T
from pyspark.sql import DataFrame

__all__ = ["STATE_KEY_COLUMN", "with_state_keys", "state_key_column"]

STATE_KEY_COLUMN = "state_key"


def state_key_column(program: Any) -> str:
    """The column ``program``'s state is grouped by."""
    return "key" if program.state_key_serde is None else STATE_KEY_COLUMN


def with_state_keys(source: DataFrame, program: Any) -> DataFrame:
    """``source`` with :data:`STATE_KEY_COLUMN` (``program.state_keys`` of each record) when the
    program's state is not grouped by the source key's bytes; else ``source`` itself."""
    if program.state_key_serde is None:
        return source
    schema = T.StructType([*source.schema.fields, T.StructField(STATE_KEY_COLUMN, T.BinaryType(), True)])

    def add_state_keys(batches):
        for batch in batches:
            keys = batch.column(batch.schema.get_field_index("key")).to_pylist()
            topics = batch.column(batch.schema.get_field_index("topic")).to_pylist()
            state_keys = pa.array(program.state_keys(keys, topics), type=pa.binary())
            yield pa.RecordBatch.from_arrays([*batch.columns, state_keys],
                                             names=[*batch.schema.names, STATE_KEY_COLUMN])

    return source.mapInArrow(add_state_keys, schema)
