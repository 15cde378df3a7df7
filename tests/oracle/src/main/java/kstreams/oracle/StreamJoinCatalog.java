package kstreams.oracle;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;

import static kstreams.oracle.CatalogRow.field;

/**
 * Stream-stream joins, stream-table joins and joins with global tables.
 *
 * Entries of TopologyCatalog, built with Kafka Streams' own DSL; their Python twins, under the same
 * names, are in tests/topology_catalog_stream_joins.py. Keep the two in step.
 */
final class StreamJoinCatalog {
    private StreamJoinCatalog() {}

    static Map<String, Supplier<Topology>> topologies() {
        Map<String, Supplier<Topology>> topologies = new LinkedHashMap<>();
        // Stream-stream joins.
        topologies.put("stream_stream_inner_join", StreamJoinCatalog::stream_stream_inner_join);
        topologies.put("stream_stream_left_join_both_rekeyed", StreamJoinCatalog::stream_stream_left_join_both_rekeyed);
        topologies.put("stream_stream_outer_join_stream_joined", StreamJoinCatalog::stream_stream_outer_join_stream_joined);
        topologies.put("stream_join_fed_by_tables", StreamJoinCatalog::stream_join_fed_by_tables);
        topologies.put("join_result_then_windowed_count", StreamJoinCatalog::join_result_then_windowed_count);
        topologies.put("stream_stream_self_join", StreamJoinCatalog::stream_stream_self_join);
        topologies.put("stream_stream_joins_old_join_windows", StreamJoinCatalog::stream_stream_joins_old_join_windows);
        topologies.put("stream_stream_join_chain", StreamJoinCatalog::stream_stream_join_chain);
        topologies.put("stream_joined_with_two_streams", StreamJoinCatalog::stream_joined_with_two_streams);
        topologies.put("both_sides_repartitioned_with_partition_counts", StreamJoinCatalog::both_sides_repartitioned_with_partition_counts);
        topologies.put("table_to_stream_rekey_join_stream", StreamJoinCatalog::table_to_stream_rekey_join_stream);
        // Stream-table joins.
        topologies.put("stream_table_left_join", StreamJoinCatalog::stream_table_left_join);
        topologies.put("stream_table_join_after_map_joined_named", StreamJoinCatalog::stream_table_join_after_map_joined_named);
        topologies.put("stream_to_table_then_join", StreamJoinCatalog::stream_to_table_then_join);
        // Global tables.
        topologies.put("global_table_join", StreamJoinCatalog::global_table_join);
        topologies.put("click_regions_example", StreamJoinCatalog::click_regions_example);
        topologies.put("global_table_examples", () -> GlobalExamples.globalExamples(
            "profiles", "clicks", "pings", null, "enriched-clicks", "left-enriched-clicks", "windowed-clicks",
            "pings-per-hour", null));
        topologies.put("global_tables_left_join_named_then_count",
                       StreamJoinCatalog::global_tables_left_join_named_then_count);
        // Stream-stream joins fed by stream-global-table joins (GlobalStreamJoinExamples is the equivalence test's).
        topologies.put("global_stream_join_examples_of_the_equivalence_test",
                       () -> GlobalStreamJoinExamples.globalStreamJoinExamples("profiles", "orders", "payments",
                           "left-outer-out", "inner-out"));
        return topologies;
    }

    // ---- Stream-stream joins ----------------------------------------------------------------

