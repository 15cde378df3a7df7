package kstreams.oracle;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Supplier;

import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.TimeWindows;

import static kstreams.oracle.CatalogRow.field;

/**
 * Topologies built with topology.optimization: the repartition topics merged per key-changing
 * operation, and the cases Kafka Streams leaves alone.
 *
 * Entries of TopologyCatalog, built with Kafka Streams' own DSL and builder.build(props); their Python
 * twins, under the same names, are in tests/topology_catalog_optimization.py. Keep the two in step.
 */
final class OptimizationCatalog {
    private OptimizationCatalog() {}

    static Map<String, Supplier<Topology>> topologies() {
        Map<String, Supplier<Topology>> topologies = new LinkedHashMap<>();
        topologies.put("optimized_repartition_optimizing_test", OptimizationCatalog::optimized_repartition_optimizing_test);
        topologies.put("optimized_two_aggregations_of_one_rekeyed_stream",
                       OptimizationCatalog::optimized_two_aggregations_of_one_rekeyed_stream);
        topologies.put("optimized_single_grouping_gets_renamed_nodes",
                       OptimizationCatalog::optimized_single_grouping_gets_renamed_nodes);
        topologies.put("optimized_groupeds_with_different_names", OptimizationCatalog::optimized_groupeds_with_different_names);
        topologies.put("optimized_rekeyed_stream_joined_with_table_and_aggregated",
                       OptimizationCatalog::optimized_rekeyed_stream_joined_with_table_and_aggregated);
        topologies.put("optimized_group_by_counted_and_reduced", OptimizationCatalog::optimized_group_by_counted_and_reduced);
        topologies.put("optimized_named_grouped_reused", OptimizationCatalog::optimized_named_grouped_reused);
        topologies.put("optimized_value_change_keeps_its_own_topic",
                       OptimizationCatalog::optimized_value_change_keeps_its_own_topic);
        topologies.put("optimized_repartition_is_not_merged", OptimizationCatalog::optimized_repartition_is_not_merged);
        topologies.put("optimized_merge_of_two_rekeyed_streams", OptimizationCatalog::optimized_merge_of_two_rekeyed_streams);
        topologies.put("optimized_stream_stream_join_of_rekeyed_streams",
                       OptimizationCatalog::optimized_stream_stream_join_of_rekeyed_streams);
        topologies.put("optimized_cogroup_of_a_rekeyed_stream", OptimizationCatalog::optimized_cogroup_of_a_rekeyed_stream);
        // Kafka Streams' StreamsGraphTest.
        topologies.put("optimized_nested_key_changing_nodes", OptimizationCatalog::optimized_nested_key_changing_nodes);
        topologies.put("optimized_value_changes_after_the_key_change_keep_both_topics",
                       OptimizationCatalog::optimized_value_changes_after_the_key_change_keep_both_topics);
        topologies.put("optimized_several_merge_nodes_with_a_common_key_changer",
                       OptimizationCatalog::optimized_several_merge_nodes_with_a_common_key_changer);
        topologies.put("optimized_repartition_operations_are_kept", OptimizationCatalog::optimized_repartition_operations_are_kept);
        topologies.put("reused_table_source_describe_unchanged", OptimizationCatalog::reused_table_source_describe_unchanged);
        return topologies;
    }

