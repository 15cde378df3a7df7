package kstreams.oracle;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.function.Supplier;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyConfig;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Stores given by their suppliers (Materialized.as(Stores...), StreamJoined.withThisStoreSupplier /
 * withOtherStoreSupplier) and the DSL's default store kind (new StreamsBuilder(new TopologyConfig(...))
 * with default.dsl.store=in_memory).
 *
 * Entries of TopologyCatalog, built with Kafka Streams' own DSL; their Python twins, under the same
 * names, are in tests/topology_catalog_store_suppliers.py. Keep the two in step. refused(): the
 * topologies both sides refuse to build (REFUSED there), outside the catalog.
 */
final class StoreSupplierCatalog {
    private StoreSupplierCatalog() {}

    private static final Duration SECOND = Duration.ofSeconds(1);
    private static final JoinWindows JOIN_WINDOWS =
        JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(2), Duration.ofSeconds(3));
    private static final ValueJoiner<String, String, String> JOINER = (left, right) -> left + "+" + right;

    static Map<String, Supplier<Topology>> topologies() {
        Map<String, Supplier<Topology>> topologies = new LinkedHashMap<>();
        topologies.put("windowed_count_in_memory_window_store", StoreSupplierCatalog::windowed_count_in_memory_window_store);
        topologies.put("sliding_and_session_persistent_suppliers", StoreSupplierCatalog::sliding_and_session_persistent_suppliers);
        topologies.put("windowed_count_supplier_retention_below_window_and_grace",
                       StoreSupplierCatalog::windowed_count_supplier_retention_below_window_and_grace);
        topologies.put("tables_and_counts_in_key_value_suppliers", StoreSupplierCatalog::tables_and_counts_in_key_value_suppliers);
        topologies.put("windowed_cogroup_in_memory_window_store", StoreSupplierCatalog::windowed_cogroup_in_memory_window_store);
        topologies.put("stream_join_with_both_store_suppliers", StoreSupplierCatalog::stream_join_with_both_store_suppliers);
        topologies.put("outer_join_with_this_store_supplier", StoreSupplierCatalog::outer_join_with_this_store_supplier);
        topologies.put("left_join_with_other_store_supplier", StoreSupplierCatalog::left_join_with_other_store_supplier);
        topologies.put("default_dsl_store_in_memory", StoreSupplierCatalog::default_dsl_store_in_memory);
        return topologies;
    }

    static Map<String, Supplier<Topology>> refused() {
        Map<String, Supplier<Topology>> topologies = new LinkedHashMap<>();
        topologies.put("refused_join_supplier_without_duplicates",
                       () -> joinWith(Stores.inMemoryWindowStore("orders-window", sec(7), sec(4), false),
                                      Stores.inMemoryWindowStore("payments-window", sec(7), sec(4), true)));
        topologies.put("refused_join_supplier_retention_mismatch",
                       () -> joinWith(Stores.inMemoryWindowStore("orders-window", sec(7), sec(4), true),
                                      Stores.inMemoryWindowStore("payments-window", sec(8), sec(4), true)));
        topologies.put("refused_join_supplier_window_size_mismatch",
                       () -> joinWith(Stores.inMemoryWindowStore("orders-window", sec(7), sec(2), true),
                                      Stores.inMemoryWindowStore("payments-window", sec(7), sec(4), true)));
        topologies.put("refused_join_suppliers_of_one_name",
                       () -> joinWith(Stores.inMemoryWindowStore("window", sec(7), sec(4), true),
                                      Stores.persistentWindowStore("window", sec(7), sec(4), true)));
        topologies.put("refused_window_retention_below_window_and_grace", () -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("clicks").groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(sec(10), sec(5)))
                .count(Materialized.<String, Long>as(Stores.inMemoryWindowStore("counts", sec(60), sec(10), false))
                    .withRetention(sec(14)));
            return b.build();
        });
        topologies.put("refused_sliding_retention_below_twice_difference_and_grace", () -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("clicks").groupByKey()
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(sec(5), sec(1)))
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("counts").withRetention(sec(10)));
            return b.build();
        });
        topologies.put("refused_session_retention_below_gap_and_grace", () -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("clicks").groupByKey()
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(sec(3), sec(1)))
                .count(Materialized.<String, Long>as(Stores.persistentSessionStore("sessions", sec(60)))
                    .withRetention(sec(3)));
            return b.build();
        });
        return topologies;
    }

    private static Duration sec(long seconds) {
        return Duration.ofSeconds(seconds);
    }

    private static Topology joinWith(org.apache.kafka.streams.state.WindowBytesStoreSupplier thisSupplier,
                                     org.apache.kafka.streams.state.WindowBytesStoreSupplier otherSupplier) {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        KStream<String, String> payments = b.stream("payments");
        orders.join(payments, JOINER, JOIN_WINDOWS, StreamJoined.<String, String, String>with(thisSupplier, otherSupplier))
            .to("out");
        return b.build();
    }

    // ---- Aggregations' and tables' stores by supplier ---------------------------------------

    static Topology windowed_count_in_memory_window_store() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("clicks").groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(sec(10), sec(5)))
            .count(Materialized.as(Stores.inMemoryWindowStore("click-counts", sec(60), sec(10), false)))
            .toStream().map((wk, v) -> KeyValue.pair(wk.key(), String.valueOf(v))).to("click-counts-out");
        return b.build();
    }

    static Topology sliding_and_session_persistent_suppliers() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> grouped = b.<String, String>stream("clicks").groupByKey();
        grouped.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(sec(5), sec(2)))
            .reduce((a, v) -> a + v, Materialized.as(Stores.persistentWindowStore("sliding-sums", sec(20), sec(5), false)))
            .toStream().map((wk, v) -> KeyValue.pair(wk.key(), v)).to("sliding-out");
        grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(sec(3), sec(1)))
            .count(Materialized.<String, Long>as(Stores.inMemorySessionStore("session-counts", sec(10))))
            .toStream().map((wk, v) -> KeyValue.pair(wk.key(), String.valueOf(v))).to("sessions-out");
        return b.build();
    }

    static Topology windowed_count_supplier_retention_below_window_and_grace() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("clicks").groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(sec(10), sec(5)))
            .count(Materialized.as(Stores.persistentWindowStore("short-counts", sec(12), sec(10), false)))
            .toStream().map((wk, v) -> KeyValue.pair(wk.key(), String.valueOf(v))).to("short-out");
        return b.build();
    }

    static Topology tables_and_counts_in_key_value_suppliers() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> prices = b.table("prices",
            Materialized.<String, String>as(Stores.inMemoryKeyValueStore("prices-store")));
        prices.filter((k, v) -> !v.equals("0"), Materialized.<String, String>as(Stores.persistentKeyValueStore("priced")))
            .groupBy((k, v) -> KeyValue.pair(v, k))
            .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("per-price")))
            .toStream().map((k, v) -> KeyValue.pair(k, String.valueOf(v))).to("per-price-out");
        b.<String, String>stream("orders").groupByKey()
            .count(Materialized.<String, Long>as(Stores.persistentTimestampedKeyValueStore("order-counts")))
            .toStream().to("orders-out");
        return b.build();
    }

    static Topology windowed_cogroup_in_memory_window_store() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> clicks = b.<String, String>stream("clicks").groupByKey();
        KGroupedStream<String, String> views = b.<String, String>stream("views").groupByKey();
        clicks.<String>cogroup((k, v, agg) -> agg + v).cogroup(views, (k, v, agg) -> agg + v)
            .windowedBy(TimeWindows.ofSizeWithNoGrace(sec(10)))
            .aggregate(() -> "", Materialized.as(Stores.inMemoryWindowStore("cogrouped", sec(10), sec(10), false)))
            .toStream().map((wk, v) -> KeyValue.pair(wk.key(), v)).to("cogrouped-out");
        return b.build();
    }

    // ---- Stream-stream joins' stores by supplier --------------------------------------------

    static Topology stream_join_with_both_store_suppliers() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        KStream<String, String> payments = b.stream("payments");
        orders.join(payments, JOINER, JOIN_WINDOWS, StreamJoined.<String, String, String>with(
                Stores.inMemoryWindowStore("orders-window", sec(7), sec(4), true),
                Stores.persistentWindowStore("payments-window", sec(7), sec(4), true)))
            .to("paid-orders");
        return b.build();
    }

    static Topology outer_join_with_this_store_supplier() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        KStream<String, String> payments = b.stream("payments");
        orders.outerJoin(payments, JOINER, JOIN_WINDOWS, StreamJoined.<String, String, String>as("order-payment")
                .withThisStoreSupplier(Stores.inMemoryWindowStore("orders-side", sec(7), sec(4), true)))
            .to("orders-or-payments");
        return b.build();
    }

    static Topology left_join_with_other_store_supplier() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        KStream<String, String> payments = b.stream("payments");
        orders.leftJoin(payments, JOINER, JOIN_WINDOWS, StreamJoined.<String, String, String>as("order-payment")
                .withOtherStoreSupplier(Stores.persistentWindowStore("payments-side", sec(7), sec(4), true)))
            .to("orders-maybe-paid");
        return b.build();
    }

    // ---- The DSL's default store kind --------------------------------------------------------

    @SuppressWarnings("deprecation")
    static Topology default_dsl_store_in_memory() {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "catalog");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
        props.put(StreamsConfig.DEFAULT_DSL_STORE_CONFIG, StreamsConfig.IN_MEMORY);
        StreamsBuilder b = new StreamsBuilder(new TopologyConfig(new StreamsConfig(props)));
        KStream<String, String> orders = b.stream("orders");
        orders.leftJoin(b.<String, String>stream("payments"), JOINER, JOIN_WINDOWS).to("orders-maybe-paid");
        orders.groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(sec(10))).count()
            .toStream().map((wk, v) -> KeyValue.pair(wk.key(), String.valueOf(v))).to("order-counts");
        return b.build();
    }
}
