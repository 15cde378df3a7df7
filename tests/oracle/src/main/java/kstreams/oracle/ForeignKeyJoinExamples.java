package kstreams.oracle;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.processor.StreamPartitioner;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Foreign-key table-table joins (KTable#join/leftJoin(other, foreignKeyExtractor, joiner, ...)),
 * run by Kafka Streams itself against a real broker until every input and internal topic is
 * consumed to its end; prints JSON {"describe": topology.describe(), "stores": {...}}.
 * Internal topics are not purged (the test reads what Kafka Streams wrote to them).
 *
 * Args: bootstrap applicationId stateDir accounts users orders payments outInner outLeft outPlaced outOrders
 * outPaid
 *
 * The Python twin is fk_join_examples() in tests/fk_join_topology.py (with partitionedJoin and
 * paidOrders: fk_join_partitioned_examples()); keep the two in step.
 */
public final class ForeignKeyJoinExamples {
    private ForeignKeyJoinExamples() {}

    static final List<String> STORES = List.of("accounts-store", "users-store", "accounts-with-country");

    /** "user:amount" -> user; an empty user is a null foreign key. */
    private static String user(String value) {
        String user = value.substring(0, value.indexOf(':'));
        return user.isEmpty() ? null : user;
    }

    /** A key whose last char minus '0' is odd placed as the default partitioner places it (where the tables'
     *  topics have it), else left to the default; a TableJoined partitioner sees a null value. */
    static final StreamPartitioner<String, Void> MURMUR_WHEN_ODD = (topic, key, value, numPartitions) -> {
        if (value != null) {
            throw new IllegalStateException("a TableJoined partitioner got a value");
        }
        return (key.charAt(key.length() - 1) - '0') % 2 == 0
            ? Optional.empty()
            : Optional.of(Collections.singleton(
                Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % numPartitions));
    };

    /** "<letter><n>" to partition n modulo the partition count. */
    static final StreamPartitioner<String, String> BY_KEY_NUMBER = (topic, key, value, numPartitions) ->
        Optional.of(Collections.singleton(Integer.parseInt(key.substring(1)) % numPartitions));

    static Topology foreignKeyJoinExamples(String accounts, String users, String outInner, String outLeft) {
        return build(accounts, users, outInner, outLeft, null, null, null, null, null);
    }

    private static Topology build(String accounts, String users, String outInner, String outLeft, String outPlaced,
                                  String orders, String payments, String outOrders, String outPaid) {
        StreamsBuilder builder = new StreamsBuilder();
        // No record cache: every update of either table is joined.
        KTable<String, String> accountTable = builder.table(
            accounts,
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("accounts-store").withCachingDisabled());
        KTable<String, String> userTable = builder.table(
            users, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("users-store").withCachingDisabled());
        // Inner join, generated names, the value-only extractor.
        accountTable.join(userTable, ForeignKeyJoinExamples::user, (account, country) -> account + "@" + country)
            .toStream()
            .to(outInner);
        // Left join of a filtered table, named, materialized, the key-value extractor.
        accountTable.filter((account, value) -> !value.startsWith("frozen"))
            .leftJoin(userTable,
                      (account, value) -> user(value),
                      (account, country) -> account + "@" + country,
                      TableJoined.as("acct-user"),
                      Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("accounts-with-country")
                          .withCachingDisabled())
            .toStream()
            .to(outLeft);
        if (outPlaced != null) {
            // partitionedJoin: TableJoined partitioners, the output placed by the key.
            accountTable.join(userTable, ForeignKeyJoinExamples::user, (account, country) -> account + "#" + country,
                              TableJoined.<String, String>with(MURMUR_WHEN_ODD, MURMUR_WHEN_ODD).withName("placed"))
                .toStream()
                .to(outPlaced, Produced.streamPartitioner(BY_KEY_NUMBER));
            // paidOrders: a join's answers, stamped, and paired by their timestamps in a stream-stream join.
            KTable<String, String> orderTable = builder.table(
                orders,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("orders-store").withCachingDisabled());
            KStream<String, String> joined = orderTable
                .join(userTable, ForeignKeyJoinExamples::user, (order, country) -> order + "@" + country,
                      TableJoined.as("paid"))
                .toStream();
            joined.processValues(StampValues::new).to(outOrders);
            joined.join(builder.<String, String>stream(payments), (order, payment) -> order + "+" + payment,
                        JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(2), Duration.ofHours(1)))
                .processValues(StampValues::new)
                .to(outPaid);
        }
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        // The internal topics too: the answers must have come back and been resolved.
        List<String> watched = List.of(args[3], args[4], args[5], args[6],
            applicationId + "-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000004-topic",
            applicationId + "-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000012-topic",
            applicationId + "-acct-user-subscription-registration-topic",
            applicationId + "-acct-user-subscription-response-topic",
            applicationId + "-placed-subscription-registration-topic",
            applicationId + "-placed-subscription-response-topic",
            applicationId + "-paid-subscription-registration-topic",
            applicationId + "-paid-subscription-response-topic");
        Topology topology = build(args[3], args[4], args[7], args[8], args[9], args[5], args[6], args[10], args[11]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, Long.MAX_VALUE);

        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> watched, Duration.ofMinutes(5));
            StringBuilder out = new StringBuilder("{\"describe\": ")
                .append(Json.quote(topology.describe().toString())).append(", \"stores\": {");
            boolean first = true;
            for (String store : STORES) {
                out.append(first ? "" : ",").append(Json.quote(store)).append(": ")
                    .append(Json.objectOfStrings(KafkaStreamsRuns.storeContent(streams, store)));
                first = false;
            }
            System.out.println(out.append("}}"));
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
