package kstreams.oracle;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.state.KeyValueStore;

import static kstreams.oracle.CatalogRow.field;

/**
 * Table operations and re-grouping, table-table and foreign-key joins, versioned tables.
 *
 * Entries of TopologyCatalog, built with Kafka Streams' own DSL; their Python twins, under the same
 * names, are in tests/topology_catalog_tables.py. Keep the two in step.
 */
final class TableCatalog {
    private TableCatalog() {}

    static Map<String, Supplier<Topology>> topologies() {
        Map<String, Supplier<Topology>> topologies = new LinkedHashMap<>();
        // Tables.
        topologies.put("table_source_materialized", TableCatalog::table_source_materialized);
        topologies.put("table_filter_materialized", TableCatalog::table_filter_materialized);
        topologies.put("table_group_by_count", TableCatalog::table_group_by_count);
        topologies.put("table_group_by_aggregate", TableCatalog::table_group_by_aggregate);
        topologies.put("table_group_by_reduce_named", TableCatalog::table_group_by_reduce_named);
        topologies.put("table_regroup_examples", () -> RegroupExamples.regroupExamples(
            "users", "accounts", "users-per-country-out", "branch-sums-out", "branch-history-out"));
        topologies.put("table_suppress_time_limit", TableCatalog::table_suppress_time_limit);
        // Table-table joins.
        topologies.put("table_table_inner_join", TableCatalog::table_table_inner_join);
        topologies.put("table_table_left_join_materialized", TableCatalog::table_table_left_join_materialized);
        topologies.put("table_table_outer_join_named", TableCatalog::table_table_outer_join_named);
        topologies.put("aggregated_table_joined_with_source_table", TableCatalog::aggregated_table_joined_with_source_table);
        topologies.put("rekeyed_to_table_joined_with_table", TableCatalog::rekeyed_to_table_joined_with_table);
        topologies.put("table_table_join_then_group_by", TableCatalog::table_table_join_then_group_by);
        topologies.put("chained_table_table_joins", TableCatalog::chained_table_table_joins);
        topologies.put("stream_joined_with_a_table_join_then_regrouped",
            TableCatalog::stream_joined_with_a_table_join_then_regrouped);
        topologies.put("table_filter_join_uses_value_getters", TableCatalog::table_filter_join_uses_value_getters);
        topologies.put("table_left_join_then_suppress", TableCatalog::table_left_join_then_suppress);
        // Foreign-key joins and versioned tables.
        topologies.put("foreign_key_join_examples", () -> ForeignKeyJoinExamples.foreignKeyJoinExamples(
            "accounts", "users", "accounts-inner-out", "accounts-left-out"));
        topologies.put("foreign_key_join_result_read_downstream",
                       TableCatalog::foreign_key_join_result_read_downstream);
        // Versioned tables (VersionedExamples is the equivalence test's).
        topologies.put("versioned_examples_of_the_equivalence_test",
                       () -> VersionedExamples.versionedExamples("prices", "rates", "orders", "changes-out",
                           "inner-out", "left-out", "grace-out"));
        return topologies;
    }

    // ---- Tables -----------------------------------------------------------------------------

