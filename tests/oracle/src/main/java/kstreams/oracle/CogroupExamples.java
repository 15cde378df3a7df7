package kstreams.oracle;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.StringJoiner;

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
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;

/**
 * cogroup run by Kafka Streams itself against a real broker until every input topic (and every
 * repartition topic) is consumed to its end; prints JSON {"describe": topology.describe()}.
 *
 * Cogroups in two sub-topologies: a plain one of refunds (grouped by key) and orders (re-keyed by
 * their user: a repartition topic); and, on clicks, views and orders again, a hopping-windowed one
 * (and its final results: suppressed until each window closes) and, on clicks and views, a
 * sliding-windowed and a session-windowed one. Every aggregate is a string of the latest
 * contributions (the last 60 characters), so that the order of the updates shows; the stores run
 * without the record cache, so every update is forwarded as it happens and the output is fixed by
 * the input alone.
 *
 * One input of the plain cogroup reads its keys with another serde than the others: visits are keyed
 * by the user's number written as a Long, read as "u<n>" (USER_ID), so that the cogroup's one store,
 * which writes every key with the String serde, merges them with the other inputs' records of that user.
 *
 * Beside them, on clicks and views, a tumbling and a session cogroup whose stores user processors read
 * and edit (CogroupWindowEditor, CogroupSessionEditor): each input's next record goes on from the edit.
 *
 * The same two key formats meet in a sub-topology of their own, with no cogroup: calls (String keys)
 * merged with texts (the user's number as a Long, read by USER_ID), then groupByKey() with a count and
 * a tumbling-windowed aggregate. Their stores write every key with the default serde, so a user's calls
 * and texts update one count and one window's aggregate.
 *
 * Args: bootstrap applicationId stateDir clicks views orders refunds visits calls texts outPlain outWindowed
 *       outFinal outSliding outSessions outFinalFiltered outSessionBytes outStoreWindows outStoreSessions
 *       outMergedCounts outMergedWindowed
 *
 * The Python twin is cogroup_examples() in tests/cogroup_topology.py; keep the two in step.
 */
public final class CogroupExamples {
    private CogroupExamples() {}

    /** The user "u<n>" written as the Long n (UserIdSerde in Python). */
    static final Serde<String> USER_ID = Serdes.serdeFrom(
        (topic, user) -> user == null ? null
            : ByteBuffer.allocate(8).putLong(Long.parseLong(user.substring(1))).array(),
        (topic, data) -> data == null ? null : "u" + ByteBuffer.wrap(data).getLong());

    static String tail(String aggregate) {
        return aggregate.substring(Math.max(0, aggregate.length() - 60));
    }

    static String user(String order) {
        return order == null ? null : order.split(",", -1)[0];
    }

    static final long STORE_WINDOW_MS = 4_000L;
    static final long STORE_GRACE_MS = 2_000L;
    static final long STORE_GAP_MS = 1_000L;
    static final long STORE_SESSION_GRACE_MS = 1_000L;

    /** How many records an edited cogroup's aggregate holds (each adds ",<letter><value>"). */
    static int contributions(String aggregate) {
        return (int) aggregate.chars().filter(c -> c == ',').count();
    }

    static String storedText(ValueAndTimestamp<String> stored) {
        return stored == null ? "null" : stored.value() + "@" + stored.timestamp();
    }

    /** On each update of the store-windows cogroup: its reads, then its edits (CogroupWindowEditor in Python). */
    static final class CogroupWindowEditor implements Processor<Windowed<String>, String, Windowed<String>, String> {
        private ProcessorContext<Windowed<String>, String> context;
        private TimestampedWindowStore<String, String> store;

        @Override
        public void init(ProcessorContext<Windowed<String>, String> context) {
            this.context = context;
            this.store = context.getStateStore("store-windows");
        }

