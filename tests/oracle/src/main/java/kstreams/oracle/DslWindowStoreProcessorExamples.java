package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.StringJoiner;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlySessionStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;

/**
 * User processors on a windowed count's store (TimestampedWindowStore), on a session count's
 * (SessionStore) and on a sliding count's (TimestampedWindowStore) run by Kafka Streams itself
 * against a real broker until the input is consumed to its end; prints JSON {"describe": ...,
 * "window-counts": {"key@start": count}, "session-counts": {"key@start-end": count}, "sliding-counts":
 * {"key@start": count}, and the same of "session-counts-in-memory" and "sliding-counts-in-memory"} (the
 * stores as interactive queries read them then). The last two counts keep their stores in memory.
 *
 * Args: bootstrap applicationId stateDir events out sessionsOut slidingOut sessionsInMemoryOut slidingInMemoryOut
 * closedInMemoryOut closedInMemoryReads closedSlidingInMemoryOut closedSlidingInMemoryReads (two counts emitting
 * on window close from stores kept in memory, written and read by ClosedInMemoryWriter beside them; their stores
 * printed as "closed-counts-in-memory" and "closed-sliding-in-memory") closedSessionsInMemoryOut
 * closedSessionsInMemoryReads (a session count emitting on window close from a store kept in memory 4 s, written and
 * read by ClosedInMemorySessionWriter beside it; its store printed as "closed-sessions-in-memory") closedRocksDbOut
 * closedRocksDbReads closedSlidingRocksDbOut closedSlidingRocksDbReads (ClosedRocksDbCounts; its stores printed as
 * "closed-counts-rocksdb" and "closed-sliding-rocksdb").
 *
 * The Python twin is tests/dsl_window_store_processor_topology.py (WindowCorrector, SessionCorrector,
 * SlidingCorrector); keep the two in step.
 */
public final class DslWindowStoreProcessorExamples {
    private DslWindowStoreProcessorExamples() {}

    static final long SIZE_MS = 10_000L;
    static final long ADVANCE_MS = 5_000L;
    static final long GRACE_MS = 4_000L;
    static final long GAP_MS = 400L;
    static final long SESSION_GRACE_MS = 3_000L;
    static final long CLOSED_SESSION_RETENTION_MS = 4_000L;  // longer than gap + grace: closed sessions still held
    static final long DIFF_MS = 1_000L;
    static final long SLIDING_GRACE_MS = 2_000L;
    static final long SLIDING_RETENTION_MS = 2 * DIFF_MS + SLIDING_GRACE_MS;

    static final class WindowCorrector implements Processor<Windowed<String>, Long, String, String> {
        private ProcessorContext<String, String> context;
        private TimestampedWindowStore<String, Long> counts;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.counts = context.getStateStore("window-counts");
        }

