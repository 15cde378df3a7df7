package kstreams.oracle;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.WallclockTimestampExtractor;

import static kstreams.oracle.CatalogRow.field;

/**
 * Windowed aggregations (tumbling, hopping, sliding and session windows), their suppression and
 * emit on window close.
 *
 * Entries of TopologyCatalog, built with Kafka Streams' own DSL; their Python twins, under the same
 * names, are in tests/topology_catalog_windows.py. Keep the two in step.
 */
final class WindowCatalog {
    private WindowCatalog() {}

    static Map<String, Supplier<Topology>> topologies() {
        Map<String, Supplier<Topology>> topologies = new LinkedHashMap<>();
        // Windowed aggregations.
        topologies.put("tumbling_window_aggregate_with_grace", WindowCatalog::tumbling_window_aggregate_with_grace);
        topologies.put("hopping_window_count", WindowCatalog::hopping_window_count);
        topologies.put("sliding_window_reduce", WindowCatalog::sliding_window_reduce);
        topologies.put("session_window_count", WindowCatalog::session_window_count);
        topologies.put("session_window_aggregate", WindowCatalog::session_window_aggregate);
        topologies.put("sliding_window_count_named", WindowCatalog::sliding_window_count_named);
        topologies.put("session_window_reduce", WindowCatalog::session_window_reduce);
        topologies.put("chained_windowed_aggregations", WindowCatalog::chained_windowed_aggregations);
        topologies.put("windowed_table_filter_named", WindowCatalog::windowed_table_filter_named);
        topologies.put("wallclock_timestamps_then_windowed_count",
                       WindowCatalog::wallclock_timestamps_then_windowed_count);
        // Windowed aggregations with their own stream time (FilteredWindowExamples is the equivalence test's).
        topologies.put("filtered_window_examples_of_the_equivalence_test",
                       () -> FilteredWindowExamples.filteredWindowExamples("events", "clicks", "slides",
                           "filtered-out", "sessions-out", "sliding-out", "branch-out", "direct-count-out", "merged-out",
                           "mixed-sliding-out", "mixed-tumbling-out", null, null, null, null, null, null, null, null,
                           null, null, null, null));
        // Suppression and emit on window close.
        topologies.put("windowed_count_suppressed", WindowCatalog::windowed_count_suppressed);
        topologies.put("session_window_count_suppressed", WindowCatalog::session_window_count_suppressed);
        topologies.put("windowed_emit_on_window_close", WindowCatalog::windowed_emit_on_window_close);
        topologies.put("sliding_and_session_emit_on_window_close",
                       WindowCatalog::sliding_and_session_emit_on_window_close);
        topologies.put("suppress_and_emit_on_close_examples", () -> SuppressExamples.suppressExamples(
            "events", "prices", "slides", "final-counts", "closed-hopping-out", "final-sessions-out", "limited-prices",
            "debounced-prices", "closed-sliding-out", "closed-sessions-out", "bytes-limited-prices",
            "both-bounds-prices", "raised-prices", "final-filtered-counts", "windowed-bytes-counts",
            "sessions-filtered-out", "session-bytes-out", "sliding-filtered-out", "sliding-bytes-out",
            "held-prices", "closed-written-out", "closed-reads", "closed-sessions-written-out",
            "closed-session-reads", "closed-sliding-written-out", "closed-sliding-reads", "held-regrouped",
            "held-joined", List.of("held-looked-up", "held-kept-joined", "joined-held-joined", "joined-held-regrouped",
                                  "held-kept-regrouped", "held-twice-joined", "held-twice-looked-up",
                                  "held-context", "held-context-odd", "closed-memory-out",
                                  "closed-memory-sessions-out", "closed-rocksdb-out")));
        return topologies;
    }

    // ---- Windowed aggregations --------------------------------------------------------------

