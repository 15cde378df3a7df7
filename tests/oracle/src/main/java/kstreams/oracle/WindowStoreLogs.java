package kstreams.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;

/**
 * ProcessorApiExamples' processors on window and session stores, each store twice (persistent and in
 * memory) so that both kinds answer alike, and the stores they read. Each processor writes what the
 * stores hold after a record into its value.
 *
 * The Python twins are WindowLog, SessionLog and DuplicateLog in tests/processor_api_topology.py; keep
 * them in step.
 */
final class WindowStoreLogs {
    private WindowStoreLogs() {}

    static final long SESSION_GAP_MS = 500L;

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

    /** Window starts a processor computes near 0, before it too (twin: NEAR_ZERO_STARTS). */
    static final long[] NEAR_ZERO_STARTS = {-150_005L, -100_001L, -60_000L, -5L, 0L, 10L, 50_000L};

    /** Each value under a start near 0; the key's windows before 0, every key's from 0 (twin: NearZeroWindows). */
    static final class NearZeroWindows implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private WindowStore<String, String> store;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore("near-zero");
        }

        @Override
        public void process(Record<String, String> record) {
            if (record.key() == null) {
                return;
            }
            store.put(record.key(), record.value(), NEAR_ZERO_STARTS[(int) (record.timestamp() % NEAR_ZERO_STARTS.length)]);
            StringJoiner before = new StringJoiner(",");
            try (WindowStoreIterator<String> entries = store.fetch(record.key(), -200_000L, -1L)) {
                while (entries.hasNext()) {
                    KeyValue<Long, String> entry = entries.next();
                    before.add(entry.key + "=" + entry.value);
                }
            }
            StringJoiner every = new StringJoiner(",");
            try (KeyValueIterator<Windowed<String>, String> entries = store.fetchAll(0L, 100_000L)) {
                while (entries.hasNext()) {
                    KeyValue<Windowed<String>, String> entry = entries.next();
                    every.add(entry.key.key() + "@" + entry.key.window().start() + "=" + entry.value);
                }
            }
            RecordMetadata metadata = context.recordMetadata().orElseThrow();
            context.forward(record.withValue("p" + metadata.partition() + "|near|" + before + "/" + every));
        }
    }

    static StoreBuilder<WindowStore<String, String>> nearZeroStore() {
        return Stores.windowStoreBuilder(Stores.persistentWindowStore(
            "near-zero", Duration.ofMillis(200_000), Duration.ofMillis(100), false), Serdes.String(), Serdes.String());
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
}
