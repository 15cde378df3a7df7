package kstreams.oracle;

import java.time.Duration;
import java.util.List;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * User processors on DSL operations' stores (a count's, a table's) run by Kafka Streams itself
 * against a real broker until the input is consumed to its end; prints JSON {"describe": ...,
 * "counts": {...}, "prices-store": {...}} (the stores as interactive queries read them then).
 *
 * Args: bootstrap applicationId stateDir events prices orders out outPrices
 *
 * The Python twin is tests/dsl_store_processor_topology.py (CountCorrector, PriceReader); keep the two in step.
 */
public final class DslStoreProcessorExamples {
    private DslStoreProcessorExamples() {}

    static final long BUCKET_MS = 10_000L;

    static String storedText(ValueAndTimestamp<?> stored) {
        return stored == null ? "null" : stored.value() + "@" + stored.timestamp();
    }

    static final class CountCorrector implements Processor<String, Long, String, String> {
        private ProcessorContext<String, String> context;
        private TimestampedKeyValueStore<String, Long> counts;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.counts = context.getStateStore("counts");
            context.schedule(Duration.ofMillis(BUCKET_MS), PunctuationType.STREAM_TIME, this::closeBuckets);
        }

        @Override
        public void process(Record<String, Long> record) {
            String tag = "p" + context.recordMetadata().orElseThrow().partition() + "|";
            ValueAndTimestamp<Long> stored = counts.get(record.key());
            context.forward(record.withValue(
                tag + "count|" + record.value() + "|t" + record.timestamp() + "|" + storedText(stored)));
            if (record.value() == 3L) {
                counts.put(record.key(), ValueAndTimestamp.make(10L, record.timestamp() + 7));
            } else if (record.value() >= 13L) {
                ValueAndTimestamp<Long> old = counts.delete(record.key());
                context.forward(record.withValue(tag + "deleted|" + storedText(old)));
            }
        }

        private void closeBuckets(long now) {
            String tag = "p" + context.taskId().partition() + "|";
            try (KeyValueIterator<String, ValueAndTimestamp<Long>> entries = counts.all()) {
                while (entries.hasNext()) {
                    KeyValue<String, ValueAndTimestamp<Long>> entry = entries.next();
                    long end = (Long.parseLong(entry.key.substring(0, 12)) + 1) * BUCKET_MS;
                    if (end > now) {
                        break;
                    }
                    context.forward(new Record<>(entry.key, tag + "closed|" + storedText(entry.value), end - 1));
                    counts.delete(entry.key);
                }
            }
        }
    }

    static final class PriceReader implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private TimestampedKeyValueStore<String, String> prices;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.prices = context.getStateStore("prices-store");
        }

        @Override
        public void process(Record<String, String> record) {
            String tag = "p" + context.recordMetadata().orElseThrow().partition() + "|";
            if (record.key() == null) {
                context.forward(record.withValue(tag + "nokey|" + record.value()));
                return;
            }
            ValueAndTimestamp<String> price = prices.get(record.key());
            context.forward(record.withValue(
                tag + "order|" + record.value() + "|t" + record.timestamp() + "|" + storedText(price)));
        }
    }

    static Topology dslStoreProcessorExamples(String events, String prices, String orders, String out,
                                              String outPrices) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(events)
            .groupByKey()
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts").withCachingDisabled())
            .toStream()
            .process(CountCorrector::new, "counts")
            .to(out);
        builder.<String, String>table(prices, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("prices-store"));
        builder.<String, String>stream(orders).process(PriceReader::new, "prices-store").to(outPrices);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        Topology topology = dslStoreProcessorExamples(args[3], args[4], args[5], args[6], args[7]);
        KafkaStreamsRuns.runUntilConsumed(topology, args[0], args[1], args[2], () -> List.of(args[3], args[4], args[5]),
            Duration.ofMinutes(5), streams -> "{\"describe\": " + Json.quote(topology.describe().toString())
                + ", \"counts\": " + Json.objectOfStrings(KafkaStreamsRuns.storeContent(streams, "counts"))
                + ", \"prices-store\": " + Json.objectOfStrings(KafkaStreamsRuns.storeContent(streams, "prices-store"))
                + "}");
    }
}