    static Topology stream_stream_inner_join() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        KStream<String, String> payments = b.stream("payments");
        orders.join(payments, (o, p) -> o + "|" + p,
                JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(5)))
            .to("paid-orders");
        return b.build();
    }

    static Topology stream_stream_left_join_both_rekeyed() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> impressions = b.stream("impressions");
        KStream<String, String> clicks = b.stream("ad-clicks");
        KStream<String, String> impressionsByAd = impressions.selectKey((k, v) -> field(v, 1));
        KStream<String, String> clicksByAd = clicks.map((k, v) -> KeyValue.pair(field(v, 1), v));
        impressionsByAd.leftJoin(clicksByAd, (i, c) -> i + "|" + c,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(10)))
            .to("impressions-with-clicks");
        return b.build();
    }

    static Topology stream_stream_outer_join_stream_joined() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> left = b.stream("left-events");
        KStream<String, String> right = b.stream("right-events");
        left.selectKey((k, v) -> field(v, 0))
            .outerJoin(right, (l, r) -> l + "|" + r,
                JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(10)),
                StreamJoined.<String, String, String>as("pairing").withStoreName("pairing-store"))
            .to("paired-events");
        return b.build();
    }

    static Topology stream_join_fed_by_tables() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> profiles = b.table("profiles",
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("profiles-store").withCachingDisabled());
        KStream<String, String> clicks = b.<String, String>stream("clicks").leftJoin(profiles, (c, p) -> c + "|" + p);
        b.<String, String>table("carts").filter((k, v) -> !v.isEmpty()).mapValues(v -> v.toUpperCase()).toStream()
            .outerJoin(clicks, (cart, click) -> cart + "|" + click,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(4), Duration.ofSeconds(3))
                    .after(Duration.ofSeconds(6)))
            .to("carts-with-clicks");
        return b.build();
    }

    static Topology join_result_then_windowed_count() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> searches = b.stream("searches");
        KStream<String, String> results = b.stream("results");
        searches.selectKey((k, v) -> field(v, 0))
            .join(results.selectKey((k, v) -> field(v, 0)), (s, r) -> s + "|" + r,
                JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(30)))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofHours(1)))
            .count()
            .toStream()
            .to("searches-with-results-per-hour");
        return b.build();
    }

    static Topology stream_stream_self_join() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> ticks = b.stream("ticks");
        ticks.join(ticks, (a, c) -> a + "|" + c, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(1)))
            .to("tick-pairs");
        return b.build();
    }

    @SuppressWarnings("deprecation")  // JoinWindows.of and grace: no spurious-result fix, no outer-join store
    static Topology stream_stream_joins_old_join_windows() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks");
        KStream<String, String> views = b.stream("views");
        clicks.leftJoin(views, (c, v) -> c + "|" + v, JoinWindows.of(Duration.ofSeconds(5))).to("left-old");
        clicks.outerJoin(views, (c, v) -> c + "|" + v,
                         JoinWindows.of(Duration.ofSeconds(5)).grace(Duration.ofSeconds(1)).after(Duration.ZERO))
            .to("outer-old");
        return b.build();
    }

    static Topology stream_stream_join_chain() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        KStream<String, String> payments = b.stream("payments");
        KStream<String, String> shipments = b.stream("shipments");
        orders.join(payments, (o, p) -> o + "|" + p, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(5)))
            .leftJoin(shipments, (op, s) -> op + "|" + s,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMinutes(10), Duration.ofMinutes(1)))
            .to("shipped-orders");
        return b.build();
    }

    static Topology stream_joined_with_two_streams() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        orders.join(b.stream("payments"), (o, p) -> o + "|" + p,
                JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(5)))
            .to("paid-orders");
        orders.outerJoin(b.<String, String>stream("shipments"), (o, s) -> o + "|" + s,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMinutes(10), Duration.ofMinutes(1)))
            .to("orders-and-shipments");
        return b.build();
    }

    static Topology both_sides_repartitioned_with_partition_counts() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> left = b.stream("left-events");
        KStream<String, String> right = b.stream("right-events");
        left.repartition(Repartitioned.numberOfPartitions(3))
            .join(right.repartition(Repartitioned.<String, String>as("right-by-key").withNumberOfPartitions(3)),
                (l, r) -> l + "|" + r, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(5)))
            .to("joined-events");
        return b.build();
    }

    static Topology table_to_stream_rekey_join_stream() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> accounts = b.table("accounts");
        KStream<String, String> transactions = b.stream("transactions");
        accounts.toStream((k, v) -> field(v, 0))
            .join(transactions, (a, t) -> a + "|" + t,
                JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(1)))
            .to("account-transactions");
        return b.build();
    }

    // ---- Stream-table joins -----------------------------------------------------------------

    static Topology stream_table_left_join() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        KTable<String, String> customers = b.table("customers");
        orders.leftJoin(customers, (o, c) -> o + "|" + c).to("orders-with-customer");
        return b.build();
    }

    static Topology stream_table_join_after_map_joined_named() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        KTable<String, String> products = b.table("products", Materialized.as("products-store"));
        orders.map((k, v) -> KeyValue.pair(field(v, 1), v))
            .join(products, (o, p) -> o + "|" + p, Joined.as("order-product"))
            .to("orders-with-product");
        return b.build();
    }

    static Topology stream_to_table_then_join() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> latestPrice = b.<String, String>stream("prices")
            .toTable(Named.as("latest-price"), Materialized.as("latest-price-store"));
        KStream<String, String> quotes = b.stream("quotes");
        quotes.join(latestPrice, (q, p) -> q + "@" + p).to("priced-quotes");
        return b.build();
    }

    // ---- Global tables ----------------------------------------------------------------------

    static Topology global_table_join() {
        StreamsBuilder b = new StreamsBuilder();
        GlobalKTable<String, String> profiles = b.globalTable("profiles");
        b.<String, String>stream("clicks")
            .join(profiles, (k, v) -> field(v, 0), (click, profile) -> click + "," + profile)
            .to("enriched");
        return b.build();
    }

    /** assets/click_regions.py: a foreign-key join, then a left join with a global table. */
    static Topology click_regions_example() {
        StreamsBuilder b = new StreamsBuilder();
        GlobalKTable<String, String> countries = b.globalTable("countries");
        KTable<String, String> clicks = b.table("clicks");
        KTable<String, String> profiles = b.table("profiles");
        clicks.join(profiles, (String click) -> click, (String click, String profile) -> click + profile,
                    TableJoined.<String, String>as("click-user"))
            .toStream()
            .leftJoin(countries, (String id, String click) -> click, (String click, String country) -> click + country,
                      Named.as("click-region"))
            .to("click-regions");
        return b.build();
    }

    static Topology global_tables_left_join_named_then_count() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.<String, String>stream("clicks").selectKey((k, v) -> field(v, 1));
        GlobalKTable<String, String> countries = b.globalTable("countries", Consumed.as("countries-in"),
            Materialized.as("countries-store"));
        KStream<String, String> enriched = clicks.leftJoin(countries, (k, v) -> k,
            (k, click, country) -> k + "," + click + "," + country, Named.as("with-country"));
        GlobalKTable<String, String> users = b.globalTable("users");
        enriched.join(users, (k, v) -> field(v, 0), (click, user) -> click + "," + user)
            .groupByKey().count().toStream().to("clicks-per-country");
        return b.build();
    }
}
