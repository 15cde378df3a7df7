package kstreams.oracle;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.SessionStore;

/**
 * Session-windowed aggregations run by Kafka Streams itself against a real broker, until the
 * input topic is consumed to its end; then prints {"dropped": total dropped-records of all tasks}.
 *
 * Args: bootstrap applicationId stateDir events outCount outAggregate outReduce
 *
 * The Python twin is session_examples() in tests/test_equivalence_sessions.py; keep the two in step.
 */
public final class SessionExamples {
    private SessionExamples() {}

    static StreamsBuilder sessionExamples(String events, String outCount, String outAggregate, String outReduce) {
        Serde<Windowed<String>> windowed = WindowedSerdes.sessionWindowedSerdeFrom(String.class);
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> stream = builder.stream(events);
        KGroupedStream<String, String> grouped = stream.groupByKey();
        // Grace 0, no record cache: the store's retention decides alone what is still mergeable.
        grouped.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofSeconds(10)))
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("session-count")
                .withCachingDisabled())
            .toStream().to(outCount, Produced.with(windowed, Serdes.Long()));
        // Grace 30 s, record cache on; a merger whose argument order shows.
        grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(30)))
            .aggregate(() -> "", (key, value, agg) -> agg + "+" + value, (key, one, two) -> one + "|" + two,
                Materialized.<String, String, SessionStore<Bytes, byte[]>>as("session-aggregate"))
            .toStream().to(outAggregate, Produced.with(windowed, Serdes.String()));
        // Through a repartition topic (timestamps carried): the largest value per session.
        stream.groupBy((key, value) -> value == null ? null : value.substring(0, 1),
                Grouped.with("session-regroup", Serdes.String(), Serdes.String()))
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(5), Duration.ofDays(1)))
            .reduce((one, two) -> one.compareTo(two) >= 0 ? one : two,
                Materialized.<String, String, SessionStore<Bytes, byte[]>>as("session-reduce"))
            .toStream().to(outReduce, Produced.with(windowed, Serdes.String()));
        return builder;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        StreamsBuilder builder = sessionExamples(args[3], args[4], args[5], args[6]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.start();
        String repartition = applicationId + "-session-regroup-repartition";
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () ->
                admin.listTopics().names().get().contains(repartition) ? List.of(args[3], repartition) : null,
                Duration.ofMinutes(5));
            double dropped = 0;
            for (Map.Entry<MetricName, ? extends Metric> metric : streams.metrics().entrySet()) {
                if (metric.getKey().name().equals("dropped-records-total")
                        && metric.getKey().group().equals("stream-task-metrics")) {
                    dropped += ((Number) metric.getValue().metricValue()).doubleValue();
                }
            }
            System.out.println("{\"dropped\": " + (long) dropped + "}");
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
