package kstreams.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Kafka Streams' joins of re-keyed streams (KStreamRepartitionJoinTest), each on topics of its own,
 * run by Kafka Streams itself without the record cache; prints {"describe": ...}.
 *
 * Args: bootstrap applicationId stateDir, then the topics of inputs() and OUTPUTS in that order.
 *
 * The Spark runner runs a join whose inputs are repartition topics once its upstream tasks are done
 * (all of them: both sides re-keyed too). So first a run fills every repartition topic while no join
 * task processes (RepartitionFirstRuns.fillRepartitionTopics, each join's sub-topology held back by
 * an empty topic of its own: BlockedJoins), then the app runs on all of it written, max.task.idle.ms 0
 * merging each join task's partitions by timestamp.
 *
 * The Python twin is rekeyed_join_examples() in tests/rekeyed_joins_topology.py, whose docstring names
 * the test each scenario follows; keep the two in step.
 */
public final class RekeyedJoinScenarioExamples {
    private RekeyedJoinScenarioExamples() {}

    static final List<String> SCENARIOS = List.of("map-one", "map-both", "map-map", "mv-select", "flat-map", "rhs",
        "left", "st-inner", "st-left", "rp-both");
    /** Two joins of one re-keyed stream with two others: "reuse" and "named". */
    static final List<String> SHARED = List.of("reuse", "named");
    static final List<String> OUTPUTS = outputs();
    static final Set<String> REKEYED = Set.of("map-one-1", "map-both-1", "map-both-2", "map-map-1", "mv-select-1",
        "mv-select-2", "flat-map-1", "rhs-2", "left-1", "left-2", "st-inner-1", "st-left-1", "rp-both-1", "rp-both-2",
        "reuse-1", "named-1");
    static final JoinWindows WINDOW = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(1));
    static final ValueJoiner<String, String, String> JOINED = (x, y) -> x + ":" + y;
    static final KeyValueMapper<String, String, KeyValue<String, String>> VALUE_AS_KEY =
        (key, value) -> KeyValue.pair(value, value);
    static final KeyValueMapper<String, String, KeyValue<String, String>> SAME_KEY = KeyValue::pair;

    static List<String> inputs() {
        List<String> inputs = new ArrayList<>();
        for (String scenario : SCENARIOS) {
            inputs.add(scenario + "-1");
            inputs.add(scenario + "-2");
        }
        for (String scenario : SHARED) {
            inputs.add(scenario + "-1");
            inputs.add(scenario + "-2");
            inputs.add(scenario + "-3");
        }
        return inputs;
    }

    static List<String> outputs() {
        List<String> outputs = new ArrayList<>(SCENARIOS);
        outputs.addAll(List.of("reuse", "named-first", "named-second"));
        return outputs;
    }

    static Materialized<String, String, KeyValueStore<Bytes, byte[]>> uncached(String store) {
        return Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(store).withCachingDisabled();
    }

    static void out(KStream<String, String> stream, Map<String, String> topics, String name) {
        stream.processValues(StampValues::new).to(topics.get(name));
    }

    static Topology rekeyedJoinExamples(Map<String, String> t) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> one = builder.stream(t.get("map-one-1"));
        KStream<String, String> two = builder.stream(t.get("map-one-2"));
        out(one.map(VALUE_AS_KEY).join(two, JOINED, WINDOW), t, "map-one");
        one = builder.stream(t.get("map-both-1"));
        two = builder.stream(t.get("map-both-2"));
        out(one.map(VALUE_AS_KEY).join(two.map(SAME_KEY), JOINED, WINDOW), t, "map-both");
        one = builder.stream(t.get("map-map-1"));
        two = builder.stream(t.get("map-map-2"));
        out(one.map((key, value) -> value == null ? KeyValue.<String, String>pair(null, null)
                                                   : KeyValue.pair(key + value, value))
            .map(VALUE_AS_KEY).join(two, JOINED, WINDOW), t, "map-map");
        one = builder.stream(t.get("mv-select-1"));
        two = builder.stream(t.get("mv-select-2"));
        out(one.mapValues(value -> value == null ? null : "v" + value)
            .selectKey((key, value) -> value == null ? null : value.substring(1))
            .join(two.mapValues(value -> value == null ? null : "v" + value).selectKey((key, value) -> key),
                  JOINED, WINDOW), t, "mv-select");
        one = builder.stream(t.get("flat-map-1"));
        two = builder.stream(t.get("flat-map-2"));
        out(one.flatMap((key, value) -> List.of(KeyValue.pair(value, value), KeyValue.pair(value, value + "x")))
            .join(two, JOINED, WINDOW), t, "flat-map");
        KStream<String, String> digits = builder.stream(t.get("rhs-1"));
        one = builder.stream(t.get("rhs-2"));
        out(digits.join(one.map(VALUE_AS_KEY), JOINED, WINDOW), t, "rhs");
        one = builder.stream(t.get("left-1"));
        two = builder.stream(t.get("left-2"));
        out(one.map(VALUE_AS_KEY).leftJoin(two.map(SAME_KEY), JOINED, WINDOW), t, "left");
        one = builder.stream(t.get("st-inner-1"));
        out(one.map(VALUE_AS_KEY).join(builder.table(t.get("st-inner-2"), uncached("st-inner-store")), JOINED), t,
            "st-inner");
        one = builder.stream(t.get("st-left-1"));
        out(one.map(VALUE_AS_KEY).leftJoin(builder.table(t.get("st-left-2"), uncached("st-left-store")), JOINED), t,
            "st-left");
        KStream<String, String> left = builder.stream(t.get("rp-both-1"));
        KStream<String, String> right = builder.stream(t.get("rp-both-2"));
        out(left.repartition(Repartitioned.as("rp-both-left"))
            .join(right.repartition(Repartitioned.<String, String>as("rp-both-right").withNumberOfPartitions(2)),
                  JOINED, WINDOW), t, "rp-both");
        one = builder.stream(t.get("reuse-1"));
        two = builder.stream(t.get("reuse-2"));
        KStream<String, String> three = builder.stream(t.get("reuse-3"));
        KStream<String, String> rekeyed = one.map(VALUE_AS_KEY);
        out(rekeyed.join(two, JOINED, WINDOW), t, "reuse");
        out(rekeyed.join(three, JOINED, WINDOW), t, "reuse");
        one = builder.stream(t.get("named-1"));
        two = builder.stream(t.get("named-2"));
        three = builder.stream(t.get("named-3"));
        rekeyed = one.map(VALUE_AS_KEY);
        out(rekeyed.join(two, JOINED, WINDOW, StreamJoined.<String, String, String>with(null, null, null)
            .withName("first-join")), t, "named-first");
        out(rekeyed.join(three, JOINED, WINDOW, StreamJoined.<String, String, String>with(null, null, null)
            .withName("second-join")), t, "named-second");
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        List<String> inputNames = inputs();
        Map<String, String> topics = new HashMap<>();
        for (int i = 0; i < inputNames.size(); i++) {
            topics.put(inputNames.get(i), args[3 + i]);
        }
        for (int i = 0; i < OUTPUTS.size(); i++) {
            topics.put(OUTPUTS.get(i), args[3 + inputNames.size() + i]);
        }
        List<String> inputs = inputNames.stream().map(topics::get).toList();
        Set<String> rekeyed = new HashSet<>();
        REKEYED.forEach(name -> rekeyed.add(topics.get(name)));
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, args[2]);
        // As the scenarios' tests run them: no record cache, so every update reaches the outputs.
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        // The left join: emit non-joined records as soon as stream time allows, not at most once per
        // second of wall-clock time (which would depend on processing speed).
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            BlockedJoins blocked = new BlockedJoins(admin, applicationId, 2);
            RepartitionFirstRuns.fillRepartitionTopics(admin, props,
                standIns -> blocked.of(rekeyedJoinExamples(on(topics, inputNames, standIns))), inputs, rekeyed);
            // All its input written before it starts: 0, not a wait, still merges all of it (KIP-695).
            props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 0L);
            Topology topology = rekeyedJoinExamples(topics);
            KafkaStreams streams = new KafkaStreams(topology, props);
            streams.start();
            try {
                KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId,
                    () -> RepartitionFirstRuns.withRepartitionTopics(admin, applicationId, inputs), Duration.ofMinutes(5));
                System.out.println(KafkaStreamsRuns.describeJson(topology));
            } finally {
                KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
            }
        }
    }

    /** {@code topics} with the inputs replaced by {@code standIns} (in {@code inputNames}' order). */
    static Map<String, String> on(Map<String, String> topics, List<String> inputNames, List<String> standIns) {
        Map<String, String> replaced = new HashMap<>(topics);
        for (int i = 0; i < inputNames.size(); i++) {
            replaced.put(inputNames.get(i), standIns.get(i));
        }
        return replaced;
    }
}
