package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Named;

/**
 * Inner and left stream-global-table joins, run by Kafka Streams itself against a real broker
 * until the click topic is consumed to its end (its global store bootstrapped from the whole
 * profile topic first); prints JSON {"describe": topology.describe()}.
 *
 * Args: bootstrap applicationId stateDir profiles clicks outInner outLeft
 *
 * The Python twin is global_examples() in tests/global_topology.py; keep the two in step.
 */
public final class GlobalExamples {
    private GlobalExamples() {}

    static Topology globalExamples(String profilesTopic, String clicksTopic, String outInner, String outLeft) {
        StreamsBuilder builder = new StreamsBuilder();
        GlobalKTable<String, String> profiles = builder.globalTable(profilesTopic);
        KStream<String, String> clicks = builder.stream(clicksTopic);
        KeyValueMapper<String, String, String> userOf =
            (key, click) -> click == null || click.startsWith("-,") ? null : click.split(",", -1)[0];
        clicks.join(profiles, userOf, (key, click, profile) -> key + "|" + click + "|" + profile)
            .to(outInner);
        clicks.leftJoin(profiles, userOf, (key, click, profile) -> key + "|" + click + "|" + profile,
                Named.as("enrich-left"))
            .to(outLeft);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        Topology topology = globalExamples(args[3], args[4], args[5], args[6]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> List.of(args[4]),
                                               Duration.ofMinutes(5));
            System.out.println("{\"describe\": " + Json.quote(topology.describe().toString()) + "}");
        } finally {
            streams.close(Duration.ofSeconds(30));
        }
    }
}
