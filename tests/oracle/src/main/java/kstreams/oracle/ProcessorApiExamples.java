package kstreams.oracle;

import java.time.Duration;
import java.util.List;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.RecordContext;
import org.apache.kafka.streams.processor.TopicNameExtractor;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;

/**
 * The Processor API (process, process_values, key-value stores, a stream-time punctuator) run by
 * Kafka Streams itself against a real broker until the input is consumed to its end; prints JSON
 * {"describe": topology.describe()}.
 *
 * Args: bootstrap applicationId stateDir events out processed punctuated
 *
 * The Python twin is tests/processor_api_topology.py (BucketCounter, StampValues, WindowLog, SessionLog,
 * DuplicateLog, VersionLog); keep the two in step. The processors on window and session stores (WindowLog,
 * SessionLog, DuplicateLog) and their stores are in WindowStoreLogs.
 */
public final class ProcessorApiExamples {
    private ProcessorApiExamples() {}

    static final long BUCKET_MS = 10_000L;

    static String metadataText(java.util.Optional<RecordMetadata> metadata) {
        return metadata.map(m -> m.topic() + "/" + m.partition() + "/" + m.offset()).orElse("empty");
    }

    static final class BucketCounter implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, String> seen;
        private KeyValueStore<String, Long> buckets;
        private String metadataInInit;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.seen = context.getStateStore("seen");
            this.buckets = context.getStateStore("buckets");
            this.metadataInInit = metadataText(context.recordMetadata());
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
            // the metadata init() and a punctuator see: Kafka Streams' dummy record context's
            String seen = metadataInInit + "|" + metadataText(context.recordMetadata());
            try (KeyValueIterator<String, Long> entries = buckets.all()) {
                while (entries.hasNext()) {
                    KeyValue<String, Long> entry = entries.next();
                    long bucket = Long.parseLong(entry.key.substring(0, 12));
                    String key = entry.key.substring(13);
                    long end = (bucket + 1) * BUCKET_MS;
                    if (end > now) {
                        break;
                    }
                    context.forward(new Record<>(key, tag + "count|" + bucket + "|" + entry.value + "|" + seen, end - 1));
                    buckets.delete(entry.key);
                }
            }
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

    /** To punctuated what a punctuator forwarded (no topic, partition -1, offset -1, no headers), the
     * rest to processed; the twin's PunctuatedOrNot. */
    static final class PunctuatedOrNot implements TopicNameExtractor<String, String> {
        private final String processed;
        private final String punctuated;

        PunctuatedOrNot(String processed, String punctuated) {
            this.processed = processed;
            this.punctuated = punctuated;
        }

        @Override
        public String extract(String key, String value, RecordContext context) {
            boolean fromPunctuator = context.topic() == null && context.partition() == -1 && context.offset() == -1
                && context.headers().toArray().length == 0;
            return fromPunctuator ? punctuated : processed;
        }

        @Override
        public String toString() {
            return "PunctuatedOrNot";
        }
    }

    static Topology processorApiExamples(String events, String out, String processed, String punctuated) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.addStateStore(Stores.keyValueStoreBuilder(
            Stores.persistentKeyValueStore("seen"), Serdes.String(), Serdes.String()));
        builder.addStateStore(Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore("buckets"), Serdes.String(), Serdes.Long()));
        WindowStoreLogs.windowStores().forEach(builder::addStateStore);
        KStream<String, String> stream = builder.<String, String>stream(events);
        KStream<String, String> stamped = stream.process(BucketCounter::new, "seen", "buckets")
            .processValues(StampValues::new);
        stamped.to(out);
        stamped.to(new PunctuatedOrNot(processed, punctuated));
        stream.process(WindowStoreLogs.WindowLog::new, "recent", "recent-memory").to(out);
        WindowStoreLogs.sessionAndDuplicateStores().forEach(builder::addStateStore);
        stream.process(WindowStoreLogs.SessionLog::new, "sessions", "sessions-memory").to(out);
        stream.process(WindowStoreLogs.DuplicateLog::new, "dups", "dups-memory").to(out);
        builder.addStateStore(versionedStore());
        stream.process(VersionLog::new, "versions").to(out);
        stream.toTable(Materialized.<String, String>as(
                Stores.persistentVersionedKeyValueStore("versioned-events", Duration.ofSeconds(2))))
            .toStream().process(TableLog::new, "versioned-events").to(out);
        builder.addStateStore(WindowStoreLogs.nearZeroStore());
        stream.process(WindowStoreLogs.NearZeroWindows::new, "near-zero").to(out);
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
            .addProcessor("window-log", WindowStoreLogs.WindowLog::new, "events-source");
        WindowStoreLogs.windowStores().forEach(store -> topology.addStateStore(store, "window-log"));
        topology.addSink("log-sink", out, "window-log")
            .addProcessor("session-log", WindowStoreLogs.SessionLog::new, "events-source")
            .addProcessor("duplicate-log", WindowStoreLogs.DuplicateLog::new, "events-source");
        List<StoreBuilder<?>> stores = WindowStoreLogs.sessionAndDuplicateStores();
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
        Topology topology = processorApiExamples(args[3], args[4], args[5], args[6]);
        KafkaStreamsRuns.runUntilConsumed(topology, args[0], args[1], args[2], () -> List.of(args[3]),
            Duration.ofMinutes(5), streams -> KafkaStreamsRuns.describeJson(topology));
    }
}
