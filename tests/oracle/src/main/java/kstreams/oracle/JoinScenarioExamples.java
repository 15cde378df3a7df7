package kstreams.oracle;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * Kafka Streams' own join test scenarios (its join integration tests and the join processors' unit
 * tests), each on topics of its own, built with topology.optimization=single.store.self.join (as testSelfJoin
 * builds its self-join), run by Kafka Streams itself without the record cache until every input topic is
 * consumed to its end; prints {"describe": ...}.
 *
 * Args: bootstrap applicationId stateDir, then the topics of INPUTS and OUTPUTS in that order.
 *
 * The Python twin is join_scenario_examples() in tests/join_scenarios_topology.py, whose docstring
 * names the test each scenario follows; keep the two in step.
 */
public final class JoinScenarioExamples {
    private JoinScenarioExamples() {}

    static final List<String> INPUTS = List.of("alone", "mi-l", "mi-r", "i3-a", "i3-b", "i3-c", "l3-a", "l3-b",
        "l3-c", "o3-a", "o3-b", "o3-c", "edge-l", "edge-r", "st-s", "st-t", "tt-l", "tt-r", "v-l", "v-r", "sg-s", "sg-t", "vo-l", "vo-r", "gt", "gs",
        "self-in");
    static final List<String> OUTPUTS = List.of("self", "multi-inner", "multi-outer", "inner3", "left3", "outer3",
        "edge-inner", "edge-left", "edge-outer", "st-inner", "st-left", "sg-inner", "sg-left", "tt-inner2", "tt-left2",
        "tt-outer2", "v-outer", "vl-left", "gt-inner", "gt-left", "old-left",
        "old-outer", "self-asym", "self-left");
    static final Duration GRACE = Duration.ofSeconds(2);
    static final JoinWindows WIDE = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(10), Duration.ofHours(24));
    static final JoinWindows NARROW = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(1));
    /** The asymmetric self-join's: 1 s before, 0.5 s after, 0.2 s grace. */
    static final JoinWindows ASYMMETRIC = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(1), Duration.ofMillis(200))
        .after(Duration.ofMillis(500));
    static final ValueJoiner<String, String, String> JOINED = (x, y) -> x + "-" + y;
    /** The global-table tests' key mapper: the value's second comma-separated part (null: no match). */
    static final KeyValueMapper<String, String, String> FOREIGN_KEY = (key, value) -> {
        String[] parts = value == null ? new String[0] : value.split(",");
        return parts.length > 1 ? parts[1] : null;
    };

    static Materialized<String, String, KeyValueStore<Bytes, byte[]>> uncached(String store) {
        return Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(store).withCachingDisabled();
    }

    static Materialized<String, String, KeyValueStore<Bytes, byte[]>> versioned(String store) {
        return Materialized.as(Stores.persistentVersionedKeyValueStore(store, Duration.ofSeconds(10)));
    }

    /** The deprecated factory, still in 4.3.1: no spurious-result fix. */
    @SuppressWarnings("deprecation")
    static JoinWindows oldApi(Duration timeDifference) {
        return JoinWindows.of(timeDifference);
    }

    static void out(KStream<String, String> stream, Map<String, String> topics, String name) {
        stream.processValues(StampValues::new).to(topics.get(name));
    }

    @SuppressWarnings("deprecation")  // JoinWindows.grace
    static Topology joinScenarioExamples(Map<String, String> t) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> alone = builder.stream(t.get("alone"));
        out(alone.join(alone, JOINED, WIDE), t, "self");
        KStream<String, String> left = builder.stream(t.get("mi-l"));
        KStream<String, String> right = builder.stream(t.get("mi-r"));
        out(left.join(right, JOINED, WIDE).join(right, JOINED, WIDE), t, "multi-inner");
        out(left.leftJoin(right, JOINED, NARROW).outerJoin(right, JOINED, NARROW), t, "multi-outer");
        out(left.outerJoin(right, JOINED, oldApi(Duration.ofSeconds(3))), t, "old-outer");
        KStream<String, String> a = builder.stream(t.get("i3-a"));
        KStream<String, String> b = builder.stream(t.get("i3-b"));
        KStream<String, String> c = builder.stream(t.get("i3-c"));
        out(a.join(b, JOINED, WIDE).join(c, JOINED, WIDE), t, "inner3");
        a = builder.stream(t.get("l3-a"));
        b = builder.stream(t.get("l3-b"));
        c = builder.stream(t.get("l3-c"));
        out(a.leftJoin(b, JOINED, NARROW).leftJoin(c, JOINED, NARROW), t, "left3");
        a = builder.stream(t.get("o3-a"));
        b = builder.stream(t.get("o3-b"));
        c = builder.stream(t.get("o3-c"));
        out(a.outerJoin(b, JOINED, NARROW).outerJoin(c, JOINED, NARROW), t, "outer3");
        left = builder.stream(t.get("edge-l"));
        right = builder.stream(t.get("edge-r"));
        out(left.join(right, JOINED, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(100))), t, "edge-inner");
        out(left.leftJoin(right, JOINED, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(100))
            .after(Duration.ZERO)), t, "edge-left");
        out(left.outerJoin(right, JOINED, JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(100),
            Duration.ofMillis(50)).before(Duration.ZERO)), t, "edge-outer");
        out(left.leftJoin(right, JOINED, oldApi(Duration.ofMillis(100)).grace(Duration.ofMillis(50))), t, "old-left");
        KStream<String, String> stream = builder.stream(t.get("st-s"));
        KTable<String, String> table = builder.table(t.get("st-t"), uncached("st-t-store"));
        out(stream.join(table, JOINED), t, "st-inner");
        out(stream.leftJoin(table, JOINED), t, "st-left");
        stream = builder.stream(t.get("sg-s"));
        table = builder.table(t.get("sg-t"), versioned("sg-t-store"));
        out(stream.join(table, JOINED, Joined.<String, String, String>with(null, null, null).withGracePeriod(GRACE)),
            t, "sg-inner");
        out(stream.leftJoin(table, JOINED, Joined.<String, String, String>with(null, null, null).withGracePeriod(GRACE)),
            t, "sg-left");
        KTable<String, String> leftTable = builder.table(t.get("tt-l"), uncached("tt-l-store"));
        KTable<String, String> rightTable = builder.table(t.get("tt-r"), uncached("tt-r-store"));
        out(leftTable.join(rightTable, JOINED).join(rightTable, JOINED, uncached("tt-inner2-store")).toStream(),
            t, "tt-inner2");
        out(leftTable.leftJoin(rightTable, JOINED).leftJoin(rightTable, JOINED, uncached("tt-left2-store"))
            .toStream(), t, "tt-left2");
        out(leftTable.outerJoin(rightTable, JOINED).outerJoin(rightTable, JOINED, uncached("tt-outer2-store"))
            .toStream(), t, "tt-outer2");
        KTable<String, String> versionedLeft = builder.table(t.get("v-l"), versioned("v-l-store"));
        KTable<String, String> versionedRight = builder.table(t.get("v-r"), versioned("v-r-store"));
        out(versionedLeft.outerJoin(versionedRight, JOINED, uncached("v-outer-store")).toStream(), t, "v-outer");
        versionedLeft = builder.table(t.get("vo-l"), versioned("vo-l-store"));
        KTable<String, String> plainRight = builder.table(t.get("vo-r"), uncached("vo-r-store"));
        out(versionedLeft.leftJoin(plainRight, JOINED, uncached("vl-left-store")).toStream(), t, "vl-left");
        GlobalKTable<String, String> globalTable = builder.globalTable(t.get("gt"));
        stream = builder.stream(t.get("gs"));
        out(stream.join(globalTable, FOREIGN_KEY, JOINED), t, "gt-inner");
        out(stream.leftJoin(globalTable, FOREIGN_KEY, JOINED), t, "gt-left");
        KStream<String, String> mine = builder.stream(t.get("self-in"));
        out(mine.join(mine, JOINED, ASYMMETRIC), t, "self-asym");
        out(mine.leftJoin(mine, JOINED, NARROW), t, "self-left");
        // As testSelfJoin builds it: the self-joins become one processor each (nothing else changes).
        Properties optimization = new Properties();
        optimization.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, StreamsConfig.SINGLE_STORE_SELF_JOIN);
        return builder.build(optimization);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> topics = new HashMap<>();
        for (int i = 0; i < INPUTS.size(); i++) {
            topics.put(INPUTS.get(i), args[3 + i]);
        }
        for (int i = 0; i < OUTPUTS.size(); i++) {
            topics.put(OUTPUTS.get(i), args[3 + INPUTS.size() + i]);
        }
        Topology topology = joinScenarioExamples(topics);
        Properties props = KafkaStreamsRuns.properties(args[0], args[1], args[2]);
        // As the scenarios' tests run them: no record cache, so every update reaches the outputs.
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        // All input is written before it starts: 0 still merges a task's partitions by timestamp.
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 0L);
        // Left/outer joins: emit non-joined records as soon as stream time allows, not at most once
        // per second of wall-clock time (which would depend on processing speed).
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
        // The global table's topic is read by the global thread, which commits no offsets: not watched.
        List<String> inputs = INPUTS.stream().filter(input -> !input.equals("gt")).map(topics::get).toList();
        KafkaStreamsRuns.runUntilConsumed(topology, props, () -> inputs, Duration.ofMinutes(5),
            streams -> KafkaStreamsRuns.describeJson(topology));
    }
}
