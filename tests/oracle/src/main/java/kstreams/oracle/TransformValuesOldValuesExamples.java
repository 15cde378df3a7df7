package kstreams.oracle;

import java.util.Map;

import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Named;

/**
 * TableScenarioExamples' part after KTableTransformValuesTest's old values of a transformValues without a
 * store of its own: the prices' call-counting transformValues, re-grouped by key family and the transformed
 * value's first letter and reduced. The re-grouping asks it for old values, which its processor makes by
 * calling the same transformer on the prices' old value after the new one (KTableTransformValuesProcessor
 * with sendOldValues): the subtracted values carry those calls' counts. The Python twin is the end of
 * table_scenarios() in tests/kstreams_table_scenarios_topology.py; keep the two in step.
 */
final class TransformValuesOldValuesExamples {
    private TransformValuesOldValuesExamples() {}

    static void addTo(final KTable<String, String> prices, final Map<String, String> topics) {
        prices.transformValues(TransformValuesGetterExamples.CallCounter::new, Named.as("prices-recounted"))
            .groupBy((key, value) -> KeyValue.pair(key.substring(0, 1) + value.substring(0, 1), value),
                     Grouped.as("recounted-by-kind"))
            .reduce((total, value) -> TableScenarioExamples.tail(total + "+" + value, 160),
                    (total, value) -> TableScenarioExamples.tail(total + "-" + value, 160),
                    TableScenarioExamples.<String, String>uncached("recounted-reduced"))
            .toStream().processValues(StampValues::new).to(topics.get("out-prices-recounted"));
    }
}
