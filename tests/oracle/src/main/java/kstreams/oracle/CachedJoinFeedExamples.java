package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.ValueTransformerWithKey;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Stream-stream joins fed, in their sub-topology, by stores with the record cache on, run by Kafka
 * Streams itself committing once, when closed after its whole input (CommitOnceRuns): a table read from "rows"
 * left-joined with the taps, a count of the marks inner-joined with them, and the marks made a table
 * (toTable) outer-joined with the taps that have a key; a cogroup of the marks and the taps (the last
 * value of either) inner-joined with the taps; the cached rows' table left-joined with the taps' table
 * (uncached), the join materialized with its cache too, inner-joined with the taps; the marks made a
 * versioned table (8 s of history: older marks are not put, nor forwarded), filtered into a store of its
 * own left-joined with the taps (within 500 ms), and mapped (upper case) into a store of its own
 * inner-joined with them; windowed counts of the marks (cachedWindowJoins); windowed cogroups of the marks
 * and the taps (CachedCogroupWindowJoins); and a table of members
 * re-grouped by the group its value names, counted with its cache, inner-joined with the pings (in the
 * sub-topology after the repartition topic); and the orders joined on their user with the users (a
 * foreign-key join named "paid", both tables uncached), its result materialized with its cache,
 * inner-joined with the payments (in the orders' sub-topology); each within 2 s and a grace of 5 s
 * unless said. The cache forwards a key's (a window's, a session's) last update at the commit, with
 * that update's timestamp, and the join buffers and pairs it then. Each output value ends with "|t" and
 * the record's timestamp. A filter keeping its own store with the record cache on ("cached-filtered", of
 * the marks made an uncached table), which FilteredReader reads: on the filter's changes (forwarded by
 * the cache at the commit) and on the taps that have a key. And the marks' uncached table filtered into a store
 * of its own with the record cache on ("cached-step") left-joined with the taps, and the cached rows' table
 * mapped (upper case) into one ("cached-step-series", two caches in series) inner-joined with them. And the
 * marks' uncached table transformed (MarkTransformer) into a store of its own with the record cache on
 * ("cached-transformed"), its toStream written as it is. Prints JSON {"describe": ...}.
 *
 * Args: bootstrap applicationId stateDir rows taps marks members pings orders users payments
 *       outTable outCount outToTable outCogroup outTableJoin outKept outShouted outWindows outSessions
 *       outSliding outRegroup outPaid outFiltered outStep outStepSeries outCogroupWindows outCogroupSessions
 *       outCogroupSliding outTransformed
 *
 * The Python twin is cached_join_feed_examples() in tests/cached_join_feed_topology.py; keep the two in step.
 */
final class CachedJoinFeedExamples {
    private CachedJoinFeedExamples() {}

    static String s(Object value) {
        return value == null ? "null" : value.toString();
    }

