package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * KTable.groupBy with count, reduce(adder, subtractor) and aggregate(initializer, adder, subtractor),
 * run by Kafka Streams itself against a real broker until every input topic is consumed to its
 * end; prints JSON {"describe": topology.describe(), "stores": {"store": {"key": "value"}}}.
 * Repartition topics are not purged (the test reads what Kafka Streams wrote to them).
 *
 * Args: bootstrap applicationId stateDir users accounts outCounts outSums outHistory
 *
 * The Python twin is regroup_examples() in tests/regroup_topology.py; keep the two in step.
 */
public final class RegroupExamples {
    private RegroupExamples() {}

    static final List<String> STORES = List.of(
        "users-store", "users-per-country", "accounts-store", "branch-sums", "branch-history");

    private static String branch(String value) {
        return value.substring(0, value.indexOf(':'));
    }

    private static String amount(String value) {
        return value.substring(value.indexOf(':') + 1);
    }

    private static String tail(String history) {
        return history.length() > 60 ? history.substring(history.length() - 60) : history;
    }

    static Topology regroupExamples(String users, String accounts, String outCounts, String outSums,
                                    String outHistory) {
        StreamsBuilder builder = new StreamsBuilder();
        // user -> country, with the record cache: a re-grouping sees one update per key and commit.
        KTable<String, String> userTable = builder.table(
            users, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("users-store"));
        userTable.mapValues(country -> country.toLowerCase())
            .groupBy((user, country) -> KeyValue.pair(country.equals("none") ? null : country,
                                                      country.equals("anon") ? null : user))
            .count(Materialized.as("users-per-country"))
            .toStream()
            .to(outCounts, Produced.with(Serdes.String(), Serdes.Long()));
        // account -> "branch:amount", without the record cache: every update is re-grouped.
        KTable<String, String> accountTable = builder.table(
            accounts,
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("accounts-store").withCachingDisabled());
        KGroupedTable<String, String> byBranch = accountTable
            .filter((account, value) -> !value.startsWith("frozen"))
            .groupBy((account, value) -> KeyValue.pair(branch(value).equals("closed") ? null : branch(value),
                                                       amount(value)),
                     Grouped.as("by-branch"));
        byBranch.reduce(
                (total, amount) -> Long.toString(Long.parseLong(total) + Long.parseLong(amount)),
                (total, amount) -> {
                    long left = Long.parseLong(total) - Long.parseLong(amount);
                    return left == 0 ? null : Long.toString(left);
                },
                Materialized.as("branch-sums"))
            .toStream()
            .to(outSums);
        byBranch.aggregate(
                () -> "",
                (branch, amount, history) -> tail(history + "+" + amount),
                (branch, amount, history) -> tail(history + "-" + amount),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("branch-history").withCachingDisabled())
            .toStream()
            .to(outHistory);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        // The two repartition topics too: the downstream sub-topologies must have read them to the end.
        List<String> watched = List.of(args[3], args[4], applicationId + "-users-per-country-repartition",
                                       applicationId + "-by-branch-repartition");
        Topology topology = regroupExamples(args[3], args[4], args[5], args[6], args[7]);
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
