"""Stream partitioners on sinks of a sub-topology written with Column expressions.

The Column plan (:mod:`dagster_kstreams.spark.expressions`) runs every operation in the JVM; a
user's partitioner is Python. So the plan's rows of a placed sink carry the sink and the source
record's coordinates (:func:`placement_columns`), and one Arrow pass over the plan's output
(:func:`with_placed_partitions`, added only when a sink has a partitioner) reads each such
record's key and value back with the sink's serdes and asks the sink's placement, the very code
the Python pass uses (:class:`~dagster_kstreams.processors.partitioners.SinkPlacement`): None (the
producer's default partitioner: a null ``partition``), none (the record is dropped), or a copy
per partition, in ascending order. Rows of other sinks go through with a null ``partition``.

The partitioner sees the key and value as the sink's serdes read its bytes (the JVM wrote them
from the Columns: a ``Json`` value is a dict, a ``String`` one the string the sink wrote). A
partitioner's failure, or a partition outside the topic, stops the task with one line naming the
sink and the source record, as in the Python pass.
"""

from __future__ import annotations

from typing import Any, Optional

import pyarrow as pa
import pyspark.sql.types as T
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from dagster_kstreams.processors.records import RecordContext

__all__ = ["PLACEMENT_COLUMNS", "place_batch", "placement_columns", "with_placed_partitions"]

# The sink (its index in the program) and the source record of a row of a placed sink.
PLACEMENT_COLUMNS = {"_placed_sink": "int", "_source_topic": "string", "_source_partition": "int",
                     "_source_offset": "long", "_source_time": "long"}


def placement_columns(program: Any, sink_index: Optional[int]) -> list[Column]:
    """The :data:`PLACEMENT_COLUMNS` of a branch of the plan that ends in the sink
    ``program.nodes[sink_index]`` (None: a branch with no placed sink, all null); none at all
    when no sink of the program places its records."""
    if not program.placed_topics:
        return []
    if sink_index is None or program.nodes[sink_index].placement is None:
        return [F.lit(None).cast(kind).alias(name) for name, kind in PLACEMENT_COLUMNS.items()]
    values = (F.lit(sink_index), F.col("topic"), F.col("partition"), F.col("offset"), F.col("event_time"))
    return [value.cast(kind).alias(name) for value, (name, kind) in zip(values, PLACEMENT_COLUMNS.items())]


def with_placed_partitions(output: DataFrame, program: Any) -> DataFrame:
    """The plan's ``output`` (with :data:`PLACEMENT_COLUMNS`) with a ``partition`` column instead:
    each placed sink's record dropped, copied or placed as its partitioner says (:func:`place_batch`)."""
    kept = [field for field in output.schema.fields if field.name not in PLACEMENT_COLUMNS]
    schema = T.StructType([*kept, T.StructField("partition", T.IntegerType(), True)])

    def place(batches):
        for batch in batches:
            if batch.num_rows:
                yield place_batch(batch, program)

    return output.mapInArrow(place, schema)


def place_batch(batch: pa.RecordBatch, program: Any) -> pa.RecordBatch:
    """One Arrow batch of the plan's output, its rows of placed sinks placed: the batch without
    :data:`PLACEMENT_COLUMNS`, with ``partition`` (null: the producer's default partitioner)."""
    column = {name: batch.column(batch.schema.get_field_index(name)).to_pylist()
              for name in (*PLACEMENT_COLUMNS, "key", "value", "headers")}
    rows, partitions = [], []
    for row, sink_index in enumerate(column["_placed_sink"]):
        chosen = None if sink_index is None else _partitions(program.nodes[sink_index], column, row)
        if chosen is None:
            rows.append(row)
            partitions.append(None)
        else:  # none: dropped; else a copy to each
            rows.extend([row] * len(chosen))
            partitions.extend(chosen)
    names = [name for name in batch.schema.names if name not in PLACEMENT_COLUMNS]
    taken = batch.take(pa.array(rows, type=pa.int64()))
    arrays = [taken.column(taken.schema.get_field_index(name)) for name in names]
    return pa.RecordBatch.from_arrays([*arrays, pa.array(partitions, type=pa.int32())], names=[*names, "partition"])


def _partitions(sink: Any, column: dict, row: int) -> Optional[tuple[int, ...]]:
    """Where ``sink`` puts the record in ``row``: its placement's answer for the key and value the
    sink's serdes read from the bytes the plan wrote."""
    context = RecordContext(topic=column["_source_topic"][row], partition=column["_source_partition"][row],
                            offset=column["_source_offset"][row], timestamp=column["_source_time"][row],
                            headers=column["headers"][row])
    key = sink.call(context, sink.key_serde.deserialize, column["key"][row])
    value = sink.call(context, sink.value_serde.deserialize, column["value"][row])
    return sink.placement.partitions(sink, sink.topic, key, value, context, None)