    /** Each record, its timestamp and what the cached filter's store holds for its key (its cache first). */
    static final class FilteredReader implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private TimestampedKeyValueStore<String, String> filtered;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.filtered = context.getStateStore("cached-filtered");
        }

        @Override
        public void process(Record<String, String> record) {
            ValueAndTimestamp<String> stored = filtered.get(record.key());
            String storedText = stored == null ? "null" : stored.value() + "@" + stored.timestamp();
            context.forward(record.withValue(s(record.value()) + "|t" + record.timestamp() + "|" + storedText));
        }
    }

    /** The key, ":", the mark, "@" and the update's time as the context gives it; a tombstone stays one. */
    static final class MarkTransformer implements ValueTransformerWithKey<String, String, String> {
        private org.apache.kafka.streams.processor.ProcessorContext context;

        @Override
        public void init(final org.apache.kafka.streams.processor.ProcessorContext context) {
            this.context = context;
        }

        @Override
        public String transform(final String readOnlyKey, final String mark) {
            return mark == null ? null : readOnlyKey + ":" + mark + "@" + context.timestamp();
        }

        @Override
        public void close() {}
    }

    static Topology cachedJoinFeedExamples(String rows, String taps, String marks, String members, String pings,
                                           String orders, String users, String payments,
                                           String outTable, String outCount, String outToTable,
                                           String outCogroup, String outTableJoin, String outKept,
                                           String outShouted, String outWindows, String outSessions,
                                           String outSliding, String outRegroup, String outPaid,
                                           String outFiltered, String outStep, String outStepSeries,
                                           String outCogroupWindows, String outCogroupSessions,
                                           String outCogroupSliding, String outTransformed) {
        StreamsBuilder builder = new StreamsBuilder();
        JoinWindows windows = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(2), Duration.ofSeconds(5));
        KStream<String, String> tapStream = builder.stream(taps);
        KTable<String, String> rowTable =
            builder.table(rows, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-rows"));
        rowTable.toStream()
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
        markStream.groupByKey()
            .<String>cogroup((key, mark, last) -> mark)
            .cogroup(tapStream.groupByKey(), (key, tap, last) -> tap)
            .aggregate(() -> "", Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-latest"))
            .toStream()
            .join(tapStream, (last, tap) -> last + "*" + tap, windows)
            .processValues(StampValues::new)
            .to(outCogroup);
        KTable<String, String> tapTable = tapStream.toTable(
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("taps-plain").withCachingDisabled());
        rowTable.leftJoin(tapTable, (row, tap) -> row + "&" + s(tap),
                          Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-joined"))
            .toStream()
            .join(tapStream, (joined, tap) -> joined + "+" + tap, windows)
            .processValues(StampValues::new)
            .to(outTableJoin);
        KTable<String, String> markVersions = markStream.toTable(
            Materialized.as(Stores.persistentVersionedKeyValueStore("mark-versions", Duration.ofSeconds(8))));
        markVersions.filter((key, mark) -> !mark.endsWith("3"),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-kept"))
            .toStream()
            .leftJoin(tapStream, (kept, tap) -> s(kept) + "+" + s(tap),
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(500), Duration.ofSeconds(5)))
            .processValues(StampValues::new)
            .to(outKept);
        markVersions.mapValues(mark -> mark.toUpperCase(),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-shouted"))
            .toStream()
            .join(tapStream, (shouted, tap) -> shouted + "+" + tap, windows)
            .processValues(StampValues::new)
            .to(outShouted);
        cachedWindowJoins(markStream, tapStream, outWindows, outSessions, outSliding);
        CachedCogroupWindowJoins.cachedCogroupWindowJoins(markStream, tapStream, outCogroupWindows, outCogroupSessions,
                                                          outCogroupSliding);
        builder.<String, String>table(members,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("members-plain").withCachingDisabled())
            .groupBy((member, value) -> KeyValue.pair(value.split(":")[0], value.split(":")[1]))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("cached-group-counts"))
            .toStream()
            .mapValues(count -> "g" + count)
            .join(builder.<String, String>stream(pings), (count, ping) -> count + "+" + ping, windows)
            .processValues(StampValues::new)
            .to(outRegroup);
        builder.<String, String>table(orders,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("orders-plain").withCachingDisabled())
            .join(builder.<String, String>table(users,
                      Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("users-plain").withCachingDisabled()),
                  order -> order.split(":")[0], (order, user) -> order + "@" + user, TableJoined.as("paid"),
                  Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-paid"))
            .toStream()
            .join(builder.<String, String>stream(payments), (paid, payment) -> paid + "+" + payment, windows)
            .processValues(StampValues::new)
            .to(outPaid);
        KTable<String, String> uncachedMarks = markStream
            .toTable(Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("uncached-marks").withCachingDisabled());
        KTable<String, String> filtered = uncachedMarks.filter((key, mark) -> !mark.endsWith("3"),
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-filtered"));
        filtered.toStream().process(FilteredReader::new, "cached-filtered").to(outFiltered);
        keyedTaps.process(FilteredReader::new, "cached-filtered").to(outFiltered);
        uncachedMarks.filter((key, mark) -> !mark.endsWith("5"),
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-step"))
            .toStream()
            .leftJoin(tapStream, (mark, tap) -> mark + "+" + s(tap), windows)
            .processValues(StampValues::new)
            .to(outStep);
        rowTable.mapValues(row -> row.toUpperCase(),
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-step-series"))
            .toStream()
            .join(tapStream, (row, tap) -> row + "+" + tap, windows)
            .processValues(StampValues::new)
            .to(outStepSeries);
        uncachedMarks.transformValues(MarkTransformer::new,
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cached-transformed"))
            .toStream()
            .processValues(StampValues::new)
            .to(outTransformed);
        return builder.build();
    }

    /**
     * Windowed counts of the marks with the record cache on, each window's (session's) count forwarded
     * at the commit, in the order of the windows' last updates (all keys), stamped with its largest
     * timestamp (a session's: its end), and joined under the window's own key: 2 s windows every 1 s
     * (3 s grace) outer-joined with the taps' uncached counts of the same windows (within 1 s, 2 s
     * grace); sessions (1 s gap, 2 s grace) outer-joined with their counts above 1 times ten (500 ms,
     * 500 ms grace); 1 s sliding windows (2 s grace) inner-joined with their counts times ten (500 ms,
     * 500 ms grace). Each output keyed by the window's key, the window in its value.
     */
    static void cachedWindowJoins(KStream<String, String> marks, KStream<String, String> taps, String outWindows,
                                  String outSessions, String outSliding) {
        Serde<Windowed<String>> windowKeys = WindowedSerdes.timeWindowedSerdeFrom(String.class, 2000L);
        TimeWindows hopping = TimeWindows.ofSizeAndGrace(Duration.ofSeconds(2), Duration.ofSeconds(3))
            .advanceBy(Duration.ofSeconds(1));
        KStream<Windowed<String>, Long> tapWindows = taps.groupByKey().windowedBy(hopping)
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("tap-windows").withCachingDisabled())
            .toStream();
        marks.groupByKey().windowedBy(hopping)
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("cached-mark-windows"))
            .toStream()
            .outerJoin(tapWindows, (marked, tapped) -> s(marked) + "/" + s(tapped),
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(2)),
                StreamJoined.with(windowKeys, Serdes.Long(), Serdes.Long()))
            .map((window, value) -> KeyValue.pair(window.key(), window.window().start() + ":" + value))
            .processValues(StampValues::new)
            .to(outWindows);
        Serde<Windowed<String>> sessionKeys = WindowedSerdes.sessionWindowedSerdeFrom(String.class);
        KStream<Windowed<String>, Long> sessions = marks.groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(2)))
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("cached-mark-sessions"))
            .toStream();
        KStream<Windowed<String>, Long> tenfoldSessions = sessions
            .filter((session, count) -> count != null && count > 1)
            .mapValues(count -> count * 10);
        sessions.outerJoin(tenfoldSessions, (count, tenfold) -> s(count) + "/" + s(tenfold),
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(500), Duration.ofMillis(500)),
                StreamJoined.with(sessionKeys, Serdes.Long(), Serdes.Long()))
            .map((session, value) -> KeyValue.pair(session.key(),
                session.window().start() + "-" + session.window().end() + ":" + value))
            .processValues(StampValues::new)
            .to(outSessions);
        Serde<Windowed<String>> slidingKeys = WindowedSerdes.timeWindowedSerdeFrom(String.class, 1000L);
        KStream<Windowed<String>, Long> sliding = marks.groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(2)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("cached-mark-sliding"))
            .toStream();
        sliding.join(sliding.mapValues(count -> count * 10), (count, tenfold) -> count + "/" + tenfold,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(500), Duration.ofMillis(500)),
                StreamJoined.with(slidingKeys, Serdes.Long(), Serdes.Long()))
            .map((window, value) -> KeyValue.pair(window.key(), window.window().start() + ":" + value))
            .processValues(StampValues::new)
            .to(outSliding);
    }

    public static void main(String[] args) throws Exception {
        Topology topology = cachedJoinFeedExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9],
                                                   args[10], args[11], args[12], args[13], args[14], args[15],
                                                   args[16], args[17], args[18], args[19], args[20], args[21],
                                                   args[22], args[23], args[24], args[25], args[26], args[27],
                                                   args[28], args[29]);
        Properties props = CommitOnceRuns.properties(args[0], args[1], args[2]);
        // The inputs are all produced before it starts: a task waits for the records of each partition
        // whose lag it knows (KIP-695), with no idling on top. A task that also reads an internal topic
        // (the re-grouping's, the foreign-key join's answers) does not wait for it: every cached update
        // goes out at the one commit, after all of its input, whenever that input came.
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 0L);
        // The left and outer joins: emit non-joined records as soon as stream time allows, not at most
        // once per second of wall-clock time (which would depend on processing speed).
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
        // The inputs, the re-grouping's repartition topic and the foreign-key join's topics (they exist
        // once the app runs).
        List<String> watched = List.of(args[3], args[4], args[5], args[6], args[7], args[8], args[9], args[10],
                                       args[1] + "-cached-group-counts-repartition",
                                       args[1] + "-paid-subscription-registration-topic",
                                       args[1] + "-paid-subscription-response-topic");
        CommitOnceRuns.runUntilProcessed(topology, props, () -> watched, Duration.ofMinutes(5));
        System.out.println(KafkaStreamsRuns.describeJson(topology));
    }
}
