"""The catalog's windowed aggregations (tumbling, hopping, sliding and session windows), their
suppression and emit on window close.

Entries of tests/topology_catalog.py; their Java twins, under the same names, are in
tests/oracle/src/main/java/kstreams/oracle/WindowCatalog.java. Keep the two in step.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams import (
    Consumed,
    EmitStrategy,
    Grouped,
    Materialized,
    Named,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
    WallclockTimestampExtractor,
)

from filtered_window_topology import filtered_window_examples
from suppress_topology import suppress_examples
from topology_catalog_entries import CatalogEntries, field

ENTRIES = CatalogEntries()
topology = ENTRIES.add


# ---- Windowed aggregations ---------------------------------------------------------------


@topology
def tumbling_window_aggregate_with_grace():
    b = StreamsBuilder()
    readings = b.stream("readings")
    (
        readings.group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(minutes=5), timedelta(seconds=30)))
        .aggregate(lambda: "", lambda k, v, agg: agg + v)
        .to_stream()
        .map(lambda wk, v: (f"{wk.key}@{wk.window.start}", v))
        .to("readings-5m")
    )
    return b.build()


@topology
def hopping_window_count():
    b = StreamsBuilder()
    views = b.stream("page-views")
    (
        views.group_by(lambda k, v: field(v, 0))
        .windowed_by(
            TimeWindows.of_size_with_no_grace(timedelta(minutes=10)).advance_by(timedelta(minutes=1))
        )
        .count(Materialized.as_("views-10m-hopping"))
    )
    return b.build()


@topology
def sliding_window_reduce():
    b = StreamsBuilder()
    trades = b.stream("trades")
    (
        trades.group_by_key()
        .windowed_by(
            SlidingWindows.of_time_difference_and_grace(timedelta(seconds=30), timedelta(seconds=5))
        )
        .reduce(lambda a, c: a if a >= c else c)
        .to_stream()
        .select_key(lambda wk, v: wk.key)
        .to("trade-max-30s")
    )
    return b.build()


@topology
def session_window_count():
    b = StreamsBuilder()
    clicks = b.stream("clicks")
    (
        clicks.group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(minutes=30)))
        .count()
    )
    return b.build()


@topology
def session_window_aggregate():
    b = StreamsBuilder()
    clicks = b.stream("clicks")
    (
        clicks.select_key(lambda k, v: field(v, 0))
        .group_by_key(Grouped.as_("sessions-by-user"))
        .windowed_by(
            SessionWindows.of_inactivity_gap_and_grace(timedelta(minutes=5), timedelta(minutes=1))
        )
        .aggregate(lambda: "", lambda k, v, agg: agg + v, lambda k, a, c: a + c,
                   Materialized.as_("user-sessions"))
        .to_stream()
        .to("user-sessions")
    )
    return b.build()


@topology
def sliding_window_count_named():
    b = StreamsBuilder()
    trades = b.stream("trades")
    (
        trades.group_by(lambda k, v: field(v, 0), Grouped.as_("trades-by-symbol"))
        .windowed_by(SlidingWindows.of_time_difference_with_no_grace(timedelta(minutes=1)))
        .count(Named.as_("trades-per-minute"), Materialized.as_("trades-per-minute-store"))
        .to_stream()
        .map(lambda wk, c: (wk.key, str(c)))
        .to("trades-per-minute")
    )
    return b.build()


@topology
def session_window_reduce():
    b = StreamsBuilder()
    chats = b.stream("chats")
    (
        chats.group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(minutes=2)))
        .reduce(lambda a, c: a + c)
        .to_stream()
        .to("chat-sessions")
    )
    return b.build()


@topology
def chained_windowed_aggregations():
    b = StreamsBuilder()
    views = b.stream("page-views")
    (
        views.group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(minutes=1)))
        .count()
        .to_stream()
        .map(lambda wk, c: (str(c), wk.key))
        .group_by_key()
        .count()
        .to_stream()
        .to("views-per-minute-histogram")
    )
    return b.build()


@topology
def windowed_table_filter_named():
    b = StreamsBuilder()
    requests = b.stream("requests")
    (
        requests.group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(minutes=5)))
        .count()
        .filter(lambda wk, c: c > 10, Named.as_("hot-windows"))
        .to_stream(Named.as_("hot-window-changes"))
        .to("hot-windows")
    )
    return b.build()


@topology
def wallclock_timestamps_then_windowed_count():
    # describe() does not show a timestamp extractor (Kafka Streams' does not either).
    b = StreamsBuilder()
    b.stream("events", Consumed.with_timestamp_extractor(WallclockTimestampExtractor())) \
        .group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(minutes=1))).count() \
        .to_stream().to("events-per-minute")
    return b.build()


@topology
def filtered_window_examples_of_the_equivalence_test():
    names = {"events": "events", "clicks": "clicks", "slides": "slides", "out-filtered": "filtered-out",
             "out-sessions": "sessions-out", "out-sliding": "sliding-out", "out-branch": "branch-out",
             "out-direct": "direct-count-out", "out-merged": "merged-out", "out-mixed-sliding": "mixed-sliding-out",
             "out-mixed-tumbling": "mixed-tumbling-out"}
    return filtered_window_examples(names, with_columns=False).build()  # Columns need Spark: the equivalence test's


# ---- Suppression and emit on window close ------------------------------------------------


@topology
def windowed_count_suppressed():
    b = StreamsBuilder()
    alerts = b.stream("alerts")
    (
        alerts.group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(minutes=1), timedelta(seconds=10)))
        .count()
        .suppress(Suppressed.until_window_closes(Suppressed.BufferConfig.unbounded()))
        .to_stream()
        .filter(lambda wk, count: count > 3)
        .to("alert-storms")
    )
    return b.build()


@topology
def session_window_count_suppressed():
    b = StreamsBuilder()
    clicks = b.stream("clicks")
    (
        clicks.group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(minutes=10), timedelta(minutes=1)))
        .count(Named.as_("session-count"), Materialized.as_("session-counts"))
        .suppress(
            Suppressed.until_window_closes(Suppressed.BufferConfig.unbounded()).with_name("final-sessions")
        )
        .to_stream()
        .to("final-sessions")
    )
    return b.build()


@topology
def windowed_emit_on_window_close():
    b = StreamsBuilder()
    clicks = b.stream("clicks")
    (
        clicks.group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(minutes=1), timedelta(seconds=10)))
        .emit_strategy(EmitStrategy.on_window_close())
        .count(Materialized.as_("final-click-counts"))
        .to_stream()
        .to("final-click-counts")
    )
    return b.build()


@topology
def sliding_and_session_emit_on_window_close():
    b = StreamsBuilder()
    grouped = b.stream("visits").group_by_key()
    (
        grouped.windowed_by(SlidingWindows.of_time_difference_with_no_grace(timedelta(seconds=30)))
        .emit_strategy(EmitStrategy.on_window_close())
        .reduce(lambda a, v: a + v)
        .to_stream()
        .to("sliding-visits")
    )
    (
        grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(minutes=5)))
        .emit_strategy(EmitStrategy.on_window_close())
        .count()
        .to_stream()
        .to("visit-sessions")
    )
    return b.build()


@topology
def suppress_and_emit_on_close_examples():
    # The topology tests/test_equivalence_suppress.py runs on Spark and with Kafka Streams.
    names = {"events": "events", "prices": "prices", "out-final": "final-counts", "out-closed": "closed-hopping-out",
             "out-sessions": "final-sessions-out", "out-limited": "limited-prices", "out-debounced": "debounced-prices",
             "slides": "slides", "out-closed-sliding": "closed-sliding-out",
             "out-closed-sessions": "closed-sessions-out", "out-bytes": "bytes-limited-prices",
             "out-both-bounds": "both-bounds-prices", "out-raised": "raised-prices",
             "out-final-filtered": "final-filtered-counts", "out-windowed-bytes": "windowed-bytes-counts",
             "out-sessions-filtered": "sessions-filtered-out", "out-session-bytes": "session-bytes-out",
             "out-sliding-filtered": "sliding-filtered-out", "out-sliding-bytes": "sliding-bytes-out",
             "out-held": "held-prices", "out-closed-written": "closed-written-out", "out-closed-reads": "closed-reads",
             "out-closed-sessions-written": "closed-sessions-written-out",
             "out-closed-session-reads": "closed-session-reads",
             "out-closed-sliding-written": "closed-sliding-written-out",
             "out-closed-sliding-reads": "closed-sliding-reads", "out-held-regrouped": "held-regrouped",
             "out-held-joined": "held-joined", "out-held-looked-up": "held-looked-up",
             "out-held-kept-joined": "held-kept-joined", "out-joined-held-joined": "joined-held-joined",
             "out-joined-held-regrouped": "joined-held-regrouped", "out-held-kept-regrouped": "held-kept-regrouped",
             "out-held-twice-joined": "held-twice-joined", "out-held-twice-looked-up": "held-twice-looked-up",
             "out-held-context": "held-context", "out-held-context-odd": "held-context-odd",
             "out-closed-memory": "closed-memory-out", "out-closed-memory-sessions": "closed-memory-sessions-out",
             "out-closed-rocksdb": "closed-rocksdb-out"}
    return suppress_examples(names).build()
