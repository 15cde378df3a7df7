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
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Old values carried through materialized tables and suppressions, run by Kafka Streams itself
 * against a real broker until every input topic is consumed to its end; prints JSON
 * {"describe": topology.describe()}. Every store is uncached, so the output is fixed by the input.
 * A windowed table's materialized filter or mapValues names its serdes: the windowed table has none.
 *
 * Args: bootstrap applicationId stateDir events prices outKept outPaddedBytes outTwiceBytes
 *       outSessionsKept outPricesTwice
 *
 * The Python twin is table_old_values_examples() in tests/table_old_values_topology.py; keep the
 * two in step.
 */
public final class TableOldValuesExamples {
    private TableOldValuesExamples() {}

    /** The byte bounds: about two or three buffered records each. */
    static final long PADDED_BYTES = 400;
    static final long TWICE_BYTES = 360;
    static final long SESSION_BYTES = 320;
    static final long PRICES_BYTES = 300;

    static Topology tableOldValuesExamples(String events, String prices, String outKept, String outPaddedBytes,
                                           String outTwiceBytes, String outSessionsKept, String outPricesTwice) {
        StreamsBuilder builder = new StreamsBuilder();
        KGroupedStream<String, String> grouped = builder.<String, String>stream(events)
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        Produced<Windowed<String>, Long> windowedCounts =
            Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.Long());
        KTable<Windowed<String>, Long> counts = grouped
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("counts").withCachingDisabled());
        counts.filter((window, count) -> count % 4 != 1 && count % 4 != 2,
                      Materialized.<Windowed<String>, Long, KeyValueStore<Bytes, byte[]>>as("kept-counts")
                          .withKeySerde(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000))
                          .withValueSerde(Serdes.Long()).withCachingDisabled())
            .filter((window, count) -> count % 3 != 2)
            .toStream()
            .to(outKept, windowedCounts);
        Produced<Windowed<String>, String> windowedStrings =
            Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.String());
        counts.mapValues(count -> String.format("%040d", count),
                         Materialized.<Windowed<String>, String, KeyValueStore<Bytes, byte[]>>as("padded")
                             .withKeySerde(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000))
                             .withValueSerde(Serdes.String()).withCachingDisabled())
            .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(500),
                    BufferConfig.maxBytes(PADDED_BYTES).emitEarlyWhenFull())
                .withName("padded-bytes"))
            .toStream()
            .to(outPaddedBytes, windowedStrings);
        counts.mapValues(count -> String.format("%030d", count))
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(1), BufferConfig.unbounded()).withName("first"))
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(2),
                    BufferConfig.maxBytes(TWICE_BYTES).emitEarlyWhenFull())
                .withName("second"))
            .toStream()
            .to(outTwiceBytes, windowedStrings);
        grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(2)))
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("session-counts").withCachingDisabled())
            .filter((window, count) -> count % 3 != 1,
                    Materialized.<Windowed<String>, Long, KeyValueStore<Bytes, byte[]>>as("kept-sessions")
                        .withKeySerde(WindowedSerdes.sessionWindowedSerdeFrom(String.class))
                        .withValueSerde(Serdes.Long()).withCachingDisabled())
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(30),
                    BufferConfig.maxBytes(SESSION_BYTES).emitEarlyWhenFull())
                .withName("sessions-bytes"))
            .toStream()
            .to(outSessionsKept, Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
        builder.<String, String>table(prices,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("prices-store").withCachingDisabled())
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(2), BufferConfig.unbounded())
                .withName("prices-first"))
            .filter((key, value) -> !value.startsWith("x"))
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(3),
                    BufferConfig.maxBytes(PRICES_BYTES).emitEarlyWhenFull())
                .withName("prices-second"))
            .toStream()
            .to(outPricesTwice);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        Topology topology = tableOldValuesExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        KafkaStreams streams = new KafkaStreams(topology, props);
        KafkaStreamsRuns.failFast(streams);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> List.of(args[3], args[4]),
                                               Duration.ofMinutes(5));
            System.out.println("{\"describe\": " + Json.quote(topology.describe().toString()) + "}");
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
