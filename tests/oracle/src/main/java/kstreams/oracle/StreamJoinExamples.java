package kstreams.oracle;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

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
        // The chain's stores come from suppliers (the inner join's both, one in memory; the left join's this
        // side in memory, so its outer-join store too, the other side named by the StreamJoined's store name).
        left6.join(right6, (x, y) -> s(x) + "+" + s(y),
                   JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)),
                   StreamJoined.<String, String, String>with(
                       Stores.inMemoryWindowStore("chain-left", Duration.ofSeconds(12), Duration.ofSeconds(10), true),
                       Stores.persistentWindowStore("chain-right", Duration.ofSeconds(12), Duration.ofSeconds(10), true)))
            .leftJoin(third6, (k, x, y) -> s(k) + ":" + s(x) + "/" + s(y),
                      JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(4))
                          .after(Duration.ofSeconds(6)),
                      StreamJoined.<String, String, String>as("chain-joined").withThisStoreSupplier(
                          Stores.inMemoryWindowStore("chain-joined-this", Duration.ofSeconds(13), Duration.ofSeconds(9), true)))
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
        List<String> inputs = List.of(args).subList(3, 19);
        List<String> outputs = List.of(args).subList(19, 26);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, args[2]);
        // Left/outer joins: emit non-joined records as soon as stream time allows. By default Kafka
        // Streams scans for them at most once per second of wall-clock time, so which records
        // find a late partner first depends on processing speed.
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            // Join 3 reads a repartition topic of a3 re-keyed: filled first (RepartitionFirstRuns).
            long dropped = RepartitionFirstRuns.fillRepartitionTopics(
                admin, props, topics -> streamJoinExamples(topics, outputs).build(), inputs, Set.of(inputs.get(4)));
            // All its input written before it starts: 0, not a wait, still merges all of it (a task waits
            // for a partition whose lag it does not know or whose records it has not fetched, KIP-695).
            props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 0L);
            KafkaStreams streams = new KafkaStreams(streamJoinExamples(inputs, outputs).build(), props);
            streams.start();
            try {
                KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId,
                    () -> RepartitionFirstRuns.withRepartitionTopics(admin, applicationId, inputs), Duration.ofMinutes(5));
                dropped += RepartitionFirstRuns.droppedRecords(streams);
            } finally {
                KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
            }
            System.out.println("{\"dropped-records-total\": " + dropped + "}");
        }
    }
}
