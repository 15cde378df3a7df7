package kstreams.oracle;

import java.time.Duration;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.StreamPartitioner;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The order of records across keys and topics, run by Kafka Streams itself against a real
 * broker until every input topic is consumed to its end; the test compares every output
 * partition's whole sequence of records. Prints {"done": true}.
 *
 * Args: bootstrap applicationId stateDir a b c d counted orders customers e f g placed
 *       outReduce outMapped outCounts outJoined outColumns outPlaced outPlacedCounts outPickedA outPickedB
 *       outColumnsPlaced outColumnsPickedA outColumnsPickedB outColumnsRoutedA outColumnsRoutedB outMixed
 *
 * The Python twin is order_examples() in tests/test_equivalence_order.py; keep the two in step.
 */
public final class OrderExamples {
    private OrderExamples() {}

    /** By the value (KIP-837): "drop..." to no partition, "all..." to every one, a length that is a
     *  multiple of 4 to the default partitioner, else the length modulo the partition count. */
    static final StreamPartitioner<String, String> BY_VALUE = (topic, key, value, numPartitions) -> {
        if (value == null) {
            return Optional.of(Collections.singleton(2 % numPartitions));
        }
        if (value.startsWith("drop")) {
            return Optional.of(Collections.emptySet());
        }
        if (value.startsWith("all")) {
            Set<Integer> all = new HashSet<>();
            for (int p = numPartitions - 1; p >= 0; p--) {
                all.add(p);
            }
            return Optional.of(all);
        }
        return value.length() % 4 == 0 ? Optional.empty() : Optional.of(Collections.singleton(value.length() % numPartitions));
    };

    /** By the key "k<n>": n modulo the partition count; "k0" and a null key to the default partitioner. */
    static <V> StreamPartitioner<String, V> byKey() {
        return (topic, key, value, numPartitions) -> key == null || key.endsWith("0")
            ? Optional.empty()
            : Optional.of(Collections.singleton(Integer.parseInt(key.substring(1)) % numPartitions));
    }

