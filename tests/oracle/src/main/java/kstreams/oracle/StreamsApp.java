package kstreams.oracle;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * Runs real Kafka Streams applications against a broker until they have processed their whole
 * input, then prints what their state stores hold.
 *
 * <pre>
 * StreamsApp --bootstrap HOST:PORT --state-dir DIR [--threads N] [--no-stores] RUN...
 *   RUN = TOPOLOGY:APPLICATION_ID:INPUT_TOPIC:OUTPUT_TOPIC
 *   TOPOLOGY = users_per_country | word_count | latest_user_by_country
 * </pre>
 *
 * Runs are sequential in this JVM (so each one's rate is its own). Each app uses the defaults
 * that matter for equivalence (record cache, at_least_once) with a 1 s commit interval so that
 * "done" (committed offsets at the end offsets) is seen quickly. Input values are
 * {@code "country,word word ..."}; the Python twins are in tests/equivalence_topologies.py.
 *
 * Output (stdout, one JSON object):
 * {@code {"runs": [{"topology", "application_id", "records", "seconds", "records_per_second",
 * "stores": {store: {key: value}}}]}} where a Long value is a JSON number.
 */
public final class StreamsApp {
    private StreamsApp() {}

    static final String USERS_PER_COUNTRY_STORE = "users-per-country-store";
    static final String WORD_COUNT_STORE = "word-count-store";
    static final String LATEST_USER_STORE = "latest-user-by-country";

    static String country(String value) {
        return value.substring(0, value.indexOf(','));
    }

    static List<String> words(String value) {
        return Arrays.asList(value.substring(value.indexOf(',') + 1).split(" "));
    }

    /** Builds the named topology; returns the names of its stores. */
    static List<String> build(StreamsBuilder b, String name, String input, String output) {
        Consumed<String, String> consumed = Consumed.with(Serdes.String(), Serdes.String());
        switch (name) {
            case "users_per_country":
                b.stream(input, consumed)
                        .groupBy((k, v) -> country(v), Grouped.with(Serdes.String(), Serdes.String()))
                        .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(USERS_PER_COUNTRY_STORE)
                                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                        .toStream()
                        .to(output, Produced.with(Serdes.String(), Serdes.Long()));
                return List.of(USERS_PER_COUNTRY_STORE);
            case "word_count":
                b.stream(input, consumed)
                        .flatMapValues(StreamsApp::words)
                        .groupBy((k, w) -> w, Grouped.with(Serdes.String(), Serdes.String()))
                        .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(WORD_COUNT_STORE)
                                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                        .toStream()
                        .to(output, Produced.with(Serdes.String(), Serdes.Long()));
                return List.of(WORD_COUNT_STORE);
            case "latest_user_by_country":
                b.stream(input, consumed)
                        .map((k, v) -> KeyValue.pair(country(v), k))
                        .toTable(Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(LATEST_USER_STORE)
                                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
                        .toStream()
                        .to(output, Produced.with(Serdes.String(), Serdes.String()));
                return List.of(LATEST_USER_STORE);
            default:
                throw new IllegalArgumentException("unknown topology " + name);
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = null;
        String stateDir = null;
        int threads = 1;
        boolean dumpStores = true;
        List<String[]> runs = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--bootstrap": bootstrap = args[++i]; break;
                case "--state-dir": stateDir = args[++i]; break;
                case "--threads": threads = Integer.parseInt(args[++i]); break;
                case "--no-stores": dumpStores = false; break;
                default:
                    String[] run = args[i].split(":");
                    if (run.length != 4) {
                        throw new IllegalArgumentException("expected TOPOLOGY:APP_ID:INPUT:OUTPUT, got " + args[i]);
                    }
                    runs.add(run);
            }
        }
        if (bootstrap == null || stateDir == null || runs.isEmpty()) {
            throw new IllegalArgumentException("usage: --bootstrap B --state-dir D [--threads N] RUN...");
        }
        StringBuilder out = new StringBuilder("{\"runs\": [");
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            for (int r = 0; r < runs.size(); r++) {
                String[] run = runs.get(r);
                if (r > 0) {
                    out.append(", ");
                }
                out.append(runOne(admin, bootstrap, Path.of(stateDir, run[1]), threads, dumpStores,
                        run[0], run[1], run[2], run[3]));
            }
        }
        System.out.println(out.append("]}"));
        System.out.flush();
        // Kafka Streams' non-daemon threads are closed; exit explicitly anyway (admin threads).
        System.exit(0);
    }

    static String runOne(Admin admin, String bootstrap, Path stateDir, int threads, boolean dumpStores,
                         String topology, String appId, String input, String output) throws Exception {
        Files.createDirectories(stateDir);
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);

        StreamsBuilder builder = new StreamsBuilder();
        List<String> stores = build(builder, topology, input, output);

        // The input is complete before the app starts: its end offsets are the finish line.
        Map<TopicPartition, Long> inputEnds = endOffsets(admin, partitionsOf(admin, input));
        long records = inputEnds.values().stream().mapToLong(Long::longValue).sum()
                - endOffsets(admin, partitionsOf(admin, input), OffsetSpec.earliest()).values().stream()
                .mapToLong(Long::longValue).sum();

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        long started = System.nanoTime();
        streams.start();
        try {
            waitDrained(admin, appId, inputEnds, Duration.ofMinutes(15));
            double seconds = (System.nanoTime() - started) / 1e9;
            StringBuilder json = new StringBuilder("{");
            json.append("\"topology\": ").append(Json.quote(topology));
            json.append(", \"application_id\": ").append(Json.quote(appId));
            json.append(", \"records\": ").append(records);
            json.append(", \"seconds\": ").append(String.format("%.3f", seconds));
            json.append(", \"records_per_second\": ").append(String.format("%.1f", records / seconds));
            json.append(", \"stores\": {");
            if (dumpStores) {
                for (int i = 0; i < stores.size(); i++) {
                    if (i > 0) {
                        json.append(", ");
                    }
                    json.append(Json.quote(stores.get(i))).append(": ").append(dump(streams, stores.get(i)));
                }
            }
            return json.append("}}").toString();
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(60));
        }
    }

    static List<TopicPartition> partitionsOf(Admin admin, String topic) throws Exception {
        return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().stream()
                .map(p -> new TopicPartition(topic, p.partition())).collect(Collectors.toList());
    }

    static Map<TopicPartition, Long> endOffsets(Admin admin, List<TopicPartition> partitions) throws Exception {
        return endOffsets(admin, partitions, OffsetSpec.latest());
    }

    static Map<TopicPartition, Long> endOffsets(Admin admin, List<TopicPartition> partitions, OffsetSpec spec)
            throws Exception {
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        partitions.forEach(tp -> request.put(tp, spec));
        Map<TopicPartition, Long> result = new HashMap<>();
        for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e
                : admin.listOffsets(request).all().get().entrySet()) {
            result.put(e.getKey(), e.getValue().offset());
        }
        return result;
    }

    /**
     * Done = the group committed the input's end offsets, then also every repartition topic's end
     * offsets. The input check comes first: a commit flushes the producer, so once the input is
     * committed the repartition topics' end offsets no longer move.
     */
    static void waitDrained(Admin admin, String appId, Map<TopicPartition, Long> inputEnds, Duration timeout)
            throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("application " + appId + " did not drain its input in " + timeout);
            }
            Map<TopicPartition, OffsetAndMetadata> committed =
                    admin.listConsumerGroupOffsets(appId).partitionsToOffsetAndMetadata().get();
            if (reached(committed, inputEnds)) {
                Set<String> repartition = admin.listTopics().names().get().stream()
                        .filter(t -> t.startsWith(appId + "-") && t.endsWith("-repartition"))
                        .collect(Collectors.toSet());
                List<TopicPartition> partitions = new ArrayList<>();
                for (String topic : repartition) {
                    partitions.addAll(partitionsOf(admin, topic));
                }
                Map<TopicPartition, Long> ends = endOffsets(admin, partitions);
                committed = admin.listConsumerGroupOffsets(appId).partitionsToOffsetAndMetadata().get();
                if (reached(committed, ends)) {
                    return;
                }
            }
            Thread.sleep(100);
        }
    }

    static boolean reached(Map<TopicPartition, OffsetAndMetadata> committed, Map<TopicPartition, Long> ends) {
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            if (e.getValue() == 0) {
                continue;  // an empty partition needs no commit
            }
            OffsetAndMetadata c = committed.get(e.getKey());
            if (c == null || c.offset() < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    /** Interactive query of a key-value store (through the record cache), as a JSON object. */
    static String dump(KafkaStreams streams, String store) throws Exception {
        ReadOnlyKeyValueStore<String, Object> view = null;
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (view == null) {
            try {
                view = streams.store(StoreQueryParameters.fromNameAndType(store,
                        QueryableStoreTypes.<String, Object>keyValueStore()));
            } catch (org.apache.kafka.streams.errors.InvalidStateStoreException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
        Map<String, Object> sorted = new TreeMap<>();
        try (KeyValueIterator<String, Object> it = view.all()) {
            while (it.hasNext()) {
                KeyValue<String, Object> kv = it.next();
                sorted.put(kv.key, kv.value);
            }
        }
        StringBuilder json = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<String, Object> e : sorted.entrySet()) {
            if (!first) {
                json.append(", ");
            }
            first = false;
            json.append(Json.quote(e.getKey())).append(": ");
            Object v = e.getValue();
            json.append(v instanceof Long ? v.toString() : Json.quote(String.valueOf(v)));
        }
        return json.append('}').toString();
    }
}
