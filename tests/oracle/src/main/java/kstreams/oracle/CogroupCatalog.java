package kstreams.oracle;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.CogroupedKStream;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

import static kstreams.oracle.CatalogRow.field;

/**
 * cogroup, plain and windowed.
 *
 * Entries of TopologyCatalog, built with Kafka Streams' own DSL; their Python twins, under the same
 * names, are in tests/topology_catalog_cogroup.py. Keep the two in step.
 */
final class CogroupCatalog {
    private CogroupCatalog() {}

    static Map<String, Supplier<Topology>> topologies() {
        Map<String, Supplier<Topology>> topologies = new LinkedHashMap<>();
        // cogroup (tests/test_equivalence_cogroup.py runs the last one).
        topologies.put("cogroup_two_streams", CogroupCatalog::cogroup_two_streams);
        topologies.put("cogroup_three_with_repartitions_named", CogroupCatalog::cogroup_three_with_repartitions_named);
        topologies.put("cogroup_windowed_twice_shares_its_repartition",
                       CogroupCatalog::cogroup_windowed_twice_shares_its_repartition);
        topologies.put("cogroup_session_windowed", CogroupCatalog::cogroup_session_windowed);
        topologies.put("cogroup_rekeyed_grouped_reused_in_two_cogroups_of_the_same_streams",
                       CogroupCatalog::cogroup_rekeyed_grouped_reused_in_two_cogroups_of_the_same_streams);
        topologies.put("cogroup_rekeyed_grouped_reused_in_different_cogroups",
                       CogroupCatalog::cogroup_rekeyed_grouped_reused_in_different_cogroups);
        topologies.put("cogroup_rekeyed_grouped_reused_by_an_aggregate",
                       CogroupCatalog::cogroup_rekeyed_grouped_reused_by_an_aggregate);
        topologies.put("cogroup_aggregated_twice_with_a_named_grouping",
                       CogroupCatalog::cogroup_aggregated_twice_with_a_named_grouping);
        topologies.put("cogroup_examples_of_the_equivalence_test", () -> CogroupExamples.cogroupExamples(
            "clicks", "views", "orders", "refunds", "visits", "calls", "texts", "activity-out", "activity-windows-out",
            "final-windows-out", "sliding-out", "sessions-out", "final-filtered-windows-out", "session-bytes-out",
            "store-windows-out", "store-sessions-out", "merged-counts-out", "merged-windows-out"));
        return topologies;
    }

    // ---- cogroup (tests/test_equivalence_cogroup.py runs the last one) ----------------------

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

    // ---- Kafka Streams' own (CogroupedKStreamImplTest): a re-keyed grouped stream reused -------

    static Topology cogroup_rekeyed_grouped_reused_in_two_cogroups_of_the_same_streams() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> one = b.<String, String>stream("one").map((k, v) -> KeyValue.pair(v, k))
            .groupByKey();
        KGroupedStream<String, String> two = b.<String, String>stream("two").groupByKey();
        KTable<String, String> first = one.<String>cogroup((k, v, agg) -> agg + v)
            .cogroup(two, (k, v, agg) -> agg + v).aggregate(() -> "");
        KTable<String, String> second = one.<String>cogroup((k, v, agg) -> agg + v)
            .cogroup(two, (k, v, agg) -> agg + v).aggregate(() -> "");
        second.toStream().to("output");
        first.toStream().to("output-2");
        return b.build();
    }

    static Topology cogroup_rekeyed_grouped_reused_in_different_cogroups() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> one = b.<String, String>stream("one").map((k, v) -> KeyValue.pair(v, k))
            .groupByKey();
        KGroupedStream<String, String> two = b.<String, String>stream("two").groupByKey();
        KGroupedStream<String, String> three = b.<String, String>stream("three").groupByKey();
        one.<String>cogroup((k, v, agg) -> agg + v).cogroup(three, (k, v, agg) -> agg + v).aggregate(() -> "");
        one.<String>cogroup((k, v, agg) -> agg + v).cogroup(two, (k, v, agg) -> agg + v).aggregate(() -> "");
        return b.build();
    }

    static Topology cogroup_rekeyed_grouped_reused_by_an_aggregate() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> one = b.<String, String>stream("one").map((k, v) -> KeyValue.pair(v, k))
            .groupByKey();
        KGroupedStream<String, String> two = b.<String, String>stream("two").groupByKey();
        one.<String>cogroup((k, v, agg) -> agg + v).cogroup(two, (k, v, agg) -> agg + v).aggregate(() -> "");
        one.aggregate(() -> "", (k, v, agg) -> agg + v);
        return b.build();
    }

    static Topology cogroup_aggregated_twice_with_a_named_grouping() {
        StreamsBuilder b = new StreamsBuilder();
        CogroupedKStream<String, String> one = b.<String, String>stream("one").map((k, v) -> KeyValue.pair(v, k))
            .groupByKey(Grouped.as("foo")).cogroup((k, v, agg) -> agg + v);
        one.aggregate(() -> "");
        one.aggregate(() -> "");
        return b.build();
    }
}