    static StreamsBuilder orderExamples(List<String> merged, String counted, String orders, String customers,
                                        List<String> columnMerged, String outReduce, String outMapped,
                                        String outCounts, String outJoined, String outColumns,
                                        String outColumnsPlaced, List<String> outColumnsPicked,
                                        List<String> outColumnsRouted, String outMixed) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> all = builder.stream(merged.get(0));
        for (String topic : merged.subList(1, merged.size())) {
            all = all.merge(builder.stream(topic));
        }
        // A stateless chain after the merge: every record to one key.
        all.map((key, value) -> KeyValue.pair("all", key + ":" + value))
            .mapValues(value -> value.toUpperCase())
            .to(outMapped);
        // The merge reduced to one key, every update (no record cache).
        all.groupBy((key, value) -> "all")
            .reduce((agg, value) -> agg + "," + value,
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("merged-reduce").withCachingDisabled())
            .toStream().to(outReduce);
        // An uncached count whose every update is re-keyed to one key.
        builder.<String, String>stream(counted).groupByKey()
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("uncached-count").withCachingDisabled())
            .toStream()
            .map((key, count) -> KeyValue.pair("all", key + ":" + count))
            .to(outCounts, Produced.with(Serdes.String(), Serdes.String()));
        // A stream-table join whose sides interleave in time.
        KTable<String, String> customerTable = builder.table(customers);
        builder.<String, String>stream(orders)
            .join(customerTable, (order, customer) -> order + "|" + customer)
            .to(outJoined);
        // Another merge to one key (the Python twin writes it with Column expressions: run in the JVM).
        KStream<String, String> columns = builder.stream(columnMerged.get(0));
        for (String topic : columnMerged.subList(1, columnMerged.size())) {
            columns = columns.merge(builder.stream(topic));
        }
        columns.map((key, value) -> KeyValue.pair("all", key + ":" + value.toUpperCase())).to(outColumns);
        // The same merge placed by the value (the twin: Column expressions, then its partitioner in
        // one Python pass): copies, drops, tombstones, the default partitioner.
        KStream<String, String> columnValues = columns.mapValues(value -> value.endsWith("0") ? "all" + value
                : value.endsWith("7") ? "drop" + value
                : value.endsWith("3") ? null
                : value.endsWith("5") ? value + "x"
                : value);
        columnValues.to(outColumnsPlaced, Produced.streamPartitioner(BY_VALUE));
        // The same values to a topic picked per record (a null value or an even last digit: the first
        // of outColumnsPicked, 3 partitions, else the second, 2), placed by the value with the picked
        // topic's count (the twin: the Column plan, then the picker and the partitioner in one Python pass).
        columnValues.to((key, value, context) -> value == null || "02468".indexOf(value.charAt(value.length() - 1)) >= 0
                            ? outColumnsPicked.get(0) : outColumnsPicked.get(1),
                        Produced.streamPartitioner(BY_VALUE));
        // A topic picked by the key, no partitioner: "x" to the first of outColumnsRouted, else the second.
        columns.mapValues(value -> value.toUpperCase())
            .to((key, value, context) -> key.equals("x") ? outColumnsRouted.get(0) : outColumnsRouted.get(1));
        // Python functions and Columns mixed in the twin: a flatMap, a mapValues (Columns), a map.
        columns.flatMap((key, value) -> value.endsWith("5") ? List.<KeyValue<String, String>>of()
                : List.of(KeyValue.pair(key, value), KeyValue.pair(key + "2", value + "!")))
            .mapValues(value -> value.toUpperCase() + "#")
            .map((key, value) -> KeyValue.pair("all", key + ":" + value))
            .to(outMixed);
        return builder;
    }

    /** Custom stream partitioners: a sink placed by the value; a repartition placed by the key
     *  feeding an uncached count, whose updates go out placed by the key again (so each output
     *  partition is written by one task: its whole sequence is deterministic). */
    static void partitionerExamples(StreamsBuilder builder, String placed, String outPlaced, String outPlacedCounts,
                                    String outPickedA, String outPickedB) {
        KStream<String, String> stream = builder.stream(placed);
        stream.to(outPlaced, Produced.streamPartitioner(BY_VALUE));
        // A topic picked per record (a null key or an even last digit: outPickedA, else outPickedB;
        // their partition counts differ), placed by the value with the picked topic's count.
        stream.to((key, value, context) -> key == null || (key.charAt(key.length() - 1) - '0') % 2 == 0
                      ? outPickedA : outPickedB,
                  Produced.streamPartitioner(BY_VALUE));
        stream.repartition(Repartitioned.<String, String>streamPartitioner(byKey()).withNumberOfPartitions(2))
            .groupByKey()
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("placed-count").withCachingDisabled())
            .toStream()
            .mapValues((key, count) -> key + "=" + count)
            .to(outPlacedCounts, Produced.streamPartitioner(byKey()));
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        List<String> merged = List.of(args[3], args[4], args[5], args[6]);
        List<String> columnMerged = List.of(args[10], args[11], args[12]);
        List<String> inputs = List.of(args).subList(3, 14);
        StreamsBuilder builder = orderExamples(merged, args[7], args[8], args[9], columnMerged, args[14], args[15],
                                               args[16], args[17], args[18], args[23], List.of(args[24], args[25]),
                                               List.of(args[26], args[27]), args[28]);
        partitionerExamples(builder, args[13], args[19], args[20], args[21], args[22]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            // The repartition topic of the merge's reduce too: its sub-topology must have consumed it
            // (it is created on startup).
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> {
                List<String> repartition = admin.listTopics().names().get().stream()
                    .filter(topic -> topic.startsWith(applicationId + "-") && topic.endsWith("-repartition")).toList();
                return repartition.isEmpty() ? null : java.util.stream.Stream.concat(inputs.stream(),
                    repartition.stream()).toList();
            }, Duration.ofMinutes(5));
            System.out.println("{\"done\": true}");
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