        @Override
        public void process(Record<Windowed<String>, String> record) {
            String key = record.key().key();
            long start = record.key().window().start();
            StringJoiner around = new StringJoiner(",");
            try (WindowStoreIterator<ValueAndTimestamp<String>> entries =
                     store.fetch(key, start - STORE_WINDOW_MS, start + STORE_WINDOW_MS)) {
                while (entries.hasNext()) {
                    KeyValue<Long, ValueAndTimestamp<String>> entry = entries.next();
                    around.add(entry.key + "=" + storedText(entry.value));
                }
            }
            StringJoiner sameStart = new StringJoiner(",");
            try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<String>> entries = store.fetchAll(start, start)) {
                while (entries.hasNext()) {
                    KeyValue<Windowed<String>, ValueAndTimestamp<String>> entry = entries.next();
                    sameStart.add(entry.key.key() + "=" + storedText(entry.value));
                }
            }
            StringJoiner keys = new StringJoiner(",");
            try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<String>> entries =
                     store.backwardFetch("u1", "u3", start - STORE_WINDOW_MS, start)) {
                while (entries.hasNext()) {
                    KeyValue<Windowed<String>, ValueAndTimestamp<String>> entry = entries.next();
                    keys.add(entry.key.key() + "@" + entry.key.window().start() + "=" + storedText(entry.value));
                }
            }
            String value = record.value();
            context.forward(record.withValue(value + "|t" + record.timestamp() + "|" + storedText(store.fetch(key, start))
                + "|" + around + "|" + sameStart + "|" + keys));
            if (value.startsWith("R") && contributions(value) >= 2) {
                store.put(key, null, start);
            } else if (!value.startsWith("R") && contributions(value) == 3) {
                store.put(key, ValueAndTimestamp.make("R", record.timestamp() + 7), start);
            }
        }
    }

    static String sessionText(KeyValue<Windowed<String>, String> entry) {
        return entry.key.key() + "@" + entry.key.window().start() + "-" + entry.key.window().end() + "=" + entry.value;
    }

    static String sessions(KeyValueIterator<Windowed<String>, String> entries) {
        StringJoiner joined = new StringJoiner(",");
        try (entries) {
            while (entries.hasNext()) {
                joined.add(sessionText(entries.next()));
            }
        }
        return joined.toString();
    }

    /** On each update of the store-sessions cogroup: its reads, then its edits (CogroupSessionEditor in Python). */
    static final class CogroupSessionEditor implements Processor<Windowed<String>, String, Windowed<String>, String> {
        private ProcessorContext<Windowed<String>, String> context;
        private SessionStore<String, String> store;

        @Override
        public void init(ProcessorContext<Windowed<String>, String> context) {
            this.context = context;
            this.store = context.getStateStore("store-sessions");
        }

        @Override
        public void process(Record<Windowed<String>, String> record) {
            String key = record.key().key();
            long start = record.key().window().start();
            long end = record.key().window().end();
            String stored = store.fetchSession(key, start, end);
            String around = sessions(store.findSessions(key, start - STORE_GAP_MS, end + STORE_GAP_MS));
            String keys = sessions(store.backwardFetch("u1", "u3"));
            String value = record.value();
            context.forward(record.withValue(value + "|t" + record.timestamp() + "|" + stored + "|" + around + "|" + keys));
            if (value == null) {
                return;
            }
            if (value.startsWith("R") && contributions(value) >= 2) {
                store.remove(record.key());
            } else if (!value.startsWith("R") && contributions(value) == 3) {
                store.put(record.key(), "R");
            } else if (contributions(value) == 1 && key.endsWith("1")) {
                long ahead = end + STORE_GAP_MS / 2;
                store.put(new Windowed<>(key, new SessionWindow(ahead, ahead + 50)), "A");
            }
        }
    }

    static Topology cogroupExamples(String clicks, String views, String orders, String refunds, String visits,
                                    String calls, String texts, String outPlain, String outWindowed,
                                    String outFinal, String outSliding, String outSessions,
                                    String outFinalFiltered, String outSessionBytes, String outStoreWindows,
                                    String outStoreSessions, String outMergedCounts, String outMergedWindowed) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> orderStream = builder.stream(orders);
        KGroupedStream<String, String> refundsByUser = builder.<String, String>stream(refunds).groupByKey();
        KGroupedStream<String, String> visitsByUser =
            builder.stream(visits, Consumed.with(USER_ID, Serdes.String())).groupByKey();
        KGroupedStream<String, String> ordersByUser = orderStream.groupBy(
            (key, value) -> user(value), Grouped.with(Serdes.String(), Serdes.String()));
        refundsByUser.<String>cogroup((key, value, agg) -> tail(agg + "r" + value))
            .cogroup(ordersByUser, (key, value, agg) -> tail(agg + "o" + value))
            .cogroup(visitsByUser, (key, value, agg) -> tail(agg + "s" + value))
            .aggregate(() -> "", Named.as("activity"),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("activity-store").withCachingDisabled())
            .toStream()
            .to(outPlain);

        KGroupedStream<String, String> clicksByUser = builder.<String, String>stream(clicks).groupByKey();
        KGroupedStream<String, String> viewsByUser = builder.<String, String>stream(views).groupByKey();
        KTable<Windowed<String>, String> windowed = clicksByUser.<String>cogroup((key, value, agg) -> tail(agg + "c" + value))
            .cogroup(viewsByUser, (key, value, agg) -> tail(agg + "v" + value))
            .cogroup(ordersByUser, (key, value, agg) -> tail(agg + "o" + value))
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(3))
                .advanceBy(Duration.ofSeconds(5)))
            // The suppression buffer serializes the windowed keys: the store names the key serde.
            .aggregate(() -> "", Materialized.<String, String, WindowStore<Bytes, byte[]>>as("activity-windows")
                .withKeySerde(Serdes.String()).withCachingDisabled());
        windowed.toStream()
            .to(outWindowed, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.String()));
        windowed.suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()).withName("final-windows"))
            .toStream()
            .to(outFinal, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.String()));
        // A filter before a suppression: every input's aggregation sends its old aggregate (a new window's:
        // the initializer's "", which passes), so an update whose old and new both fail never reaches it.
        windowed.filter((window, agg) -> agg.length() % 3 != 1)
            .suppress(Suppressed.<Windowed<String>>untilWindowCloses(BufferConfig.unbounded())
                .withName("final-filtered-windows"))
            .toStream()
            .to(outFinalFiltered,
                Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.String()));
        clicksByUser.<String>cogroup((key, value, agg) -> tail(agg + "c" + value))
            .cogroup(viewsByUser, (key, value, agg) -> tail(agg + "v" + value))
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
            .aggregate(() -> "", Named.as("sliding"),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("activity-sliding").withCachingDisabled())
            .toStream()
            .to(outSliding, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 5_000), Serdes.String()));
        KTable<Windowed<String>, String> sessions = clicksByUser.<String>cogroup((key, value, agg) -> tail(agg + "c" + value))
            .cogroup(viewsByUser, (key, value, agg) -> tail(agg + "v" + value))
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(2)))
            .aggregate(() -> "", (key, left, right) -> tail(left + "|" + right), Named.as("sessions"),
                Materialized.<String, String, SessionStore<Bytes, byte[]>>as("activity-sessions")
                    .withKeySerde(Serdes.String()).withCachingDisabled());
        sessions.toStream()
            .to(outSessions, Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String()));
        // Until a time limit in a buffer bounded in bytes, each record sized with its update's old aggregate
        // (a merged-away session's, with its removal); the oldest go out early.
        sessions.suppress(Suppressed.<Windowed<String>>untilTimeLimit(Duration.ofSeconds(30),
                    BufferConfig.maxBytes(SESSION_BYTES).emitEarlyWhenFull()).withName("session-bytes"))
            .toStream()
            .to(outSessionBytes,
                Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String()));

        // Cogroups whose stores processors read and edit (every input's next record goes on from the edit)
        clicksByUser.<String>cogroup((key, value, agg) -> tail(agg + ",c" + value))
            .cogroup(viewsByUser, (key, value, agg) -> tail(agg + ",v" + value))
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(STORE_WINDOW_MS), Duration.ofMillis(STORE_GRACE_MS)))
            .aggregate(() -> "", Named.as("edited-windows"),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("store-windows").withCachingDisabled())
            .toStream()
            .process(CogroupWindowEditor::new, "store-windows")
            .to(outStoreWindows,
                Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, STORE_WINDOW_MS), Serdes.String()));
        clicksByUser.<String>cogroup((key, value, agg) -> tail(agg + ",c" + value))
            .cogroup(viewsByUser, (key, value, agg) -> tail(agg + ",v" + value))
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(STORE_GAP_MS),
                Duration.ofMillis(STORE_SESSION_GRACE_MS)))
            .aggregate(() -> "", (key, left, right) -> tail(left + right), Named.as("edited-sessions"),
                Materialized.<String, String, SessionStore<Bytes, byte[]>>as("store-sessions").withCachingDisabled())
            .toStream()
            .process(CogroupSessionEditor::new, "store-sessions")
            .to(outStoreSessions,
                Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String()));

        KStream<String, String> callStream = builder.stream(calls);
        KStream<String, String> textStream = builder.stream(texts, Consumed.with(USER_ID, Serdes.String()));
        KGroupedStream<String, String> mergedByUser = callStream.merge(textStream).groupByKey();
        mergedByUser.count(Named.as("merged-count"),
                Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("merged-counts").withCachingDisabled())
            .toStream()
            .to(outMergedCounts, Produced.with(Serdes.String(), Serdes.Long()));
        mergedByUser.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(3)))
            .aggregate(() -> "", (key, value, agg) -> tail(agg + value), Named.as("merged-windows"),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("merged-windows-store")
                    .withCachingDisabled())
            .toStream()
            .to(outMergedWindowed,
                Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.String()));
        return builder.build();
    }

    /** The session cogroup's suppression: about three of its buffered records. */
    static final long SESSION_BYTES = 600;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        List<String> inputs = List.of(args[3], args[4], args[5], args[6], args[7], args[8], args[9]);
        RepartitionFirstRuns.TopologyOn topology =
            topics -> cogroupExamples(topics.get(0), topics.get(1), topics.get(2), topics.get(3), topics.get(4),
                                      topics.get(5), topics.get(6), args[10], args[11], args[12], args[13], args[14],
                                      args[15], args[16], args[17], args[18], args[19], args[20]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            // The cogroups read repartition topics of the orders re-keyed by user, which their own upstream
            // task fills while the app runs: filled first, in the order the Spark runner gives them
            // (RepartitionFirstRuns); then all the input is written before the app starts, and 0, not a
            // wait, still merges all of it (KIP-695).
            RepartitionFirstRuns.fillRepartitionTopics(admin, props, topology, inputs, Set.of(inputs.get(2)));
            props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 0L);
            KafkaStreams streams = new KafkaStreams(topology.of(inputs), props);
            KafkaStreamsRuns.failFast(streams);
            streams.start();
            try {
                KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId,
                    () -> RepartitionFirstRuns.withRepartitionTopics(admin, applicationId, inputs), Duration.ofMinutes(5));
                System.out.println("{\"describe\": " + Json.quote(topology.of(inputs).describe().toString()) + "}");
            } finally {
                KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
            }
        }
    }
}
