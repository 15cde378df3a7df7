"""Stream partitioners and topic extractors on sinks of a sub-topology written with Column expressions.

The Column plan (:mod:`dagster_kstreams.spark.expressions`) runs every operation in the JVM; a
user's partitioner, or the function that picks a sink's topic (Kafka Streams'
``TopicNameExtractor``), is Python. So the plan's rows of such a sink carry the sink and the source
record's coordinates (:func:`placement_columns`), and one Arrow pass over the plan's output
(:func:`with_placed_partitions`, added only when a sink needs it: :func:`passes_over_output`) reads
each such record's key and value back with the sink's serdes, asks the sink's function for the
topic, then the sink's placement, the very code the Python pass uses
(:class:`~dagster_kstreams.processors.partitioners.SinkPlacement`): None (the producer's default
partitioner: a null ``partition``), none (the record is dropped), or a copy per partition, in
ascending order. Rows of other sinks go through with a null ``partition``.

The functions see the key and value as the sink's serdes read its bytes (the JVM wrote them from
the Columns: a ``Json`` value is a dict, a ``String`` one the string the sink wrote). A function's
failure, a picked topic that does not exist (with a partitioner, which needs its partition count),
or a partition outside the topic stops the task with one line naming the sink and the source
record, as in the Python pass.
"""

from __future__ import annotations

from typing import Any, Optional

import pyarrow as pa
import pyspark.sql.types as T
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from dagster_kstreams.processors.records import RecordContext

__all__ = ["PLACEMENT_COLUMNS", "passes_over_output", "place_batch", "placement_columns", "with_placed_partitions"]

# The sink (its index in the program) and the source record of a row of a sink in the pass.
PLACEMENT_COLUMNS = {"_placed_sink": "int", "_source_topic": "string", "_source_partition": "int",
                     "_source_offset": "long", "_source_time": "long"}


def _in_pass(node: Any) -> bool:
    """Whether a sink's records go through the pass: a partitioner places them, or a function
    picks their topic."""
    return node.kind == "sink" and (node.placement is not None or node.topic is None)


def passes_over_output(program: Any) -> bool:
    """Whether the plan's output goes through the Python pass (some sink of ``program`` needs it)."""
    return any(_in_pass(node) for node in program.nodes)


def placement_columns(program: Any, sink_index: Optional[int]) -> list[Column]:
    """The :data:`PLACEMENT_COLUMNS` of a branch of the plan that ends in the sink
    ``program.nodes[sink_index]`` (None: a branch that ends in no sink of the pass, all null);
    none at all when no sink of the program needs the pass."""
    if not passes_over_output(program):
        return []
    if sink_index is None or not _in_pass(program.nodes[sink_index]):
        return [F.lit(None).cast(kind).alias(name) for name, kind in PLACEMENT_COLUMNS.items()]
    values = (F.lit(sink_index), F.col("topic"), F.col("partition"), F.col("offset"), F.col("event_time"))
    return [value.cast(kind).alias(name) for value, (name, kind) in zip(values, PLACEMENT_COLUMNS.items())]


def with_placed_partitions(output: DataFrame, program: Any) -> DataFrame:
    """The plan's ``output`` (with :data:`PLACEMENT_COLUMNS`) with a ``partition`` column instead:
    each record of a sink in the pass given its topic and dropped, copied or placed as its
    partitioner says (:func:`place_batch`)."""
    kept = [field for field in output.schema.fields if field.name not in PLACEMENT_COLUMNS]
    schema = T.StructType([*kept, T.StructField("partition", T.IntegerType(), True)])

    def place(batches):
        for batch in batches:
            if batch.num_rows:
                yield place_batch(batch, program)

    return output.mapInArrow(place, schema)


def place_batch(batch: pa.RecordBatch, program: Any) -> pa.RecordBatch:
    """One Arrow batch of the plan's output, its rows of sinks in the pass routed and placed: the
    batch without :data:`PLACEMENT_COLUMNS`, with ``topic`` set and ``partition`` (null: the
    producer's default partitioner)."""
    column = {name: batch.column(batch.schema.get_field_index(name)).to_pylist()
              for name in (*PLACEMENT_COLUMNS, "topic", "key", "value", "headers")}
    rows, topics, partitions = [], [], []
    for row, sink_index in enumerate(column["_placed_sink"]):
        topic, chosen = column["topic"][row], None
        if sink_index is not None:
            topic, chosen = _destination(program.nodes[sink_index], column, row)
        if chosen is None:
            rows.append(row)
            topics.append(topic)
            partitions.append(None)
        else:  # none: dropped; else a copy to each
            rows.extend([row] * len(chosen))
            topics.extend([topic] * len(chosen))
            partitions.extend(chosen)
    names = [name for name in batch.schema.names if name not in PLACEMENT_COLUMNS]
    taken = batch.take(pa.array(rows, type=pa.int64()))
    arrays = [pa.array(topics, type=pa.string()) if name == "topic" else taken.column(taken.schema.get_field_index(name))
              for name in names]
    return pa.RecordBatch.from_arrays([*arrays, pa.array(partitions, type=pa.int32())], names=[*names, "partition"])


def _destination(sink: Any, column: dict, row: int) -> tuple[str, Optional[tuple[int, ...]]]:
    """Where ``sink`` writes the record in ``row``: the topic (its own, or what its function picks)
    and its placement's answer, for the key and value the sink's serdes read from the bytes the plan wrote."""
    context = RecordContext(topic=column["_source_topic"][row], partition=column["_source_partition"][row],
                            offset=column["_source_offset"][row], timestamp=column["_source_time"][row],
                            headers=column["headers"][row])
    key = sink.call(context, sink.key_serde.deserialize, column["key"][row])
    value = sink.call(context, sink.value_serde.deserialize, column["value"][row])
    topic = sink.topic if sink.topic is not None else sink.pick_topic(key, value, context)
    if sink.placement is None:
        return topic, None
    return topic, sink.placement.partitions(sink, topic, key, value, context, None)
