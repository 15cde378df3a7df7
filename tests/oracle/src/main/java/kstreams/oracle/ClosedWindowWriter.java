package kstreams.oracle;

import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStoreIterator;

/**
 * On each event with a key (after the aggregations: it is the stream's last child), writes the
 * store of SuppressExamples' hopping aggregate emitting on window close ("closed-written"), then
 * forwards what the store returns (ClosedWindowWriter in suppress_topology.py says what, and keeps
 * the same text).
 */
final class ClosedWindowWriter implements Processor<String, String, String, String> {
    private ProcessorContext<String, String> context;
    private TimestampedWindowStore<String, String> store;

    /** A ValueAndTimestamp as both twins write it: value@timestamp, or null. */
    static String stored(ValueAndTimestamp<String> stored) {
        return stored == null ? "null" : stored.value() + "@" + stored.timestamp();
    }

    @Override
    public void init(ProcessorContext<String, String> context) {
        this.context = context;
        this.store = context.getStateStore("closed-written");
    }

    @Override
    public void process(Record<String, String> record) {
        String key = record.key();
        if (key == null) {
            return;
        }
        long timestamp = record.timestamp();
        long i = record.value() == null ? -1 : Long.parseLong(record.value().substring(1));
        long latest = Math.floorDiv(timestamp, 5_000L) * 5_000L;
        String family = key.substring(0, 1);
        if (Math.floorMod(i, 5) == 1) {
            store.put(key, ValueAndTimestamp.make("w" + i, timestamp + 3), latest);
        }
        if (Math.floorMod(i, 9) == 4) {
            store.put(key, null, latest - 5_000);
        }
        if (Math.floorMod(i, 23) == 5) {
            store.put(family + "9", ValueAndTimestamp.make("n" + i, timestamp), latest);
        }
        if (Math.floorMod(i, 31) == 7) {
            store.put(key, ValueAndTimestamp.make("old" + i, timestamp), latest - 20_000);
        }
        if (Math.floorMod(i, 97) == 50) {
            store.put(family + "9", ValueAndTimestamp.make("ahead" + i, timestamp), latest + 15_000);
        }
        String one = stored(store.fetch(key, latest));
        List<String> mine = new ArrayList<>();
        try (WindowStoreIterator<ValueAndTimestamp<String>> entries = store.fetch(key, latest - 10_000, latest)) {
            entries.forEachRemaining(entry -> mine.add(entry.key + "=" + stored(entry.value)));
        }
        List<String> familyWindows = new ArrayList<>();
        try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<String>> entries =
                 store.fetch(family + "1", family + "9", latest - 5_000, latest)) {
            entries.forEachRemaining(entry -> familyWindows.add(
                entry.key.key() + "@" + entry.key.window().start() + "=" + stored(entry.value)));
        }
        List<String> everything = new ArrayList<>();
        try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<String>> entries = store.all()) {
            entries.forEachRemaining(entry -> everything.add(entry.key.key() + "@" + entry.key.window().start()));
        }
        List<String> backward = new ArrayList<>();
        try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<String>> entries =
                 store.backwardFetchAll(latest - 15_000, latest)) {
            entries.forEachRemaining(entry -> backward.add(entry.key.key() + "@" + entry.key.window().start()));
        }
        context.forward(new Record<>(key, i + "|" + one + "|" + String.join(",", mine) + "|"
            + String.join(",", familyWindows) + "|" + String.join(",", everything) + "|"
            + String.join(",", backward), timestamp));
    }
}
