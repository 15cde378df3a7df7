package kstreams.oracle;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * Stores that write keys with different serdes in a sub-topology whose sources read keys with
 * different serdes, run by Kafka Streams itself against a real broker until its input is consumed;
 * prints JSON {"describe": ...}.
 *
 * Calls (String keys: "u7", and "U7" for the same user written otherwise) merged with texts (the
 * user's number as a Long, read as "u<n>" by USER_ID), grouped by key; a count whose store writes
 * keys with the String serde ("U7" and "u7" two keys) and a reduce whose store writes them in lower
 * case (LOWER_CASE: one key), both without the record cache; a reduce whose store writes keys as the
 * user's number (USER_ID, a Long: "U7" and "u7" one key); and StoreAudit, a processor on the merged
 * stream connected to the count's store and the Long-keyed one.
 *
 * Args: bootstrap applicationId stateDir calls texts outCounts outFolded outAudit
 *
 * The Python twin is key_serde_examples() in tests/key_serde_topology.py; keep the two in step.
 */
public final class KeySerdeExamples {
    private KeySerdeExamples() {}

    /** The user "u<n>" written as the Long n (UserIdSerde in Python). */
    static final Serde<String> USER_ID = Serdes.serdeFrom(
        (topic, user) -> user == null ? null
            : ByteBuffer.allocate(8).putLong(Long.parseLong(user.substring(1))).array(),
        (topic, data) -> data == null ? null : "u" + ByteBuffer.wrap(data).getLong());

    /** Keys written in lower case, read as written (LowerCaseSerde in Python). */
    static final Serde<String> LOWER_CASE = Serdes.serdeFrom(
        (topic, key) -> key == null ? null : key.toLowerCase(Locale.ROOT).getBytes(StandardCharsets.UTF_8),
        (topic, data) -> data == null ? null : new String(data, StandardCharsets.UTF_8));

    static String storedText(ValueAndTimestamp<?> stored) {
        return stored == null ? "null" : stored.value() + "@" + stored.timestamp();
    }

    static String keys(KeyValueStore<String, ?> store) {
        StringBuilder keys = new StringBuilder();
        try (KeyValueIterator<String, ?> entries = store.all()) {
            while (entries.hasNext()) {
                keys.append(keys.length() == 0 ? "" : ",").append(entries.next().key);
            }
        }
        return keys.toString();
    }

    /**
     * Per record with a key: forwards what exact-counts (String keys) and latest-by-id (Long keys)
     * hold for it; a value ending in "0." adds 100 to the count and replaces the latest value, a
     * tombstone deletes the key from both stores and lists the keys each store has left.
     */
    static final class StoreAudit implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private TimestampedKeyValueStore<String, Long> counts;
        private TimestampedKeyValueStore<String, String> latest;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.counts = context.getStateStore("exact-counts");
            this.latest = context.getStateStore("latest-by-id");
        }

        @Override
        public void process(Record<String, String> record) {
            if (record.key() == null) {
                return;
            }
            ValueAndTimestamp<Long> count = counts.get(record.key());
            ValueAndTimestamp<String> last = latest.get(record.key());
            String seen = record.value() + "|" + storedText(count) + "|" + storedText(last);
            if (record.value() == null) {
                counts.delete(record.key());
                latest.delete(record.key());
                context.forward(record.withValue("deleted|" + seen + "|" + keys(counts) + "/" + keys(latest)));
            } else if (record.value().endsWith("0.")) {
                counts.put(record.key(), ValueAndTimestamp.make((count == null ? 0L : count.value()) + 100L,
                    record.timestamp()));
                latest.put(record.key(), ValueAndTimestamp.make("reset:" + record.value(), record.timestamp() - 1));
                context.forward(record.withValue("reset|" + seen));
            } else {
                context.forward(record.withValue("read|" + seen));
            }
        }
    }

    static Topology keySerdeExamples(String calls, String texts, String outCounts, String outFolded,
                                     String outAudit) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> texted = builder.stream(texts, Consumed.with(USER_ID, Serdes.String()));
        KStream<String, String> merged = builder.<String, String>stream(calls).merge(texted);
        KGroupedStream<String, String> byUser = merged.groupByKey();
        byUser.count(Named.as("exact-count"),
                Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("exact-counts").withCachingDisabled())
            .toStream()
            .to(outCounts, Produced.with(Serdes.String(), Serdes.Long()));
        byUser.reduce((left, right) -> {
                String joined = left + right;
                return joined.substring(Math.max(0, joined.length() - 60));
            }, Named.as("folded-reduce"),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("folded")
                    .withKeySerde(LOWER_CASE).withCachingDisabled())
            .toStream()
            .to(outFolded, Produced.with(Serdes.String(), Serdes.String()));
        byUser.reduce((left, right) -> {
                String joined = left + right;
                return joined.substring(Math.max(0, joined.length() - 40));
            }, Named.as("latest-reduce"),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("latest-by-id")
                    .withKeySerde(USER_ID).withCachingDisabled());
        merged.process(StoreAudit::new, Named.as("store-audit"), "exact-counts", "latest-by-id")
            .to(outAudit, Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        Topology topology = keySerdeExamples(args[3], args[4], args[5], args[6], args[7]);
        KafkaStreamsRuns.runUntilConsumed(topology, args[0], args[1], args[2], () -> List.of(args[3], args[4]),
            Duration.ofMinutes(5), streams -> KafkaStreamsRuns.describeJson(topology));
    }
}
