package kstreams.oracle;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Repartitioned;

import static kstreams.oracle.CatalogRow.field;

/**
 * Key-changing operations and the repartition topics they bring, and aggregations of streams
 * without windows.
 *
 * Entries of TopologyCatalog, built with Kafka Streams' own DSL; their Python twins, under the same
 * names, are in tests/topology_catalog_repartitions.py. Keep the two in step.
 */
final class RepartitionCatalog {
    private RepartitionCatalog() {}

    static Map<String, Supplier<Topology>> topologies() {
        Map<String, Supplier<Topology>> topologies = new LinkedHashMap<>();
        // Repartitioning.
        topologies.put("repartition_default", RepartitionCatalog::repartition_default);
        topologies.put("repartition_named_with_partitions", RepartitionCatalog::repartition_named_with_partitions);
        topologies.put("chain_of_repartitions", RepartitionCatalog::chain_of_repartitions);
        topologies.put("count_then_group_by_key_again", RepartitionCatalog::count_then_group_by_key_again);
        topologies.put("select_key_twice_then_count", RepartitionCatalog::select_key_twice_then_count);
        topologies.put("one_rekeyed_stream_two_aggregations", RepartitionCatalog::one_rekeyed_stream_two_aggregations);
        topologies.put("rekeyed_stream_joined_and_aggregated", RepartitionCatalog::rekeyed_stream_joined_and_aggregated);
        topologies.put("stream_table_join_after_named_repartition", RepartitionCatalog::stream_table_join_after_named_repartition);
        topologies.put("branch_of_rekeyed_stream_aggregated", RepartitionCatalog::branch_of_rekeyed_stream_aggregated);
        // Aggregations.
        topologies.put("group_by_key_aggregate", RepartitionCatalog::group_by_key_aggregate);
        topologies.put("group_by_named_reduce", RepartitionCatalog::group_by_named_reduce);
        return topologies;
    }

    // ---- Repartitioning ---------------------------------------------------------------------

    static Topology repartition_default() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> input = b.stream("input");
        input.repartition().mapValues(v -> v).to("output");
        return b.build();
    }

    static Topology repartition_named_with_partitions() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> purchases = b.stream("purchases");
        purchases.selectKey((k, v) -> field(v, 0))
            .repartition(Repartitioned.<String, String>as("by-user").withNumberOfPartitions(4))
            .groupByKey()
            .count()
            .toStream()
            .repartition(Repartitioned.numberOfPartitions(2))
            .to("purchase-counts");
        return b.build();
    }

    static Topology chain_of_repartitions() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> sales = b.stream("sales");
        KTable<String, Long> perUser = sales.selectKey((k, v) -> field(v, 0)).groupByKey().count();
        KTable<String, String> perCountry = perUser.toStream()
            .selectKey((user, count) -> user.substring(0, 1))
            .mapValues(count -> Long.toString(count))
            .groupByKey()
            .reduce((a, c) -> a + "," + c);
        perCountry.toStream()
            .groupBy((k, v) -> v.length() > 10 ? "long" : "short")
            .aggregate(() -> "", (k, v, agg) -> agg + v)
            .toStream()
            .to("sales-buckets");
        return b.build();
    }

    static Topology count_then_group_by_key_again() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks");
        clicks.groupByKey()
            .count()
            .toStream()
            .mapValues(c -> Long.toString(c))
            .groupByKey()
            .reduce((a, c) -> c)
            .toStream()
            .to("latest-click-count");
        return b.build();
    }

    static Topology select_key_twice_then_count() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> rows = b.stream("rows");
        rows.selectKey((k, v) -> field(v, 0))
            .filter((k, v) -> v != null)
            .selectKey((k, v) -> field(v, 1))
            .groupByKey()
            .count();
        return b.build();
    }

    static Topology one_rekeyed_stream_two_aggregations() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        KStream<String, String> byUser = orders.selectKey((k, v) -> field(v, 0));
        byUser.groupByKey().count().toStream().to("orders-per-user");
        byUser.groupByKey().reduce((a, c) -> c).toStream().to("last-order-per-user");
        return b.build();
    }

    static Topology rekeyed_stream_joined_and_aggregated() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks");
        KTable<String, String> users = b.table("users");
        KStream<String, String> byUser = clicks.selectKey((k, v) -> field(v, 0));
        byUser.join(users, (c, u) -> c + "|" + u).to("clicks-with-user");
        byUser.groupByKey().count().toStream().to("clicks-per-user");
        return b.build();
    }

    static Topology stream_table_join_after_named_repartition() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> events = b.stream("events");
        KTable<String, String> devices = b.table("devices");
        events.repartition(Repartitioned.as("events-by-device"))
            .leftJoin(devices, (e, d) -> e + "|" + d)
            .to("events-with-device");
        return b.build();
    }

    static Topology branch_of_rekeyed_stream_aggregated() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        Map<String, KStream<String, String>> bySize = orders.selectKey((k, v) -> field(v, 0))
            .split(Named.as("size-"))
            .branch((k, v) -> Integer.parseInt(field(v, 2)) > 100, Branched.as("big"))
            .defaultBranch(Branched.as("small"));
        bySize.get("size-big").groupByKey().count().toStream().to("big-orders-per-user");
        bySize.get("size-small").to("small-orders");
        return b.build();
    }

    // ---- Aggregations -----------------------------------------------------------------------

    static Topology group_by_key_aggregate() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> payments = b.stream("payments");
        payments.groupByKey()
            .aggregate(() -> "0", (k, v, total) ->
                Long.toString(Long.parseLong(total) + Long.parseLong(field(v, 2))))
            .toStream()
            .to("payment-totals");
        return b.build();
    }

    static Topology group_by_named_reduce() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> users = b.stream("users");
        users.groupBy((k, v) -> field(v, 1), Grouped.as("by-country"))
            .reduce((a, c) -> a.length() >= c.length() ? a : c,
                Named.as("longest-row"), Materialized.as("longest-row-store"))
            .toStream(Named.as("longest-row-changes"))
            .to("longest-row-per-country");
        return b.build();
    }
}
