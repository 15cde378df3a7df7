package kstreams.oracle;

import java.util.StringJoiner;

import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionStore;

/**
 * On each event with a key (the stream's child defined after the count, so between the count's
 * window-close emits), writes and reads the in-memory store (InMemorySessionStore) of a session count
 * emitting on window close. The Python twin is ClosedInMemorySessionWriter in
 * tests/dsl_window_store_processor_topology.py (what each event writes and what is forwarded): keep the
 * two in step.
 */
final class ClosedInMemorySessionWriter implements Processor<String, String, String, String> {
    private static final long GAP_MS = DslWindowStoreProcessorExamples.GAP_MS;
    private final String store;
    private ProcessorContext<String, String> context;
    private SessionStore<String, Long> sessions;

    ClosedInMemorySessionWriter(String store) {
        this.store = store;
    }

    @Override
    public void init(ProcessorContext<String, String> context) {
        this.context = context;
        this.sessions = context.getStateStore(store);
    }

    private static String text(KeyValueIterator<Windowed<String>, Long> entries) {
        StringJoiner joined = new StringJoiner(",");
        try (entries) {
            while (entries.hasNext()) {
                KeyValue<Windowed<String>, Long> entry = entries.next();
                joined.add(entry.key.key() + "@" + entry.key.window().start() + "-" + entry.key.window().end() + "="
                    + entry.value);
            }
        }
        return joined.toString();
    }

    /** The first session the iterator returns, or null. */
    private static Windowed<String> first(KeyValueIterator<Windowed<String>, Long> entries) {
        try (entries) {
            return entries.hasNext() ? entries.next().key : null;
        }
    }

    private static Windowed<String> session(String key, long start, long end) {
        return new Windowed<>(key, new SessionWindow(start, end));
    }

    @Override
    public void process(Record<String, String> record) {
        String key = record.key();
        long t = record.timestamp();
        if (key == null) {
            return;
        }
        String value = record.value();  // v<i>; anything else: no action
        int i = value != null && value.matches("v\\d+") ? Integer.parseInt(value.substring(1)) : -1;
        String family = key.substring(0, 1);
        if (i % 5 == 1) {
            Windowed<String> current = first(sessions.findSessions(key, t, t));
            if (current != null) {
                sessions.put(current, 1000L + i);
            }
        }
        if (i % 9 == 4) {
            Windowed<String> earlier = first(sessions.findSessions(key, t - 2000, t - GAP_MS));
            if (earlier != null) {
                sessions.remove(earlier);
            }
        }
        if (i % 17 == 3) {
            sessions.remove(session(key, t + 2500, t + 2600));  // not stored, ahead: the store's time stays
        }
        if (i % 23 == 5) {
            sessions.put(session(family + "9", t, t + 1), 500L + i);
        }
        if (i % 31 == 7) {
            sessions.put(session(key, t - 4100, t - 4000), 2000L + i);  // closed already, or gone
        }
        if (i % 41 == 20) {
            sessions.put(session(family + "9", t + 1500, t + 1500), null);  // a delete ahead: the store's time moves
        }
        if (i % 331 == 100) {
            sessions.put(session(family + "9", t + 2000, t + 2000), 3000L + i);
        }
        Long one = sessions.fetchSession(key, t, t);
        String mine = text(sessions.findSessions(key, t - 1000, t + 1000));
        String ending = text(sessions.findSessions(t - 2000, t));
        String familySessions = text(sessions.fetch(family + "1", family + "9"));
        String tag = "p" + context.recordMetadata().orElseThrow().partition() + "|";
        context.forward(new Record<>(key, tag + i + "|" + one + "|" + mine + "|" + ending + "|" + familySessions, t));
    }

    /** An emitted session as both twins write it (the runner's sink writes no record timestamps: in the value). */
    static final class ClosedSessionStamp implements Processor<Windowed<String>, Long, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(Record<Windowed<String>, Long> record) {
            String tag = "p" + context.recordMetadata().orElseThrow().partition() + "|";
            Windowed<String> session = record.key();
            context.forward(new Record<>(session.key() + "@" + session.window().start() + "-" + session.window().end(),
                tag + record.value() + "|t" + record.timestamp(), record.timestamp()));
        }
    }
}
