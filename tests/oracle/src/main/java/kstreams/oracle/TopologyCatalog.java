package kstreams.oracle;

import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Pattern;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Printed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.WallclockTimestampExtractor;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.kstream.CogroupedKStream;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Topologies built with Kafka Streams' own DSL. tests/topology_catalog.py builds each one
 * again, under the same name, with dagster_kstreams; the describe() strings must match.
 *
 * Keys and values are strings; a record value is a comma-separated row such as
 * "alice,fr,42" (user, country, amount) so that the lambdas mean the same thing on both sides
 * (hence split(sep, -1): Python's str.split keeps trailing empty strings).
 */
public final class TopologyCatalog {
    private TopologyCatalog() {}

    private static final Map<String, Supplier<Topology>> TOPOLOGIES = new LinkedHashMap<>();

    static {
        // The snippets of the DSL issue.
        TOPOLOGIES.put("issue_users_per_country", TopologyCatalog::issue_users_per_country);
        TOPOLOGIES.put("issue_clicks_enriched_with_profiles", TopologyCatalog::issue_clicks_enriched_with_profiles);
        TOPOLOGIES.put("issue_windowed_word_count", TopologyCatalog::issue_windowed_word_count);
        TOPOLOGIES.put("issue_table_filter_map_values", TopologyCatalog::issue_table_filter_map_values);
        TOPOLOGIES.put("issue_map_to_table_to_stream", TopologyCatalog::issue_map_to_table_to_stream);
        TOPOLOGIES.put("issue_count_store", TopologyCatalog::issue_count_store);
        // Stateless operators.
        TOPOLOGIES.put("stateless_chain", TopologyCatalog::stateless_chain);
        TOPOLOGIES.put("multi_topic_source", TopologyCatalog::multi_topic_source);
        TOPOLOGIES.put("merge_two_streams", TopologyCatalog::merge_two_streams);
        TOPOLOGIES.put("merge_after_key_change_then_count", TopologyCatalog::merge_after_key_change_then_count);
        TOPOLOGIES.put("flat_map_then_reduce", TopologyCatalog::flat_map_then_reduce);
        TOPOLOGIES.put("peek_flat_map_values", TopologyCatalog::peek_flat_map_values);
        TOPOLOGIES.put("split_into_named_branches", TopologyCatalog::split_into_named_branches);
        TOPOLOGIES.put("split_unnamed_with_consumers", TopologyCatalog::split_unnamed_with_consumers);
        TOPOLOGIES.put("split_with_prefix_and_chains", TopologyCatalog::split_with_prefix_and_chains);
        TOPOLOGIES.put("merge_of_branches", TopologyCatalog::merge_of_branches);
        // Repartitioning.
        TOPOLOGIES.put("repartition_default", TopologyCatalog::repartition_default);
        TOPOLOGIES.put("repartition_named_with_partitions", TopologyCatalog::repartition_named_with_partitions);
        TOPOLOGIES.put("chain_of_repartitions", TopologyCatalog::chain_of_repartitions);
        TOPOLOGIES.put("count_then_group_by_key_again", TopologyCatalog::count_then_group_by_key_again);
        TOPOLOGIES.put("select_key_twice_then_count", TopologyCatalog::select_key_twice_then_count);
        TOPOLOGIES.put("one_rekeyed_stream_two_aggregations", TopologyCatalog::one_rekeyed_stream_two_aggregations);
        TOPOLOGIES.put("rekeyed_stream_joined_and_aggregated", TopologyCatalog::rekeyed_stream_joined_and_aggregated);
        TOPOLOGIES.put("stream_table_join_after_named_repartition", TopologyCatalog::stream_table_join_after_named_repartition);
        // Aggregations.
        TOPOLOGIES.put("group_by_key_aggregate", TopologyCatalog::group_by_key_aggregate);
        TOPOLOGIES.put("group_by_named_reduce", TopologyCatalog::group_by_named_reduce);
        TOPOLOGIES.put("tumbling_window_aggregate_with_grace", TopologyCatalog::tumbling_window_aggregate_with_grace);
        TOPOLOGIES.put("hopping_window_count", TopologyCatalog::hopping_window_count);
        TOPOLOGIES.put("sliding_window_reduce", TopologyCatalog::sliding_window_reduce);
        TOPOLOGIES.put("session_window_count", TopologyCatalog::session_window_count);
        TOPOLOGIES.put("session_window_aggregate", TopologyCatalog::session_window_aggregate);
        TOPOLOGIES.put("windowed_count_suppressed", TopologyCatalog::windowed_count_suppressed);
        // Joins.
        TOPOLOGIES.put("stream_stream_inner_join", TopologyCatalog::stream_stream_inner_join);
        TOPOLOGIES.put("stream_stream_left_join_both_rekeyed", TopologyCatalog::stream_stream_left_join_both_rekeyed);
        TOPOLOGIES.put("stream_stream_outer_join_stream_joined", TopologyCatalog::stream_stream_outer_join_stream_joined);
        TOPOLOGIES.put("stream_join_fed_by_tables", TopologyCatalog::stream_join_fed_by_tables);
        TOPOLOGIES.put("stream_table_left_join", TopologyCatalog::stream_table_left_join);
        TOPOLOGIES.put("stream_table_join_after_map_joined_named", TopologyCatalog::stream_table_join_after_map_joined_named);
        TOPOLOGIES.put("stream_to_table_then_join", TopologyCatalog::stream_to_table_then_join);
        TOPOLOGIES.put("join_result_then_windowed_count", TopologyCatalog::join_result_then_windowed_count);
        TOPOLOGIES.put("table_table_inner_join", TopologyCatalog::table_table_inner_join);
        TOPOLOGIES.put("table_table_left_join_materialized", TopologyCatalog::table_table_left_join_materialized);
        TOPOLOGIES.put("table_table_outer_join_named", TopologyCatalog::table_table_outer_join_named);
        TOPOLOGIES.put("aggregated_table_joined_with_source_table", TopologyCatalog::aggregated_table_joined_with_source_table);
        // Tables.
        TOPOLOGIES.put("table_source_materialized", TopologyCatalog::table_source_materialized);
        TOPOLOGIES.put("table_filter_materialized", TopologyCatalog::table_filter_materialized);
        TOPOLOGIES.put("table_group_by_count", TopologyCatalog::table_group_by_count);
        TOPOLOGIES.put("table_group_by_aggregate", TopologyCatalog::table_group_by_aggregate);
        TOPOLOGIES.put("table_group_by_reduce_named", TopologyCatalog::table_group_by_reduce_named);
        TOPOLOGIES.put("table_regroup_examples", () -> RegroupExamples.regroupExamples(
            "users", "accounts", "users-per-country-out", "branch-sums-out", "branch-history-out"));
        TOPOLOGIES.put("table_suppress_time_limit", TopologyCatalog::table_suppress_time_limit);
        TOPOLOGIES.put("foreign_key_join_examples", () -> ForeignKeyJoinExamples.foreignKeyJoinExamples(
            "accounts", "users", "accounts-inner-out", "accounts-left-out"));
        TOPOLOGIES.put("foreign_key_join_result_read_downstream",
                       TopologyCatalog::foreign_key_join_result_read_downstream);
        // Naming and layout.
        TOPOLOGIES.put("named_operators_everywhere", TopologyCatalog::named_operators_everywhere);
        TOPOLOGIES.put("two_independent_pipelines", TopologyCatalog::two_independent_pipelines);
        // Combinations.
        TOPOLOGIES.put("pattern_source", TopologyCatalog::pattern_source);
        TOPOLOGIES.put("foreach_and_print", TopologyCatalog::foreach_and_print);
        TOPOLOGIES.put("merge_and_peek_named", TopologyCatalog::merge_and_peek_named);
        TOPOLOGIES.put("branch_of_rekeyed_stream_aggregated", TopologyCatalog::branch_of_rekeyed_stream_aggregated);
        TOPOLOGIES.put("rekeyed_to_table_joined_with_table", TopologyCatalog::rekeyed_to_table_joined_with_table);
        TOPOLOGIES.put("table_to_stream_rekey_join_stream", TopologyCatalog::table_to_stream_rekey_join_stream);
        TOPOLOGIES.put("table_table_join_then_group_by", TopologyCatalog::table_table_join_then_group_by);
        TOPOLOGIES.put("chained_table_table_joins", TopologyCatalog::chained_table_table_joins);
        TOPOLOGIES.put("stream_joined_with_a_table_join_then_regrouped",
            TopologyCatalog::stream_joined_with_a_table_join_then_regrouped);
        TOPOLOGIES.put("session_window_count_suppressed", TopologyCatalog::session_window_count_suppressed);
        TOPOLOGIES.put("sliding_window_count_named", TopologyCatalog::sliding_window_count_named);
        TOPOLOGIES.put("session_window_reduce", TopologyCatalog::session_window_reduce);
        TOPOLOGIES.put("chained_windowed_aggregations", TopologyCatalog::chained_windowed_aggregations);
        TOPOLOGIES.put("stream_stream_self_join", TopologyCatalog::stream_stream_self_join);
        TOPOLOGIES.put("stream_stream_join_chain", TopologyCatalog::stream_stream_join_chain);
        TOPOLOGIES.put("stream_joined_with_two_streams", TopologyCatalog::stream_joined_with_two_streams);
        TOPOLOGIES.put("both_sides_repartitioned_with_partition_counts", TopologyCatalog::both_sides_repartitioned_with_partition_counts);
        TOPOLOGIES.put("table_filter_join_uses_value_getters", TopologyCatalog::table_filter_join_uses_value_getters);
        TOPOLOGIES.put("table_left_join_then_suppress", TopologyCatalog::table_left_join_then_suppress);
        TOPOLOGIES.put("windowed_table_filter_named", TopologyCatalog::windowed_table_filter_named);
        TOPOLOGIES.put("more_than_ten_subtopologies", TopologyCatalog::more_than_ten_subtopologies);
        TOPOLOGIES.put("windowed_emit_on_window_close", TopologyCatalog::windowed_emit_on_window_close);
        TOPOLOGIES.put("sliding_and_session_emit_on_window_close",
                       TopologyCatalog::sliding_and_session_emit_on_window_close);
        TOPOLOGIES.put("suppress_and_emit_on_close_examples", () -> SuppressExamples.suppressExamples(
            "events", "prices", "slides", "final-counts", "closed-hopping-out", "final-sessions-out", "limited-prices",
            "debounced-prices", "closed-sliding-out", "closed-sessions-out", "bytes-limited-prices",
            "both-bounds-prices", "raised-prices", "final-filtered-counts", "windowed-bytes-counts",
            "sessions-filtered-out", "session-bytes-out", "sliding-filtered-out", "sliding-bytes-out",
            "held-prices", "closed-written-out", "closed-reads", "closed-sessions-written-out",
            "closed-session-reads", "closed-sliding-written-out", "closed-sliding-reads"));
        TOPOLOGIES.put("processor_api_examples", () -> ProcessorApiExamples.processorApiExamples("events", "out"));
        TOPOLOGIES.put("processor_api_named_then_count", TopologyCatalog::processor_api_named_then_count);
        TOPOLOGIES.put("processor_api_low_level_examples", () -> ProcessorApiExamples.lowLevel("events", "out"));
        TOPOLOGIES.put("processor_api_low_level_wiring", TopologyCatalog::processor_api_low_level_wiring);
        TOPOLOGIES.put("processor_api_supplier_with_stores", TopologyCatalog::processor_api_supplier_with_stores);
        TOPOLOGIES.put("processor_api_low_level_supplier_with_stores",
                       TopologyCatalog::processor_api_low_level_supplier_with_stores);
        TOPOLOGIES.put("global_table_join", TopologyCatalog::global_table_join);
        TOPOLOGIES.put("click_regions_example", TopologyCatalog::click_regions_example);
        TOPOLOGIES.put("global_table_examples", () -> GlobalExamples.globalExamples(
            "profiles", "clicks", "pings", "enriched-clicks", "left-enriched-clicks", "windowed-clicks",
            "pings-per-hour"));
        TOPOLOGIES.put("wallclock_timestamps_then_windowed_count",
                       TopologyCatalog::wallclock_timestamps_then_windowed_count);
        TOPOLOGIES.put("global_tables_left_join_named_then_count",
                       TopologyCatalog::global_tables_left_join_named_then_count);
        // cogroup.
        TOPOLOGIES.put("cogroup_two_streams", TopologyCatalog::cogroup_two_streams);
        TOPOLOGIES.put("cogroup_three_with_repartitions_named", TopologyCatalog::cogroup_three_with_repartitions_named);
        TOPOLOGIES.put("cogroup_windowed_twice_shares_its_repartition",
                       TopologyCatalog::cogroup_windowed_twice_shares_its_repartition);
        TOPOLOGIES.put("cogroup_session_windowed", TopologyCatalog::cogroup_session_windowed);
        TOPOLOGIES.put("cogroup_examples_of_the_equivalence_test", () -> CogroupExamples.cogroupExamples(
            "clicks", "views", "orders", "refunds", "visits", "calls", "texts", "activity-out", "activity-windows-out",
            "final-windows-out", "sliding-out", "sessions-out", "final-filtered-windows-out", "session-bytes-out",
            "store-windows-out", "store-sessions-out", "merged-counts-out", "merged-windows-out"));
        // Windowed aggregations with their own stream time (FilteredWindowExamples is the equivalence test's).
        TOPOLOGIES.put("filtered_window_examples_of_the_equivalence_test",
                       () -> FilteredWindowExamples.filteredWindowExamples("events", "clicks", "slides",
                           "filtered-out", "sessions-out", "sliding-out", "branch-out", "direct-count-out", "merged-out",
                           "mixed-sliding-out", "mixed-tumbling-out", null, null, null, null, null, null, null, null,
                           null, null, null, null));
        // Stream-stream joins fed by stream-global-table joins (GlobalStreamJoinExamples is the equivalence test's).
        TOPOLOGIES.put("global_stream_join_examples_of_the_equivalence_test",
                       () -> GlobalStreamJoinExamples.globalStreamJoinExamples("profiles", "orders", "payments",
                           "left-outer-out", "inner-out"));
        // Versioned tables (VersionedExamples is the equivalence test's).
        TOPOLOGIES.put("versioned_examples_of_the_equivalence_test",
                       () -> VersionedExamples.versionedExamples("prices", "rates", "orders", "changes-out",
                           "inner-out", "left-out", "grace-out"));
    }

    /** Catalog names in definition order. */
    public static List<String> names() {
        return List.copyOf(TOPOLOGIES.keySet());
    }

    public static Topology build(String name) {
        Supplier<Topology> supplier = TOPOLOGIES.get(name);
        if (supplier == null) {
            throw new IllegalArgumentException("unknown topology: " + name);
        }
        return supplier.get();
    }

    private static String field(String row, int index) {
        return row.split(",", -1)[index];
    }

    // ---- The snippets of the DSL issue --------------------------------------------------

    static Topology issue_users_per_country() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> users = b.stream("users");
        users.groupBy((k, v) -> field(v, 1)).count().toStream().to("users-per-country");
        return b.build();
    }

    static Topology issue_clicks_enriched_with_profiles() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks");
        KTable<String, String> profiles = b.table("profiles");
        clicks.selectKey((k, v) -> field(v, 0))
            .join(profiles, (click, profile) -> click + "," + profile)
            .to("enriched");
        return b.build();
    }

    static Topology issue_windowed_word_count() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> words = b.stream("words");
        words.flatMapValues(v -> Arrays.asList(v.split(" ", -1)))
            .groupBy((k, w) -> w)
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
            .count();
        return b.build();
    }

    static Topology issue_table_filter_map_values() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> t = b.table("t");
        t.filter((k, v) -> v != null).mapValues(v -> v);
        return b.build();
    }

    static Topology issue_map_to_table_to_stream() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> input = b.stream("input");
        input.map((k, v) -> KeyValue.pair(k.substring(0, 1), v)).toTable().toStream().to("output");
        return b.build();
    }

    static Topology issue_count_store() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> input = b.stream("input-topic");
        input.groupByKey().count(Materialized.as("count-store"));
        return b.build();
    }

    // ---- Stateless operators ---------------------------------------------------------

    static Topology stateless_chain() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> rows = b.stream("rows");
        rows.filter((k, v) -> v != null)
            .filterNot((k, v) -> v.isEmpty())
            .mapValues(v -> v.toUpperCase())
            .peek((k, v) -> { })
            .mapValues((k, v) -> k + ":" + v)
            .to("rows-upper");
        return b.build();
    }

    static Topology multi_topic_source() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> both = b.stream(List.of("orders-eu", "orders-us"));
        both.mapValues(v -> field(v, 2)).to("order-amounts");
        return b.build();
    }

    static Topology merge_two_streams() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> left = b.stream("left");
        KStream<String, String> right = b.stream("right");
        left.merge(right).filter((k, v) -> v != null).to("merged");
        return b.build();
    }

    static Topology merge_after_key_change_then_count() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> web = b.stream("web-orders");
        KStream<String, String> shop = b.stream("shop-orders");
        web.selectKey((k, v) -> field(v, 0))
            .merge(shop)
            .groupByKey()
            .count()
            .toStream()
            .to("orders-per-user");
        return b.build();
    }

    static Topology flat_map_then_reduce() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> lines = b.stream("lines");
        lines.flatMap((k, v) -> {
                List<KeyValue<String, String>> out = new java.util.ArrayList<>();
                for (String word : v.split(" ", -1)) {
                    out.add(KeyValue.pair(word, word));
                }
                return out;
            })
            .groupByKey()
            .reduce((a, c) -> a + c)
            .toStream()
            .to("words-concatenated");
        return b.build();
    }

    static Topology peek_flat_map_values() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> rows = b.stream("rows");
        rows.peek((k, v) -> { })
            .flatMapValues(v -> Arrays.asList(v.split(",", -1)))
            .flatMapValues((k, v) -> List.of(k, v))
            .to("cells");
        return b.build();
    }

    static Topology split_into_named_branches() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        // The map keys are the split name followed by the branch name.
        Map<String, KStream<String, String>> branches = orders.split(Named.as("country-"))
            .branch((k, v) -> field(v, 1).equals("fr"), Branched.as("france"))
            .branch((k, v) -> field(v, 1).equals("de"), Branched.<String, String>as("x").withName("germany"))
            .defaultBranch();
        branches.get("country-france").to("orders-fr");
        branches.get("country-germany").to("orders-de");
        branches.get("country-0").to("orders-other");
        return b.build();
    }

    static Topology split_unnamed_with_consumers() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> logs = b.stream("logs");
        logs.split()
            .branch((k, v) -> v.startsWith("ERROR"), Branched.withConsumer(ks -> ks.to("errors")))
            .branch((k, v) -> v.startsWith("WARN"), Branched.withConsumer(ks -> ks.mapValues(v -> v.substring(5)).to("warnings")))
            .noDefaultBranch();
        return b.build();
    }

    static Topology split_with_prefix_and_chains() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        Map<String, KStream<String, String>> branches = orders.split(Named.as("route-"))
            .branch((k, v) -> Integer.parseInt(field(v, 2)) > 100,
                Branched.withFunction(ks -> ks.mapValues(v -> "big:" + v), "big"))
            .branch((k, v) -> Integer.parseInt(field(v, 2)) == 0,
                Branched.withConsumer(ks -> ks.to("orders-free")))
            .defaultBranch(Branched.as("small"));
        branches.get("route-big").to("orders-big");
        branches.get("route-small").to("orders-small");
        return b.build();
    }

    static Topology merge_of_branches() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> events = b.stream("events");
        Map<String, KStream<String, String>> branches = events.split(Named.as("kind-"))
            .branch((k, v) -> v.startsWith("a"))
            .defaultBranch();
        branches.get("kind-1").mapValues(v -> v.toUpperCase())
            .merge(branches.get("kind-0"))
            .to("events-normalised");
        return b.build();
    }

    // ---- Repartitioning -------------------------------------------------------------

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

    // ---- Aggregations ----------------------------------------------------------------

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

    static Topology tumbling_window_aggregate_with_grace() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> readings = b.stream("readings");
        readings.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(5), Duration.ofSeconds(30)))
            .aggregate(() -> "", (k, v, agg) -> agg + v)
            .toStream()
            .map((wk, v) -> KeyValue.pair(wk.key() + "@" + wk.window().start(), v))
            .to("readings-5m");
        return b.build();
    }

    static Topology hopping_window_count() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> views = b.stream("page-views");
        views.groupBy((k, v) -> field(v, 0))
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(10)).advanceBy(Duration.ofMinutes(1)))
            .count(Materialized.as("views-10m-hopping"));
        return b.build();
    }

    static Topology sliding_window_reduce() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> trades = b.stream("trades");
        trades.groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(30), Duration.ofSeconds(5)))
            .reduce((a, c) -> a.compareTo(c) >= 0 ? a : c)
            .toStream()
            .selectKey((wk, v) -> wk.key())
            .to("trade-max-30s");
        return b.build();
    }

    static Topology session_window_count() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks");
        clicks.groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMinutes(30)))
            .count();
        return b.build();
    }

    static Topology session_window_aggregate() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks");
        clicks.selectKey((k, v) -> field(v, 0))
            .groupByKey(Grouped.as("sessions-by-user"))
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMinutes(5), Duration.ofMinutes(1)))
            .aggregate(() -> "", (k, v, agg) -> agg + v, (k, a, c) -> a + c,
                Materialized.as("user-sessions"))
            .toStream()
            .to("user-sessions");
        return b.build();
    }

    static Topology windowed_count_suppressed() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> alerts = b.stream("alerts");
        alerts.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(10)))
            .count()
            .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
            .toStream()
            .filter((wk, count) -> count > 3)
            .to("alert-storms");
        return b.build();
    }

    // ---- Joins -----------------------------------------------------------------------

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

    // ---- Tables ------------------------------------------------------------------------

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

    // ---- Naming and layout ------------------------------------------------------------

    static Topology named_operators_everywhere() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> events = b.stream("events", Consumed.as("events-source"));
        events.filter((k, v) -> v != null, Named.as("drop-nulls"))
            .mapValues(v -> v.trim(), Named.as("trim"))
            .selectKey((k, v) -> field(v, 0), Named.as("key-by-user"))
            .groupByKey(Grouped.as("events-by-user"))
            .count(Named.as("count-events"), Materialized.as("events-per-user"))
            .toStream(Named.as("count-changes"))
            .mapValues(c -> Long.toString(c), Named.as("format-count"))
            .to("events-per-user", Produced.as("events-per-user-sink"));
        return b.build();
    }

    static Topology two_independent_pipelines() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> a = b.stream("topic-a");
        KStream<String, String> c = b.stream("topic-c");
        a.mapValues(v -> v + "!").to("topic-a-out");
        c.groupBy((k, v) -> v).count();
        KStream<String, String> bb = b.stream("topic-b");
        bb.filter((k, v) -> v.length() > 3).to("topic-b-out");
        return b.build();
    }

    // ---- Combinations ---------------------------------------------------------------

    static Topology pattern_source() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream(Pattern.compile("orders-.*"));
        orders.mapValues(v -> v.toUpperCase()).to("orders-upper");
        return b.build();
    }

    static Topology foreach_and_print() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> audit = b.stream("audit");
        audit.foreach((k, v) -> { });
        audit.filter((k, v) -> v.startsWith("ERROR")).print(Printed.<String, String>toSysOut().withLabel("audit"));
        audit.peek((k, v) -> { }, Named.as("log-audit")).foreach((k, v) -> { }, Named.as("discard"));
        return b.build();
    }

    static Topology merge_and_peek_named() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> card = b.stream("card-payments");
        KStream<String, String> bank = b.stream("bank-payments");
        card.merge(bank, Named.as("all-payments"))
            .peek((k, v) -> { }, Named.as("audit-payment"))
            .to("payments-all");
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

    static Topology rekeyed_to_table_joined_with_table() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> users = b.<String, String>stream("user-updates")
            .selectKey((k, v) -> field(v, 0))
            .toTable();
        KTable<String, String> prefs = b.table("user-prefs");
        users.join(prefs, (u, p) -> u + "|" + p).toStream().to("users-with-prefs");
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

    static Topology session_window_count_suppressed() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks");
        clicks.groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMinutes(10), Duration.ofMinutes(1)))
            .count(Named.as("session-count"), Materialized.as("session-counts"))
            .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()).withName("final-sessions"))
            .toStream()
            .to("final-sessions");
        return b.build();
    }

    static Topology sliding_window_count_named() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> trades = b.stream("trades");
        trades.groupBy((k, v) -> field(v, 0), Grouped.as("trades-by-symbol"))
            .windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(1)))
            .count(Named.as("trades-per-minute"), Materialized.as("trades-per-minute-store"))
            .toStream()
            .map((wk, c) -> KeyValue.pair(wk.key(), Long.toString(c)))
            .to("trades-per-minute");
        return b.build();
    }

    static Topology session_window_reduce() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> chats = b.stream("chats");
        chats.groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMinutes(2)))
            .reduce((a, c) -> a + c)
            .toStream()
            .to("chat-sessions");
        return b.build();
    }

    static Topology chained_windowed_aggregations() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> views = b.stream("page-views");
        views.groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
            .count()
            .toStream()
            .map((wk, c) -> KeyValue.pair(Long.toString(c), wk.key()))
            .groupByKey()
            .count()
            .toStream()
            .to("views-per-minute-histogram");
        return b.build();
    }

    static Topology stream_stream_self_join() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> ticks = b.stream("ticks");
        ticks.join(ticks, (a, c) -> a + "|" + c, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(1)))
            .to("tick-pairs");
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

    static Topology windowed_table_filter_named() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> requests = b.stream("requests");
        requests.groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(5)))
            .count()
            .filter((wk, c) -> c > 10, Named.as("hot-windows"))
            .toStream(Named.as("hot-window-changes"))
            .to("hot-windows");
        return b.build();
    }

    static Topology more_than_ten_subtopologies() {
        // Sub-topology ids 10 and up: ordered as numbers, not as strings.
        StreamsBuilder b = new StreamsBuilder();
        for (int i = 0; i < 6; i++) {
            KStream<String, String> input = b.stream("in-" + i);
            input.groupBy((k, v) -> v).count().toStream().to("counts-" + i);
        }
        return b.build();
    }

    static Topology windowed_emit_on_window_close() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks");
        clicks.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(10)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(Materialized.as("final-click-counts"))
            .toStream()
            .to("final-click-counts");
        return b.build();
    }

    static Topology sliding_and_session_emit_on_window_close() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> grouped = b.<String, String>stream("visits").groupByKey();
        grouped.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(30)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .reduce((a, v) -> a + v)
            .toStream()
            .to("sliding-visits");
        grouped.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMinutes(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count()
            .toStream()
            .to("visit-sessions");
        return b.build();
    }

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

    static final class Nothing implements org.apache.kafka.streams.processor.api.Processor<String, String, String, String> {
        @Override
        public void process(org.apache.kafka.streams.processor.api.Record<String, String> record) { }
    }

    static final class NothingFixedKey implements org.apache.kafka.streams.processor.api.FixedKeyProcessor<String, String, String> {
        @Override
        public void process(org.apache.kafka.streams.processor.api.FixedKeyRecord<String, String> record) { }
    }

    static Topology processor_api_named_then_count() {
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(org.apache.kafka.streams.state.Stores.keyValueStoreBuilder(
            org.apache.kafka.streams.state.Stores.inMemoryKeyValueStore("last-seen"),
            org.apache.kafka.common.serialization.Serdes.String(), org.apache.kafka.common.serialization.Serdes.String()));
        KStream<String, String> processed = b.<String, String>stream("orders")
            .<String, String>process(Nothing::new, Named.as("dedup"), "last-seen");
        processed.<String>processValues(NothingFixedKey::new, "last-seen")
            .to("audited");
        processed.groupByKey()
            .count()
            .toStream()
            .to("order-counts", Produced.with(org.apache.kafka.common.serialization.Serdes.String(),
                                              org.apache.kafka.common.serialization.Serdes.Long()));
        return b.build();
    }

    static Topology processor_api_low_level_wiring() {
        org.apache.kafka.common.serialization.Serde<String> strings = org.apache.kafka.common.serialization.Serdes.String();
        Topology t = new Topology();
        t.addSource("orders-source", "orders");
        t.addSource("payments-source", "payments", "refunds");
        t.addProcessor("match", Nothing::new, "orders-source", "payments-source");
        t.addProcessor("audit", Nothing::new, "match");
        t.addStateStore(org.apache.kafka.streams.state.Stores.keyValueStoreBuilder(
            org.apache.kafka.streams.state.Stores.persistentKeyValueStore("pending"), strings, strings), "match");
        t.addStateStore(org.apache.kafka.streams.state.Stores.keyValueStoreBuilder(
            org.apache.kafka.streams.state.Stores.inMemoryKeyValueStore("audit-log"), strings, strings));
        t.connectProcessorAndStateStores("audit", "audit-log", "pending");
        t.addSink("matched-sink", "matched", "match");
        t.addSink("audit-sink", "audited", "audit", "match");
        t.addSource("other-source", "other");
        t.addProcessor("lonely", Nothing::new, "other-source");
        t.addSink("lonely-sink", "lonely-out", "lonely");
        return t;
    }

    /** A supplier that brings its own store (ConnectedStoreProvider.stores()). */
    static final class WithStores implements org.apache.kafka.streams.processor.api.ProcessorSupplier<String, String, String, String> {
        @Override
        public org.apache.kafka.streams.processor.api.Processor<String, String, String, String> get() {
            return new Nothing();
        }

        @Override
        public java.util.Set<org.apache.kafka.streams.state.StoreBuilder<?>> stores() {
            return java.util.Set.of(org.apache.kafka.streams.state.Stores.keyValueStoreBuilder(
                org.apache.kafka.streams.state.Stores.persistentKeyValueStore("own-store"),
                org.apache.kafka.common.serialization.Serdes.String(), org.apache.kafka.common.serialization.Serdes.String()));
        }
    }

    static Topology processor_api_supplier_with_stores() {
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(org.apache.kafka.streams.state.Stores.keyValueStoreBuilder(
            org.apache.kafka.streams.state.Stores.inMemoryKeyValueStore("shared"),
            org.apache.kafka.common.serialization.Serdes.String(), org.apache.kafka.common.serialization.Serdes.String()));
        b.<String, String>stream("events").process(new WithStores(), "shared").to("processed");
        return b.build();
    }

    static Topology processor_api_low_level_supplier_with_stores() {
        return new Topology()
            .addSource("src", "more-events")
            .addProcessor("own", new WithStores(), "src")
            .addSink("sink", "more-processed", "own");
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

    static Topology global_table_join() {
        StreamsBuilder b = new StreamsBuilder();
        GlobalKTable<String, String> profiles = b.globalTable("profiles");
        b.<String, String>stream("clicks")
            .join(profiles, (k, v) -> field(v, 0), (click, profile) -> click + "," + profile)
            .to("enriched");
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

    static Topology wallclock_timestamps_then_windowed_count() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("events", Consumed.with(new WallclockTimestampExtractor()))
            .groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1))).count()
            .toStream().to("events-per-minute");
        return b.build();
    }

    // ---- cogroup (CogroupExamples is the equivalence test's) -------------------------------

    static Topology cogroup_two_streams() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> clicks = b.<String, String>stream("clicks").groupByKey();
        KGroupedStream<String, String> views = b.<String, String>stream("views").groupByKey();
        clicks.<String>cogroup((k, v, agg) -> agg + "c")
            .cogroup(views, (k, v, agg) -> agg + "v")
            .aggregate(() -> "")
            .toStream()
            .to("activity");
        return b.build();
    }

    static Topology cogroup_three_with_repartitions_named() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> clicks = b.<String, String>stream("clicks").groupByKey();
        KGroupedStream<String, String> views = b.<String, String>stream("views").groupBy((k, v) -> field(v, 0));
        KGroupedStream<String, String> orders = b.<String, String>stream("orders")
            .groupBy((k, v) -> field(v, 0), Grouped.as("orders-by-user"));
        clicks.<String>cogroup((k, v, agg) -> agg + "c")
            .cogroup(views, (k, v, agg) -> agg + "v")
            .cogroup(orders, (k, v, agg) -> agg + "o")
            .aggregate(() -> "", Named.as("activity"),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("activity-store"))
            .toStream(Named.as("activity-changes"))
            .to("activity");
        return b.build();
    }

    static Topology cogroup_windowed_twice_shares_its_repartition() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> clicks = b.<String, String>stream("clicks").groupByKey();
        KGroupedStream<String, String> views = b.<String, String>stream("views").groupBy((k, v) -> field(v, 0));
        CogroupedKStream<String, String> cogrouped = clicks.<String>cogroup((k, v, agg) -> agg + "c")
            .cogroup(views, (k, v, agg) -> agg + "v");
        cogrouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(10)))
            .aggregate(() -> "")
            .toStream()
            .to("per-minute");
        cogrouped.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(30)))
            .aggregate(() -> "", Named.as("sliding"),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("sliding-store"))
            .toStream()
            .to("sliding");
        return b.build();
    }

    static Topology cogroup_session_windowed() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> clicks = b.<String, String>stream("clicks").groupByKey();
        KGroupedStream<String, String> views = b.<String, String>stream("views").groupByKey();
        clicks.<String>cogroup((k, v, agg) -> agg + "c")
            .cogroup(views, (k, v, agg) -> agg + "v")
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMinutes(5), Duration.ofSeconds(30)))
            .aggregate(() -> "", (k, a, b2) -> a + b2, Named.as("visits"))
            .toStream()
            .to("visits");
        return b.build();
    }
}
