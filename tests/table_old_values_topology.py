"""The old-values example: old values carried through materialized tables and suppressions, the
Python twin of kstreams.oracle.TableOldValuesExamples (Java): keep the two in step.

On an event stream, a tumbling count (uncached) read through a materialized ``filter`` (which reads
each update's old value from its own store, not the old count the aggregation sends) then a filter
that sends old values; the same count through a materialized ``map_values`` into a suppression
bounded in bytes (which counts the old value that store holds); the same count (mapped to strings)
suppressed until a time limit, then again in a buffer bounded in bytes (which counts the old value
the first suppression emits); a session count (its merged-away sessions' removals are tombstones) through a
materialized filter into a buffer bounded in bytes. On a prices table (tombstones), a suppression,
a filter, then a suppression bounded in bytes. Every store is uncached, so the output is fixed by
the input.

Its lambdas are self-contained (no module-level helpers): Spark's Python workers cannot import
modules of tests/, and the test module ships this one by value.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed
from dagster_kstreams.topology.windows import SessionWindows, TimeWindows

INPUTS = ("events", "prices")
OUTPUTS = ("out-kept", "out-padded-bytes", "out-twice-bytes", "out-sessions-kept", "out-prices-twice")
# How each output's keys are read: a time window of that size, a session window, or a plain string.
OUTPUT_KEYS = {"out-kept": 10_000, "out-padded-bytes": 10_000, "out-twice-bytes": 10_000,
               "out-sessions-kept": "session", "out-prices-twice": None}
LONG_VALUED = ("out-kept", "out-sessions-kept")  # written by Serdes.Long()
# The byte bounds: about two or three buffered records each (their topics' names count too).
PADDED_BYTES, TWICE_BYTES, SESSION_BYTES, PRICES_BYTES = 400, 360, 320, 300


def table_old_values_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of TableOldValuesExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    # The suppression buffers serialize the windowed keys: the grouping names the key serde.
    grouped = builder.stream(topics["events"]).group_by_key(Grouped.with_(Serdes.String(), Serdes.String()))
    # A windowed table's materialized filter or map_values names its serdes: the windowed table has none.
    time_windowed = WindowedSerde(Serdes.String(), 10_000)
    session_windowed = WindowedSerde(Serdes.String(), session=True)
    windowed_counts = Produced.with_(time_windowed, Serdes.Long())
    counts = grouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=5))) \
        .count(Materialized.as_("counts").with_caching_disabled())
    # A materialized filter reads the old value from its store: a window's first count (1) fails and its
    # store holds nothing (the aggregation's old count, 0, would pass): nothing goes out. The filter
    # after it sends old values (its parent has a store) and reads them from that store too (where
    # the aggregation's old count, 0, would pass both and send a tombstone).
    counts.filter(lambda window, count: count % 4 not in (1, 2),
                  Materialized.as_("kept-counts").with_key_serde(time_windowed).with_value_serde(Serdes.Long())
                  .with_caching_disabled()) \
        .filter(lambda window, count: count % 3 != 2) \
        .to_stream() \
        .to(topics["out-kept"], windowed_counts)
    windowed_strings = Produced.with_(time_windowed, Serdes.String())
    # A materialized map_values (to 40 characters: the old values weigh), then a buffer bounded in
    # bytes: each record's size counts the old value of the map_values' store (none for a window's
    # first update, where the aggregation's old count is 0).
    counts.map_values(lambda count: f"{count:040d}",
                      Materialized.as_("padded").with_key_serde(time_windowed).with_value_serde(Serdes.String())
                      .with_caching_disabled()) \
        .suppress(Suppressed.until_time_limit(timedelta(milliseconds=500),
                                              BufferConfig.max_bytes(PADDED_BYTES).emit_early_when_full())
                  .with_name("padded-bytes")) \
        .to_stream() \
        .to(topics["out-padded-bytes"], windowed_strings)
    # A suppression, then one bounded in bytes: each record's size counts the old value the first
    # emitted with the update (that of its latest buffered update; 30 characters).
    counts.map_values(lambda count: f"{count:030d}") \
        .suppress(Suppressed.until_time_limit(timedelta(seconds=1), BufferConfig.unbounded()).with_name("first")) \
        .suppress(Suppressed.until_time_limit(timedelta(seconds=2),
                                              BufferConfig.max_bytes(TWICE_BYTES).emit_early_when_full())
                  .with_name("second")) \
        .to_stream() \
        .to(topics["out-twice-bytes"], windowed_strings)
    # Sessions through a materialized filter into a buffer bounded in bytes: a merged-away session's
    # removal deletes it from the filter's store (a tombstone, when the store held it).
    grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=3), timedelta(seconds=2))) \
        .count(Materialized.as_("session-counts").with_caching_disabled()) \
        .filter(lambda window, count: count % 3 != 1, Materialized.as_("kept-sessions").with_key_serde(session_windowed)
                .with_value_serde(Serdes.Long()).with_caching_disabled()) \
        .suppress(Suppressed.until_time_limit(timedelta(seconds=30),
                                              BufferConfig.max_bytes(SESSION_BYTES).emit_early_when_full())
                  .with_name("sessions-bytes")) \
        .to_stream() \
        .to(topics["out-sessions-kept"], Produced.with_(session_windowed, Serdes.Long()))
    # A table with tombstones: a suppression, a filter (which sends the old values the suppression
    # emits), then a suppression bounded in bytes, which counts them.
    builder.table(topics["prices"], Materialized.as_("prices-store").with_caching_disabled()) \
        .suppress(Suppressed.until_time_limit(timedelta(seconds=2), BufferConfig.unbounded())
                  .with_name("prices-first")) \
        .filter(lambda key, value: not value.startswith("x")) \
        .suppress(Suppressed.until_time_limit(timedelta(seconds=3),
                                              BufferConfig.max_bytes(PRICES_BYTES).emit_early_when_full())
                  .with_name("prices-second")) \
        .to_stream() \
        .to(topics["out-prices-twice"])
    return builder
