"""The global-table and timestamp-extractor example (inner and left stream-global-table joins, and
a tumbling-window count of the same clicks), the Python twin of kstreams.oracle.GlobalExamples
(Java): keep the two in step.

A click's value is ``"<user>,<family><n>,<event time>"``; the clicks are read with a timestamp
extractor that takes the event time from the value (the Kafka timestamp for a null value; a
negative event time drops the click). The key selector maps a click to its user (None for a click
whose user is ``-``, and for a null value), the profile table is keyed by user. Pings are counted
in windows of the wall-clock time they are read (``WallclockTimestampExtractor``). Orders (``"<user>,<family><n>"``)
are filtered and upper-cased by PySpark Column expressions around a left join with the profiles (the
join runs in a Python segment of the Column plan). Its functions are self-contained: Spark's Python
workers cannot import modules of tests/.
"""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import functions as F

from dagster_kstreams.topology import (
    Consumed, Materialized, Named, Produced, StreamsBuilder, TimeWindows, WallclockTimestampExtractor,
)
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde

INPUTS = ("profiles", "clicks", "pings", "orders")
OUTPUTS = ("out-inner", "out-left", "out-windowed", "out-wallclock", "out-orders")


class EventTimeInValue:
    """A TimestampExtractor: the third field of the value (Java twin: GlobalExamples.EventTimeInValue)."""

    def extract(self, record, partition_time):
        return record.timestamp if record.value is None else int(record.value.split(",")[2])


def global_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of GlobalExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    profiles = builder.global_table(topics["profiles"])
    clicks = builder.stream(topics["clicks"], Consumed.with_timestamp_extractor(EventTimeInValue()))

    def user_of(key, click):
        return None if click is None or click.startswith("-,") else click.split(",")[0]

    clicks.join(profiles, user_of, lambda key, click, profile: f"{'null' if key is None else key}|{click}|{profile}") \
        .to(topics["out-inner"])
    clicks.left_join(profiles, user_of,
                     lambda key, click, profile: "|".join("null" if part is None else part
                                                          for part in (key, click, profile)),
                     Named.as_("enrich-left")) \
        .to(topics["out-left"])
    clicks.group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))) \
        .count(Materialized.as_("click-counts").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-windowed"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.Long()))
    # Pings counted in hour windows of the time they are read, whatever their own timestamps.
    builder.stream(topics["pings"], Consumed.with_timestamp_extractor(WallclockTimestampExtractor())) \
        .group_by_key() \
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(hours=1))) \
        .count(Materialized.as_("ping-counts").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-wallclock"], Produced.with_(WindowedSerde(Serdes.String(), 3_600_000), Serdes.Long()))
    if "orders" not in topics:  # the describe() catalog's: without Columns (they need a SparkContext)
        return builder
    # Orders: Column expressions around a left join with the global table.
    builder.stream(topics["orders"]) \
        .filter(F.col("value").isNotNull() & ~F.col("value").startswith("x")) \
        .left_join(profiles, lambda key, order: None if order.startswith("-,") else order.split(",")[0],
                   lambda key, order, profile: "|".join("null" if part is None else part
                                                        for part in (key, order, profile)),
                   Named.as_("enrich-orders")) \
        .map_values(F.upper(F.col("value"))) \
        .to(topics["out-orders"])
    return builder
