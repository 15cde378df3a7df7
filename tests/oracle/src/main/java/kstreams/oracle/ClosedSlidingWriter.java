package kstreams.oracle;

import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStoreIterator;

import static kstreams.oracle.ClosedWindowWriter.stored;

/**
 * On each slide with a key (after the sliding aggregations: it is the stream's last child), writes the
 * store of the sliding aggregate emitting on window close ("closed-sliding-written": time difference
 * 5 s, grace 2 s, retention 12 s, a time-ordered store with a key index), then forwards what the store
 * returns (ClosedSlidingWriter in suppress_topology.py says what, and keeps the same text).
 */
final class ClosedSlidingWriter implements Processor<String, String, String, String> {
    private ProcessorContext<String, String> context;
    private TimestampedWindowStore<String, String> store;

    @Override
    public void init(ProcessorContext<String, String> context) {
        this.context = context;
        this.store = context.getStateStore("closed-sliding-written");
    }

    static String keys(KeyValueIterator<Windowed<String>, ValueAndTimestamp<String>> entries) {
        List<String> found = new ArrayList<>();
        try (entries) {
            entries.forEachRemaining(entry -> found.add(entry.key.key() + "@" + entry.key.window().start()));
        }
        return String.join(",", found);
    }

    @Override
    public void process(Record<String, String> record) {
        String key = record.key();
        if (key == null) {
            return;
        }
        long t = record.timestamp();
        long i = record.value() == null ? -1 : Long.parseLong(record.value().substring(1));
        long left = t - 5_000;
        String family = key.substring(0, 1);
        if (Math.floorMod(i, 5) == 1) {
            store.put(key, ValueAndTimestamp.make("w" + i, t + 3), left);
        }
        if (Math.floorMod(i, 9) == 4) {
            KeyValue<Long, ValueAndTimestamp<String>> before = null;
            try (WindowStoreIterator<ValueAndTimestamp<String>> entries =
                     store.backwardFetch(key, t - 10_000, left - 1)) {
                if (entries.hasNext()) {
                    before = entries.next();
                }
            }
            if (before != null) {
                store.put(key, null, before.key);
            }
        }
        if (Math.floorMod(i, 23) == 5) {
            store.put(family + "9", ValueAndTimestamp.make("n" + i, t), left);
        }
        if (Math.floorMod(i, 31) == 7) {
            store.put(key, ValueAndTimestamp.make("old" + i, t), t - 20_000);
        }
        if (Math.floorMod(i, 97) == 50) {
            store.put(family + "9", ValueAndTimestamp.make("ahead" + i, t), t + 15_000);
        }
        String one = stored(store.fetch(key, left));
        List<String> mine = new ArrayList<>();
        try (WindowStoreIterator<ValueAndTimestamp<String>> entries = store.fetch(key, t - 10_000, t)) {
            entries.forEachRemaining(entry -> mine.add(entry.key + "=" + stored(entry.value)));
        }
        List<String> familyWindows = new ArrayList<>();
        try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<String>> entries =
                 store.fetch(family + "1", family + "9", left, t)) {
            entries.forEachRemaining(entry -> familyWindows.add(
                entry.key.key() + "@" + entry.key.window().start() + "=" + stored(entry.value)));
        }
        String backward = keys(store.backwardFetch(family + "1", family + "9", left, t));
        String byTime = keys(store.fetchAll(left, t));
        String byTimeBackward = keys(store.backwardFetchAll(t - 10_000, t));
        context.forward(new Record<>(key, i + "|" + one + "|" + String.join(",", mine) + "|"
            + String.join(",", familyWindows) + "|" + backward + "|" + byTime + "|" + byTimeBackward, t));
    }
}
