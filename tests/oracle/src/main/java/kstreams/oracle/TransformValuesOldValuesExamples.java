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
 * with sendOldValues): the subtracted values carry those calls' counts. So does a filter of it (whose
 * constructor asks for old values) and a map_values of it re-grouped. The Python twin is the end of
 * table_scenarios() in tests/kstreams_table_scenarios_topology.py; keep the two in step.
 */
final class TransformValuesOldValuesExamples {
    private TransformValuesOldValuesExamples() {}

    static void addTo(final KTable<String, String> prices, final Map<String, String> topics) {
        KTable<String, String> recounted =
            prices.transformValues(TransformValuesGetterExamples.CallCounter::new, Named.as("prices-recounted"));
        recounted.groupBy((key, value) -> KeyValue.pair(key.substring(0, 1) + value.substring(0, 1), value),
                     Grouped.as("recounted-by-kind"))
            .reduce((total, value) -> TableScenarioExamples.tail(total + "+" + value, 160),
                    (total, value) -> TableScenarioExamples.tail(total + "-" + value, 160),
                    TableScenarioExamples.<String, String>uncached("recounted-reduced"))
            .toStream().processValues(StampValues::new).to(topics.get("out-prices-recounted"));
        // A filter of it (its constructor asks it for old values: the prices are materialized) drops an update
        // neither of whose transformed values passes; a map_values of it re-grouped subtracts the mapped old one.
        recounted.filter((key, value) -> !value.startsWith("x"), Named.as("recounted-kept"))
            .toStream().processValues(StampValues::new).to(topics.get("out-recounted-kept"));
        recounted.mapValues(value -> value.substring(0, 1), Named.as("recounted-kinds"))
            .groupBy((key, kind) -> KeyValue.pair(key.substring(0, 1) + kind, key), Grouped.as("recounted-kinds-by-kind"))
            .count(TableScenarioExamples.<String, Long>uncached("recounted-kind-counts"))
            .toStream().mapValues(count -> String.valueOf(count)).processValues(StampValues::new)
            .to(topics.get("out-recounted-kind-counts"));
    }
}
