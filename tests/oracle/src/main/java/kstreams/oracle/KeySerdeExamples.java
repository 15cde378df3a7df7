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
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Stores that write keys with different serdes in a sub-topology whose sources read keys with
 * different serdes, run by Kafka Streams itself against a real broker until its input is consumed;
 * prints JSON {"describe": ...}.
 *
 * Calls (String keys: "u7", and "U7" for the same user written otherwise) merged with texts (the
 * user's number as a Long, read as "u<n>" by USER_ID), grouped by key; a count whose store writes
 * keys with the String serde ("U7" and "u7" two keys) and a reduce whose store writes them in lower
 * case (LOWER_CASE: one key), both without the record cache.
 *
 * Args: bootstrap applicationId stateDir calls texts outCounts outFolded
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

    static Topology keySerdeExamples(String calls, String texts, String outCounts, String outFolded) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> texted = builder.stream(texts, Consumed.with(USER_ID, Serdes.String()));
        KGroupedStream<String, String> byUser = builder.<String, String>stream(calls).merge(texted).groupByKey();
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
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        Topology topology = keySerdeExamples(args[3], args[4], args[5], args[6]);
        KafkaStreamsRuns.runUntilConsumed(topology, args[0], args[1], args[2], () -> List.of(args[3], args[4]),
            Duration.ofMinutes(5), streams -> KafkaStreamsRuns.describeJson(topology));
    }
}
