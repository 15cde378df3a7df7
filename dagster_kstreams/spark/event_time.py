"""Event time on the Spark runner: each record's timestamp, the task's processing order and its
stream time, as Kafka Streams keeps them.

Record timestamp (``event_time``, epoch ms)
    The Kafka record timestamp, as Kafka Streams' default ``FailOnInvalidTimestamp`` extractor
    reads it; for a source with a timestamp extractor (``Consumed.with_timestamp_extractor``), what
    the extractor returns (:func:`with_extracted_timestamps`; a negative result drops the record). Spark's Kafka sink cannot set a record's timestamp (records it writes carry the
    write time), so whatever a task writes to a repartition topic carries the timestamp of the
    record that produced it in the header :data:`TIMESTAMP_HEADER`
    (:mod:`dagster_kstreams.kafka.timestamp_header`), and a task reading a repartition topic takes
    the timestamp from that header. That is how Kafka Streams'
    timestamps survive a repartition here (a windowed aggregation after ``group_by`` needs them).

Processing order (``seq``) and merge time (``merge_time``)
    Kafka Streams' task merges its input partitions by the timestamp of each partition's head
    record (``PartitionGroup``). For partitions read in offset order that merge is the same as
    sorting all records by their partition's running maximum timestamp (``merge_time``: a
    record stuck behind a later-stamped one goes right after it), then topic, then offset.
    ``seq`` is a record's position in that order within the micro-batch.

Stream time (``stream_time``)
    The largest timestamp the task's windowed processors have seen so far, after this record
    (Kafka Streams' ``observedStreamTime``: records with a null key do not advance it). Within a
    micro-batch it is a running maximum in processing order; across micro-batches (and across
    processes: it is part of the checkpoint) it is carried by Spark's event-time watermark on
    :data:`WATERMARK_COLUMN` with no delay, which Spark sets to the largest event time of all
    earlier batches. A key group reads it with ``GroupState.getCurrentWatermarkMs()``; a
    record's stream time is the larger of the two. (Spark drops records behind the watermark
    only for event-time timeouts, which the runner does not use: late records still reach the
    processors, which decide, as Kafka Streams does, whether they are too late.)
    ``stream_time_before`` is the stream time before the record (what a windowed store has seen
    when the record reaches it: its retention hides what ended before that minus the retention).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute in the workers
import pyspark.sql.types as T
from pyspark.sql import functions as F

from dagster_kstreams.kafka.timestamp_header import (
    INTERNAL_HEADER_PREFIX,
    TIMESTAMP_HEADER,
    decode_timestamp,
    encode_timestamp,
)

__all__ = [
    "TIMESTAMP_HEADER",
    "WATERMARK_COLUMN",
    "decode_timestamp",
    "encode_timestamp",
    "source_columns",
    "with_extracted_timestamps",
    "with_processing_order",
]

WATERMARK_COLUMN = "_stream_time_watermark"
ORDER_COLUMNS = ("merge_time", "stream_time", "stream_time_before", "seq")


def source_columns(kafka_source, internal_topics: Iterable[str] = (), keep_headers: bool = False):
    """Spark's Kafka source rows as a task reads them: ``key, value, topic, partition, offset,
    timestamp, event_time`` (:data:`~dagster_kstreams.spark.frames.SOURCE_COLUMNS`), and ``headers``
    too with ``keep_headers`` (carried to the output, and a timestamp extractor reads them:
    :func:`with_extracted_timestamps`), without the runner's own (``INTERNAL_HEADER_PREFIX``: the
    timestamp and position it writes), null when none is left.

    ``kafka_source`` must have been read with ``includeHeaders`` when ``internal_topics`` (the
    repartition topics among the task's sources) is not empty, or ``keep_headers``."""
    event_time = F.unix_millis(F.col("timestamp"))
    internal = list(internal_topics)
    if internal:
        carried = F.filter(F.col("headers"), lambda header: header["key"] == F.lit(TIMESTAMP_HEADER))
        header_time = F.conv(F.hex(F.get(carried, 0)["value"]), 16, 10).cast("long")
        event_time = F.when(F.col("topic").isin(internal) & header_time.isNotNull(), header_time).otherwise(event_time)
    columns = [event_time.alias("event_time")]
    if keep_headers:
        own = F.filter(F.col("headers"), lambda header: ~header["key"].startswith(INTERNAL_HEADER_PREFIX))
        # size(null) is -1. The filter (an interpreted lambda) runs only for records with headers:
        # most have none, and it would cost every record of a batch (the word-count bench).
        columns.append(F.when(F.size(F.col("headers")) > 0, F.when(F.size(own) > 0, own)).alias("headers"))
    return kafka_source.select("key", "value", "topic", "partition", "offset", "timestamp", *columns)


def with_extracted_timestamps(source, extraction, keep_headers: bool = False):
    """``source`` (:func:`source_columns` rows with ``headers``) with each record's ``event_time``
    given by its source's timestamp extractor (``extraction``: a
    :class:`~dagster_kstreams.processors.timestamps.SourceTimestamps`), and without the records it
    gave a negative timestamp (Kafka Streams drops them before any processor). Spark's Kafka source
    reads one Kafka partition per Spark partition, in offset order: the partition time an extractor
    is given is the largest timestamp extracted before it in the micro-batch (-1 at its start).
    ``keep_headers``: the rows keep their ``headers`` column."""
    schema = T.StructType([field for field in source.schema.fields if keep_headers or field.name != "headers"])
    names = [field.name for field in schema.fields]

    def extract(batches):
        partition_times: dict = {}
        for batch in batches:
            if not batch.num_rows:
                continue
            columns = {name: batch.column(batch.schema.get_field_index(name)).to_pylist()
                       for name in ("topic", "partition", "offset", "key", "value", "event_time", "headers")}
            times = extraction.extract(columns["topic"], columns["partition"], columns["offset"], columns["key"],
                                       columns["value"], columns["event_time"], columns["headers"], partition_times)
            extracted = pa.array(times, type=pa.int64())
            arrays = [extracted if name == "event_time" else batch.column(batch.schema.get_field_index(name))
                      for name in names]
            kept = pa.compute.greater_equal(extracted, 0)
            yield pa.RecordBatch.from_arrays(arrays, names=names).filter(kept)

    return source.mapInArrow(extract, schema)


def with_processing_order(source, stream_time: bool, skip_null_values: bool = False, extra_column=None):
    """``source`` (:func:`source_columns` rows of one task's micro-batch) plus ``merge_time``,
    ``stream_time``, ``stream_time_before`` (the stream time before the record) and ``seq`` (see
    the module docstring); with ``stream_time``, also the watermark column that carries stream
    time to the next micro-batch. With ``skip_null_values`` records with a null value do not
    advance stream time either (Kafka Streams' sliding windows). ``extra_column``: a
    ``(StructField, function of the ordered pyarrow Table -> its column)`` computed in the same
    pass (a task's state keys: :mod:`dagster_kstreams.spark.state_keys`), or None.

    The task's rows are brought to one Python worker (a task is one partition of each of its
    topics: the micro-batch is bounded by ``max_records_per_batch``) and ordered there;
    streaming DataFrames cannot be sorted."""
    schema = T.StructType([
        *source.schema.fields,
        T.StructField("merge_time", T.LongType(), False),
        T.StructField("stream_time", T.LongType(), False),
        T.StructField("stream_time_before", T.LongType(), False),
        T.StructField("seq", T.LongType(), False),
        *([] if extra_column is None else [extra_column[0]]),
    ])

    def order(batches):
        batches = [batch for batch in batches if batch.num_rows]
        if not batches:
            return
        table = pa.Table.from_batches(batches)
        # Topic names as codes in name order (lexsort wants numbers).
        _, topics = np.unique(np.array(table.column("topic").to_pylist(), dtype=object), return_inverse=True)
        partitions = table.column("partition").to_numpy()
        offsets = table.column("offset").to_numpy()
        times = table.column("event_time").to_numpy()
        has_key = table.column("key").is_valid().to_numpy(zero_copy_only=False)
        if skip_null_values:
            has_key = has_key & table.column("value").is_valid().to_numpy(zero_copy_only=False)
        # merge_time: each partition's running maximum timestamp, in offset order.
        by_partition = np.lexsort((offsets, partitions, topics))
        merge_time = np.empty(len(times), dtype=np.int64)
        start = 0
        for end in range(1, len(by_partition) + 1):
            if end == len(by_partition) or (
                topics[by_partition[end]] != topics[by_partition[start]]
                or partitions[by_partition[end]] != partitions[by_partition[start]]
            ):
                rows = by_partition[start:end]
                merge_time[rows] = np.maximum.accumulate(times[rows])
                start = end
        processing = np.lexsort((offsets, topics, merge_time))
        # stream time: running maximum, in processing order, of the timestamps of keyed records.
        keyed_times = np.where(has_key[processing], times[processing], np.iinfo(np.int64).min)
        running = np.maximum.accumulate(keyed_times)
        stream = np.empty(len(times), dtype=np.int64)
        stream[processing] = running
        # ... and before it (what a session store has seen when the record reaches it).
        before = np.empty(len(times), dtype=np.int64)
        before[processing] = np.concatenate(([np.iinfo(np.int64).min], running[:-1]))
        seq = np.empty(len(times), dtype=np.int64)
        seq[processing] = np.arange(len(times), dtype=np.int64)
        table = table.append_column("merge_time", pa.array(merge_time, type=pa.int64()))
        table = table.append_column("stream_time", pa.array(stream, type=pa.int64()))
        table = table.append_column("stream_time_before", pa.array(before, type=pa.int64()))
        table = table.append_column("seq", pa.array(seq, type=pa.int64()))
        table = table.take(pa.array(processing))  # in processing order: replays see the same
        if extra_column is not None:
            table = table.append_column(extra_column[0].name, extra_column[1](table))
        yield from table.to_batches()

    # coalesce, not repartition: the task's few Spark partitions (one per source topic) meet in
    # one Spark task without a shuffle; ``order`` sorts them itself.
    ordered = source.coalesce(1).mapInArrow(order, schema)
    if not stream_time:
        return ordered
    counted = F.col("key").isNotNull()
    if skip_null_values:
        counted = counted & F.col("value").isNotNull()
    watermark_time = F.when(counted, F.timestamp_millis(F.col("event_time")))
    return ordered.withColumn(WATERMARK_COLUMN, watermark_time).withWatermark(WATERMARK_COLUMN, "0 seconds")