    static Properties optimization(String value) {
        Properties props = new Properties();
        props.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, value);
        return props;
    }

    static final Properties ALL = optimization(StreamsConfig.OPTIMIZE);
    static final Properties MERGE_ONLY = optimization(StreamsConfig.MERGE_REPARTITION_TOPICS);

    static Topology optimized_repartition_optimizing_test() {
        Map<String, String> topics = new LinkedHashMap<>();
        for (String name : List.of("input", "processed", "counts", "aggregates", "reduced", "joined")) {
            topics.put(name, name);
        }
        return RepartitionMergeExamples.repartitionOptimizingTest(topics);
    }

    static Topology optimized_two_aggregations_of_one_rekeyed_stream() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> byUser = b.<String, String>stream("orders").selectKey((k, v) -> field(v, 0));
        byUser.groupByKey().count().toStream().to("orders-per-user");
        byUser.groupByKey().reduce((a, c) -> c).toStream().to("last-order-per-user");
        return b.build(ALL);
    }

    static Topology optimized_single_grouping_gets_renamed_nodes() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("rows").selectKey((k, v) -> field(v, 0)).groupByKey().count().toStream().to("counts");
        return b.build(MERGE_ONLY);
    }

    static Topology optimized_groupeds_with_different_names() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> byCountry = b.<String, String>stream("users").map((k, v) -> KeyValue.pair(field(v, 1), v));
        byCountry.groupByKey(Grouped.as("first-name")).count().toStream().to("users-per-country");
        byCountry.groupByKey(Grouped.as("second-name")).reduce((a, c) -> c).toStream().to("last-user");
        return b.build(ALL);
    }

    static Topology optimized_rekeyed_stream_joined_with_table_and_aggregated() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> users = b.table("users");
        KStream<String, String> byUser = b.<String, String>stream("clicks").selectKey((k, v) -> field(v, 0));
        byUser.join(users, (c, u) -> c + "|" + u).to("clicks-with-user");
        byUser.leftJoin(users, (c, u) -> c + "|" + u).to("clicks-maybe-with-user");
        byUser.groupByKey().count().toStream().to("clicks-per-user");
        return b.build(ALL);
    }

    static Topology optimized_group_by_counted_and_reduced() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> grouped = b.<String, String>stream("users").groupBy((k, v) -> field(v, 1));
        grouped.count().toStream().to("users-per-country");
        grouped.reduce((a, c) -> c).toStream().to("last-user-per-country");
        return b.build(ALL);
    }

    static Topology optimized_named_grouped_reused() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> grouped = b.<String, String>stream("users")
            .selectKey((k, v) -> field(v, 1)).groupByKey(Grouped.as("by-country"));
        grouped.count().toStream().to("users-per-country");
        grouped.reduce((a, c) -> c).toStream().to("last-user-per-country");
        return b.build(ALL);
    }

    static Topology optimized_value_change_keeps_its_own_topic() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> byUser = b.<String, String>stream("orders").selectKey((k, v) -> field(v, 0));
        byUser.mapValues(v -> field(v, 2)).groupByKey().reduce((a, c) -> c).toStream().to("last-amount");
        byUser.groupByKey().count().toStream().to("orders-per-user");
        byUser.filter((k, v) -> true).groupByKey().reduce((a, c) -> c).toStream().to("last-order");
        return b.build(ALL);
    }

    static Topology optimized_repartition_is_not_merged() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> byUser = b.<String, String>stream("orders").selectKey((k, v) -> field(v, 0));
        byUser.repartition(Repartitioned.as("by-user")).groupByKey().count().toStream().to("counted-after");
        byUser.groupByKey().count().toStream().to("orders-per-user");
        byUser.toTable().toStream().to("last-order");
        return b.build(ALL);
    }

    static Topology optimized_merge_of_two_rekeyed_streams() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> a = b.<String, String>stream("a").selectKey((k, v) -> field(v, 0));
        KStream<String, String> c = b.<String, String>stream("c").map((k, v) -> KeyValue.pair(field(v, 0), v));
        KStream<String, String> merged = a.merge(c);
        merged.groupByKey().count().toStream().to("merged-counts");
        merged.groupByKey().reduce((x, y) -> y).toStream().to("merged-last");
        return b.build(ALL);
    }

    static Topology optimized_stream_stream_join_of_rekeyed_streams() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> left = b.<String, String>stream("left").selectKey((k, v) -> field(v, 0));
        KStream<String, String> right = b.<String, String>stream("right").selectKey((k, v) -> field(v, 0));
        left.join(right, (x, y) -> x + "|" + y, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(1)))
            .to("joined");
        left.groupByKey().count().toStream().to("left-counts");
        return b.build(ALL);
    }

    static Topology optimized_cogroup_of_a_rekeyed_stream() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.<String, String>stream("clicks").selectKey((k, v) -> field(v, 0));
        KStream<String, String> views = b.stream("views");
        clicks.groupByKey().<String>cogroup((k, v, agg) -> agg + "c")
            .cogroup(views.groupByKey(), (k, v, agg) -> agg + "v")
            .aggregate(() -> "").toStream().to("activity");
        clicks.groupByKey().count().toStream().to("click-counts");
        return b.build(ALL);
    }

    // ---- Kafka Streams' StreamsGraphTest ----------------------------------------------------------

    static Topology optimized_nested_key_changing_nodes() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> changed = b.<String, String>stream("inputTopic").selectKey((k, v) -> v.substring(0, 5));
        changed.groupByKey(Grouped.as("count-repartition")).count(Materialized.as("count-store"))
            .toStream().to("count-topic");
        changed.groupByKey(Grouped.as("windowed-repartition"))
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofSeconds(5)))
            .count(Materialized.as("windowed-count-store"))
            .toStream().map((wk, v) -> KeyValue.pair(wk.key(), v)).to("windowed-count");
        return b.build(ALL);
    }

    static Topology optimized_value_changes_after_the_key_change_keep_both_topics() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> mapped = b.<String, String>stream("input").selectKey((k, v) -> k + v);
        mapped.mapValues(v -> v.toUpperCase()).groupByKey().count().toStream().to("output");
        mapped.flatMapValues(v -> List.of(v.split("\\s"))).groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofSeconds(5))).count().toStream().to("windowed-output");
        return b.build(ALL);
    }

    static Topology optimized_several_merge_nodes_with_a_common_key_changer() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> parent = b.<String, String>stream("input_topic").selectKey((k, v) -> k + v);
        KStream<String, String> first = parent.mapValues(v -> v + "1");
        KStream<String, String> second = parent.mapValues(v -> v + "2");
        KStream<String, String> third = parent.mapValues(v -> v + "3");
        first.merge(second).merge(third).to("output_topic");
        return b.build(ALL);
    }

    static Topology optimized_repartition_operations_are_kept() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> rekeyed = b.<String, String>stream("input").selectKey((k, v) -> k + v);
        rekeyed.repartition().groupByKey().count().toStream().to("output");
        rekeyed.repartition().groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofSeconds(5)))
            .count().toStream().to("windowed-output");
        return b.build(ALL);
    }

    static Topology reused_table_source_describe_unchanged() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>table("users", Materialized.as("users-store")).toStream().to("users-out");
        return b.build(optimization(StreamsConfig.REUSE_KTABLE_SOURCE_TOPICS));
    }
}
