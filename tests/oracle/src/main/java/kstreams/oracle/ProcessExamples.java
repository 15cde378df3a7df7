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
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * Runs the processing examples with Kafka Streams itself against a real broker, until every
 * source topic (input and repartition topics) is consumed to its end, then prints the content
 * of every store as JSON: {"store": {"key": "value", ...}, ...}.
 *
 * Args: bootstrap applicationId stateDir inputTopic countsTopic wordsTopic latestTopic
 *
 * Input values are "user,country,amount,text". The same topology is built in Python by
 * tests/test_runner_kstreams_oracle.py (examples()); keep the two in step.
 */
public final class ProcessExamples {
    private ProcessExamples() {}

    static StreamsBuilder examples(String input, String counts, String words, String latest) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> rows = builder.stream(input);
        // Users counted per country.
        rows.groupBy((key, value) -> value.split(",")[1])
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("country-counts"))
            .toStream().to(counts, Produced.with(Serdes.String(), Serdes.Long()));
        // Word count.
        rows.flatMapValues(value -> Arrays.stream(value.split(",")[3].toLowerCase().split("\\W+"))
                .filter(word -> !word.isEmpty()).collect(Collectors.toList()))
            .groupBy((key, word) -> word)
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("word-counts"))
            .toStream().to(words, Produced.with(Serdes.String(), Serdes.Long()));
        // A key-changing map followed by toTable.
        rows.map((key, value) -> KeyValue.pair(value.split(",")[1] + "/" + key, value.split(",")[2]))
            .toTable(Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("latest-amount"))
            .toStream().to(latest);
        return builder;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        String input = args[3];
        StreamsBuilder builder = examples(input, args[4], args[5], args[6]);

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 500);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);

        Files.createDirectories(Path.of(stateDir));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            waitUntilConsumed(admin, streams, applicationId, input, Duration.ofMinutes(10));
            Map<String, Map<String, String>> stores = new TreeMap<>();
            for (String store : List.of("country-counts", "word-counts", "latest-amount")) {
                stores.put(store, storeContent(streams, store));
            }
            StringBuilder out = new StringBuilder("{");
            boolean first = true;
            for (Map.Entry<String, Map<String, String>> store : stores.entrySet()) {
                out.append(first ? "" : ",").append(Json.quote(store.getKey())).append(": ")
                    .append(Json.objectOfStrings(store.getValue()));
                first = false;
            }
            System.out.println(out.append("}"));
        } finally {
            streams.close(Duration.ofSeconds(30));
        }
    }

    /** Source topics of the application: the input and its repartition topics. */
    private static List<String> sourceTopics(Admin admin, String applicationId, String input) throws Exception {
        List<String> topics = new ArrayList<>(List.of(input));
        for (String topic : admin.listTopics().names().get()) {
            if (topic.startsWith(applicationId + "-") && topic.endsWith("-repartition")) {
                topics.add(topic);
            }
        }
        return topics;
    }

    private static void waitUntilConsumed(Admin admin, KafkaStreams streams, String applicationId, String input,
                                          Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        int quietChecks = 0;
        while (System.nanoTime() < deadline) {
            Thread.sleep(500);
            if (streams.state() != KafkaStreams.State.RUNNING) {
                quietChecks = 0;
                continue;
            }
            List<String> topics = sourceTopics(admin, applicationId, input);
            if (topics.size() < 4) {  // the three repartition topics are created on startup
                continue;
            }
            Map<TopicPartition, OffsetSpec> request = new HashMap<>();
            for (var description : admin.describeTopics(topics).allTopicNames().get().values()) {
                description.partitions().forEach(p ->
                    request.put(new TopicPartition(description.name(), p.partition()), OffsetSpec.latest()));
            }
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends = admin.listOffsets(request).all().get();
            Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(applicationId).partitionsToOffsetAndMetadata().get();
            boolean consumed = true;
            for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> end : ends.entrySet()) {
                long endOffset = end.getValue().offset();
                if (endOffset == 0) {
                    continue;
                }
                OffsetAndMetadata offset = committed.get(end.getKey());
                // Repartition topics are purged up to the committed offset: compare with the end.
                if (offset == null || offset.offset() < endOffset) {
                    consumed = false;
                    break;
                }
            }
            // Consumed to the end twice in a row: the caches were flushed by the last commit.
            quietChecks = consumed ? quietChecks + 1 : 0;
            if (quietChecks >= 2) {
                return;
            }
        }
        throw new IllegalStateException("Kafka Streams did not consume its input within " + timeout);
    }

    private static Map<String, String> storeContent(KafkaStreams streams, String store) {
        ReadOnlyKeyValueStore<String, Object> view = streams.store(
            StoreQueryParameters.fromNameAndType(store, QueryableStoreTypes.keyValueStore()));
        Map<String, String> content = new TreeMap<>();
        try (KeyValueIterator<String, Object> entries = view.all()) {
            while (entries.hasNext()) {
                KeyValue<String, Object> entry = entries.next();
                content.put(entry.key, String.valueOf(entry.value));
            }
        }
        return content;
    }
}
