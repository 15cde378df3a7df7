package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.regex.Pattern;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A source subscribed by a pattern, run by Kafka Streams itself against a real broker until the
 * topics it matches (and its repartition topic) are consumed to their end; prints
 * {"describe": ...}.
 *
 * Args: bootstrap applicationId stateDir pattern outMapped outCounts matchedTopic...
 *
 * The Python twin is pattern_examples() in tests/pattern_topology.py; keep the two in step.
 */
public final class PatternExamples {
    private PatternExamples() {}

    static Topology patternExamples(String pattern, String outMapped, String outCounts) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> orders = builder.stream(Pattern.compile(pattern));
        // Stateless: keyed records but those ending in 7, upper-cased (tombstones pass).
        orders.filter((key, value) -> key != null && (value == null || !value.endsWith("7")))
            .mapValues(value -> value == null ? null : value.toUpperCase())
            .to(outMapped);
        // Re-grouped by the group the value names (null keys too; tombstones have none), counted.
        orders.groupBy((key, value) -> value == null ? null : value.split(":")[0], Grouped.as("pattern-groups"))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("pattern-counts").withCachingDisabled())
            .toStream()
            .mapValues((group, count) -> group + "=" + count)
            .to(outCounts);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String applicationId = args[1];
        Topology topology = patternExamples(args[3], args[4], args[5]);
        List<String> matched = List.of(args).subList(6, args.length);
        KafkaStreamsRuns.runUntilConsumed(topology, args[0], applicationId, args[2],
            () -> java.util.stream.Stream.concat(matched.stream(),
                java.util.stream.Stream.of(applicationId + "-pattern-groups-repartition")).toList(),
            Duration.ofMinutes(5), streams -> KafkaStreamsRuns.describeJson(topology));
    }
}
