package kstreams.oracle;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Stream-stream joins (inner, left, outer) run by Kafka Streams itself against a real broker,
 * until every input topic is consumed to its end.
 *
 * Args: bootstrap applicationId stateDir a1 b1 a2 b2 a3 b3 a4 b4 a5 b5 a6 b6 c6 a7 b7 c7
 *       out1 out2 out3 out4 out5 out6 out7
 *
 * The Python twin is stream_join_examples() in tests/stream_join_topology.py; keep the
 * two in step.
 */
public final class StreamJoinExamples {
    private StreamJoinExamples() {}

    static String s(String value) {
        return value == null ? "null" : value;
    }

    static StreamsBuilder streamJoinExamples(List<String> in, List<String> out) {
        String a1 = in.get(0), b1 = in.get(1), a2 = in.get(2), b2 = in.get(3), a3 = in.get(4), b3 = in.get(5);
        String out1 = out.get(0), out2 = out.get(1), out3 = out.get(2);
        StreamsBuilder builder = new StreamsBuilder();
        // 1: symmetric window, no grace.
        KStream<String, String> left1 = builder.stream(a1);
        KStream<String, String> right1 = builder.stream(b1);
        left1.join(right1, (x, y) -> s(x) + "+" + s(y),
                   JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(10))).to(out1);
        // 2: asymmetric window (5 s before, 30 s after) with a 20 s grace, joiner with key.
        KStream<String, String> left2 = builder.stream(a2);
        KStream<String, String> right2 = builder.stream(b2);
        left2.join(right2, (k, x, y) -> k + ":" + s(x) + "+" + s(y),
                   JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(20))
                       .after(Duration.ofSeconds(30))).to(out2);
        // 3: the left side re-keyed (a repartition topic), the right side joined before the left.
        KStream<String, String> left3 = builder.<String, String>stream(a3)
            .selectKey((k, v) -> k == null ? null : "r" + k.substring(1));
        KStream<String, String> right3 = builder.stream(b3);
        right3.join(left3, (x, y) -> s(x) + "*" + s(y),
                    JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(5))
                        .before(Duration.ofSeconds(8))).to(out3);
        // 4: left join, asymmetric window (3 s before, 6 s after), no grace.
        KStream<String, String> left4 = builder.stream(in.get(6));
        KStream<String, String> right4 = builder.stream(in.get(7));
        left4.leftJoin(right4, (x, y) -> s(x) + "+" + s(y),
                       JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(3))
                           .after(Duration.ofSeconds(6))).to(out.get(3));
        // 5: outer join, symmetric 4 s window, 5 s grace, joiner with key.
        KStream<String, String> left5 = builder.stream(in.get(8));
        KStream<String, String> right5 = builder.stream(in.get(9));
        left5.outerJoin(right5, (k, x, y) -> s(k) + ":" + s(x) + "+" + s(y),
                        JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(4), Duration.ofSeconds(5)))
            .to(out.get(4));
        // 6: a chain in one sub-topology: an inner join (5 s, 2 s grace), then its result
        // left-joined with a third stream (3 s before, 6 s after, 4 s grace).
        KStream<String, String> left6 = builder.stream(in.get(10));
        KStream<String, String> right6 = builder.stream(in.get(11));
        KStream<String, String> third6 = builder.stream(in.get(12));
        left6.join(right6, (x, y) -> s(x) + "+" + s(y),
                   JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
            .leftJoin(third6, (k, x, y) -> s(k) + ":" + s(x) + "/" + s(y),
                      JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(4))
                          .after(Duration.ofSeconds(6)))
            .to(out.get(5));
        // 7: joins fed by tables, in one sub-topology: a table's to_stream (not materialized,
        // filtered, mapped) outer-joined (4 s before, 6 s after, 3 s grace) with a stream
        // left-joined with another table (materialized, uncached).
        KTable<String, String> table7 = builder.table(in.get(13),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("t7-store").withCachingDisabled());
        KStream<String, String> enriched7 = builder.<String, String>stream(in.get(14))
            .leftJoin(table7, (x, y) -> s(x) + "<" + s(y) + ">");
        builder.<String, String>table(in.get(15))
            .filter((k, v) -> !v.endsWith("0"))
            .mapValues(v -> v.toUpperCase())
            .toStream()
            .outerJoin(enriched7, (k, x, y) -> s(k) + ":" + s(x) + "+" + s(y),
                       JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(4), Duration.ofSeconds(3))
                           .after(Duration.ofSeconds(6)))
            .to(out.get(6));
        return builder;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        List<String> inputs = List.of(args).subList(3, 19);
        List<String> outputs = List.of(args).subList(19, 26);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            long dropped = fillRepartitionTopic(admin, bootstrap, applicationId, stateDir, inputs, outputs);
            Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
            // Every input, join 3's repartition topic too, is written before this run starts: 0, not a wait,
            // still merges all of it (a task waits for a partition whose records it has not fetched, KIP-695).
            props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 0L);
            // Left/outer joins: emit non-joined records as soon as stream time allows. By default Kafka
            // Streams scans for them at most once per second of wall-clock time, so which records
            // find a late partner first depends on processing speed.
            props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
            KafkaStreams streams = new KafkaStreams(streamJoinExamples(inputs, outputs).build(), props);
            streams.start();
            try {
                KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> {
                    List<String> topics = new ArrayList<>(inputs);
                    topics.add(repartitionTopic(admin, applicationId));
                    return topics;
                }, Duration.ofMinutes(5));
                dropped += droppedRecords(streams);
            } finally {
                KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
            }
            System.out.println("{\"dropped-records-total\": " + dropped + "}");
        }
    }

    /**
     * Join 3 reads a repartition topic its own upstream task fills while the app runs; the Spark runner
     * writes it before the join's task starts. A running app waits for it only max.task.idle.ms of
     * wall-clock time from when it finds it empty at its end, then runs ahead on b3 (at a load of 25 to 30
     * the upstream task took longer than 20 s, and the reference missed most of out3: a race no wait
     * settles). So a first run of the same topology (same node names, so the same repartition topic)
     * fills it: every input but a3 stood in for by an empty topic of its own (same partition count), the
     * join's task waits a day for b3's stand-in and processes nothing (checked after the run: no offset
     * committed on the repartition topic), and the run stops once a3 is consumed. Returns its dropped
     * records (none expected: the null keys stop at the repartition topic's filter).
     */
    static long fillRepartitionTopic(Admin admin, String bootstrap, String applicationId, String stateDir,
                                     List<String> inputs, List<String> outputs) throws Exception {
        String rekeyed = inputs.get(4);
        Map<String, TopicDescription> described = admin.describeTopics(inputs).allTopicNames().get();
        List<String> standIns = new ArrayList<>();
        List<NewTopic> emptyTopics = new ArrayList<>();
        for (String input : inputs) {
            String standIn = input.equals(rekeyed) ? input : input + "-empty";
            standIns.add(standIn);
            if (!standIn.equals(input)) {
                emptyTopics.add(new NewTopic(standIn, Optional.of(described.get(input).partitions().size()),
                                             Optional.empty()));
            }
        }
        admin.createTopics(emptyTopics).all().get();
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, Duration.ofDays(1).toMillis());
        KafkaStreams streams = new KafkaStreams(streamJoinExamples(standIns, outputs).build(), props);
        streams.start();
        long dropped;
        try {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> List.of(rekeyed),
                                               Duration.ofMinutes(5));
            dropped = droppedRecords(streams);
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
        String repartition = repartitionTopic(admin, applicationId);
        for (TopicPartition partition : admin.listConsumerGroupOffsets(applicationId)
                .partitionsToOffsetAndMetadata().get().keySet()) {
            if (partition.topic().equals(repartition)) {
                throw new IllegalStateException("join 3 processed records before its repartition topic was filled");
            }
        }
        return dropped;
    }

    /** Join 3's repartition topic (created by the first run). */
    static String repartitionTopic(Admin admin, String applicationId) throws Exception {
        for (String topic : admin.listTopics().names().get()) {
            if (topic.startsWith(applicationId + "-") && topic.endsWith("-repartition")) {
                return topic;
            }
        }
        throw new IllegalStateException("no repartition topic of " + applicationId);
    }

    static long droppedRecords(KafkaStreams streams) {
        double dropped = 0;
        for (var metric : streams.metrics().entrySet()) {
            if (metric.getKey().name().equals("dropped-records-total")
                    && metric.getKey().group().equals("stream-task-metrics")) {
                dropped += ((Number) metric.getValue().metricValue()).doubleValue();
            }
        }
        return (long) dropped;
    }
}
