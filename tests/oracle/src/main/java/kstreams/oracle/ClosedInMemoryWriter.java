package kstreams.oracle;

import java.util.StringJoiner;

import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStoreIterator;

/**
 * On each event with a key (the stream's child defined after the count, so between the count's
 * window-close emits), writes and reads the in-memory store of a count emitting on window close. The
 * Python twin is ClosedInMemoryWriter in tests/dsl_window_store_processor_topology.py (what each event
 * writes and what is forwarded): keep the two in step.
 */
final class ClosedInMemoryWriter implements Processor<String, String, String, String> {
    private final String store;
    private final long span;
    private final boolean sliding;
    private ProcessorContext<String, String> context;
    private TimestampedWindowStore<String, Long> counts;

    ClosedInMemoryWriter(String store, long span, boolean sliding) {
        this.store = store;
        this.span = span;
        this.sliding = sliding;
    }

    @Override
    public void init(ProcessorContext<String, String> context) {
        this.context = context;
        this.counts = context.getStateStore(store);
    }

    private static String keys(KeyValueIterator<Windowed<String>, ValueAndTimestamp<Long>> entries) {
        StringJoiner joined = new StringJoiner(",");
        try (entries) {
            while (entries.hasNext()) {
                Windowed<String> windowed = entries.next().key;
                joined.add(windowed.key() + "@" + windowed.window().start());
            }
        }
        return joined.toString();
    }

    @Override
    public void process(Record<String, String> record) {
        String key = record.key();
        long timestamp = record.timestamp();
        if (key == null) {
            return;
        }
        String value = record.value();  // v<i>; anything else: no action
        int i = value != null && value.matches("v\\d+") ? Integer.parseInt(value.substring(1)) : -1;
        String family = key.substring(0, 1);
        long start = sliding ? timestamp - DslWindowStoreProcessorExamples.DIFF_MS
            : timestamp / DslWindowStoreProcessorExamples.ADVANCE_MS * DslWindowStoreProcessorExamples.ADVANCE_MS;
        if (i % 5 == 1) {
            counts.put(key, ValueAndTimestamp.make(1000L + i, timestamp + 3), start);
        }
        if (i % 9 == 4) {
            counts.put(key, null, start - span / 2);
        }
        if (i % 23 == 5) {
            counts.put(family + "9", ValueAndTimestamp.make(500L + i, timestamp), start);
        }
        if (i % 31 == 7) {
            counts.put(key, ValueAndTimestamp.make(2000L + i, timestamp), start - 2 * span);
        }
        if (i % 331 == 100) {
            counts.put(family + "9", ValueAndTimestamp.make(3000L + i, timestamp), start + 3 * span / 2);
        }
        String one = DslStoreProcessorExamples.storedText(counts.fetch(key, start));
        StringJoiner mine = new StringJoiner(",");
        try (WindowStoreIterator<ValueAndTimestamp<Long>> entries = counts.fetch(key, start - span, start)) {
            while (entries.hasNext()) {
                KeyValue<Long, ValueAndTimestamp<Long>> entry = entries.next();
                mine.add(entry.key + "=" + DslStoreProcessorExamples.storedText(entry.value));
            }
        }
        String familyWindows = DslWindowStoreProcessorExamples.windows(
            counts.fetch(family + "1", family + "9", start - span / 2, start));
        String everything = keys(counts.all());
        String backward = keys(counts.backwardFetchAll(start - 3 * span / 2, start));
        String tag = "p" + context.recordMetadata().orElseThrow().partition() + "|";
        context.forward(new Record<>(key, tag + i + "|" + one + "|" + mine + "|" + familyWindows + "|" + everything
            + "|" + backward, timestamp));
    }
}
