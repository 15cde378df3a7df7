package kstreams.oracle;

import java.time.Duration;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindowedKStream;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * Joins of session tables materialized, re-grouped and joined again: those without a store in
 * WindowedTableJoinExamples' session sub-topology, the materialized one in a sub-topology of its own. The Python
 * twins are _session_join_chains() and _materialized_session_join() in tests/windowed_join_topology.py; keep
 * them in step.
 */
final class SessionJoinChains {
    private SessionJoinChains() {}

    private static String text(Object value) {
        return value == null ? "null" : value.toString();
    }

    /** Forwards each update of the materialized join with its timestamp and what the join's store holds. */
    static final class SessionJoinReader implements Processor<Windowed<String>, String, Windowed<String>, String> {
        private ProcessorContext<Windowed<String>, String> context;
        private TimestampedKeyValueStore<Windowed<String>, String> store;

        @Override
        public void init(ProcessorContext<Windowed<String>, String> context) {
            this.context = context;
            this.store = context.getStateStore("session-joined");
        }

        @Override
        public void process(Record<Windowed<String>, String> record) {
            ValueAndTimestamp<String> stored = store.get(record.key());
            String held = stored == null ? "null" : stored.value() + "@" + stored.timestamp();
            context.forward(record.withValue(record.value() + "|t" + record.timestamp() + "|" + held));
        }
    }

    private static void lengths(KTable<Windowed<String>, String> joined, String name, String output) {
        joined.groupBy((windowed, value) -> KeyValue.pair(windowed.key(), value), Grouped.as(name))
            .aggregate(() -> "0", (key, value, total) -> Integer.toString(Integer.parseInt(total) + value.length()),
                       (key, value, total) -> Integer.toString(Integer.parseInt(total) - value.length()),
                       Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(name + "-lengths")
                           .withCachingDisabled())
            .toStream()
            .to(output);
    }

    /** Joins without a store re-grouped and joined again, in the session sub-topology (key-grouped). */
    static void add(KTable<Windowed<String>, Long> shortCounts, KTable<Windowed<String>, String> sessionPair,
                    KTable<Windowed<String>, String> oddPair, String outPairRegrouped, String outPairJoined) {
        Produced<Windowed<String>, String> produced =
            Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String());
        lengths(oddPair.mapValues(value -> value.replace("~", "")), "session-pair-by-key", outPairRegrouped);
        sessionPair.filter((windowed, value) -> windowed.window().end() > windowed.window().start())
            .outerJoin(shortCounts, (p, n) -> text(p) + "#" + text(n)).toStream().to(outPairJoined, produced);
    }

    /**
     * A materialized join read by a processor naming its store, re-grouped and joined again, in a sub-topology
     * of its own (the stream re-keyed through "session-joins", with its own copies of the session tables): its
     * store keyed by sessions makes the runner's sub-topology task-grouped, and the session one stays key-grouped.
     */
    static void addMaterialized(StreamsBuilder builder, String s, Duration grace, String outMaterialized,
                                String outJoinedRegrouped, String outRejoined) {
        var sessionKeys = WindowedSerdes.sessionWindowedSerdeFrom(String.class);
        Produced<Windowed<String>, String> produced = Produced.with(sessionKeys, Serdes.String());
        KGroupedStream<String, String> rekeyed =
            builder.<String, String>stream(s).groupBy((key, value) -> key, Grouped.as("session-joins"));
        SessionWindowedKStream<String, String> windows =
            rekeyed.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(500), grace));
        KTable<Windowed<String>, Long> counts = windows.count(
            Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("joined-session-counts").withCachingDisabled());
        KTable<Windowed<String>, String> values = windows.reduce((x, y) -> x + "," + y,
            Materialized.<String, String, SessionStore<Bytes, byte[]>>as("joined-session-values")
                .withCachingDisabled());
        KTable<Windowed<String>, Long> shortCounts = rekeyed
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(300), grace))
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("joined-short-counts")
                       .withCachingDisabled());
        KTable<Windowed<String>, String> joined = values.outerJoin(shortCounts,
            (v, n) -> text(v) + "^" + text(n),
            Materialized.<Windowed<String>, String, KeyValueStore<Bytes, byte[]>>as("session-joined")
                .withKeySerde(sessionKeys).withValueSerde(Serdes.String()).withCachingDisabled());
        joined.toStream().process(SessionJoinReader::new, "session-joined").to(outMaterialized, produced);
        lengths(joined, "session-joined-by-key", outJoinedRegrouped);
        joined.leftJoin(counts, (j, n) -> j + "@" + text(n)).toStream().to(outRejoined, produced);
    }
}
