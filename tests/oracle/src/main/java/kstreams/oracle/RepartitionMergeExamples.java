package kstreams.oracle;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Kafka Streams' RepartitionOptimizingTest topology built with topology.optimization=all (one
 * repartition topic read by a count, an aggregate, a reduce behind a filter and a peek, and a join
 * with the counts), run by Kafka Streams itself until its input and the repartition topic are
 * consumed; prints JSON {"describe": ...}. Every output value is stamped ("|t" and the timestamp);
 * the stores are uncached.
 *
 * Args: bootstrap applicationId stateDir input processed counts aggregates reduced joined
 *
 * The Python twin is repartition_optimizing_test() in tests/repartition_merge_topology.py (also
 * the describe() catalog's optimized_repartition_optimizing_test); keep the two in step.
 */
public final class RepartitionMergeExamples {
    private RepartitionMergeExamples() {}

    static final Properties ALL = OptimizationCatalog.optimization(StreamsConfig.OPTIMIZE);

    private static String upper(String text) {
        return text == null ? null : text.toUpperCase(Locale.ROOT);
    }

    static Topology repartitionOptimizingTest(Map<String, String> topics) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> source = builder.stream(topics.get("input"), Consumed.as("sourceStream"));
        KStream<String, String> mapped = source.map((k, v) -> KeyValue.pair(upper(k), v), Named.as("source-map"));
        mapped.filter((k, v) -> "B".equals(k), Named.as("process-filter"))
            .mapValues(RepartitionMergeExamples::upper, Named.as("process-mapValues"))
            .processValues(StampValues::new)
            .to(topics.get("processed"), Produced.as("process"));
        KStream<String, String> counts = mapped.groupByKey(Grouped.as("count-groupByKey"))
            .count(Named.as("count"),
                   Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("count-store").withCachingDisabled())
            .toStream(Named.as("count-toStream"))
            .mapValues(c -> Long.toString(c), Named.as("count-format"));
        counts.processValues(StampValues::new).to(topics.get("counts"), Produced.as("count-to"));
        mapped.groupByKey(Grouped.as("aggregate-groupByKey"))
            .aggregate(() -> "0", (k, v, agg) -> Integer.toString(Integer.parseInt(agg) + v.length()),
                       Named.as("aggregate"),
                       Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("aggregate-store")
                           .withCachingDisabled())
            .toStream(Named.as("aggregate-toStream"))
            .processValues(StampValues::new)
            .to(topics.get("aggregates"), Produced.as("reduce-to"));
        mapped.filter((k, v) -> true, Named.as("reduce-filter"))
            .peek((k, v) -> { }, Named.as("reduce-peek"))
            .groupByKey(Grouped.as("reduce-groupByKey"))
            .reduce((v1, v2) -> v1 + ":" + v2, Named.as("reducer"),
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("reduce-store").withCachingDisabled())
            .toStream(Named.as("reduce-toStream"))
            .processValues(StampValues::new)
            .to(topics.get("reduced"));
        mapped.filter((k, v) -> "A".equals(k) || "E".equals(k), Named.as("join-filter"))
            .join(counts, (v1, v2) -> v1 + ":" + v2, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(5)),
                  StreamJoined.<String, String, String>as("join-store").withName("join"))
            .processValues(StampValues::new)
            .to(topics.get("joined"), Produced.as("join-to"));
        return builder.build(ALL);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        List<String> names = List.of("input", "processed", "counts", "aggregates", "reduced", "joined");
        Map<String, String> topics = new LinkedHashMap<>();
        for (int i = 0; i < names.size(); i++) {
            topics.put(names.get(i), args[3 + i]);
        }
        Topology topology = repartitionOptimizingTest(topics);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, args[2]);
        // All its input written before it starts: 0, not a wait.
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 0L);
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId,
                () -> RepartitionFirstRuns.withRepartitionTopics(admin, applicationId, List.of(args[3])),
                Duration.ofMinutes(5));
            System.out.println(KafkaStreamsRuns.describeJson(topology));
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
