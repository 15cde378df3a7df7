"""The filtered-window example, the Python twin of kstreams.oracle.FilteredWindowExamples (Java):
keep the two in step.

Windowed aggregations fed through a filter (hopping windows), a ``filter_not`` (session windows), a
``flat_map_values`` (sliding windows) and a branch (tumbling windows without grace), all in the
sub-topology of the events, which also merges a second source (clicks) into a sink (records with a
key only: a null key's partition is the producer's choice): each of those
aggregations keeps its own stream time, of the records that reach it, which is not the task's. A
tumbling count straight on the events (whose stream time is the task's) shares the sub-topology.
In a sub-topology of their own, slides go straight to a sliding reduce and a tumbling count: the
sliding windows skip null values (their own stream time), which the tumbling windows (whose stream
time is the task's) count. In a third, PySpark Column expressions stand in front of a hopping count, a
tumbling reduce, a session count, a sliding reduce (the Column ``filter`` drops records that jump
ahead), a hopping reduce of the words a Column ``flat_map_values`` splits the values into, a
tumbling cogroup of a Column ``filter``'s records and a Column ``map_values``'s, and a session
cogroup of a Column ``filter_not``'s records and the same ``map_values``'s; beside them, with no
Column in front, a hopping count straight on the source and a tumbling reduce behind a Python
``map_values``, which the records ahead do reach (a null key's do not: the task's stream time
counts those).
Every aggregate is a string of its latest contributions or a count, every store uncached, so the
output is fixed by the input alone.

Its lambdas are self-contained (no module-level helpers): Spark's Python workers cannot import
modules of tests/, and the test module ships this one by value (``StampValues``, the harness's own,
comes from equivalence_io, which ships itself).
"""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import functions as F

from equivalence_io import StampValues
from dagster_kstreams.topology import BufferConfig, Grouped, StreamsBuilder, Suppressed
from dagster_kstreams.topology.branched_printed import Branched
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.named import Named
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows, TimeWindows

INPUTS = ("events", "clicks", "slides", "columns")
OUTPUTS = ("out-filtered", "out-sessions", "out-sliding", "out-branch", "out-direct", "out-merged",
           "out-mixed-sliding", "out-mixed-tumbling", "out-column-hopping", "out-column-tumbling",
           "out-column-sessions", "out-column-sliding", "out-column-final", "out-column-limited", "out-column-words",
           "out-column-cogroup", "out-column-session-cogroup", "out-column-straight", "out-column-python")
# How each output's keys are read: a time window of that size, a session window, a plain string.
OUTPUT_KEYS = {"out-filtered": 10_000, "out-sessions": "session", "out-sliding": 5_000, "out-branch": 5_000,
               "out-direct": 10_000, "out-merged": None, "out-mixed-sliding": 5_000, "out-mixed-tumbling": 10_000,
               "out-column-hopping": 10_000, "out-column-tumbling": 5_000, "out-column-sessions": "session",
               "out-column-sliding": 5_000, "out-column-final": 10_000, "out-column-limited": "session",
               "out-column-words": 10_000, "out-column-cogroup": 10_000,
               "out-column-session-cogroup": "session", "out-column-straight": 10_000, "out-column-python": 5_000}
# Values written by Serdes.Long().
LONG_VALUED = ("out-sessions", "out-branch", "out-direct", "out-mixed-tumbling", "out-column-hopping",
               "out-column-sessions", "out-column-final", "out-column-limited")