    static Topology tumbling_window_aggregate_with_grace() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> readings = b.stream("readings");
        readings.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(5), Duration.ofSeconds(30)))
            .aggregate(() -> "", (k, v, agg) -> agg + v)
            .toStream()
            .map((wk, v) -> KeyValue.pair(wk.key() + "@" + wk.window().start(), v))
            .to("readings-5m");
        return b.build();
    }

    static Topology hopping_window_count() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> views = b.stream("page-views");
        views.groupBy((k, v) -> field(v, 0))
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(10)).advanceBy(Duration.ofMinutes(1)))
            .count(Materialized.as("views-10m-hopping"));
        return b.build();
    }

    static Topology sliding_window_reduce() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> trades = b.stream("trades");
        trades.groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(30), Duration.ofSeconds(5)))
            .reduce((a, c) -> a.compareTo(c) >= 0 ? a : c)
            .toStream()
            .selectKey((wk, v) -> wk.key())
            .to("trade-max-30s");
        return b.build();
    }

    static Topology session_window_count() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks");
        clicks.groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMinutes(30)))
            .count();
        return b.build();
    }

    static Topology session_window_aggregate() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks");
        clicks.selectKey((k, v) -> field(v, 0))
            .groupByKey(Grouped.as("sessions-by-user"))
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMinutes(5), Duration.ofMinutes(1)))
            .aggregate(() -> "", (k, v, agg) -> agg + v, (k, a, c) -> a + c,
                Materialized.as("user-sessions"))
            .toStream()
            .to("user-sessions");
        return b.build();
    }

    static Topology sliding_window_count_named() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> trades = b.stream("trades");
        trades.groupBy((k, v) -> field(v, 0), Grouped.as("trades-by-symbol"))
            .windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(1)))
            .count(Named.as("trades-per-minute"), Materialized.as("trades-per-minute-store"))
            .toStream()
            .map((wk, c) -> KeyValue.pair(wk.key(), Long.toString(c)))
            .to("trades-per-minute");
        return b.build();
    }

    static Topology session_window_reduce() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> chats = b.stream("chats");
        chats.groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMinutes(2)))
            .reduce((a, c) -> a + c)
            .toStream()
            .to("chat-sessions");
        return b.build();
    }

    static Topology chained_windowed_aggregations() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> views = b.stream("page-views");
        views.groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
            .count()
            .toStream()
            .map((wk, c) -> KeyValue.pair(Long.toString(c), wk.key()))
            .groupByKey()
            .count()
            .toStream()
            .to("views-per-minute-histogram");
        return b.build();
    }

    static Topology windowed_table_filter_named() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> requests = b.stream("requests");
        requests.groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(5)))
            .count()
            .filter((wk, c) -> c > 10, Named.as("hot-windows"))
            .toStream(Named.as("hot-window-changes"))
            .to("hot-windows");
        return b.build();
    }

    static Topology wallclock_timestamps_then_windowed_count() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("events", Consumed.with(new WallclockTimestampExtractor()))
            .groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1))).count()
            .toStream().to("events-per-minute");
        return b.build();
    }

    // ---- Suppression and emit on window close -----------------------------------------------

    static Topology windowed_count_suppressed() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> alerts = b.stream("alerts");
        alerts.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(10)))
            .count()
            .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
            .toStream()
            .filter((wk, count) -> count > 3)
            .to("alert-storms");
        return b.build();
    }

    static Topology session_window_count_suppressed() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks");
        clicks.groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMinutes(10), Duration.ofMinutes(1)))
            .count(Named.as("session-count"), Materialized.as("session-counts"))
            .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()).withName("final-sessions"))
            .toStream()
            .to("final-sessions");
        return b.build();
    }

    static Topology windowed_emit_on_window_close() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks");
        clicks.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(10)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(Materialized.as("final-click-counts"))
            .toStream()
            .to("final-click-counts");
        return b.build();
    }

    static Topology sliding_and_session_emit_on_window_close() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> grouped = b.<String, String>stream("visits").groupByKey();
        grouped.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(30)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .reduce((a, v) -> a + v)
            .toStream()
            .to("sliding-visits");
        grouped.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMinutes(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count()
            .toStream()
            .to("visit-sessions");
        return b.build();
    }
}
