package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.StringJoiner;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;

/**
 * A user processor on a windowed count's store (TimestampedWindowStore) run by Kafka Streams itself
 * against a real broker until the input is consumed to its end; prints JSON {"describe": ...,
 * "window-counts": {"key@start": count}} (the store as an interactive query reads it then).
 *
 * Args: bootstrap applicationId stateDir events out
 *
 * The Python twin is tests/dsl_window_store_processor_topology.py (WindowCorrector); keep the two in step.
 */
public final class DslWindowStoreProcessorExamples {
    private DslWindowStoreProcessorExamples() {}

    static final long SIZE_MS = 10_000L;
    static final long ADVANCE_MS = 5_000L;
    static final long GRACE_MS = 4_000L;

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
            try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<Long>> entries = counts.fetchAll(start, start)) {
                while (entries.hasNext()) {
                    KeyValue<Windowed<String>, ValueAndTimestamp<Long>> entry = entries.next();
                    sameStart.add(entry.key.key() + "=" + DslStoreProcessorExamples.storedText(entry.value));
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

    static Topology dslWindowStoreProcessorExamples(String events, String out) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(events)
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(SIZE_MS), Duration.ofMillis(GRACE_MS))
                .advanceBy(Duration.ofMillis(ADVANCE_MS)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("window-counts").withCachingDisabled())
            .toStream()
            .process(WindowCorrector::new, "window-counts")
            .to(out);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        Topology topology = dslWindowStoreProcessorExamples(args[3], args[4]);
        KafkaStreamsRuns.runUntilConsumed(topology, args[0], args[1], args[2], () -> List.of(args[3]),
            Duration.ofMinutes(5), streams -> "{\"describe\": " + Json.quote(topology.describe().toString())
                + ", \"window-counts\": "
                + Json.objectOfStrings(WindowExamples.windowStoreContent(streams, "window-counts")) + "}");
    }
}
