package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.state.Stores;

/**
 * Versioned tables, run by Kafka Streams itself until its input is consumed; prints JSON
 * {"describe": ...}. Prices are a table read from a topic into a versioned store (10 s of history),
 * whose changes go to a topic; rates are a stream made a table by toTable into another (4 s of
 * history). Orders are joined (inner) with the prices and left-joined with the rates: each order
 * reads the version valid at its own timestamp; and joined with the prices again with a grace period
 * of 3 s (buffered, then joined in timestamp order once the buffer's time has passed it by the grace).
 *
 * Args: bootstrap applicationId stateDir prices rates orders outChanges outInner outLeft outGrace
 *
 * The Python twin is versioned_examples() in tests/versioned_topology.py; keep the two in step.
 */
public final class VersionedExamples {
    private VersionedExamples() {}

    static Topology versionedExamples(String prices, String rates, String orders, String outChanges,
                                      String outInner, String outLeft, String outGrace) {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> priceTable = builder.table(prices,
            Materialized.as(Stores.persistentVersionedKeyValueStore("prices-store", Duration.ofSeconds(10))));
        priceTable.toStream().to(outChanges);
        KTable<String, String> rateTable = builder.<String, String>stream(rates).toTable(Named.as("rates-table"),
            Materialized.as(Stores.persistentVersionedKeyValueStore("rates-store", Duration.ofSeconds(4))));
        KStream<String, String> orderStream = builder.stream(orders);
        orderStream.join(priceTable, (order, price) -> order + "@" + price).to(outInner);
        orderStream.leftJoin(rateTable, (order, rate) -> order + "%" + rate).to(outLeft);
        orderStream.join(priceTable, (order, price) -> order + "#" + price,
                         Joined.<String, String, String>as("graced").withGracePeriod(Duration.ofSeconds(3)))
            .to(outGrace);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        List<String> inputs = List.of(args[3], args[4], args[5]);
        Topology topology = versionedExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        // The timestamp merge of a task's inputs, as the runner orders them. 0, not a wait: every input is
        // written before this process starts (no repartition topic), and a task still waits for each
        // partition whose lag it does not know yet or whose records it has not fetched (KIP-695), so it
        // merges all of it; a wait only idled at the end of each task's shorter input.
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 0L);
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> inputs, Duration.ofMinutes(5));
            System.out.println(KafkaStreamsRuns.describeJson(topology));
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
