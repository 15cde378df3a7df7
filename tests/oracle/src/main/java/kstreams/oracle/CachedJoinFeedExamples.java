package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * Stream-stream joins fed, in their sub-topology, by stores with the record cache on, run by Kafka
 * Streams itself committing once, when closed after its whole input (CommitOnceRuns): a table read from "rows"
 * left-joined with the taps, a count of the marks inner-joined with them, and the marks made a table
 * (toTable) outer-joined with the taps that have a key, each within 2 s and a grace of 5 s. The cache
 * forwards a key's last update at the commit, with that update's timestamp, and the join buffers and
 * pairs it then. Each output value ends with "|t" and the record's timestamp. A filter keeping its own
 * store with the record cache on ("cached-kept", of the marks made an uncached table), which KeptReader
 * reads: on the filter's changes (forwarded by the cache at the commit) and on the taps that have a key.
 * Prints JSON {"describe": ...}.
 *
 * Args: bootstrap applicationId stateDir rows taps marks outTable outCount outToTable outKept
 *
 * The Python twin is cached_join_feed_examples() in tests/cached_join_feed_topology.py; keep the two in step.
 */
final class CachedJoinFeedExamples {
    private CachedJoinFeedExamples() {}

    static String s(String value) {
        return value == null ? "null" : value;
    }

    /** Each record, its timestamp and what the cached filter's store holds for its key (its cache first). */
    static final class KeptReader implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private TimestampedKeyValueStore<String, String> kept;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.kept = context.getStateStore("cached-kept");
        }

        @Override
        public void process(Record<String, String> record) {
            ValueAndTimestamp<String> stored = kept.get(record.key());
            String storedText = stored == null ? "null" : stored.value() + "@" + stored.timestamp();
            context.forward(record.withValue(s(record.value()) + "|t" + record.timestamp() + "|" + storedText));
        }
    }

    static Topology cachedJoinFeedExamples(String rows, String taps, String marks,
                                           String outTable, String outCount, String outToTable, String outKept) {
        StreamsBuilder builder = new StreamsBuilder();
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
        KStream<String, String> keyedTaps = tapStream.filter((key, tap) -> key != null);
        markStream.toTable(Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-last"))
            .toStream()
            .outerJoin(keyedTaps, (last, tap) -> s(last) + "+" + s(tap), windows)
            .processValues(StampValues::new)
            .to(outToTable);
        KTable<String, String> kept = markStream
            .toTable(Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("uncached-last").withCachingDisabled())
            .filter((key, mark) -> !mark.endsWith("3"),
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-kept"));
        kept.toStream().process(KeptReader::new, "cached-kept").to(outKept);
        keyedTaps.process(KeptReader::new, "cached-kept").to(outKept);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        Topology topology = cachedJoinFeedExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9]);
        Properties props = CommitOnceRuns.properties(args[0], args[1], args[2]);
        // Wait for every input partition of a task rather than run ahead on one (20 s, for a loaded machine).
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 20_000L);
        // The left and outer joins: emit non-joined records as soon as stream time allows, not at most
        // once per second of wall-clock time (which would depend on processing speed).
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
        CommitOnceRuns.runUntilProcessed(topology, props, () -> List.of(args).subList(3, 6), Duration.ofMinutes(5));
        System.out.println(KafkaStreamsRuns.describeJson(topology));
    }
}
