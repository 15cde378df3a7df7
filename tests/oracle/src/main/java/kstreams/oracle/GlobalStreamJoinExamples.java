package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;

/**
 * Stream-stream joins fed, in their sub-topology, by stream-global-table joins, run by Kafka
 * Streams itself until its input is consumed (outer-join emit interval 0); prints JSON
 * {"describe": ...}. Orders are left-joined with a global table of profiles (each order mapped to
 * its profile by a key selector on its value), then outer-joined with payments; and joined (inner)
 * with the profiles, then joined with the payments.
 *
 * Args: bootstrap applicationId stateDir profiles orders payments outLeftOuter outInner
 *
 * The Python twin is global_stream_join_examples() in tests/global_stream_join_topology.py; keep the
 * two in step.
 */
public final class GlobalStreamJoinExamples {
    private GlobalStreamJoinExamples() {}

    static String profileOf(String order) {
        return order == null || order.startsWith("-,") ? null : order.split(",")[0];
    }

    static Topology globalStreamJoinExamples(String profiles, String orders, String payments, String outLeftOuter,
                                             String outInner) {
        StreamsBuilder builder = new StreamsBuilder();
        GlobalKTable<String, String> profileTable = builder.globalTable(profiles);
        KStream<String, String> orderStream = builder.stream(orders);
        KStream<String, String> paymentStream = builder.stream(payments);
        orderStream.leftJoin(profileTable, (key, order) -> profileOf(order),
                             (key, order, profile) -> order + "|" + profile)
            .outerJoin(paymentStream, (key, order, payment) -> key + ":" + order + "&" + payment,
                       JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(1)))
            .to(outLeftOuter);
        orderStream.join(profileTable, (key, order) -> profileOf(order),
                         (key, order, profile) -> order + "|" + profile)
            .join(paymentStream, (order, payment) -> order + "&" + payment,
                  JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2))
                      .after(Duration.ofSeconds(1)))
            .to(outInner);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        List<String> inputs = List.of(args[4], args[5]);
        Topology topology = globalStreamJoinExamples(args[3], args[4], args[5], args[6], args[7]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        // The timestamp merge of a task's inputs, as the runner orders them. 0, not a wait: every input is
        // written before this process starts (no repartition topic), and a task still waits for each
        // partition whose lag it does not know yet or whose records it has not fetched (KIP-695), so it
        // merges all of it; a wait only idled at the end of each task's shorter input.
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 0L);
        // Left/outer joins: emit non-joined records as soon as stream time allows (not throttled by
        // the wall clock, which would make the output depend on processing speed).
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> inputs, Duration.ofMinutes(5));
            System.out.println(KafkaStreamsRuns.describeJson(topology));
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
