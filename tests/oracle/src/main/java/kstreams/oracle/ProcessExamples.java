package kstreams.oracle;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

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

        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> {
                List<String> topics = sourceTopics(admin, applicationId, input);
                return topics.size() < 4 ? null : topics;  // the three repartition topics are created on startup
            }, Duration.ofMinutes(10));
            Map<String, Map<String, String>> stores = new TreeMap<>();
            for (String store : List.of("country-counts", "word-counts", "latest-amount")) {
                stores.put(store, KafkaStreamsRuns.storeContent(streams, store));
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
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
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
}
