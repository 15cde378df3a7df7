package kstreams.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Kafka Streams' own scenarios for windows, aggregations and suppression (from its unit tests
 * KStreamSlidingWindowAggregateTest, KStreamWindowAggregateTest, KStreamSessionWindowAggregateProcessorTest,
 * KTableAggregateTest and SuppressScenarioTest) as one topology, run until its input is consumed with the
 * record cache off; prints JSON {"describe": ...}.
 *
 * Args: bootstrap applicationId stateDir events tables left right, then the outputs in the Python twin's OUTPUTS order.
 *
 * The Python twin is window_scenario_examples() in tests/kstreams_window_scenarios_topology.py; keep the
 * two in step.
 */
public final class WindowScenarioExamples {
    private WindowScenarioExamples() {}

    static final List<String> OUTPUTS = List.of(
        "out-sliding", "out-sliding-reduce", "out-sliding-closed", "out-early-50", "out-early-5", "out-early-hopping",
        "out-expired-hopping", "out-expired-sliding", "out-session-counts", "out-session-final", "out-session-agg",
        "out-final", "out-final-jump", "out-final-sliding", "out-regroup-counts", "out-regroup-zero",
        "out-regroup-limit", "out-regroup-records", "out-moves", "out-hopping-closed", "out-session-closed",
        "out-windowed-keys", "out-regroup-bytes", "out-held-counts", "out-join-right-held", "out-join-left-held",
        "out-stream-held", "out-kept-held", "out-join-held-joined", "out-join-held-sums",
        "out-held-filtered-sums", "out-join-held-twice", "out-stream-held-twice", "out-hopping-closed-memory",
        "out-sliding-closed-memory", "out-hopping-closed-memory-20", "out-session-closed-memory",
        "out-session-closed-memory-default", "out-hopping-closed-rocksdb", "out-sliding-closed-rocksdb",
        "out-short-kept-memory", "out-short-kept-rocksdb", "out-other-size", "out-short-kept-filtered",
        "out-duplicates", "out-plain-rocksdb", "out-plain-rocksdb-sliding", "out-short-sliding-memory",
        "out-short-sliding-rocksdb", "out-short-session-memory", "out-short-session-rocksdb");
    // SuppressScenarioTest's Long.MAX_VALUE, as the twin can say it (a timedelta ends sooner).
    static final Duration NEVER = Duration.ofDays(100 * 365);

    /** The value (any type; "null" for null), "|t" and the record's timestamp. */
    static final class StampAny<K, V> implements FixedKeyProcessor<K, V, String> {
        private FixedKeyProcessorContext<K, String> context;

        @Override
        public void init(FixedKeyProcessorContext<K, String> context) {
            this.context = context;
        }

        @Override
        public void process(FixedKeyRecord<K, V> record) {
            context.forward(record.withValue(String.valueOf(record.value()) + "|t" + record.timestamp()));
        }
    }

    static String orNull(String value) {
        return value == null ? "null" : value;
    }

    static <K, V> void stamped(KTable<K, V> table, String topic, Serde<K> keySerde) {
        table.toStream().processValues(() -> new StampAny<K, V>())
            .to(topic, Produced.with(keySerde, Serdes.String()));
    }

    static Serde<Windowed<String>> windowed(long size) {
        return WindowedSerdes.timeWindowedSerdeFrom(String.class, size);
    }

    static <S extends org.apache.kafka.streams.processor.StateStore, V> Materialized<String, V, S> uncached(String store) {
        return Materialized.<String, V, S>as(store).withCachingDisabled();
    }

    static String pair(String mine, String theirs) {
        return String.format("(%s,%s)", mine, theirs);
    }