    static Topology table_source_materialized() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> config = b.table("config", Materialized.as("config-store"));
        config.filterNot((k, v) -> v == null)
            .mapValues(v -> v.trim(), Materialized.as("config-trimmed"))
            .toStream()
            .to("config-trimmed");
        return b.build();
    }

    static Topology table_filter_materialized() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> accounts = b.table("accounts");
        accounts.filter((k, v) -> !field(v, 1).equals("closed"), Materialized.as("open-accounts"))
            .toStream()
            .to("open-accounts");
        return b.build();
    }

    static Topology table_group_by_count() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> users = b.table("users");
        users.groupBy((k, v) -> KeyValue.pair(field(v, 1), v)).count().toStream().to("users-by-country");
        return b.build();
    }

    static Topology table_group_by_aggregate() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> balances = b.table("balances");
        balances.groupBy((k, v) -> KeyValue.pair(field(v, 1), field(v, 2)), Grouped.as("balances-by-branch"))
            .aggregate(() -> "0",
                (k, v, total) -> Long.toString(Long.parseLong(total) + Long.parseLong(v)),
                (k, v, total) -> Long.toString(Long.parseLong(total) - Long.parseLong(v)))
            .toStream()
            .to("branch-totals");
        return b.build();
    }

    static Topology table_group_by_reduce_named() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> scores = b.table("scores");
        scores.groupBy((k, v) -> KeyValue.pair(field(v, 1), field(v, 2)))
            .reduce((a, c) -> Long.toString(Long.parseLong(a) + Long.parseLong(c)),
                (a, c) -> Long.toString(Long.parseLong(a) - Long.parseLong(c)),
                Named.as("team-score"), Materialized.as("team-score-store"))
            .toStream()
            .to("team-scores");
        return b.build();
    }

    static Topology table_suppress_time_limit() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> temperatures = b.stream("temperatures");
        temperatures.groupByKey()
            .reduce((a, c) -> c)
            .suppress(Suppressed.<String>untilTimeLimit(Duration.ofSeconds(15),
                Suppressed.BufferConfig.maxRecords(1000)).withName("rate-limit"))
            .toStream()
            .to("temperatures-rate-limited");
        return b.build();
    }

    // ---- Table-table joins ------------------------------------------------------------------

    static Topology table_table_inner_join() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> users = b.table("users");
        KTable<String, String> addresses = b.table("addresses");
        users.join(addresses, (u, a) -> u + "|" + a).toStream().to("users-with-address");
        return b.build();
    }

    static Topology table_table_left_join_materialized() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> accounts = b.table("accounts");
        KTable<String, String> limits = b.table("limits");
        accounts.leftJoin(limits, (a, l) -> a + "|" + l, Materialized.as("accounts-with-limits"))
            .toStream()
            .to("accounts-with-limits");
        return b.build();
    }

    static Topology table_table_outer_join_named() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> stock = b.table("stock", Consumed.as("stock-source"));
        KTable<String, String> reservations = b.table("reservations");
        stock.outerJoin(reservations, (s, r) -> s + "|" + r, Named.as("stock-vs-reserved"))
            .toStream()
            .to("stock-positions");
        return b.build();
    }

    static Topology aggregated_table_joined_with_source_table() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> sales = b.stream("sales");
        KTable<String, String> targets = b.table("targets");
        KTable<String, String> totals = sales.groupBy((k, v) -> field(v, 0))
            .aggregate(() -> "0", (k, v, total) ->
                Long.toString(Long.parseLong(total) + Long.parseLong(field(v, 2))));
        totals.join(targets, (total, target) -> total + "/" + target)
            .toStream()
            .to("sales-vs-target");
        return b.build();
    }

    static Topology rekeyed_to_table_joined_with_table() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> users = b.<String, String>stream("user-updates")
            .selectKey((k, v) -> field(v, 0))
            .toTable();
        KTable<String, String> prefs = b.table("user-prefs");
        users.join(prefs, (u, p) -> u + "|" + p).toStream().to("users-with-prefs");
        return b.build();
    }

    static Topology table_table_join_then_group_by() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> users = b.table("users");
        KTable<String, String> addresses = b.table("addresses");
        users.join(addresses, (u, a) -> u + "," + a)
            .groupBy((k, v) -> KeyValue.pair(field(v, 1), v))
            .count()
            .toStream()
            .to("addressed-users-per-country");
        return b.build();
    }

    static Topology chained_table_table_joins() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> orders = b.table("order-rows");
        KTable<String, String> customers = b.table("customer-rows");
        KTable<String, String> regions = b.table("region-rows");
        orders.join(customers, (o, c) -> o + "|" + c)
            .leftJoin(regions, (oc, r) -> oc + "|" + r)
            .outerJoin(b.<String, String>table("discount-rows"), (ocr, d) -> ocr + "|" + d,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("enriched"))
            .toStream()
            .to("enriched-orders");
        return b.build();
    }

    static Topology stream_joined_with_a_table_join_then_regrouped() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> users = b.table("user-rows");
        KTable<String, String> homes = b.table("home-rows", Materialized.as("homes"));
        KTable<String, String> joined = users.leftJoin(homes, (u, h) -> u + "@" + h).filter((k, v) -> !v.endsWith("@null"));
        b.<String, String>stream("visits").join(joined, (visit, user) -> visit + ":" + user).to("visits-by-user");
        joined.groupBy((k, v) -> KeyValue.pair(field(v, 1), v)).count().toStream().to("users-per-home");
        return b.build();
    }

    static Topology table_filter_join_uses_value_getters() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> products = b.table("products");
        KTable<String, String> prices = b.table("prices");
        products.filter((k, v) -> !v.isEmpty())
            .join(prices.mapValues(v -> v.trim()), (p, price) -> p + "@" + price)
            .toStream()
            .to("products-with-price");
        return b.build();
    }

    static Topology table_left_join_then_suppress() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> accounts = b.table("accounts");
        KTable<String, String> limits = b.table("limits");
        accounts.leftJoin(limits, (a, l) -> a + "|" + l, Named.as("with-limits"))
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(1),
                Suppressed.BufferConfig.maxBytes(1_000_000).emitEarlyWhenFull()))
            .toStream()
            .to("accounts-with-limits-debounced");
        return b.build();
    }

    // ---- Foreign-key joins and versioned tables ---------------------------------------------

    /** A foreign-key join's result read by a table-table join (its store is then materialized). */
    static Topology foreign_key_join_result_read_downstream() {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> orders = builder.table("orders");
        KTable<String, String> products = builder.<String, String>stream("products").toTable();
        KTable<String, String> priced = orders.join(
            products, order -> order.split(",")[0], (order, product) -> order + "|" + product,
            Materialized.with(Serdes.String(), Serdes.String()));
        priced.mapValues(value -> value.toUpperCase())
            .join(builder.table("discounts"), (line, discount) -> line + "-" + discount)
            .toStream()
            .to("priced-orders");
        return builder.build();
    }
}
