"""PySpark Column expressions after state, the Python twin of kstreams.oracle.ColumnsAfterStateExamples
(Java, whose lambdas do what these Columns do): keep the two in step.

On the events: an uncached count whose stream goes through a Column ``map_values`` to one topic and
through a Column ``filter`` and ``map_values`` to another, an uncached reduce whose stream a Column
``flat_map_values`` makes two records each, and ``StampValues`` (a user processor: the sub-topology
runs task-grouped) followed by a Column ``filter``; on the table (tombstones, null keys), its uncached
stream through a Column ``filter_not`` and a ``map_values`` of null values too, to a repartition topic
(which keeps the records' timestamps) read by a sub-topology that stamps each with its timestamp.
Its functions are self-contained: Spark's Python workers cannot import modules of tests/.
"""

from __future__ import annotations

from pyspark.sql import functions as F

from equivalence_io import StampValues
from dagster_kstreams.topology import Materialized, Repartitioned, StreamsBuilder

INPUTS = ("events", "table")
OUTPUTS = ("out-counts", "out-thirds", "out-twice", "out-stamped", "out-table")


def after_state_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of ColumnsAfterStateExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    events = builder.stream(topics["events"])
    counts = events.group_by_key().count(Materialized.as_("after-counts").with_caching_disabled()).to_stream()
    counts.map_values(F.concat(F.lit("c|"), F.col("value").cast("string"))).to(topics["out-counts"])
    counts.filter(F.col("value") % 3 == 0) \
        .map_values(F.concat(F.lit("third|"), F.col("value").cast("string"), F.lit("|"), F.col("key"))) \
        .to(topics["out-thirds"])
    events.group_by_key() \
        .reduce(lambda seen, value: f"{seen},{value}", Materialized.as_("after-reduced").with_caching_disabled()) \
        .to_stream() \
        .flat_map_values(F.array(F.col("value"), F.upper(F.col("value")))) \
        .to(topics["out-twice"])
    events.process_values(StampValues).filter(F.col("value").contains("3|")).to(topics["out-stamped"])
    builder.table(topics["table"], Materialized.as_("after-table").with_caching_disabled()) \
        .to_stream() \
        .filter_not(F.col("value").endswith("x")) \
        .map_values(F.coalesce(F.concat(F.lit("t|"), F.col("value")), F.lit("gone"))) \
        .repartition(Repartitioned.as_("after-table")) \
        .process_values(StampValues) \
        .to(topics["out-table"])
    return builder
