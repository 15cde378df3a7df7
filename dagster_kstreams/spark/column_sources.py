"""A Column plan's sources: each source's records read in the JVM, malformed ones judged.

Spark's Kafka source gives raw ``key``/``value`` bytes; a source whose serdes the JVM parses
(:mod:`.jvm_serdes`) reads them into typed ``key``/``value`` Columns, else passes the bytes on to
the Python functions after it. A record either serde fails on goes to the task's deserialization
handler exactly as in the Python pass: ``fail`` stops the batch naming its topic, partition and
offset; ``log_and_continue`` drops it, and with a dead-letter topic writes it there raw with Kafka
Streams' dead-letter headers.
"""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql import functions as F

from dagster_kstreams.kafka.dead_letter import (
    HEADER_EXCEPTION,
    HEADER_EXCEPTION_MESSAGE,
    HEADER_OFFSET,
    HEADER_PARTITION,
    HEADER_TOPIC,
    DeserializationHandler,
)
from dagster_kstreams.spark.column_placement import placement_columns
from dagster_kstreams.spark.jvm_serdes import deserialize, stop_where

__all__ = ["HEADERS_TYPE", "read_sources"]

HEADERS_TYPE = "array<struct<key: string, value: binary>>"


def read_sources(plan, source, dead_letters, outputs: list) -> Iterator[tuple[int, object]]:
    """Each source of ``plan`` (a :class:`~dagster_kstreams.spark.expressions.ColumnPlan`) as
    ``(its index, its read records)`` from the task's ``source`` DataFrame; malformed records go to
    ``outputs`` as dead letters, or fail the batch. With the plan's ``keeps_raw_bytes``, the rows
    keep their raw bytes as ``_raw_key`` and ``_raw_value``."""
    nodes = plan.program.nodes
    # Each output row goes out by its source record's position: its seq in processing order (several
    # topics), else its offset (one partition); used when the rows are sorted (orders_output).
    emit_order = F.col("seq") if "seq" in source.columns else F.col("offset").cast("long")
    # The records' headers pass through to what they produce, as in Kafka Streams.
    record_headers = F.col("headers") if "headers" in source.columns else F.lit(None).cast(HEADERS_TYPE)
    for index, node in enumerate(nodes):
        if node.kind != "source":
            continue
        records = source.where(F.col("topic").isin(list(node.topics)))
        if not plan.reads_in_jvm(node):  # raw: what follows reads and judges the bytes
            key, key_bad, key_reason = F.col("key"), F.lit(False), ""
            value, value_bad, value_reason = F.col("value"), F.lit(False), ""
        else:
            key, key_bad, key_reason = deserialize(F.col("key"), node.key_serde)
            value, value_bad, value_reason = deserialize(F.col("value"), node.value_serde)
        records = records.select(
            F.col("key").alias("_raw_key"), F.col("value").alias("_raw_value"),
            "topic", "partition", "offset", "timestamp", "event_time", emit_order.alias("_emit_order"),
            record_headers.alias("_headers"),
            key.alias("key"), value.alias("value"),
            key_bad.alias("_key_bad"), value_bad.alias("_value_bad"),
            *(name for name in plan.carried_columns if name in source.columns),
        )
        bad = F.col("_key_bad") | F.col("_value_bad")

        def message(part, serde, reason):
            return F.concat(
                F.lit(f"cannot deserialize the {part} of the record at topic '"), F.col("topic"),
                F.lit("' partition "), F.col("partition").cast("string"),
                F.lit(" offset "), F.col("offset").cast("string"), F.lit(f" with {serde!r}: {reason}"),
            )

        why = F.when(F.col("_key_bad"), message("key", node.key_serde, key_reason)).otherwise(
            message("value", node.value_serde, value_reason))
        if dead_letters.handler is DeserializationHandler.FAIL:
            # The first malformed record stops the task.
            records = stop_where(records, bad, F.concat(F.lit("DeserializationError: "), why))
        else:
            if dead_letters.dead_letter_topic:
                headers = F.array(*(
                    F.struct(F.lit(name).alias("key"), data.cast("binary").alias("value"))
                    for name, data in (
                        (HEADER_EXCEPTION, F.lit("DeserializationError")),
                        (HEADER_EXCEPTION_MESSAGE, why),
                        (HEADER_TOPIC, F.col("topic")),
                        (HEADER_PARTITION, F.col("partition").cast("string")),
                        (HEADER_OFFSET, F.col("offset").cast("string")),
                    )
                ))
                outputs.append(records.where(bad).select(
                    F.lit(dead_letters.dead_letter_topic).alias("topic"),
                    F.col("_raw_key").alias("key"), F.col("_raw_value").alias("value"),
                    # the record's timestamp, as Kafka Streams' dead-letter record has it
                    headers.alias("headers"), F.col("event_time").alias("timestamp_ms"),
                    F.col("_emit_order").alias("emit_order"), *placement_columns(plan.program, None),
                ))
            records = records.where(~bad)
        records = records.drop("_key_bad", "_value_bad", *(() if plan.keeps_raw_bytes else ("_raw_key", "_raw_value")))
        yield index, records