        @Override
        public void process(Record<Windowed<String>, Long> record) {
            String tag = "p" + context.recordMetadata().orElseThrow().partition() + "|";
            String key = record.key().key();
            long start = record.key().window().start();
            ValueAndTimestamp<Long> stored = counts.fetch(key, start);
            StringJoiner around = new StringJoiner(",");
            try (WindowStoreIterator<ValueAndTimestamp<Long>> entries = counts.fetch(key, start - SIZE_MS,
                                                                                     start + SIZE_MS)) {
                while (entries.hasNext()) {
                    KeyValue<Long, ValueAndTimestamp<Long>> entry = entries.next();
                    around.add(entry.key + "=" + DslStoreProcessorExamples.storedText(entry.value));
                }
            }
            StringJoiner sameStart = new StringJoiner(",");
            try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<Long>> entries =
                     counts.fetchAll(start - ADVANCE_MS, start + ADVANCE_MS)) {
                while (entries.hasNext()) {
                    KeyValue<Windowed<String>, ValueAndTimestamp<Long>> entry = entries.next();
                    sameStart.add(entry.key.key() + "@" + entry.key.window().start() + "="
                        + DslStoreProcessorExamples.storedText(entry.value));
                }
            }
            context.forward(new Record<>(key + "@" + start, tag + "count|" + record.value() + "|t" + record.timestamp()
                + "|" + DslStoreProcessorExamples.storedText(stored) + "|" + around + "|" + sameStart,
                record.timestamp()));
            if (record.value() == 3L) {
                counts.put(key, ValueAndTimestamp.make(10L, record.timestamp() + 7), start);
            } else if (record.value() >= 13L) {
                counts.put(key, null, start);
            }
        }
    }

    static String windows(KeyValueIterator<Windowed<String>, ValueAndTimestamp<Long>> entries) {
        StringJoiner joined = new StringJoiner(",");
        try (entries) {
            while (entries.hasNext()) {
                KeyValue<Windowed<String>, ValueAndTimestamp<Long>> entry = entries.next();
                joined.add(entry.key.key() + "@" + entry.key.window().start() + "="
                    + DslStoreProcessorExamples.storedText(entry.value));
            }
        }
        return joined.toString();
    }

    static final class SlidingCorrector implements Processor<Windowed<String>, Long, String, String> {
        private final String store;
        private ProcessorContext<String, String> context;
        private TimestampedWindowStore<String, Long> counts;

        SlidingCorrector(String store) {
            this.store = store;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.counts = context.getStateStore(store);
        }

        @Override
        public void process(Record<Windowed<String>, Long> record) {
            String tag = "p" + context.recordMetadata().orElseThrow().partition() + "|";
            String key = record.key().key();
            long start = record.key().window().start();
            ValueAndTimestamp<Long> stored = counts.fetch(key, start);
            StringJoiner around = new StringJoiner(",");
            try (WindowStoreIterator<ValueAndTimestamp<Long>> entries = counts.backwardFetch(key, start - DIFF_MS,
                                                                                             start + DIFF_MS)) {
                while (entries.hasNext()) {
                    KeyValue<Long, ValueAndTimestamp<Long>> entry = entries.next();
                    around.add(entry.key + "=" + DslStoreProcessorExamples.storedText(entry.value));
                }
            }
            String keys = windows(counts.fetch("a", "c", start - SLIDING_RETENTION_MS, start - DIFF_MS));
            String everyKey = windows(counts.backwardFetchAll(start - DIFF_MS / 2, start + DIFF_MS / 2));
            String listed = "";
            if (record.value() == 2L && key.endsWith("1")) {
                listed = windows(counts.all());
            } else if (record.value() == 1L && key.endsWith("3")) {
                listed = windows(counts.backwardAll());
            }
            context.forward(new Record<>(key + "@" + start, tag + "sliding|" + record.value() + "|t"
                + record.timestamp() + "|" + DslStoreProcessorExamples.storedText(stored) + "|" + around + "|" + keys
                + "|" + everyKey + "|" + listed, record.timestamp()));
            if (record.value() == 3L) {
                counts.put(key, ValueAndTimestamp.make(10L, record.timestamp() + 7), start);
            } else if (record.value() >= 11L) {
                counts.put(key, null, start);
            } else if (record.value() == 2L && key.endsWith("2")) {
                counts.put(key, ValueAndTimestamp.make(100L, record.timestamp()), start + 3 * DIFF_MS);
            }
        }
    }

    static String sessionText(KeyValue<Windowed<String>, Long> entry) {
        return entry.key.key() + "@" + entry.key.window().start() + "-" + entry.key.window().end() + "=" + entry.value;
    }

    static String sessions(KeyValueIterator<Windowed<String>, Long> entries) {
        StringJoiner joined = new StringJoiner(",");
        try (entries) {
            while (entries.hasNext()) {
                joined.add(sessionText(entries.next()));
            }
        }
        return joined.toString();
    }

    static final class SessionCorrector implements Processor<Windowed<String>, Long, String, String> {
        private final String store;
        private final boolean inMemory;
        private ProcessorContext<String, String> context;
        private SessionStore<String, Long> sessions;

        SessionCorrector(String store, boolean inMemory) {
            this.store = store;
            this.inMemory = inMemory;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.sessions = context.getStateStore(store);
        }

        @Override
        public void process(Record<Windowed<String>, Long> record) {
            String tag = "p" + context.recordMetadata().orElseThrow().partition() + "|";
            String key = record.key().key();
            long start = record.key().window().start();
            long end = record.key().window().end();
            Long stored = sessions.fetchSession(key, start, end);
            String around = sessions(sessions.findSessions(key, start - GAP_MS, end + GAP_MS));
            String everyKey = sessions(sessions.backwardFetch("a", "c"));
            // in memory only: every key's sessions ending around it, by end, then key, then start descending
            String endingNear = inMemory ? "|" + sessions(sessions.findSessions(start - 5 * GAP_MS, end + GAP_MS)) : "";
            context.forward(new Record<>(key + "@" + start + "-" + end, tag + "session|" + record.value() + "|t"
                + record.timestamp() + "|" + stored + "|" + around + "|" + everyKey + endingNear, record.timestamp()));
            Long value = record.value();
            if (value == null) {
                return;
            }
            if (value == 3L) {
                sessions.put(record.key(), 10L);
            } else if (value == 2L && key.endsWith("1")) {
                sessions.put(new Windowed<>(key, new SessionWindow(end + GAP_MS / 2, end + GAP_MS / 2 + 50)), 100L);
            } else if (value >= 13L) {
                sessions.remove(record.key());
            }
        }
    }

    static Map<String, String> sessionStoreContent(KafkaStreams streams, String store) {
        ReadOnlySessionStore<String, Object> view = streams.store(
            StoreQueryParameters.fromNameAndType(store, QueryableStoreTypes.sessionStore()));
        Map<String, String> content = new TreeMap<>();
        try (KeyValueIterator<Windowed<String>, Object> entries = view.fetch("a", "c")) {
            while (entries.hasNext()) {
                KeyValue<Windowed<String>, Object> entry = entries.next();
                content.put(entry.key.key() + "@" + entry.key.window().start() + "-" + entry.key.window().end(),
                    String.valueOf(entry.value));
            }
        }
        return content;
    }

    /** An emitted window as both twins write it (the runner's sink writes no record timestamps: in the value). */
    static final class ClosedStamp implements Processor<Windowed<String>, Long, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(Record<Windowed<String>, Long> record) {
            String tag = "p" + context.recordMetadata().orElseThrow().partition() + "|";
            context.forward(new Record<>(record.key().key() + "@" + record.key().window().start(),
                tag + record.value() + "|t" + record.timestamp(), record.timestamp()));
        }
    }

    static Topology dslWindowStoreProcessorExamples(String events, String out, String sessionsOut, String slidingOut,
                                                    String sessionsInMemoryOut, String slidingInMemoryOut,
                                                    String closedOut, String closedReads, String closedSlidingOut,
                                                    String closedSlidingReads, String closedSessionsOut,
                                                    String closedSessionsReads, String... closedRocksDb) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> stream = builder.stream(events);
        stream
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(SIZE_MS), Duration.ofMillis(GRACE_MS))
                .advanceBy(Duration.ofMillis(ADVANCE_MS)))
            // in memory (Stores.inMemoryWindowStore): fetchAll goes by start, then key
            .count(Materialized.<String, Long>as(Stores.inMemoryWindowStore("window-counts",
                Duration.ofMillis(SIZE_MS + GRACE_MS), Duration.ofMillis(SIZE_MS), false)).withCachingDisabled())
            .toStream()
            .process(WindowCorrector::new, "window-counts")
            .to(out);
        stream
            .groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(GAP_MS),
                Duration.ofMillis(SESSION_GRACE_MS)))
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("session-counts").withCachingDisabled())
            .toStream()
            .process(() -> new SessionCorrector("session-counts", false), "session-counts")
            .to(sessionsOut);
        stream
            .groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(DIFF_MS),
                Duration.ofMillis(SLIDING_GRACE_MS)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("sliding-counts").withCachingDisabled())
            .toStream()
            .process(() -> new SlidingCorrector("sliding-counts"), "sliding-counts")
            .to(slidingOut);
        // the same two kept in memory: Materialized.withStoreType, and a supplier's in-memory window store
        stream
            .groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(GAP_MS),
                Duration.ofMillis(SESSION_GRACE_MS)))
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("session-counts-in-memory")
                .withStoreType(Materialized.StoreType.IN_MEMORY).withCachingDisabled())
            .toStream()
            .process(() -> new SessionCorrector("session-counts-in-memory", true), "session-counts-in-memory")
            .to(sessionsInMemoryOut);
        stream
            .groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(DIFF_MS),
                Duration.ofMillis(SLIDING_GRACE_MS)))
            .count(Materialized.<String, Long>as(Stores.inMemoryWindowStore("sliding-counts-in-memory",
                Duration.ofMillis(SLIDING_RETENTION_MS), Duration.ofMillis(DIFF_MS), false)).withCachingDisabled())
            .toStream()
            .process(() -> new SlidingCorrector("sliding-counts-in-memory"), "sliding-counts-in-memory")
            .to(slidingInMemoryOut);
        // counts emitting on window close from stores kept in memory that a processor beside them writes and reads;
        // the hopping one keeps 15 s (a multiple of the advance: a window can start at the retention's edge)
        stream
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(SIZE_MS), Duration.ofMillis(GRACE_MS))
                .advanceBy(Duration.ofMillis(ADVANCE_MS)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(Materialized.<String, Long>as(Stores.inMemoryWindowStore("closed-counts-in-memory",
                Duration.ofMillis(SIZE_MS + ADVANCE_MS), Duration.ofMillis(SIZE_MS), false)).withCachingDisabled())
            .toStream()
            .process(ClosedStamp::new)
            .to(closedOut);
        stream
            .process(() -> new ClosedInMemoryWriter("closed-counts-in-memory", SIZE_MS, false), "closed-counts-in-memory")
            .to(closedReads);
        stream
            .groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(DIFF_MS),
                Duration.ofMillis(SLIDING_GRACE_MS)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("closed-sliding-in-memory")
                .withStoreType(Materialized.StoreType.IN_MEMORY).withCachingDisabled())
            .toStream()
            .process(ClosedStamp::new)
            .to(closedSlidingOut);
        stream
            .process(() -> new ClosedInMemoryWriter("closed-sliding-in-memory", 2 * DIFF_MS, true),
                "closed-sliding-in-memory")
            .to(closedSlidingReads);
        ClosedRocksDbCounts.add(stream, closedRocksDb[0], closedRocksDb[1], closedRocksDb[2], closedRocksDb[3]);
        stream
            .groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(GAP_MS),
                Duration.ofMillis(SESSION_GRACE_MS)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("closed-sessions-in-memory")
                .withStoreType(Materialized.StoreType.IN_MEMORY)
                .withRetention(Duration.ofMillis(CLOSED_SESSION_RETENTION_MS)).withCachingDisabled())
            .toStream()
            .process(ClosedInMemorySessionWriter.ClosedSessionStamp::new)
            .to(closedSessionsOut);
        stream
            .process(() -> new ClosedInMemorySessionWriter("closed-sessions-in-memory"), "closed-sessions-in-memory")
            .to(closedSessionsReads);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        Topology topology = dslWindowStoreProcessorExamples(args[3], args[4], args[5], args[6], args[7], args[8],
            args[9], args[10], args[11], args[12], args[13], args[14], args[15], args[16], args[17], args[18]);
        Properties props = KafkaStreamsRuns.properties(args[0], args[1], args[2]);
        // the counts emitting on window close check for closed windows after every record, as the runner does
        props.put("__emit.interval.ms.kstreams.windowed.aggregation__", 0L);
        KafkaStreamsRuns.runUntilConsumed(topology, props, () -> List.of(args[3]),
            Duration.ofMinutes(5), streams -> "{\"describe\": " + Json.quote(topology.describe().toString())
                + ", \"window-counts\": "
                + Json.objectOfStrings(WindowExamples.windowStoreContent(streams, "window-counts"))
                + ", \"session-counts\": " + Json.objectOfStrings(sessionStoreContent(streams, "session-counts"))
                + ", \"sliding-counts\": "
                + Json.objectOfStrings(WindowExamples.windowStoreContent(streams, "sliding-counts"))
                + ", \"session-counts-in-memory\": "
                + Json.objectOfStrings(sessionStoreContent(streams, "session-counts-in-memory"))
                + ", \"sliding-counts-in-memory\": "
                + Json.objectOfStrings(WindowExamples.windowStoreContent(streams, "sliding-counts-in-memory"))
                + ", \"closed-counts-in-memory\": "
                + Json.objectOfStrings(WindowExamples.windowStoreContent(streams, "closed-counts-in-memory"))
                + ", \"closed-sliding-in-memory\": "
                + Json.objectOfStrings(WindowExamples.windowStoreContent(streams, "closed-sliding-in-memory"))
                + ", \"closed-sessions-in-memory\": "
                + Json.objectOfStrings(sessionStoreContent(streams, "closed-sessions-in-memory"))
                + ClosedRocksDbCounts.storesJson(streams) + "}");
    }
}
