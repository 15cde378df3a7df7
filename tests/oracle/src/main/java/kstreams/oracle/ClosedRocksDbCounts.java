package kstreams.oracle;

import java.time.Duration;

import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.Stores;

import static kstreams.oracle.DslWindowStoreProcessorExamples.ADVANCE_MS;
import static kstreams.oracle.DslWindowStoreProcessorExamples.DIFF_MS;
import static kstreams.oracle.DslWindowStoreProcessorExamples.GRACE_MS;
import static kstreams.oracle.DslWindowStoreProcessorExamples.SIZE_MS;
import static kstreams.oracle.DslWindowStoreProcessorExamples.SLIDING_GRACE_MS;
import static kstreams.oracle.DslWindowStoreProcessorExamples.SLIDING_RETENTION_MS;

/**
 * Part of DslWindowStoreProcessorExamples: a hopping count and a sliding count emitting on window close from
 * timestamped RocksDB suppliers' stores (Stores.persistentTimestampedWindowStore: the DSL keeps the supplier's
 * segmented RocksDBTimestampedWindowStore, segments of 60 s), each written and read by ClosedInMemoryWriter beside
 * it (on the events, between the emits). The Python twin is the end of dsl_window_store_processor_examples in
 * tests/dsl_window_store_processor_topology.py: keep the two in step.
 */
final class ClosedRocksDbCounts {
    private ClosedRocksDbCounts() {}

    static void add(KStream<String, String> stream, String out, String reads, String slidingOut, String slidingReads) {
        stream
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(SIZE_MS), Duration.ofMillis(GRACE_MS))
                .advanceBy(Duration.ofMillis(ADVANCE_MS)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(Materialized.<String, Long>as(Stores.persistentTimestampedWindowStore("closed-counts-rocksdb",
                Duration.ofMillis(SIZE_MS + ADVANCE_MS), Duration.ofMillis(SIZE_MS), false)).withCachingDisabled())
            .toStream()
            .process(DslWindowStoreProcessorExamples.ClosedStamp::new)
            .to(out);
        stream
            .process(() -> new ClosedInMemoryWriter("closed-counts-rocksdb", SIZE_MS, false), "closed-counts-rocksdb")
            .to(reads);
        stream
            .groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(DIFF_MS),
                Duration.ofMillis(SLIDING_GRACE_MS)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(Materialized.<String, Long>as(Stores.persistentTimestampedWindowStore("closed-sliding-rocksdb",
                Duration.ofMillis(SLIDING_RETENTION_MS), Duration.ofMillis(DIFF_MS), false)).withCachingDisabled())
            .toStream()
            .process(DslWindowStoreProcessorExamples.ClosedStamp::new)
            .to(slidingOut);
        stream
            .process(() -> new ClosedInMemoryWriter("closed-sliding-rocksdb", 2 * DIFF_MS, true),
                "closed-sliding-rocksdb")
            .to(slidingReads);
    }

    /** The two stores as interactive queries read them, as JSON members to append to the printed object. */
    static String storesJson(KafkaStreams streams) {
        return ", \"closed-counts-rocksdb\": "
            + Json.objectOfStrings(WindowExamples.windowStoreContent(streams, "closed-counts-rocksdb"))
            + ", \"closed-sliding-rocksdb\": "
            + Json.objectOfStrings(WindowExamples.windowStoreContent(streams, "closed-sliding-rocksdb"));
    }
}
