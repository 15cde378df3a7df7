package kstreams.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;

/**
 * The Processor API (process, process_values, key-value stores, a stream-time punctuator) run by
 * Kafka Streams itself against a real broker until the input is consumed to its end; prints JSON
 * {"describe": topology.describe()}.
 *
 * Args: bootstrap applicationId stateDir events out
 *
 * The Python twin is tests/processor_api_topology.py (BucketCounter, StampValues, WindowLog, SessionLog,
 * DuplicateLog, VersionLog); keep the two in step.
 */
public final class ProcessorApiExamples {
    private ProcessorApiExamples() {}

    static final long BUCKET_MS = 10_000L;
    static final long SESSION_GAP_MS = 500L;

    static final class BucketCounter implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, String> seen;
        private KeyValueStore<String, Long> buckets;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.seen = context.getStateStore("seen");
            this.buckets = context.getStateStore("buckets");
            context.schedule(Duration.ofMillis(BUCKET_MS), PunctuationType.STREAM_TIME, this::emitClosed);
        }

        @Override
        public void process(Record<String, String> record) {
            RecordMetadata metadata = context.recordMetadata().orElseThrow();
            String tag = "p" + metadata.partition() + "|";
            if (record.key() == null || record.value() == null) {
                context.forward(record.withValue(tag + "null|" + record.key() + "|" + record.value()));
                return;
            }
            String last = seen.putIfAbsent(record.key(), record.value());
            if (last != null) {
                seen.put(record.key(), record.value());
            }
            String kind = record.value().equals(last) ? "repeat" : "new";
            context.forward(record.withValue(tag + kind + "|" + record.value() + "|o" + metadata.offset()));
            long bucket = record.timestamp() / BUCKET_MS;
            if ((bucket + 1) * BUCKET_MS <= context.currentStreamTimeMs()) {
                context.forward(record.withValue(tag + "late|" + record.value()));
                return;
            }
            String slot = String.format("%012d|%s", bucket, record.key());
            Long count = buckets.get(slot);
            buckets.put(slot, (count == null ? 0L : count) + 1);
        }

        private void emitClosed(long now) {
            String tag = "p" + context.taskId().partition() + "|";
            try (KeyValueIterator<String, Long> entries = buckets.all()) {
                while (entries.hasNext()) {
                    KeyValue<String, Long> entry = entries.next();
                    long bucket = Long.parseLong(entry.key.substring(0, 12));
                    String key = entry.key.substring(13);
                    long end = (bucket + 1) * BUCKET_MS;
                    if (end > now) {
                        break;
                    }
                    context.forward(new Record<>(key, tag + "count|" + bucket + "|" + entry.value, end - 1));
                    buckets.delete(entry.key);
                }
            }
        }
    }

    /** Window stores: what each holds for the key over the last 10 s and for every key over 30 s. */
    static final class WindowLog implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private List<WindowStore<String, String>> stores;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            WindowStore<String, String> recent = context.getStateStore("recent");
            WindowStore<String, String> recentMemory = context.getStateStore("recent-memory");
            this.stores = List.of(recent, recentMemory);
        }

        @Override
        public void process(Record<String, String> record) {
            if (record.key() == null) {
                return;
            }
            long start = record.timestamp() / 5_000 * 5_000;
            List<String> parts = new ArrayList<>();
            for (WindowStore<String, String> store : stores) {
                store.put(record.key(), record.value(), start);
                StringJoiner mine = new StringJoiner(",");
                try (WindowStoreIterator<String> entries = store.fetch(record.key(), start - 10_000, start)) {
                    while (entries.hasNext()) {
                        KeyValue<Long, String> entry = entries.next();
                        mine.add(entry.key + "=" + entry.value);
                    }
                }
                StringJoiner every = new StringJoiner(",");
                try (KeyValueIterator<Windowed<String>, String> entries = store.fetchAll(start - 30_000, start + 5_000)) {
                    while (entries.hasNext()) {
                        KeyValue<Windowed<String>, String> entry = entries.next();
                        every.add(entry.key.key() + "@" + entry.key.window().start() + "=" + entry.value);
                    }
                }
                parts.add(mine + "/" + every);
            }
            RecordMetadata metadata = context.recordMetadata().orElseThrow();
            context.forward(record.withValue("p" + metadata.partition() + "|win|" + String.join("|", parts)));
        }
    }

    static List<StoreBuilder<WindowStore<String, String>>> windowStores() {
        return List.of(
            Stores.windowStoreBuilder(Stores.persistentWindowStore(
                "recent", Duration.ofSeconds(20), Duration.ofSeconds(5), false), Serdes.String(), Serdes.String()),
            Stores.windowStoreBuilder(Stores.inMemoryWindowStore(
                "recent-memory", Duration.ofSeconds(20), Duration.ofSeconds(5), false), Serdes.String(), Serdes.String()));
    }

    /** Session stores: merges each record into its key's sessions by hand (twin: SessionLog). */
    static final class SessionLog implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private List<SessionStore<String, String>> stores;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            SessionStore<String, String> sessions = context.getStateStore("sessions");
            SessionStore<String, String> sessionsMemory = context.getStateStore("sessions-memory");
            this.stores = List.of(sessions, sessionsMemory);
        }

        @Override
        public void process(Record<String, String> record) {
            if (record.key() == null) {
                return;
            }
            long t = record.timestamp();
            List<String> parts = new ArrayList<>();
            for (SessionStore<String, String> store : stores) {
                List<KeyValue<Windowed<String>, String>> found = new ArrayList<>();
                try (KeyValueIterator<Windowed<String>, String> entries =
                         store.findSessions(record.key(), t - SESSION_GAP_MS, t + SESSION_GAP_MS)) {
                    entries.forEachRemaining(found::add);
                }
                long start = t;
                long end = t;
                long count = 1;
                StringJoiner foundText = new StringJoiner(",");
                for (KeyValue<Windowed<String>, String> entry : found) {
                    start = Math.min(start, entry.key.window().start());
                    end = Math.max(end, entry.key.window().end());
                    count += Long.parseLong(entry.value);
                    foundText.add(entry.key.window().start() + "-" + entry.key.window().end() + "=" + entry.value);
                }
                for (KeyValue<Windowed<String>, String> entry : found) {
                    if (record.value() == null) {
                        store.put(entry.key, null);
                    } else {
                        store.remove(entry.key);
                    }
                }
                if (record.value() != null) {
                    store.put(new Windowed<>(record.key(), new SessionWindow(start, end)), Long.toString(count));
                    if (record.value().equals("v3")) {
                        store.put(new Windowed<>(record.key(), new SessionWindow(end, end)), "1");
                    }
                }
                StringJoiner mine = new StringJoiner(",");
                try (KeyValueIterator<Windowed<String>, String> entries = store.backwardFetch(record.key())) {
                    entries.forEachRemaining(entry -> mine.add(
                        entry.key.window().start() + "-" + entry.key.window().end() + "=" + entry.value));
                }
                StringJoiner every = new StringJoiner(",");
                try (KeyValueIterator<Windowed<String>, String> entries = store.findSessions("a", "c", t - 5_000, t)) {
                    entries.forEachRemaining(entry -> every.add(entry.key.key() + "@" + entry.key.window().start()
                        + "-" + entry.key.window().end() + "=" + entry.value));
                }
                String single = store.fetchSession(record.key(), start, end);
                parts.add(foundText + "/" + mine + "/" + every + "/" + single);
            }
            StringJoiner ending = new StringJoiner(",");
            try (KeyValueIterator<Windowed<String>, String> entries = stores.get(1).findSessions(t - 2_000, t)) {
                entries.forEachRemaining(entry -> ending.add(entry.key.key() + "@" + entry.key.window().start()
                    + "-" + entry.key.window().end() + "=" + entry.value));
            }
            parts.add(ending.toString());
            RecordMetadata metadata = context.recordMetadata().orElseThrow();
            context.forward(record.withValue("p" + metadata.partition() + "|ses|" + String.join("|", parts)));
        }
    }

    /** Window stores that retain duplicates (twin: DuplicateLog). */
    static final class DuplicateLog implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private List<WindowStore<String, String>> stores;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            WindowStore<String, String> dups = context.getStateStore("dups");
            WindowStore<String, String> dupsMemory = context.getStateStore("dups-memory");
            this.stores = List.of(dups, dupsMemory);
        }

        @Override
        public void process(Record<String, String> record) {
            if (record.key() == null) {
                return;
            }
            long start = record.timestamp() / 5_000 * 5_000;
            List<String> parts = new ArrayList<>();
            for (WindowStore<String, String> store : stores) {
                store.put(record.key(), record.value(), start);
                StringJoiner mine = new StringJoiner(",");
                try (WindowStoreIterator<String> entries = store.fetch(record.key(), start - 5_000, start)) {
                    entries.forEachRemaining(entry -> mine.add(entry.key + "=" + entry.value));
                }
                StringJoiner every = new StringJoiner(",");
                try (KeyValueIterator<Windowed<String>, String> entries = store.backwardFetchAll(start - 5_000, start)) {
                    entries.forEachRemaining(entry -> every.add(
                        entry.key.key() + "@" + entry.key.window().start() + "=" + entry.value));
                }
                parts.add(mine + "/" + every + "/" + store.fetch(record.key(), start));
            }
            RecordMetadata metadata = context.recordMetadata().orElseThrow();
            context.forward(record.withValue("p" + metadata.partition() + "|dup|" + String.join("|", parts)));
        }
    }

    /** A versioned store: puts, deletes and reads as of times (twin: VersionLog). */
    static final class VersionLog implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private VersionedKeyValueStore<String, String> store;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore("versions");
        }

        @Override
        public void process(Record<String, String> record) {
            if (record.key() == null) {
                return;
            }
            long t = record.timestamp();
            String written;
            if (record.value() == null) {
                written = "del=" + versioned(store.delete(record.key(), t));
            } else {
                written = "put=" + store.put(record.key(), record.value(), t);
                if (record.value().equals("v3")) {
                    written += ",tomb=" + store.put(record.key(), null, t - 500);
                    if (record.key().endsWith("1")) {
                        written += ",side=" + store.put(record.key().charAt(0) + "0", record.value(), t);
                    }
                }
            }
            List<String> reads = List.of(versioned(store.get(record.key())), versioned(store.get(record.key(), t - 1)),
                versioned(store.get(record.key(), t - 1_500)), versioned(store.get(record.key().charAt(0) + "0", t - 2_500)),
                versioned(store.get(record.key().charAt(0) + "1", t)));
            RecordMetadata metadata = context.recordMetadata().orElseThrow();
            context.forward(record.withValue("p" + metadata.partition() + "|ver|" + written + "|" + String.join("|", reads)));
        }

        static String versioned(VersionedRecord<String> record) {
            if (record == null) {
                return "null";
            }
            return record.value() + "@" + record.timestamp() + "~" + record.validTo().map(String::valueOf).orElse("-");
        }
    }

    /** Tags each update a versioned table's toStream forwards and works on its store (twin: TableLog). */
    static final class TableLog implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private VersionedKeyValueStore<String, String> table;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.table = context.getStateStore("versioned-events");
        }

        @Override
        public void process(Record<String, String> record) {
            long t = record.timestamp();
            String written = "";
            if ("v2".equals(record.value())) {
                written = "put=" + table.put(record.key(), "w", t + 300);
            } else if ("v1".equals(record.value())) {
                written = "del=" + VersionLog.versioned(table.delete(record.key(), t - 100));
            }
            String reads = VersionLog.versioned(table.get(record.key())) + "|"
                + VersionLog.versioned(table.get(record.key(), t - 1));
            RecordMetadata metadata = context.recordMetadata().orElseThrow();
            context.forward(record.withValue("p" + metadata.partition() + "|tab|" + record.value() + "|t" + t
                + "|" + written + "|" + reads));
        }
    }

    static StoreBuilder<VersionedKeyValueStore<String, String>> versionedStore() {
        return Stores.versionedKeyValueStoreBuilder(
            Stores.persistentVersionedKeyValueStore("versions", Duration.ofSeconds(2)), Serdes.String(), Serdes.String());
    }

    static List<StoreBuilder<?>> sessionAndDuplicateStores() {
        return List.of(
            Stores.sessionStoreBuilder(Stores.persistentSessionStore("sessions", Duration.ofSeconds(20)),
                Serdes.String(), Serdes.String()),
            Stores.sessionStoreBuilder(Stores.inMemorySessionStore("sessions-memory", Duration.ofSeconds(20)),
                Serdes.String(), Serdes.String()),
            Stores.windowStoreBuilder(Stores.persistentWindowStore(
                "dups", Duration.ofSeconds(20), Duration.ofSeconds(5), true), Serdes.String(), Serdes.String()),
            Stores.windowStoreBuilder(Stores.inMemoryWindowStore(
                "dups-memory", Duration.ofSeconds(20), Duration.ofSeconds(5), true), Serdes.String(), Serdes.String()));
    }

    static Topology processorApiExamples(String events, String out) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.addStateStore(Stores.keyValueStoreBuilder(
            Stores.persistentKeyValueStore("seen"), Serdes.String(), Serdes.String()));
        builder.addStateStore(Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore("buckets"), Serdes.String(), Serdes.Long()));
        windowStores().forEach(builder::addStateStore);
        KStream<String, String> stream = builder.<String, String>stream(events);
        stream.process(BucketCounter::new, "seen", "buckets")
            .processValues(StampValues::new)
            .to(out);
        stream.process(WindowLog::new, "recent", "recent-memory").to(out);
        sessionAndDuplicateStores().forEach(builder::addStateStore);
        stream.process(SessionLog::new, "sessions", "sessions-memory").to(out);
        stream.process(DuplicateLog::new, "dups", "dups-memory").to(out);
        builder.addStateStore(versionedStore());
        stream.process(VersionLog::new, "versions").to(out);
        stream.toTable(Materialized.<String, String>as(
                Stores.persistentVersionedKeyValueStore("versioned-events", Duration.ofSeconds(2))))
            .toStream().process(TableLog::new, "versioned-events").to(out);
        return builder.build();
    }

    /** The same processors wired with the low-level API; the Python twin is processor_api_low_level(). */
    static Topology lowLevel(String events, String out) {
        Topology topology = new Topology()
            .addSource("events-source", events)
            .addProcessor("counter", BucketCounter::new, "events-source")
            .addStateStore(Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore("seen"), Serdes.String(), Serdes.String()), "counter")
            .addStateStore(Stores.keyValueStoreBuilder(
                Stores.inMemoryKeyValueStore("buckets"), Serdes.String(), Serdes.Long()), "counter")
            .addProcessor("stamp", StampAll::new, "counter")
            .addSink("out-sink", out, "stamp")
            .addProcessor("window-log", WindowLog::new, "events-source");
        windowStores().forEach(store -> topology.addStateStore(store, "window-log"));
        topology.addSink("log-sink", out, "window-log")
            .addProcessor("session-log", SessionLog::new, "events-source")
            .addProcessor("duplicate-log", DuplicateLog::new, "events-source");
        List<StoreBuilder<?>> stores = sessionAndDuplicateStores();
        topology.addStateStore(stores.get(0), "session-log").addStateStore(stores.get(1), "session-log");
        topology.addStateStore(stores.get(2), "duplicate-log").addStateStore(stores.get(3), "duplicate-log");
        return topology.addSink("session-sink", out, "session-log").addSink("duplicate-sink", out, "duplicate-log")
            .addProcessor("version-log", VersionLog::new, "events-source")
            .addStateStore(versionedStore(), "version-log")
            .addSink("version-sink", out, "version-log");
    }

    /** StampValues as a plain Processor (the low-level API takes ProcessorSuppliers). */
    static final class StampAll implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(Record<String, String> record) {
            context.forward(record.withValue(record.value() + "|t" + record.timestamp()));
        }
    }

    public static void main(String[] args) throws Exception {
        Topology topology = processorApiExamples(args[3], args[4]);
        KafkaStreamsRuns.runUntilConsumed(topology, args[0], args[1], args[2], () -> List.of(args[3]),
            Duration.ofMinutes(5), streams -> KafkaStreamsRuns.describeJson(topology));
    }
}
