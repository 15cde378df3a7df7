package kstreams.oracle;

import java.time.Duration;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Stream-stream joins fed, in their sub-topology, by stores with the record cache on (added to
 * AggregationJoinExamples' app, which commits once, at close after the input: CommitOnceRuns): a table read from "rows"
 * left-joined with the taps, a count of the marks inner-joined with them, and the marks made a table
 * (toTable) outer-joined with the taps that have a key, each within 2 s and a grace of 5 s. The cache
 * forwards a key's last update at the commit, with that update's timestamp, and the join buffers and
 * pairs it then. Each output value ends with "|t" and the record's timestamp.
 *
 * The Python twin is add_cached_join_feeds() in tests/cached_join_feed_topology.py; keep the two in step.
 */
final class CachedJoinFeedExamples {
    private CachedJoinFeedExamples() {}

    static String s(String value) {
        return value == null ? "null" : value;
    }

    static void add(StreamsBuilder builder, String rows, String taps, String marks,
                    String outTable, String outCount, String outToTable) {
        JoinWindows windows = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(2), Duration.ofSeconds(5));
        KStream<String, String> tapStream = builder.stream(taps);
        builder.<String, String>table(rows, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-rows"))
            .toStream()
            .leftJoin(tapStream, (row, tap) -> row + "+" + s(tap), windows)
            .processValues(StampValues::new)
            .to(outTable);
        KStream<String, String> markStream = builder.stream(marks);
        markStream.groupByKey()
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("cached-counts"))
            .toStream()
            .mapValues(count -> "n" + count)
            .join(tapStream, (n, tap) -> n + "+" + tap, windows)
            .processValues(StampValues::new)
            .to(outCount);
        markStream.toTable(Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-last"))
            .toStream()
            .outerJoin(tapStream.filter((key, tap) -> key != null), (last, tap) -> s(last) + "+" + s(tap), windows)
            .processValues(StampValues::new)
            .to(outToTable);
    }
}
