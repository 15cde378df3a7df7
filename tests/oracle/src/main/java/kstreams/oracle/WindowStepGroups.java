package kstreams.oracle;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A windowed table's versioned step re-grouped by the key (part of VersionedConsumerExamples): a reduce of its
 * windows' values ("start:value"), adding each latest update and subtracting the window's value before it (an
 * out-of-order update goes to no group). The Python twin is versioned_consumers_topology._window_groups.
 */
final class WindowStepGroups {
    private WindowStepGroups() {}

    static String lastChars(String text) {
        return text.substring(Math.max(0, text.length() - 60));
    }

    static void regroup(KTable<Windowed<String>, Long> steps, String store, String output) {
        steps.groupBy((window, value) -> KeyValue.pair(window.key(), window.window().start() + ":" + value))
            .reduce((total, value) -> lastChars(total + "+" + value), (total, value) -> lastChars(total + "-" + value),
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(store).withCachingDisabled())
            .toStream().to(output);
    }
}
