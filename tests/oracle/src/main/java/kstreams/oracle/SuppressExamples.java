package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * suppress (until a window closes, until a time limit) and emit-on-window-close, run by Kafka
 * Streams itself against a real broker until every input topic is consumed to its end; prints
 * JSON {"describe": topology.describe()}. Windowed aggregations and tables run without the record
 * cache, so every update reaches the suppression as it happens and the output is fixed by the
 * input alone. Emit-on-window-close checks after every record (its wall-clock throttle set to 0).
 *
 * Args: bootstrap applicationId stateDir events prices slides outFinal outClosed outSessions outLimited
 *       outDebounced outClosedSliding outClosedSessions
 *
 * The Python twin is suppress_examples() in tests/suppress_topology.py; keep the two in step.
 */
public final class SuppressExamples {
    private SuppressExamples() {}

    static Topology suppressExamples(String events, String prices, String slides, String outFinal,
                                     String outClosed, String outSessions, String outLimited, String outDebounced,
                                     String outClosedSliding, String outClosedSessions) {
        StreamsBuilder builder = new StreamsBuilder();
        // The suppression buffer serializes the windowed keys: the grouping names the key serde.
        KGroupedStream<String, String> grouped = builder.<String, String>stream(events)
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("suppressed-counts")
                .withCachingDisabled())
            .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
            .toStream()
            .to(outFinal, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.Long()));
        grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2))
                .advanceBy(Duration.ofSeconds(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "", (key, value, agg) -> agg + "," + value,
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("closed-hopping").withCachingDisabled())
            .toStream()
            .to(outClosed, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.String()));
        grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(2)))
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("session-counts").withCachingDisabled())
            .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()).withName("final-sessions"))
            .toStream()
            .to(outSessions, Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
        grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(1)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "", (key, value, agg) -> agg + "," + value, (key, one, two) -> one + "|" + two,
                Materialized.<String, String, SessionStore<Bytes, byte[]>>as("closed-sessions").withCachingDisabled())
            .toStream()
            .to(outClosedSessions,
                Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String()));

        KTable<String, String> priceTable = builder.table(
            prices,
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("prices-store").withCachingDisabled());
        // At most 3 keys held: the oldest goes out early when a fourth arrives.
        priceTable
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(4), BufferConfig.maxRecords(3).emitEarlyWhenFull()))
            .toStream()
            .to(outLimited);
        priceTable
            .filter((key, value) -> !value.startsWith("x"))
            .suppress(Suppressed.<String>untilTimeLimit(Duration.ofSeconds(2), BufferConfig.unbounded())
                .withName("debounce"))
            .toStream()
            .to(outDebounced);

        // Sliding windows skip null values (their stream time too): a sub-topology of their own.
        builder.<String, String>stream(slides)
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "", (key, value, agg) -> agg + "," + value,
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("closed-sliding").withCachingDisabled())
            .toStream()
            .to(outClosedSliding,
                Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 5_000), Serdes.String()));
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        Topology topology = suppressExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9],
                                             args[10], args[11], args[12]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        props.put("__emit.interval.ms.kstreams.windowed.aggregation__", 0L);

        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> List.of(args[3], args[4], args[5]),
                                               Duration.ofMinutes(5));
            System.out.println("{\"describe\": " + Json.quote(topology.describe().toString()) + "}");
        } finally {
            streams.close(Duration.ofSeconds(30));
        }
    }
}
