package kstreams.oracle;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * Joins of session tables materialized, re-grouped and joined again, in WindowedTableJoinExamples' session
 * sub-topology. The Python twin is _session_join_chains() in tests/windowed_join_topology.py; keep the two
 * in step.
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

    static void add(KTable<Windowed<String>, Long> sessionCounts, KTable<Windowed<String>, String> sessionValues,
                    KTable<Windowed<String>, Long> shortCounts, KTable<Windowed<String>, String> sessionPair,
                    KTable<Windowed<String>, String> oddPair, String outMaterialized, String outJoinedRegrouped,
                    String outPairRegrouped, String outRejoined, String outPairJoined) {
        var sessionKeys = WindowedSerdes.sessionWindowedSerdeFrom(String.class);
        Produced<Windowed<String>, String> produced = Produced.with(sessionKeys, Serdes.String());
        KTable<Windowed<String>, String> joined = sessionValues.outerJoin(shortCounts,
            (v, n) -> text(v) + "^" + text(n),
            Materialized.<Windowed<String>, String, KeyValueStore<Bytes, byte[]>>as("session-joined")
                .withKeySerde(sessionKeys).withValueSerde(Serdes.String()).withCachingDisabled());
        joined.toStream().process(SessionJoinReader::new, "session-joined").to(outMaterialized, produced);
        lengths(joined, "session-joined-by-key", outJoinedRegrouped);
        lengths(oddPair.mapValues(value -> value.replace("~", "")), "session-pair-by-key", outPairRegrouped);
        joined.leftJoin(sessionCounts, (j, n) -> j + "@" + text(n)).toStream().to(outRejoined, produced);
        sessionPair.filter((windowed, value) -> windowed.window().end() > windowed.window().start())
            .outerJoin(shortCounts, (p, n) -> text(p) + "#" + text(n)).toStream().to(outPairJoined, produced);
    }
}
