"""The timestamp of a record sent to the dead-letter topic, without a broker: the timestamp of the
record that could not be read, as Kafka Streams writes it (``ExceptionHandlerUtils
.buildDeadLetterQueueRecord``: ``context.timestamp()``, which ``RecordDeserializer`` sets to the raw
record's), on each path that sends one: the Python pass (processors/program.py), a source read in
the JVM (spark/column_sources.py) and a source a Column plan's Python segment reads
(spark/expressions.py)."""

from __future__ import annotations

from pyspark.sql import functions as F

from dagster_kstreams.kafka.dead_letter import DeadLetterPolicy
from dagster_kstreams.processors.records import Output, RecordContext
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.spark.event_time import source_columns
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Consumed
from dagster_kstreams.topology.serdes import Serdes

POLICY = DeadLetterPolicy("log_and_continue", "dlq")
NOT_A_LONG = b"bad"  # three bytes: the Long serde needs eight
NOT_JSON = b"{not json"
A_LONG, A_JSON = (2).to_bytes(8, "big"), b'"ok"'


def _program(builder: StreamsBuilder):
    return compile_topology(builder, "app", dead_letters=POLICY).program(0)


def _dead_letter_times(spark, builder: StreamsBuilder, good: bytes, bad: bytes) -> list[tuple]:
    """``(value, timestamp_ms)`` of what the Column plan writes to the dead-letter topic for a good
    and a bad record (the bad one's Kafka timestamp 1970-01-01T00:00:05.123Z)."""
    plan = _program(builder).column_plan
    assert plan is not None
    rows = source_columns(spark.createDataFrame(
        [(b"k", good, "in", 0, 3, 4.0), (b"k", bad, "in", 0, 4, 5.123)],
        "key binary, value binary, topic string, partition int, offset long, seconds double",
    ).withColumn("timestamp", F.timestamp_seconds("seconds")).drop("seconds"))
    output = plan.build(rows, POLICY).where(F.col("topic") == "dlq")
    return [(bytes(row.value), row.timestamp_ms) for row in output.collect()]


def test_the_python_pass_sends_a_dead_letter_with_the_records_timestamp():
    builder = StreamsBuilder()
    builder.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).map_values(lambda v: v + 1).to("out")
    out = Output()
    _program(builder).process_record(RecordContext("in", 0, 4, 5_123), b"k", NOT_A_LONG, out, None)
    assert list(zip(out.topic, out.value, out.timestamp_ms)) == [("dlq", NOT_A_LONG, 5_123)]


def test_a_source_read_in_the_jvm_sends_a_dead_letter_with_the_records_timestamp(spark):
    builder = StreamsBuilder()
    builder.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).filter(F.col("value") > 1).to("out")
    assert _dead_letter_times(spark, builder, A_LONG, NOT_A_LONG) == [(NOT_A_LONG, 5_123)]


def test_a_source_a_python_segment_reads_sends_a_dead_letter_with_the_records_timestamp(spark):
    builder = StreamsBuilder()
    builder.stream("in", Consumed.with_(Serdes.String(), Serdes.Json())).map_values(lambda v: str(v)) \
        .map_values(F.upper(F.col("value"))).to("out")
    assert _dead_letter_times(spark, builder, A_JSON, NOT_JSON) == [(NOT_JSON, 5_123)]