def filtered_window_examples(topics: dict[str, str], with_columns: bool = True) -> StreamsBuilder:
    """The topology of FilteredWindowExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic);
    without the Column sub-topology when not ``with_columns`` (a Column needs a SparkContext)."""
    builder = StreamsBuilder()
    events = builder.stream(topics["events"])
    # Another source of the sub-topology: its records reach no windowed aggregation.
    events.merge(builder.stream(topics["clicks"])).filter(lambda key, value: key is not None).to(topics["out-merged"])
    events.filter(lambda key, value: value is not None and not value.endswith("x")) \
        .group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))
                     .advance_by(timedelta(seconds=5))) \
        .aggregate(lambda: "", lambda key, value, agg: (agg + "," + value)[-60:], Named.as_("filtered-windows"),
                   Materialized.as_("filtered-windows-store").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-filtered"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String()))
    events.filter_not(lambda key, value: value is not None and value.endswith("y")) \
        .group_by_key() \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=3), timedelta(seconds=2))) \
        .count(Named.as_("filtered-sessions"), Materialized.as_("filtered-sessions-store").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-sessions"], Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.Long()))
    events.flat_map_values(lambda value: [] if value is None else [value + "a", value + "b"]) \
        .group_by_key() \
        .windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(seconds=5), timedelta(seconds=2))) \
        .reduce(lambda agg, value: (agg + "+" + value)[-60:], Named.as_("doubled-sliding"),
                Materialized.as_("doubled-sliding-store").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-sliding"], Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.String()))
    branches = events.split(Named.as_("split-")) \
        .branch(lambda key, value: key is not None and key < "u3", Branched.as_("low")) \
        .default_branch(Branched.as_("rest"))
    branches["split-low"] \
        .group_by_key() \
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=5))) \
        .count(Named.as_("branch-count"), Materialized.as_("branch-count-store").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-branch"], Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.Long()))
    events.group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=3))) \
        .count(Named.as_("direct-count"), Materialized.as_("direct-count-store").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-direct"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.Long()))
    slides = builder.stream(topics["slides"]).group_by_key()
    slides.windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(seconds=5), timedelta(seconds=2))) \
        .reduce(lambda agg, value: (agg + "+" + value)[-60:], Named.as_("mixed-sliding"),
                Materialized.as_("mixed-sliding-store").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-mixed-sliding"], Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.String()))
    slides.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))) \
        .count(Named.as_("mixed-tumbling"), Materialized.as_("mixed-tumbling-store").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-mixed-tumbling"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.Long()))
    if with_columns:
        _column_windows(builder, topics)
    return builder


def _column_windows(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    """A sub-topology of its own: PySpark Column expressions in front of a hopping count (a Column
    filter drops the "...x" values, some of which jump ahead) and its final results (a suppression
    until the windows close), a tumbling reduce (a Column ``filter_not`` drops the "...y" ones, then a
    Column ``map_values``), a session count (a Column ``map_values`` only) and its updates held back
    by a time limit, a sliding reduce (a Column filter drops the "...y" ones), and a hopping reduce of
    each value's words (a Column ``flat_map_values``: a null value gives none), each update stamped
    with its timestamp. Each aggregation's stream time counts the records its Columns let through. Beside
    them, no Column in front: a hopping count with grace straight on the source and a tumbling reduce
    behind a Python ``map_values``, each update stamped with its timestamp: their own clocks count every
    record with a key (the task's stream time, which no handed record carries, counts the null keys too)."""
    columns = builder.stream(topics["columns"])
    hopping = columns.filter(F.col("value").isNotNull() & ~F.col("value").endswith("x")) \
        .group_by_key(Grouped.with_(Serdes.String(), Serdes.String())) \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))
                     .advance_by(timedelta(seconds=5))) \
        .count(Named.as_("column-hopping"), Materialized.as_("column-hopping-store").with_caching_disabled())
    hopping.to_stream() \
        .to(topics["out-column-hopping"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.Long()))
    hopping.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())) \
        .to_stream() \
        .to(topics["out-column-final"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.Long()))
    columns.filter_not(F.col("value").isNotNull() & F.col("value").endswith("y")) \
        .map_values(F.coalesce(F.upper(F.col("value")), F.lit("-"))) \
        .group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=5), timedelta(seconds=1))) \
        .reduce(lambda agg, value: (agg + "+" + value)[-60:], Named.as_("column-tumbling"),
                Materialized.as_("column-tumbling-store").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-column-tumbling"], Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.String()))
    sessions = columns.map_values(F.concat(F.col("value"), F.lit("!"))) \
        .group_by_key(Grouped.with_(Serdes.String(), Serdes.String())) \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=3), timedelta(seconds=2))) \
        .count(Named.as_("column-sessions"), Materialized.as_("column-sessions-store").with_caching_disabled())
    sessions.to_stream() \
        .to(topics["out-column-sessions"], Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.Long()))
    sessions.suppress(Suppressed.until_time_limit(timedelta(seconds=2), BufferConfig.unbounded())) \
        .to_stream() \
        .to(topics["out-column-limited"], Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.Long()))
    columns.filter(F.col("value").isNotNull() & ~F.col("value").endswith("y")) \
        .group_by_key() \
        .windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(seconds=5), timedelta(seconds=2))) \
        .reduce(lambda agg, value: (agg + "+" + value)[-60:], Named.as_("column-sliding"),
                Materialized.as_("column-sliding-store").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-column-sliding"], Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.String()))
    # Spark's split keeps empty words (Java's split(" ", -1) does too); Kafka Streams forwards a value's
    # words one by one, in order, each with the value's timestamp: the reduce strings them in that order,
    # and StampValues appends each update's timestamp (the largest of its window's records').
    columns.flat_map_values(F.split(F.col("value"), " ")) \
        .group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))
                     .advance_by(timedelta(seconds=5))) \
        .reduce(lambda agg, word: (agg + "+" + word)[-60:], Named.as_("column-words"),
                Materialized.as_("column-words-store").with_caching_disabled()) \
        .to_stream() \
        .process_values(StampValues) \
        .to(topics["out-column-words"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String()))
    # A windowed cogroup of two of the columns' streams, each behind Columns: the filtered input's stream
    # time skips the "...x" values that jump ahead, the other's counts them, and so does the store's
    # (every write): a window closes for one input while the other may still add to it.
    filtered = columns.filter(F.col("value").isNotNull() & ~F.col("value").endswith("x")) \
        .group_by_key(Grouped.with_(Serdes.String(), Serdes.String()))
    marked = columns.map_values(F.concat(F.col("value"), F.lit("!"))) \
        .group_by_key(Grouped.with_(Serdes.String(), Serdes.String()))
    filtered.cogroup(lambda key, value, agg: (agg + "f" + value)[-60:]) \
        .cogroup(marked, lambda key, value, agg: (agg + "m" + ("null" if value is None else value))[-60:]) \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))) \
        .aggregate(lambda: "", Named.as_("column-cogroup"),
                   Materialized.as_("column-cogroup-store").with_caching_disabled()) \
        .to_stream() \
        .process_values(StampValues) \
        .to(topics["out-column-cogroup"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String()))
    # A session cogroup of a Column filter_not's records (no "...y") and the same Column map_values' ones.
    unmarked = columns.filter_not(F.col("value").isNotNull() & F.col("value").endswith("y")) \
        .group_by_key(Grouped.with_(Serdes.String(), Serdes.String()))
    unmarked.cogroup(lambda key, value, agg: (agg + "n" + ("null" if value is None else value))[-60:]) \
        .cogroup(marked, lambda key, value, agg: (agg + "m" + ("null" if value is None else value))[-60:]) \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=3), timedelta(seconds=2))) \
        .aggregate(lambda: "", lambda key, left, right: (left + "|" + right)[-60:], Named.as_("column-session-cogroup"),
                   Materialized.as_("column-session-cogroup-store").with_caching_disabled()) \
        .to_stream() \
        .process_values(StampValues) \
        .to(topics["out-column-session-cogroup"],
            Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.String()))
    # No Column in front of these two (handed over from the source, and through a Python function).
    columns.group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))
                     .advance_by(timedelta(seconds=5))) \
        .count(Named.as_("column-straight"), Materialized.as_("column-straight-store").with_caching_disabled()) \
        .to_stream() \
        .map_values(lambda count: str(count)) \
        .process_values(StampValues) \
        .to(topics["out-column-straight"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String()))
    columns.map_values(lambda value: "-" if value is None else value + "?") \
        .group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=5), timedelta(seconds=1))) \
        .reduce(lambda agg, value: (agg + "+" + value)[-60:], Named.as_("column-python"),
                Materialized.as_("column-python-store").with_caching_disabled()) \
        .to_stream() \
        .process_values(StampValues) \
        .to(topics["out-column-python"], Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.String()))