    static Topology windowScenarioExamples(String events, String tables, String leftTopic, String rightTopic,
                                           List<String> out) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> stream = builder.stream(events);
        // The suppression buffers serialize the windowed keys: the groupings name the key serde.
        KGroupedStream<String, String> grouped = stream.groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        SlidingWindows sliding = SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(10), Duration.ofMillis(5));
        stamped(grouped.windowedBy(sliding).aggregate(() -> "0", (key, value, agg) -> agg + "+" + orNull(value),
            // Three stores from suppliers kept in memory (the first and the last keep the windows' default
            // retention; the expired windows' 100 ms is now the supplier's).
            Materialized.<String, String>as(Stores.inMemoryWindowStore("sliding-agg", Duration.ofMillis(25),
                Duration.ofMillis(10), false)).withCachingDisabled()), out.get(0), windowed(10));
        stamped(grouped.windowedBy(sliding).reduce((agg, value) -> agg + "+" + value,
            WindowScenarioExamples.<WindowStore<Bytes, byte[]>, String>uncached("sliding-reduce")), out.get(1), windowed(10));
        stamped(grouped.windowedBy(sliding).emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "0", (key, value, agg) -> agg + "+" + value,
                WindowScenarioExamples.<WindowStore<Bytes, byte[]>, String>uncached("sliding-closed")), out.get(2), windowed(10));
        stamped(grouped.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(50), Duration.ofMillis(0)))
            .aggregate(() -> "0", (key, value, agg) -> agg + "+" + value,
                WindowScenarioExamples.<WindowStore<Bytes, byte[]>, String>uncached("early-50")), out.get(3), windowed(50));
        stamped(grouped.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(5), Duration.ofMillis(0)))
            .aggregate(() -> "0", (key, value, agg) -> agg + "+" + value,
                WindowScenarioExamples.<WindowStore<Bytes, byte[]>, String>uncached("early-5")), out.get(4), windowed(5));
        stamped(grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(100))
                .advanceBy(Duration.ofMillis(5)))
            .aggregate(() -> "0", (key, value, agg) -> agg + "+" + orNull(value),
                WindowScenarioExamples.<WindowStore<Bytes, byte[]>, String>uncached("early-hopping")), out.get(5), windowed(10));
        stamped(grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(90))
                .advanceBy(Duration.ofMillis(5)))
            .aggregate(() -> "", (key, value, agg) -> agg + "+" + orNull(value),
                Materialized.<String, String>as(Stores.inMemoryWindowStore("expired-hopping", Duration.ofMillis(100),
                    Duration.ofMillis(10), false)).withCachingDisabled()), out.get(6), windowed(10));
        stamped(grouped.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(10), Duration.ofMillis(90)))
            .aggregate(() -> "0", (key, value, agg) -> agg + "+" + value,
                WindowScenarioExamples.<WindowStore<Bytes, byte[]>, String>uncached("expired-sliding")), out.get(7), windowed(10));
        Serde<Windowed<String>> sessionSerde = WindowedSerdes.sessionWindowedSerdeFrom(String.class);
        KTable<Windowed<String>, Long> sessionCounts = grouped
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMillis(5)))
            .count(WindowScenarioExamples.<SessionStore<Bytes, byte[]>, Long>uncached("session-counts"));
        stamped(sessionCounts, out.get(8), sessionSerde);
        stamped(sessionCounts.suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded())), out.get(9), sessionSerde);
        stamped(grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(10), Duration.ofMillis(1)))
            .aggregate(() -> "0", (key, value, agg) -> agg + "+" + orNull(value), (key, one, two) -> one + "|" + two,
                Materialized.<String, String>as(Stores.inMemorySessionStore("session-agg", Duration.ofMillis(11)))
                    .withCachingDisabled()), out.get(10), sessionSerde);
        stamped(grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(5))
                .advanceBy(Duration.ofMillis(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "0", (key, value, agg) -> agg + "+" + orNull(value),
                WindowScenarioExamples.<WindowStore<Bytes, byte[]>, String>uncached("hopping-closed")), out.get(19), windowed(10));
        stamped(grouped.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMillis(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "0", (key, value, agg) -> agg + "+" + orNull(value), (key, one, two) -> one + "|" + two,
                WindowScenarioExamples.<SessionStore<Bytes, byte[]>, String>uncached("session-closed")), out.get(20), sessionSerde);
        grouped.windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(500)))
            .count(WindowScenarioExamples.<WindowStore<Bytes, byte[]>, Long>uncached("windowed-500"))
            .toStream((window, count) -> window.key() + "@" + window.window().start())
            .processValues(() -> new StampAny<String, Long>())
            .to(out.get(21), Produced.with(Serdes.String(), Serdes.String()));
        // Emitting on window close from stores kept in memory (the in-memory DSL suppliers ignore the emit
        // strategy: a plain InMemoryWindowStore), kept exactly size + grace (15 ms), then 20 ms.
        for (int i = 0; i < 2; i++) {
            String store = i == 0 ? "hopping-closed-memory" : "hopping-closed-memory-20";
            stamped(grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(5))
                    .advanceBy(Duration.ofMillis(5)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .aggregate(() -> "0", (key, value, agg) -> agg + "+" + orNull(value),
                    Materialized.<String, String>as(Stores.inMemoryWindowStore(store, Duration.ofMillis(15 + 5 * i),
                        Duration.ofMillis(10), false)).withCachingDisabled()), out.get(i == 0 ? 33 : 35), windowed(10));
        }
        stamped(grouped.windowedBy(sliding).emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "0", (key, value, agg) -> agg + "+" + value,
                WindowScenarioExamples.<WindowStore<Bytes, byte[]>, String>uncached("sliding-closed-memory")
                    .withStoreType(Materialized.StoreType.IN_MEMORY)), out.get(34), windowed(10));
        // Sessions emitting on window close from stores kept in memory (a plain InMemorySessionStore: by end,
        // then key, then start descending; none ending below its time minus the retention plus 1), kept 20 ms,
        // then the default gap + grace (5 ms: every session is gone before it closes).
        stamped(grouped.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMillis(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "0", (key, value, agg) -> agg + "+" + orNull(value), (key, one, two) -> one + "|" + two,
                Materialized.<String, String>as(Stores.inMemorySessionStore("session-closed-memory",
                    Duration.ofMillis(20))).withCachingDisabled()), out.get(36), sessionSerde);
        stamped(grouped.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMillis(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "0", (key, value, agg) -> agg + "+" + orNull(value), (key, one, two) -> one + "|" + two,
                WindowScenarioExamples.<SessionStore<Bytes, byte[]>, String>uncached("session-closed-memory-default")
                    .withStoreType(Materialized.StoreType.IN_MEMORY)), out.get(37), sessionSerde);
        // Emitting on window close from timestamped RocksDB suppliers' stores (kept 60 s: segments of 60 s): the
        // emit fetches from the supplier's segmented store, segment by segment, then by key, then start (a plain
        // persistentWindowStore's aggregates come back stamped -1 and their forward throws).
        stamped(grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5))
                .advanceBy(Duration.ofSeconds(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "0", (key, value, agg) -> agg + "+" + orNull(value),
                Materialized.<String, String>as(Stores.persistentTimestampedWindowStore("hopping-closed-rocksdb",
                    Duration.ofSeconds(60), Duration.ofSeconds(10), false)).withCachingDisabled()),
            out.get(38), windowed(10_000));
        stamped(grouped.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "0", (key, value, agg) -> agg + "+" + value,
                Materialized.<String, String>as(Stores.persistentTimestampedWindowStore("sliding-closed-rocksdb",
                    Duration.ofSeconds(60), Duration.ofSeconds(10), false)).withCachingDisabled()),
            out.get(39), windowed(10_000));
        KGroupedStream<String, String> regrouped = stream.groupBy((key, value) -> key, Grouped.with("final-by-key", Serdes.String(), Serdes.String()));
        List<Object[]> finals = List.of(
            new Object[] {TimeWindows.ofSizeAndGrace(Duration.ofMillis(2), Duration.ofMillis(1)), "final-counts", 2L},
            new Object[] {TimeWindows.ofSizeAndGrace(Duration.ofMillis(2), Duration.ofMillis(2)), "final-jump-counts", 2L});
        for (int i = 0; i < finals.size(); i++) {
            String store = (String) finals.get(i)[1];
            stamped(regrouped.windowedBy((TimeWindows) finals.get(i)[0])
                .count(WindowScenarioExamples.<WindowStore<Bytes, byte[]>, Long>uncached(store))
                .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()).withName(store + "-final")),
                out.get(11 + i), windowed((Long) finals.get(i)[2]));
        }
        stamped(regrouped.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(5), Duration.ofMillis(15)))
            .count(WindowScenarioExamples.<WindowStore<Bytes, byte[]>, Long>uncached("final-sliding-counts"))
            .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()).withName("final-sliding-counts-final")),
            out.get(13), windowed(5));
        // Stores from suppliers kept 32 ms, less than the windows stay open (size 10 + grace 90 ms), in memory
        // and in RocksDB: a record late within the grace whose window is older aggregates from nothing.
        for (int i = 0; i < 2; i++) {
            Duration retention = Duration.ofMillis(32);
            Duration size = Duration.ofMillis(10);
            WindowBytesStoreSupplier supplier = i == 0
                ? Stores.inMemoryWindowStore("short-kept-memory", retention, size, false)
                : Stores.persistentTimestampedWindowStore("short-kept-rocksdb", retention, size, false);
            stamped(grouped.windowedBy(TimeWindows.ofSizeAndGrace(size, Duration.ofMillis(90)).advanceBy(Duration.ofMillis(5)))
                .aggregate(() -> "", (key, value, agg) -> agg + "+" + orNull(value),
                    Materialized.<String, String>as(supplier).withCachingDisabled()), out.get(40 + i), windowed(10));
        }
        // A store from a supplier of windows of 20 ms for windows of 10 ms: the updates forwarded end at start + 10.
        grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(90))
                .advanceBy(Duration.ofMillis(5)))
            .count(Materialized.<String, Long>as(Stores.inMemoryWindowStore("other-size", Duration.ofMillis(100),
                Duration.ofMillis(20), false)).withCachingDisabled())
            .toStream((window, count) -> window.key() + "@" + window.window().start() + "-" + window.window().end())
            .processValues(() -> new StampAny<String, Long>())
            .to(out.get(42), Produced.with(Serdes.String(), Serdes.String()));
        // Kept 32 ms behind a filter.
        stamped(stream.filter((key, value) -> !"dropped".equals(value))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(90))
                .advanceBy(Duration.ofMillis(5)))
            .aggregate(() -> "", (key, value, agg) -> agg + "+" + orNull(value),
                Materialized.<String, String>as(Stores.inMemoryWindowStore("short-kept-filtered", Duration.ofMillis(32),
                    Duration.ofMillis(10), false)).withCachingDisabled()), out.get(43), windowed(10));
        // An in-memory store retaining duplicates.
        stamped(grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(90))
                .advanceBy(Duration.ofMillis(5)))
            .aggregate(() -> "", (key, value, agg) -> agg + "+" + orNull(value),
                Materialized.<String, String>as(Stores.inMemoryWindowStore("duplicates", Duration.ofMillis(100),
                    Duration.ofMillis(10), true)).withCachingDisabled()), out.get(44), windowed(10));
        // Plain RocksDB suppliers' stores: the DSL reads their windows back stamped -1.
        stamped(grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(90))
                .advanceBy(Duration.ofMillis(5)))
            .aggregate(() -> "", (key, value, agg) -> agg + "+" + orNull(value),
                Materialized.<String, String>as(Stores.persistentWindowStore("plain-rocksdb", Duration.ofMillis(100),
                    Duration.ofMillis(10), false)).withCachingDisabled()), out.get(45), windowed(10));
        stamped(grouped.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(10), Duration.ofMillis(90)))
            .aggregate(() -> "", (key, value, agg) -> agg + "+" + orNull(value),
                Materialized.<String, String>as(Stores.persistentWindowStore("plain-rocksdb-sliding",
                    Duration.ofMillis(110), Duration.ofMillis(10), false)).withCachingDisabled()), out.get(46), windowed(10));
        // Sliding windows from stores kept 45 ms in memory and 50 ms in RocksDB, less than they stay open (110 ms).
        for (int i = 0; i < 2; i++) {
            WindowBytesStoreSupplier supplier = i == 0
                ? Stores.inMemoryWindowStore("short-sliding-memory", Duration.ofMillis(45), Duration.ofMillis(10), false)
                : Stores.persistentTimestampedWindowStore("short-sliding-rocksdb", Duration.ofMillis(50),
                    Duration.ofMillis(10), false);
            stamped(grouped.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(10), Duration.ofMillis(90)))
                .aggregate(() -> "", (key, value, agg) -> agg + "+" + value,
                    Materialized.<String, String>as(supplier).withCachingDisabled()), out.get(47 + i), windowed(10));
        }
        // Sessions from stores kept 45 ms in memory and 50 ms in RocksDB, less than they stay open (95 ms).
        for (int i = 0; i < 2; i++) {
            SessionBytesStoreSupplier supplier = i == 0
                ? Stores.inMemorySessionStore("short-session-memory", Duration.ofMillis(45))
                : Stores.persistentSessionStore("short-session-rocksdb", Duration.ofMillis(50));
            stamped(grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(5), Duration.ofMillis(90)))
                .aggregate(() -> "", (key, value, agg) -> agg + "+" + orNull(value), (key, one, two) -> one + "|" + two,
                    Materialized.<String, String>as(supplier).withCachingDisabled()), out.get(49 + i), sessionSerde);
        }

        KTable<String, String> table = builder.table(tables,
            WindowScenarioExamples.<KeyValueStore<Bytes, byte[]>, String>uncached("tables-store"));
        KTable<String, Long> counts = table.groupBy((key, value) -> KeyValue.pair(value, key), Grouped.as("by-value"))
            .count(WindowScenarioExamples.<KeyValueStore<Bytes, byte[]>, Long>uncached("value-counts"));
        stamped(counts, out.get(14), Serdes.String());
        stamped(counts.suppress(Suppressed.untilTimeLimit(Duration.ZERO, BufferConfig.unbounded())
            .withName("regroup-zero")), out.get(15), Serdes.String());
        stamped(counts.suppress(Suppressed.untilTimeLimit(Duration.ofMillis(2), BufferConfig.unbounded())
            .withName("regroup-limit")), out.get(16), Serdes.String());
        stamped(counts.suppress(Suppressed.untilTimeLimit(NEVER, BufferConfig.maxRecords(1).emitEarlyWhenFull())
            .withName("regroup-records")), out.get(17), Serdes.String());
        stamped(counts.suppress(Suppressed.untilTimeLimit(NEVER, BufferConfig.maxBytes(200).emitEarlyWhenFull())
            .withName("regroup-bytes")), out.get(22), Serdes.String());
        stamped(table.groupBy((key, value) -> KeyValue.pair(key.substring(0, 1), key.substring(1)), Grouped.as("by-first"))
            .aggregate(() -> "", (key, value, agg) -> agg + value, (key, value, agg) -> agg.replace(value, ""),
                WindowScenarioExamples.<KeyValueStore<Bytes, byte[]>, String>uncached("moves")), out.get(18), Serdes.String());
        // SuppressScenarioTest.shouldWorkBeforeGroupBy, shouldWorkBeforeJoinRight, shouldWorkBeforeJoinLeft.
        stamped(table.suppress(Suppressed.untilTimeLimit(Duration.ofMillis(10), BufferConfig.unbounded()).withName("held"))
            .groupBy(KeyValue::pair, Grouped.as("held-by-key"))
            .count(WindowScenarioExamples.<KeyValueStore<Bytes, byte[]>, Long>uncached("held-counts")), out.get(23), Serdes.String());
        KTable<String, String> left = builder.table(leftTopic,
            WindowScenarioExamples.<KeyValueStore<Bytes, byte[]>, String>uncached("left-store"));
        KTable<String, String> right = builder.table(rightTopic,
            WindowScenarioExamples.<KeyValueStore<Bytes, byte[]>, String>uncached("right-store"));
        KTable<String, String> rightHeld = right.suppress(
            Suppressed.untilTimeLimit(Duration.ofMillis(10), BufferConfig.unbounded()).withName("right-held"));
        stamped(left.outerJoin(rightHeld, WindowScenarioExamples::pair), out.get(24), Serdes.String());
        stamped(left.suppress(Suppressed.untilTimeLimit(Duration.ofMillis(10), BufferConfig.unbounded()).withName("left-held"))
            .outerJoin(right, WindowScenarioExamples::pair), out.get(25), Serdes.String());
        otherSuppressedReaders(left, right, rightHeld, out);
        return builder.build();
    }

    /** A suppressed table read by a stream-table join, by a table-table join through a filter with a store of
     * its own, a suppressed join's result joined and re-grouped, and the suppressed table re-grouped through a
     * filter with a store of its own, and its suppression joined with a table and a stream. */
    static void otherSuppressedReaders(KTable<String, String> left, KTable<String, String> right,
                                       KTable<String, String> rightHeld, List<String> out) {
        left.toStream().leftJoin(rightHeld, WindowScenarioExamples::pair).processValues(() -> new StampAny<String, String>())
            .to(out.get(26), Produced.with(Serdes.String(), Serdes.String()));
        KTable<String, String> kept = rightHeld.filter((key, value) -> !value.equals("2") && !value.equals("tick2"),
            WindowScenarioExamples.<KeyValueStore<Bytes, byte[]>, String>uncached("right-held-kept"));
        stamped(kept.join(left, WindowScenarioExamples::pair), out.get(27), Serdes.String());
        KTable<String, String> joinHeld = left.join(right, WindowScenarioExamples::pair)
            .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(10), BufferConfig.unbounded()).withName("join-held"));
        stamped(joinHeld.leftJoin(right, WindowScenarioExamples::pair), out.get(28), Serdes.String());
        stamped(joinHeld.groupBy(KeyValue::pair, Grouped.as("join-held-by-key"))
            .aggregate(() -> "", (key, value, agg) -> agg + "+" + value, (key, value, agg) -> agg + "-" + value,
                WindowScenarioExamples.<KeyValueStore<Bytes, byte[]>, String>uncached("join-held-sums")),
            out.get(29), Serdes.String());
        // re-grouped through a filter with a store of its own: its old values are that store's
        KTable<String, String> filtered = rightHeld.filter((key, value) -> !value.equals("1") && !value.equals("tick1"),
            WindowScenarioExamples.<KeyValueStore<Bytes, byte[]>, String>uncached("right-held-filtered"));
        stamped(filtered.groupBy(KeyValue::pair, Grouped.as("right-held-filtered-by-key"))
            .aggregate(() -> "", (key, value, agg) -> agg + "+" + value, (key, value, agg) -> agg + "-" + value,
                WindowScenarioExamples.<KeyValueStore<Bytes, byte[]>, String>uncached("right-held-filtered-sums")),
            out.get(30), Serdes.String());
        // suppressed again, joined with a table and a stream: read through both buffers
        KTable<String, String> heldTwice = rightHeld.suppress(
            Suppressed.untilTimeLimit(Duration.ofMillis(5), BufferConfig.unbounded()).withName("right-held-twice"));
        stamped(left.join(heldTwice, WindowScenarioExamples::pair), out.get(31), Serdes.String());
        left.toStream().leftJoin(heldTwice, WindowScenarioExamples::pair).processValues(() -> new StampAny<String, String>())
            .to(out.get(32), Produced.with(Serdes.String(), Serdes.String()));
    }

    public static void main(String[] args) throws Exception {
        String applicationId = args[1];
        List<String> out = new ArrayList<>(List.of(args).subList(7, 7 + OUTPUTS.size()));
        Topology topology = windowScenarioExamples(args[3], args[4], args[5], args[6], out);
        Properties props = KafkaStreamsRuns.properties(args[0], applicationId, args[2]);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        // Emitting on window close checks for closed windows after every record, as the runner does.
        props.put("__emit.interval.ms.kstreams.windowed.aggregation__", 0L);
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 0L);
        KafkaStreams streams = new KafkaStreams(topology, props);
        KafkaStreamsRuns.failFast(streams);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId,
                () -> List.of(args[3], args[4], args[5], args[6], applicationId + "-final-by-key-repartition",
                              applicationId + "-held-by-key-repartition",
                              applicationId + "-join-held-by-key-repartition",
                              applicationId + "-right-held-filtered-by-key-repartition",
                              applicationId + "-by-value-repartition", applicationId + "-by-first-repartition"),
                Duration.ofMinutes(5));
            System.out.println(KafkaStreamsRuns.describeJson(topology));
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
