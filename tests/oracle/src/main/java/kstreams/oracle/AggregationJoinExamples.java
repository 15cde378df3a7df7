package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Stream-stream joins fed by aggregations' toStream in the same sub-topology, run by Kafka Streams
 * itself against a real broker until the input is consumed to its end: an uncached count of the
 * events inner-joined with the clicks, an uncached reduce (the last value) of the same events
 * left-joined with them, an uncached cogroup of events and clicks (the last value of either)
 * inner-joined with the clicks, and a table of profiles re-grouped into an uncached aggregate (the
 * last payload of a group) inner-joined with the visits. Kafka Streams stamps an aggregation's update with the larger of the
 * record's and the aggregate's previous timestamp, which the join's windows pair by. Each output
 * value ends with "|t" and the record's timestamp. Prints JSON {"describe": ...}.
 *
 * Args: bootstrap applicationId stateDir events clicks profiles visits outInner outLeft outCogroup outRegroup
 *
 * The Python twin is aggregation_join_examples() in tests/test_equivalence_aggregation_joins.py;
 * keep the two in step.
 */
public final class AggregationJoinExamples {
    private AggregationJoinExamples() {}

    static String s(String value) {
        return value == null ? "null" : value;
    }

    static Topology aggregationJoinExamples(String events, String clicks, String profiles, String visits,
                                            String outInner, String outLeft, String outCogroup, String outRegroup) {
        StreamsBuilder builder = new StreamsBuilder();
        KGroupedStream<String, String> grouped = builder.<String, String>stream(events).groupByKey();
        KStream<String, String> clickStream = builder.stream(clicks);
        grouped.count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("event-counts").withCachingDisabled())
            .toStream()
            .mapValues(count -> "n" + count)
            .join(clickStream, (n, click) -> n + "+" + click,
                  JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(2)))
            .processValues(StampValues::new)
            .to(outInner);
        grouped.reduce((last, value) -> value,
                       Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("event-last").withCachingDisabled())
            .toStream()
            .leftJoin(clickStream, (last, click) -> last + "+" + s(click),
                      JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(1))
                          .after(Duration.ofSeconds(2)))
            .processValues(StampValues::new)
            .to(outLeft);
        grouped.<String>cogroup((key, value, last) -> value)
            .cogroup(clickStream.groupByKey(), (key, click, last) -> click)
            .aggregate(() -> "",
                       Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("latest").withCachingDisabled())
            .toStream()
            .join(clickStream, (last, click) -> last + "*" + click,
                  JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(2)))
            .processValues(StampValues::new)
            .to(outCogroup);
        builder.<String, String>table(profiles,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("profiles-store").withCachingDisabled())
            .groupBy((user, profile) -> KeyValue.pair(profile.split(":")[0], profile.split(":")[1]))
            .aggregate(() -> "", (group, payload, last) -> payload, (group, payload, last) -> last,
                       Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("group-latest").withCachingDisabled())
            .toStream()
            .join(builder.<String, String>stream(visits), (last, visit) -> last + "+" + visit,
                  JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(2)))
            .processValues(StampValues::new)
            .to(outRegroup);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        List<String> inputs = List.of(args).subList(3, 7);
        RepartitionFirstRuns.TopologyOn topology =
            topics -> aggregationJoinExamples(topics.get(0), topics.get(1), topics.get(2), topics.get(3), args[7],
                                              args[8], args[9], args[10]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, args[2]);
        // The left join: emit non-joined records as soon as stream time allows, not at most once
        // per second of wall-clock time (which would depend on processing speed).
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            // The re-grouped table's join reads a repartition topic of the profiles: filled first
            // (RepartitionFirstRuns).
            RepartitionFirstRuns.fillRepartitionTopics(admin, props, topology, inputs, Set.of(inputs.get(2)));
            // All its input written before it starts: 0, not a wait, still merges all of it (KIP-695).
            props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 0L);
            KafkaStreams streams = new KafkaStreams(topology.of(inputs), props);
            streams.start();
            try {
                KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId,
                    () -> RepartitionFirstRuns.withRepartitionTopics(admin, applicationId, inputs), Duration.ofMinutes(5));
                System.out.println(KafkaStreamsRuns.describeJson(topology.of(inputs)));
            } finally {
                KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
            }
        }
    }
}
