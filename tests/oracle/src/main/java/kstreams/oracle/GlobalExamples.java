package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.TimestampExtractor;
import org.apache.kafka.streams.processor.WallclockTimestampExtractor;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Inner and left stream-global-table joins and a tumbling-window count of clicks read with a
 * timestamp extractor (the event time is the value's third field), run by Kafka Streams itself
 * against a real broker until the click topic is consumed to its end (its global store
 * bootstrapped from the whole profile topic first); prints JSON {"describe": topology.describe()}.
 *
 * Pings are counted in hour windows of the wall-clock time they are read. Orders are filtered,
 * left-joined with the profiles and upper-cased: the Python twin writes the filter and the mapValues
 * as PySpark Column expressions around its join.
 *
 * Args: bootstrap applicationId stateDir profiles clicks pings orders outInner outLeft outWindowed outWallclock
 *       outOrders
 *
 * The Python twin is global_examples() in tests/global_topology.py; keep the two in step.
 */
public final class GlobalExamples {
    private GlobalExamples() {}

    /** The third field of the value (the Kafka timestamp for a null value). */
    static final class EventTimeInValue implements TimestampExtractor {
        @Override
        public long extract(ConsumerRecord<Object, Object> record, long partitionTime) {
            Object value = record.value();
            return value == null ? record.timestamp() : Long.parseLong(((String) value).split(",", -1)[2]);
        }
    }

    static Topology globalExamples(String profilesTopic, String clicksTopic, String pingsTopic, String ordersTopic,
                                   String outInner, String outLeft, String outWindowed, String outWallclock,
                                   String outOrders) {
        StreamsBuilder builder = new StreamsBuilder();
        GlobalKTable<String, String> profiles = builder.globalTable(profilesTopic);
        KStream<String, String> clicks = builder.stream(clicksTopic,
            Consumed.with(new EventTimeInValue()));
        KeyValueMapper<String, String, String> userOf =
            (key, click) -> click == null || click.startsWith("-,") ? null : click.split(",", -1)[0];
        clicks.join(profiles, userOf, (key, click, profile) -> key + "|" + click + "|" + profile)
            .to(outInner);
        clicks.leftJoin(profiles, userOf, (key, click, profile) -> key + "|" + click + "|" + profile,
                Named.as("enrich-left"))
            .to(outLeft);
        clicks.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("click-counts").withCachingDisabled())
            .toStream()
            .to(outWindowed, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.Long()));
        // Pings counted in hour windows of the time they are read, whatever their own timestamps.
        builder.<String, String>stream(pingsTopic, Consumed.with(new WallclockTimestampExtractor()))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofHours(1)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("ping-counts").withCachingDisabled())
            .toStream()
            .to(outWallclock, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 3_600_000),
                                            Serdes.Long()));
        if (ordersTopic == null) {  // the describe() catalog's: without Columns (they need a SparkContext)
            return builder.build();
        }
        builder.<String, String>stream(ordersTopic)
            .filter((key, order) -> order != null && !order.startsWith("x"))
            .leftJoin(profiles, (key, order) -> order.startsWith("-,") ? null : order.split(",", -1)[0],
                      (key, order, profile) -> key + "|" + order + "|" + profile, Named.as("enrich-orders"))
            .mapValues(value -> value.toUpperCase())
            .to(outOrders);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        Topology topology = globalExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9], args[10],
                                           args[11]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> List.of(args[4], args[5], args[6]),
                                               Duration.ofMinutes(5));
            System.out.println("{\"describe\": " + Json.quote(topology.describe().toString()) + "}");
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
