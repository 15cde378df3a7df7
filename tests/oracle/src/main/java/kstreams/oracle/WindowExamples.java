package kstreams.oracle;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyWindowStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Windowed aggregations run by Kafka Streams itself against a real broker, until every input
 * topic is consumed to its end; then prints JSON {"dropped": n, "stores": {"store": {"key@start": "value"}}}
 * where n is the sum of the tasks' dropped-records-total.
 *
 * Args: bootstrap applicationId stateDir events slides outTumbling outHopping outSliding outRegrouped
 *       outUncached outShortKept outPlainKept
 *
 * The Python twin is window_examples() in tests/test_equivalence_windows.py; keep the two in step.
 */
public final class WindowExamples {
    private WindowExamples() {}

    static final List<String> STORES =
        List.of("tumbling-count", "hopping-agg", "sliding-reduce", "regrouped-count", "uncached-count");

    static Serde<Windowed<String>> windowed(long sizeMs) {
        return WindowedSerdes.timeWindowedSerdeFrom(String.class, sizeMs);
    }

    static StreamsBuilder windowExamples(String events, String slides, String outTumbling, String outHopping,
                                         String outSliding, String outRegrouped, String outUncached,
                                         String outShortKept, String outPlainKept) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> eventStream = builder.stream(events);
        eventStream.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("tumbling-count"))
            .toStream().to(outTumbling, Produced.with(windowed(10_000), Serdes.Long()));
        eventStream.groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofSeconds(10)).advanceBy(Duration.ofSeconds(5)))
            .aggregate(() -> "", (key, value, agg) -> agg + "," + value,
                       Materialized.<String, String, WindowStore<Bytes, byte[]>>as("hopping-agg"))
            .toStream().to(outHopping, Produced.with(windowed(10_000), Serdes.String()));
        eventStream.groupBy((key, value) -> key == null ? null : key.substring(0, 1))
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(20), Duration.ofHours(1)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("regrouped-count"))
            .toStream().to(outRegrouped, Produced.with(windowed(20_000), Serdes.Long()));
        eventStream.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("uncached-count").withCachingDisabled())
            .toStream().to(outUncached, Produced.with(windowed(10_000), Serdes.Long()));
        // A store from a supplier kept 11 s, less than its windows stay open (10 s + grace 5 s).
        eventStream.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5))
                .advanceBy(Duration.ofSeconds(2)))
            .count(Materialized.<String, Long>as(Stores.inMemoryWindowStore("short-kept-count", Duration.ofSeconds(11),
                Duration.ofSeconds(10), false)).withCachingDisabled())
            .toStream().to(outShortKept, Produced.with(windowed(10_000), Serdes.Long()));
        // A plain RocksDB supplier's store: it keeps no timestamps (the DSL reads each window back stamped -1).
        eventStream.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5))
                .advanceBy(Duration.ofSeconds(5)))
            .count(Materialized.<String, Long>as(Stores.persistentWindowStore("plain-kept-count", Duration.ofSeconds(15),
                Duration.ofSeconds(10), false)).withCachingDisabled())
            .toStream().processValues(() -> new WindowScenarioExamples.StampAny<Windowed<String>, Long>())
            .to(outPlainKept, Produced.with(windowed(10_000), Serdes.String()));
        builder.<String, String>stream(slides).groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(3)))
            .reduce((agg, value) -> agg + "+" + value,
                    Materialized.<String, String, WindowStore<Bytes, byte[]>>as("sliding-reduce"))
            .toStream().to(outSliding, Produced.with(windowed(5_000), Serdes.String()));
        return builder;
    }

    static Map<String, String> windowStoreContent(KafkaStreams streams, String store) {
        ReadOnlyWindowStore<String, Object> view = streams.store(
            StoreQueryParameters.fromNameAndType(store, QueryableStoreTypes.windowStore()));
        Map<String, String> content = new TreeMap<>();
        try (KeyValueIterator<Windowed<String>, Object> entries = view.all()) {
            while (entries.hasNext()) {
                KeyValue<Windowed<String>, Object> entry = entries.next();
                content.put(entry.key.key() + "@" + entry.key.window().start(), String.valueOf(entry.value));
            }
        }
        return content;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        List<String> inputs = List.of(args[3], args[4]);
        StreamsBuilder builder = windowExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9],
            args[10], args[11]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            // The repartition topic of the group_by too: its sub-topology must have consumed it.
            String repartition = applicationId + "-regrouped-count-repartition";
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () ->
                admin.listTopics().names().get().contains(repartition)
                    ? List.of(inputs.get(0), inputs.get(1), repartition) : null, Duration.ofMinutes(5));
            double dropped = 0;
            for (Map.Entry<MetricName, ? extends Metric> metric : streams.metrics().entrySet()) {
                if (metric.getKey().name().equals("dropped-records-total")
                        && metric.getKey().group().equals("stream-task-metrics")) {
                    dropped += ((Number) metric.getValue().metricValue()).doubleValue();
                }
            }
            StringBuilder out = new StringBuilder("{\"dropped\": ").append((long) dropped).append(", \"stores\": {");
            boolean first = true;
            for (String store : STORES) {
                out.append(first ? "" : ",").append(Json.quote(store)).append(": ")
                    .append(Json.objectOfStrings(windowStoreContent(streams, store)));
                first = false;
            }
            System.out.println(out.append("}}"));
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
