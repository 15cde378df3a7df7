package kstreams.oracle;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.function.Supplier;

import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.ValueJoiner;

/**
 * Stream-stream joins built with topology.optimization naming the single-store self-join
 * (InternalStreamsBuilderTest's self-join cases, KStreamKStreamSelfJoinTest, SelfJoinUpgradeIntegrationTest):
 * the ones Kafka Streams rewrites into one self-join processor and the ones it leaves alone.
 *
 * Entries of TopologyCatalog, each built with build(props); their Python twins, under the same names,
 * are in tests/topology_catalog_self_joins.py. Keep the two in step.
 */
final class SelfJoinCatalog {
    private SelfJoinCatalog() {}

    private static final JoinWindows WINDOW = JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(100));
    private static final ValueJoiner<String, String, String> CONCAT = (a, b) -> a + b;

    static Map<String, Supplier<Topology>> topologies() {
        Map<String, Supplier<Topology>> topologies = new LinkedHashMap<>();
        // Rewritten into one self-join processor.
        topologies.put("self_join_single_stream_optimized", SelfJoinCatalog::self_join_single_stream_optimized);
        topologies.put("self_join_only_setting_optimized", SelfJoinCatalog::self_join_only_setting_optimized);
        topologies.put("self_join_two_streams_same_topic_optimized", SelfJoinCatalog::self_join_two_streams_same_topic_optimized);
        topologies.put("self_join_of_merged_streams_optimized", SelfJoinCatalog::self_join_of_merged_streams_optimized);
        topologies.put("self_join_then_join_third_stream_optimized", SelfJoinCatalog::self_join_then_join_third_stream_optimized);
        topologies.put("self_join_then_join_same_source_optimized", SelfJoinCatalog::self_join_then_join_same_source_optimized);
        topologies.put("two_self_joins_merged_optimized", SelfJoinCatalog::two_self_joins_merged_optimized);
        topologies.put("two_self_joins_same_source_optimized", SelfJoinCatalog::two_self_joins_same_source_optimized);
        topologies.put("self_join_with_filter_sibling_optimized", SelfJoinCatalog::self_join_with_filter_sibling_optimized);
        topologies.put("self_join_named_stream_joined_optimized", SelfJoinCatalog::self_join_named_stream_joined_optimized);
        topologies.put("self_join_asymmetric_window_optimized", SelfJoinCatalog::self_join_asymmetric_window_optimized);
        topologies.put("self_left_and_outer_joins_optimized", SelfJoinCatalog::self_left_and_outer_joins_optimized);
        // Left as two window stores.
        topologies.put("self_join_filter_between_not_optimized", SelfJoinCatalog::self_join_filter_between_not_optimized);
        topologies.put("self_join_map_values_between_not_optimized", SelfJoinCatalog::self_join_map_values_between_not_optimized);
        topologies.put("join_of_two_sources_not_optimized", SelfJoinCatalog::join_of_two_sources_not_optimized);
        topologies.put("self_join_other_settings_not_optimized", SelfJoinCatalog::self_join_other_settings_not_optimized);
        return topologies;
    }

    private static Properties optimization(String value) {
        Properties props = new Properties();
        props.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, value);
        return props;
    }

    private static Topology all(StreamsBuilder b) {
        return b.build(optimization(StreamsConfig.OPTIMIZE));
    }

    // ---- Rewritten into one self-join processor ---------------------------------------------

    static Topology self_join_single_stream_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> stream = b.stream("t1");
        stream.join(stream, CONCAT, WINDOW).to("out");
        return all(b);
    }

    static Topology self_join_only_setting_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> stream = b.stream("t1");
        stream.join(stream, CONCAT, WINDOW).to("out");
        return b.build(optimization(StreamsConfig.SINGLE_STORE_SELF_JOIN));
    }

    static Topology self_join_two_streams_same_topic_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("t1").join(b.<String, String>stream("t1"), CONCAT, WINDOW).to("out");
        return all(b);
    }

    static Topology self_join_of_merged_streams_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> merged = b.<String, String>stream("t1").merge(b.stream("t2"));
        merged.join(merged, CONCAT, WINDOW).to("out");
        return all(b);
    }

    static Topology self_join_then_join_third_stream_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("t1").join(b.<String, String>stream("t1"), CONCAT, WINDOW)
            .join(b.<String, String>stream("t3"), CONCAT, WINDOW).to("out");
        return all(b);
    }

    static Topology self_join_then_join_same_source_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("t1").join(b.<String, String>stream("t1"), CONCAT, WINDOW)
            .join(b.<String, String>stream("t1"), CONCAT, WINDOW).to("out");
        return all(b);
    }

    static Topology two_self_joins_merged_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> first = b.<String, String>stream("t1").join(b.<String, String>stream("t1"), CONCAT, WINDOW);
        KStream<String, String> second = b.<String, String>stream("t2").join(b.<String, String>stream("t2"), CONCAT, WINDOW);
        first.merge(second).to("out");
        return all(b);
    }

    static Topology two_self_joins_same_source_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("t1").join(b.<String, String>stream("t1"), CONCAT, WINDOW).to("out1");
        b.<String, String>stream("t1").join(b.<String, String>stream("t1"), CONCAT, WINDOW).to("out2");
        return all(b);
    }

    static Topology self_join_with_filter_sibling_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> stream1 = b.stream("t1");
        KStream<String, String> stream2 = b.stream("t1");
        stream1.filter((k, v) -> v != null).to("filtered");
        stream1.join(stream2, CONCAT, WINDOW).to("out");
        return all(b);
    }

    static Topology self_join_named_stream_joined_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> stream = b.stream("t1");
        stream.join(stream, CONCAT, JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(11), Duration.ofSeconds(10)),
                    StreamJoined.<String, String, String>as("pair-store").withName("pairs")).to("out");
        return all(b);
    }

    static Topology self_join_asymmetric_window_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> stream = b.stream("t1");
        stream.join(stream, CONCAT, WINDOW.after(Duration.ofMillis(30))).to("out");
        return all(b);
    }

    static Topology self_left_and_outer_joins_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> stream = b.stream("t1");
        stream.leftJoin(stream, CONCAT, WINDOW).to("left-out");
        stream.outerJoin(stream, CONCAT, WINDOW).to("outer-out");
        return all(b);
    }

    // ---- Left as two window stores ----------------------------------------------------------

    static Topology self_join_filter_between_not_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("t1").filter((k, v) -> v != null).join(b.<String, String>stream("t1"), CONCAT, WINDOW)
            .to("out");
        return all(b);
    }

    static Topology self_join_map_values_between_not_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("t1").mapValues(v -> v).join(b.<String, String>stream("t1"), CONCAT, WINDOW).to("out");
        return all(b);
    }

    static Topology join_of_two_sources_not_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("t1").join(b.<String, String>stream("t2"), CONCAT, WINDOW).to("out");
        return all(b);
    }

    static Topology self_join_other_settings_not_optimized() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> stream = b.stream("t1");
        stream.join(stream, CONCAT, WINDOW).to("out");
        return b.build(optimization(StreamsConfig.REUSE_KTABLE_SOURCE_TOPICS + "," + StreamsConfig.MERGE_REPARTITION_TOPICS));
    }
}
