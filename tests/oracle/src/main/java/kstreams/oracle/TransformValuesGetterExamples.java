package kstreams.oracle;

import java.util.Map;

import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.ValueTransformerWithKey;

/**
 * TableScenarioExamples' part after KTableTransformValuesTest's shouldTransformOnGetIfNotMaterialized: a
 * transformValues of the prices without a store of its own, whose updates go out through its processor's
 * transformer, and which the lookups' stream-table joins and their table's inner join read through its value getter, a transformer of
 * their own (Kafka Streams' KTableTransformValuesGetter). The Python twin is the same part of
 * table_scenarios() in tests/kstreams_table_scenarios_topology.py; keep the two in step.
 */
final class TransformValuesGetterExamples {
    private TransformValuesGetterExamples() {}

    /** The value (a missing row's: "null"), "#" and how many times this instance was called, "@" the time
     *  and "~p" the partition "o" the offset its context gives (a value getter's: the row's time, -1, -1). */
    static final class CallCounter implements ValueTransformerWithKey<String, String, String> {
        private org.apache.kafka.streams.processor.ProcessorContext context;
        private long calls;

        @Override
        public void init(final org.apache.kafka.streams.processor.ProcessorContext context) {
            this.context = context;
        }

        @Override
        public String transform(final String readOnlyKey, final String value) {
            calls++;
            return value + "#" + calls + "@" + context.timestamp() + "~p" + context.partition() + "o" + context.offset();
        }

        @Override
        public void close() {}
    }

    static void addTo(final StreamsBuilder builder, final KTable<String, String> prices, final Map<String, String> topics) {
        KTable<String, String> called = prices.transformValues(CallCounter::new, Named.as("prices-called"));
        called.toStream().processValues(StampValues::new).to(topics.get("out-prices-called"));
        KStream<String, String> lookups = builder.stream(topics.get("lookups"));
        lookups.join(called, (lookup, price) -> lookup + ">" + price)
            .processValues(StampValues::new).to(topics.get("out-lookups-joined"));
        lookups.leftJoin(called, (lookup, price) -> lookup + ">" + price)
            .processValues(StampValues::new).to(topics.get("out-lookups-left"));
        // An inner table-table join: the lookups table's updates read it through the join's getter, the
        // prices' come through its processor's transformer (a tombstone's too).
        lookups.toTable(TableScenarioExamples.<String, String>uncached("lookups-table"))
            .join(called, (lookup, price) -> lookup + "&" + price)
            .toStream().processValues(StampValues::new).to(topics.get("out-lookups-table-joined"));
    }
}
