package kstreams.oracle;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

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
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * Stream-table and table-table joins run by Kafka Streams itself against a real broker, until
 * every input topic is consumed to its end; then prints the join stores as JSON
 * {"store": {"key": "value"}}.
 *
 * Args: bootstrap applicationId stateDir orders customers left right
 *       outInner outLeft ttInner ttLeft ttOuter
 *
 * The Python twin is join_examples() in tests/test_equivalence_joins.py; keep the two in step.
 */
public final class JoinExamples {
    private JoinExamples() {}

    static final List<String> STORES = List.of("customers-store", "tt-inner", "tt-left", "tt-outer");

    static StreamsBuilder joinExamples(String orders, String customers, String left, String right,
                                       String outInner, String outLeft, String ttInner, String ttLeft,
                                       String ttOuter) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> orderStream = builder.stream(orders);
        KTable<String, String> customerTable = builder.table(
            customers, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("customers-store"));
        orderStream.join(customerTable, (order, customer) -> order + "|" + customer).to(outInner);
        orderStream.leftJoin(customerTable, (order, customer) -> order + "|" + customer).to(outLeft);

        KTable<String, String> leftTable = builder.table(left);
        KTable<String, String> rightTable = builder.table(right);
        leftTable.join(rightTable, (a, b) -> a + "+" + b,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("tt-inner"))
            .toStream().to(ttInner);
        leftTable.leftJoin(rightTable, (a, b) -> a + "+" + b,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("tt-left"))
            .toStream().to(ttLeft);
        leftTable.outerJoin(rightTable, (a, b) -> a + "+" + b,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("tt-outer"))
            .toStream().to(ttOuter);
        return builder;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        List<String> inputs = List.of(args[3], args[4], args[5], args[6]);
        StreamsBuilder builder = joinExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9],
                                              args[10], args[11]);
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 500);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);

        Files.createDirectories(Path.of(stateDir));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            waitUntilConsumed(admin, streams, applicationId, inputs, Duration.ofMinutes(5));
            StringBuilder out = new StringBuilder("{");
            boolean first = true;
            for (String store : STORES) {
                out.append(first ? "" : ",").append(Json.quote(store)).append(": ")
                    .append(Json.objectOfStrings(storeContent(streams, store)));
                first = false;
            }
            System.out.println(out.append("}"));
        } finally {
            streams.close(Duration.ofSeconds(30));
        }
    }

    static void waitUntilConsumed(Admin admin, KafkaStreams streams, String applicationId, List<String> topics,
                                  Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        int quietChecks = 0;
        while (System.nanoTime() < deadline) {
            Thread.sleep(500);
            if (streams.state() != KafkaStreams.State.RUNNING) {
                quietChecks = 0;
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

    static Map<String, String> storeContent(KafkaStreams streams, String store) {
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
