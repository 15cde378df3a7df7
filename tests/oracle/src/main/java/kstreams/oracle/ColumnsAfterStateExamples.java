package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Lambdas after state, the twins of the PySpark Column expressions the runner runs there in the JVM;
 * run by Kafka Streams itself until its input is consumed; prints JSON {"describe": ...}. On the
 * events: an uncached count's stream mapped to one topic, filtered and mapped to another; an uncached
 * reduce's stream flat-mapped into two records each; StampValues followed by a filter. On the table:
 * its uncached stream through filterNot and mapValues (tombstones too) to a repartition topic read by
 * a sub-topology that stamps each record with its timestamp.
 *
 * Args: bootstrap applicationId stateDir events table outCounts outThirds outTwice outStamped outTable
 *
 * The Python twin is after_state_examples() in tests/after_state_topology.py; keep the two in step.
 */
public final class ColumnsAfterStateExamples {
    private ColumnsAfterStateExamples() {}

    static Topology afterStateExamples(String events, String table, String outCounts, String outThirds,
                                       String outTwice, String outStamped, String outTable) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> eventStream = builder.stream(events);
        KStream<String, Long> counts = eventStream.groupByKey()
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("after-counts").withCachingDisabled())
            .toStream();
        counts.mapValues(v -> "c|" + v).to(outCounts);
        counts.filter((k, v) -> v % 3 == 0).mapValues((k, v) -> "third|" + v + "|" + k).to(outThirds);
        eventStream.groupByKey()
            .reduce((seen, value) -> seen + "," + value,
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("after-reduced").withCachingDisabled())
            .toStream()
            .flatMapValues(v -> List.of(v, v.toUpperCase()))
            .to(outTwice);
        eventStream.processValues(StampValues::new).filter((k, v) -> v.contains("3|")).to(outStamped);
        builder.<String, String>table(table,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("after-table").withCachingDisabled())
            .toStream()
            .filterNot((k, v) -> v != null && v.endsWith("x"))
            .mapValues(v -> v == null ? "gone" : "t|" + v)
            .repartition(Repartitioned.as("after-table"))
            .processValues(StampValues::new)
            .to(outTable);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        // The inputs and the repartition topic: every sub-topology has consumed its input.
        List<String> watched = List.of(args[3], args[4], applicationId + "-after-table-repartition");
        Topology topology = afterStateExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> watched, Duration.ofMinutes(5));
            System.out.println(KafkaStreamsRuns.describeJson(topology));
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
