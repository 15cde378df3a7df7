package kstreams.oracle;

import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionStore;

/**
 * As ClosedWindowWriter, on the store of SuppressExamples' session aggregate emitting on window close
 * ("closed-sessions-written"; ClosedSessionWriter in suppress_topology.py says what, and keeps the
 * same text).
 */
final class ClosedSessionWriter implements Processor<String, String, String, String> {
    private ProcessorContext<String, String> context;
    private SessionStore<String, String> store;

    /** A session store entry as both twins write it: key@start-end=value. */
    static String session(KeyValue<Windowed<String>, String> entry) {
        return entry.key.key() + "@" + entry.key.window().start() + "-" + entry.key.window().end() + "=" + entry.value;
    }

    @Override
    public void init(ProcessorContext<String, String> context) {
        this.context = context;
        this.store = context.getStateStore("closed-sessions-written");
    }

    @Override
    public void process(Record<String, String> record) {
        String key = record.key();
        if (key == null) {
            return;
        }
        long timestamp = record.timestamp();
        long i = record.value() == null ? -1 : Long.parseLong(record.value().substring(1));
        String family = key.substring(0, 1);
        if (Math.floorMod(i, 5) == 2 || Math.floorMod(i, 9) == 5) {
            List<Windowed<String>> sessions = new ArrayList<>();
            try (KeyValueIterator<Windowed<String>, String> entries = store.fetch(key)) {
                entries.forEachRemaining(entry -> sessions.add(entry.key));
            }
            if (!sessions.isEmpty() && Math.floorMod(i, 5) == 2) {
                store.put(sessions.get(sessions.size() - 1), "w" + i);
            }
            if (!sessions.isEmpty() && Math.floorMod(i, 9) == 5) {
                store.remove(sessions.get(sessions.size() - 1));
            }
        }
        if (Math.floorMod(i, 23) == 6) {
            store.put(new Windowed<>(family + "9", new SessionWindow(timestamp, timestamp)), "n" + i);
        }
        if (Math.floorMod(i, 31) == 8) {
            store.put(new Windowed<>(key, new SessionWindow(timestamp - 30_000, timestamp - 29_000)), "old" + i);
        }
        if (Math.floorMod(i, 97) == 51) {
            store.put(new Windowed<>(family + "9", new SessionWindow(timestamp + 20_000, timestamp + 20_000)),
                      "ahead" + i);
        }
        String one = store.fetchSession(key, timestamp, timestamp);
        List<String> mine = new ArrayList<>();
        try (KeyValueIterator<Windowed<String>, String> entries =
                 store.findSessions(key, timestamp - 3_000, timestamp + 3_000)) {
            entries.forEachRemaining(entry -> mine.add(
                entry.key.window().start() + "-" + entry.key.window().end() + "=" + entry.value));
        }
        List<String> familySessions = new ArrayList<>();
        try (KeyValueIterator<Windowed<String>, String> entries = store.backwardFindSessions(
                 family + "1", family + "9", timestamp - 10_000, timestamp + 10_000)) {
            entries.forEachRemaining(entry -> familySessions.add(session(entry)));
        }
        List<String> everything = new ArrayList<>();
        try (KeyValueIterator<Windowed<String>, String> entries = store.fetch(family + "1", family + "9")) {
            entries.forEachRemaining(entry -> everything.add(
                entry.key.key() + "@" + entry.key.window().start() + "-" + entry.key.window().end()));
        }
        context.forward(new Record<>(key, i + "|" + (one == null ? "null" : one) + "|" + String.join(",", mine)
            + "|" + String.join(",", familySessions) + "|" + String.join(",", everything), timestamp));
    }
}
