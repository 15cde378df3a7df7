package kstreams.oracle;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Stream-table and table-table joins run by Kafka Streams itself against a real broker, until
 * every input topic is consumed to its end; then prints the join stores as JSON
 * {"store": {"key": "value"}}.
 *
 * Args: bootstrap applicationId stateDir orders customers left right uleft uright
 *       outInner outLeft ttInner ttLeft ttOuter utInner utLeft utOuter outCustomers
 *
 * The cached customers table also goes to a repartition topic ("customer-updates", not purged:
 * the test reads it), flushed in the sub-topology where the orders read the same keys: each
 * update keeps the timestamp and headers of the customer record that made it.
 *
 * The "u" tables and joins run without the record cache (withCachingDisabled on the joined
 * tables and the join results), so every single update of a table-table join reaches its topic.
 *
 * The Python twin is join_examples() in tests/test_equivalence_joins.py; keep the two in step.
 */
public final class JoinExamples {
    private JoinExamples() {}

    static final List<String> STORES = List.of("customers-store", "tt-inner", "tt-left", "tt-outer",
                                               "ut-inner", "ut-left", "ut-outer");

    static StreamsBuilder joinExamples(String orders, String customers, String left, String right,
                                       String uleft, String uright,
                                       String outInner, String outLeft, String ttInner, String ttLeft,
                                       String ttOuter, String utInner, String utLeft, String utOuter,
                                       String outCustomers) {
        StreamsBuilder builder = new StreamsBuilder();
        // Sub-topology 0: the uncached table-table joins (the killed run stops inside it).
        KTable<String, String> uncachedLeft = builder.table(
            uleft, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("uleft-store").withCachingDisabled());
        KTable<String, String> uncachedRight = builder.table(
            uright, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("uright-store").withCachingDisabled());
        uncachedLeft.join(uncachedRight, (a, b) -> a + "+" + b,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("ut-inner").withCachingDisabled())
            .toStream().to(utInner);
        uncachedLeft.leftJoin(uncachedRight, (a, b) -> a + "+" + b,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("ut-left").withCachingDisabled())
            .toStream().to(utLeft);
        uncachedLeft.outerJoin(uncachedRight, (a, b) -> a + "+" + b,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("ut-outer").withCachingDisabled())
            .toStream().to(utOuter);

        KStream<String, String> orderStream = builder.stream(orders);
        KTable<String, String> customerTable = builder.table(
            customers, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("customers-store"));
        orderStream.join(customerTable, (order, customer) -> order + "|" + customer).to(outInner);
        orderStream.leftJoin(customerTable, (order, customer) -> order + "|" + customer).to(outLeft);

        KTable<String, String> leftTable = builder.table(left);
        KTable<String, String> rightTable = builder.table(right);
        leftTable.join(rightTable, (a, b) -> a + "+" + b,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("tt-inner"))
            .toStream().to(ttInner);
        leftTable.leftJoin(rightTable, (a, b) -> a + "+" + b,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("tt-left"))
            .toStream().to(ttLeft);
        leftTable.outerJoin(rightTable, (a, b) -> a + "+" + b,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("tt-outer"))
            .toStream().to(ttOuter);
        customerTable.toStream().repartition(Repartitioned.as("customer-updates")).to(outCustomers);
        return builder;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        List<String> inputs = List.of(args[3], args[4], args[5], args[6], args[7], args[8]);
        StreamsBuilder builder = joinExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9],
                                              args[10], args[11], args[12], args[13], args[14], args[15],
                                              args[16], args[17]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, Long.MAX_VALUE);

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> inputs, Duration.ofMinutes(5));
            StringBuilder out = new StringBuilder("{");
            boolean first = true;
            for (String store : STORES) {
                out.append(first ? "" : ",").append(Json.quote(store)).append(": ")
                    .append(Json.objectOfStrings(KafkaStreamsRuns.storeContent(streams, store)));
                first = false;
            }
            System.out.println(out.append("}"));
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
