package kstreams.oracle;

import java.time.Duration;
import java.util.List;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The readers of SuppressExamples' suppressed prices table ("held-read") other than its own re-grouping and
 * left join. The Python twin is other_suppressed_readers() in tests/suppressed_readers_topology.py; keep the
 * two in step.
 */
final class SuppressedReaderExamples {
    private SuppressedReaderExamples() {}

    /** The table's updates looking the suppressed table up (a stream-table join), a join through a filter with a
     * store of its own after the suppression, the same filter re-grouped by key family (its old values are its
     * store's), the suppressed left join joined and re-grouped by key family, and the suppressed table suppressed
     * again, left-joined and looked up by the table (through both buffers); {@code out} in that order but the
     * filter's re-grouping after the left join's. */
    static void otherSuppressedReaders(KTable<String, String> priceTable, KTable<String, String> heldRead,
                                       KTable<String, String> heldJoined, List<String> out) {
        priceTable.toStream().join(heldRead, (mine, held) -> mine + "|" + held).to(out.get(0));
        KTable<String, String> kept = heldRead.filter((key, value) -> !value.startsWith("x"),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("held-kept").withCachingDisabled());
        kept.join(priceTable, (held, mine) -> held + "|" + mine).toStream().to(out.get(1));
        KTable<String, String> joinedHeld = heldJoined.suppress(
            Suppressed.<String>untilTimeLimit(Duration.ofSeconds(1), BufferConfig.unbounded()).withName("joined-held"));
        joinedHeld.join(priceTable, (held, mine) -> held + "/" + mine).toStream().to(out.get(2));
        joinedHeld.groupBy((key, value) -> KeyValue.pair(key.substring(0, 1), value), Grouped.as("joined-held-by-family"))
            .aggregate(() -> "", (key, value, agg) -> agg + "+" + value, (key, value, agg) -> agg + "-" + value,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("joined-held-families").withCachingDisabled())
            .toStream().to(out.get(3));
        kept.groupBy((key, value) -> KeyValue.pair(key.substring(0, 1), value), Grouped.as("held-kept-by-family"))
            .aggregate(() -> "", (key, value, agg) -> agg + "+" + value, (key, value, agg) -> agg + "-" + value,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("held-kept-families").withCachingDisabled())
            .toStream().to(out.get(4));
        KTable<String, String> heldTwice = heldRead.suppress(
            Suppressed.<String>untilTimeLimit(Duration.ofSeconds(1), BufferConfig.unbounded()).withName("held-twice"));
        priceTable.leftJoin(heldTwice, (mine, held) -> mine + "|" + held).toStream().to(out.get(5));
        priceTable.toStream().join(heldTwice, (mine, held) -> mine + "/" + held).to(out.get(6));
    }
}
