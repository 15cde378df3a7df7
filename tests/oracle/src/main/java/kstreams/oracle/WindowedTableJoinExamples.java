package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindowedKStream;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Table-table joins of windowed tables (a windowed aggregation's KTable&lt;Windowed&lt;K&gt;, V&gt;) and a
 * windowed table re-grouped (session tables too: a merge forwards a delete of each merged session with its
 * old value, which the re-grouping subtracts), joins of session tables (materialized, re-grouped and joined
 * again: SessionJoinChains), run by Kafka Streams itself until its input and repartition topics are
 * consumed; prints JSON {"describe": ...}.
 *
 * Args: bootstrap applicationId stateDir s outInner outLeft outOuter outRegrouped outFiltered outMaterialized
 * outJoinedRegrouped outRejoined outPairJoined outPairRegrouped outOddCounts outOddReduced outMixed
 * outSlidingInner outSlidingOuter outSlidingRegrouped outSlidingLeft outSessionRegrouped outSessionSizes
 * outLongSessions outSessionInner outSessionLeft outSessionOuter outSessionMaterialized outSessionJoinedRegrouped
 * outSessionPairRegrouped outSessionRejoined outSessionPairJoined
 *
 * The Python twin is windowed_join_examples() in tests/windowed_join_topology.py; keep the two in step.
 */
public final class WindowedTableJoinExamples {
    private WindowedTableJoinExamples() {}

    static final long WINDOW_MS = 1000;

    private static String text(Object value) {
        return value == null ? "null" : value.toString();
    }

    private static <V> Materialized<String, V, WindowStore<Bytes, byte[]>> uncached(String store) {
        return Materialized.<String, V, WindowStore<Bytes, byte[]>>as(store).withCachingDisabled();
    }

    public static Topology build(String s, String outInner, String outLeft, String outOuter, String outRegrouped,
                                 String outFiltered, String outMaterialized, String outJoinedRegrouped,
                                 String outRejoined, String outPairJoined, String outPairRegrouped,
                                 String outOddCounts, String outOddReduced, String outMixed,
                                 String outSlidingInner, String outSlidingOuter, String outSlidingRegrouped,
                                 String outSlidingLeft, String outSessionRegrouped, String outSessionSizes,
                                 String outLongSessions, String outSessionInner, String outSessionLeft,
                                 String outSessionOuter, String outSessionMaterialized,
                                 String outSessionJoinedRegrouped, String outSessionPairRegrouped,
                                 String outSessionRejoined, String outSessionPairJoined) {
        StreamsBuilder builder = new StreamsBuilder();
        Duration size = Duration.ofMillis(WINDOW_MS);
        Duration grace = Duration.ofMillis(500);
        KGroupedStream<String, String> grouped = builder.<String, String>stream(s).groupByKey();
        var tumbling = grouped.windowedBy(TimeWindows.ofSizeAndGrace(size, grace));
        var hopping = grouped.windowedBy(TimeWindows.ofSizeAndGrace(size, grace).advanceBy(Duration.ofMillis(500)));
        KTable<Windowed<String>, Long> counts = tumbling.count(uncached("counts"));
        KTable<Windowed<String>, String> values = tumbling.reduce((x, y) -> x + "," + y, uncached("values"));
        KTable<Windowed<String>, String> hopped = hopping.reduce((x, y) -> x + ";" + y, uncached("hopped"));
        Produced<Windowed<String>, String> produced =
            Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, WINDOW_MS), Serdes.String());
        counts.join(hopped, (n, v) -> n + "|" + v).toStream().to(outInner, produced);
        counts.leftJoin(values, (n, v) -> n + "<" + text(v)).toStream().to(outLeft, produced);
        values.outerJoin(hopped, (x, y) -> text(x) + "~" + text(y)).toStream().to(outOuter, produced);
        values.groupBy((windowed, value) -> KeyValue.pair(windowed.key(), value), Grouped.as("by-key"))
            .aggregate(() -> "0",
                       (key, value, total) -> Long.toString(Long.parseLong(total) + value.length()),
                       (key, value, total) -> Long.toString(Long.parseLong(total) - value.length()),
                       Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("lengths").withCachingDisabled())
            .toStream()
            .to(outRegrouped);
        counts.filter((windowed, n) -> n % 2 == 1).leftJoin(hopped, (n, v) -> n + "<" + text(v))
            .toStream().to(outFiltered, produced);

        // Sub-topology 2: re-keyed, task-grouped (stores keyed by windowed keys after the windowed tables).
        var windowedKeys = WindowedSerdes.timeWindowedSerdeFrom(String.class, WINDOW_MS);
        KGroupedStream<String, String> regrouped =
            builder.<String, String>stream(s).groupBy((key, value) -> key, Grouped.as("rekeyed"));
        var rekeyed = regrouped.windowedBy(TimeWindows.ofSizeAndGrace(size, grace));
        KTable<Windowed<String>, Long> counted = rekeyed.count(uncached("counted"));
        KTable<Windowed<String>, String> labelled = counted.mapValues(n -> "#" + n,
                       Materialized.<Windowed<String>, String, KeyValueStore<Bytes, byte[]>>as("labelled")
                           .withKeySerde(windowedKeys).withCachingDisabled());
        KTable<Windowed<String>, String> concatenated = rekeyed.reduce((x, y) -> x + "," + y, uncached("concatenated"));
        KTable<Windowed<String>, String> joined = concatenated.outerJoin(labelled,
            (concatenation, label) -> text(concatenation) + "^" + text(label),
            Materialized.<Windowed<String>, String, KeyValueStore<Bytes, byte[]>>as("joined")
                .withKeySerde(windowedKeys).withCachingDisabled());
        joined.toStream().to(outMaterialized, produced);
        KTable<Windowed<String>, String> hoppedAgain =
            regrouped.windowedBy(TimeWindows.ofSizeAndGrace(size, grace).advanceBy(Duration.ofMillis(500)))
                .reduce((x, y) -> x + ";" + y, uncached("hopped-again"));
        joined.leftJoin(hoppedAgain, (value, hops) -> value + "@" + text(hops)).toStream().to(outRejoined, produced);
        joined.groupBy((windowed, value) -> KeyValue.pair(windowed.key(), value), Grouped.as("joined-by-key"))
            .aggregate(() -> "0",
                       (key, value, total) -> Long.toString(Long.parseLong(total) + value.length()),
                       (key, value, total) -> Long.toString(Long.parseLong(total) - value.length()),
                       Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("joined-lengths")
                           .withCachingDisabled())
            .toStream()
            .to(outJoinedRegrouped);

        // A windowed join's result without a store, read through both tables and the joiner (sub-topology 0).
        KTable<Windowed<String>, String> pair = values.outerJoin(hopped, (x, y) -> text(x) + "~" + text(y));
        pair.filter((windowed, value) -> !value.startsWith("null")).join(counts, (p, n) -> p + "#" + n)
            .toStream().to(outPairJoined, produced);
        pair.groupBy((windowed, value) -> KeyValue.pair(windowed.key(), value), Grouped.as("pair-by-key"))
            .aggregate(() -> "0",
                       (key, value, total) -> Long.toString(Long.parseLong(total) + value.length()),
                       (key, value, total) -> Long.toString(Long.parseLong(total) - value.length()),
                       Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("pair-lengths")
                           .withCachingDisabled())
            .toStream()
            .to(outPairRegrouped);

        // State after a materialized windowed join, in its sub-topology (2): the odd counts joined with the
        // concatenation (a tombstone when a count turns even), its stream counted and reduced by window.
        KTable<Windowed<String>, String> oddJoined = counted.filter((windowed, n) -> n % 2 == 1).join(
            concatenated, (n, concatenation) -> n + "&" + text(concatenation),
            Materialized.<Windowed<String>, String, KeyValueStore<Bytes, byte[]>>as("odd-joined")
                .withKeySerde(windowedKeys).withCachingDisabled());
        KGroupedStream<Windowed<String>, String> byWindow =
            oddJoined.toStream().groupByKey(Grouped.with(windowedKeys, Serdes.String()));
        byWindow.count(Materialized.<Windowed<String>, Long, KeyValueStore<Bytes, byte[]>>as("odd-counts")
                           .withCachingDisabled())
            .toStream().mapValues(n -> Long.toString(n)).to(outOddCounts, produced);
        byWindow.reduce((x, y) -> x + "+" + y,
                        Materialized.<Windowed<String>, String, KeyValueStore<Bytes, byte[]>>as("odd-reduced")
                            .withCachingDisabled())
            .toStream().to(outOddReduced, produced);

        // A materialized join of windows of different sizes (sub-topology 2): the concatenation (1 s) left-joined
        // with a count in 500 ms windows (its retention covering the other's reach); both write the entry of a
        // start, the store being keyed by the key and the window's start.
        KTable<Windowed<String>, Long> quick = regrouped
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(500), grace))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("quick-counts")
                       .withRetention(Duration.ofMillis(1500)).withCachingDisabled());
        concatenated.leftJoin(quick, (concatenation, n) -> text(concatenation) + "%" + text(n),
                              Materialized.<Windowed<String>, String, KeyValueStore<Bytes, byte[]>>as("mixed")
                                  .withKeySerde(windowedKeys).withCachingDisabled())
            .toStream().to(outMixed, produced);

        // Sliding windows, in a sub-topology of their own: joined without a store and materialized, and re-grouped.
        KGroupedStream<String, String> slid = builder.<String, String>stream(s).groupBy((key, value) -> key,
                                                                                          Grouped.as("slid"));
        var sliding = slid.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(size, grace));
        KTable<Windowed<String>, Long> slideCounts = sliding.count(uncached("slide-counts"));
        KTable<Windowed<String>, String> slideValues = sliding.reduce((x, y) -> x + "," + y, uncached("slide-values"));
        slideCounts.join(slideValues, (n, v) -> n + "|" + v).toStream().to(outSlidingInner, produced);
        slideValues.outerJoin(slideCounts, (v, n) -> text(v) + "~" + text(n),
                              Materialized.<Windowed<String>, String, KeyValueStore<Bytes, byte[]>>as("slide-joined")
                                  .withKeySerde(windowedKeys).withCachingDisabled())
            .toStream().to(outSlidingOuter, produced);
        slideValues.groupBy((windowed, value) -> KeyValue.pair(windowed.key(), value), Grouped.as("slid-by-key"))
            .aggregate(() -> "0",
                       (key, value, total) -> Long.toString(Long.parseLong(total) + value.length()),
                       (key, value, total) -> Long.toString(Long.parseLong(total) - value.length()),
                       Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("slide-lengths")
                           .withCachingDisabled())
            .toStream()
            .to(outSlidingRegrouped);
        KTable<Windowed<String>, Long> quickSlides =
            slid.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(500), grace))
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("quick-slides")
                           .withRetention(Duration.ofMillis(1502)).withCachingDisabled());
        slideValues.leftJoin(quickSlides, (v, n) -> v + "%" + text(n)).toStream().to(outSlidingLeft, produced);

        // Session windows, in a sub-topology of their own: re-grouped (a merge's deletes subtract).
        KGroupedStream<String, String> sessioned =
            builder.<String, String>stream(s).groupBy((key, value) -> key, Grouped.as("sessioned"));
        SessionWindowedKStream<String, String> sessionWindows =
            sessioned.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(500), grace));
        KTable<Windowed<String>, Long> sessionCounts = sessionWindows.count(
            Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("session-counts").withCachingDisabled());
        KTable<Windowed<String>, String> sessionValues = sessionWindows.reduce((x, y) -> x + "," + y,
            Materialized.<String, String, SessionStore<Bytes, byte[]>>as("session-values").withCachingDisabled());
        sessionValues.groupBy((windowed, value) -> KeyValue.pair(windowed.key(), value), Grouped.as("session-by-key"))
            .aggregate(() -> "0",
                       (key, value, total) -> Long.toString(Long.parseLong(total) + value.length()),
                       (key, value, total) -> Long.toString(Long.parseLong(total) - value.length()),
                       Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("session-lengths")
                           .withCachingDisabled())
            .toStream()
            .to(outSessionRegrouped);
        sessionCounts.mapValues(n -> Long.toString(n))
            .groupBy((windowed, n) -> KeyValue.pair(n, windowed.key()), Grouped.as("sessions-by-size"))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("session-sizes").withCachingDisabled())
            .toStream().mapValues(n -> Long.toString(n)).to(outSessionSizes);
        sessionCounts.filter((windowed, n) -> n > 1)
            .groupBy((windowed, n) -> KeyValue.pair(windowed.key(), Long.toString(n)), Grouped.as("long-sessions"))
            .reduce((x, y) -> Long.toString(Long.parseLong(x) + Long.parseLong(y)),
                    (x, y) -> Long.toString(Long.parseLong(x) - Long.parseLong(y)),
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("long-session-records")
                        .withCachingDisabled())
            .toStream()
            .to(outLongSessions);
        // Joins of session tables (fetchSession), one with sessions of another gap and a shorter retention.
        Produced<Windowed<String>, String> sessionKeys =
            Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String());
        KTable<Windowed<String>, String> sessionPair = sessionCounts.join(sessionValues, (n, v) -> n + "|" + v);
        sessionPair.toStream().to(outSessionInner, sessionKeys);
        KTable<Windowed<String>, Long> shortCounts = sessioned
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(300), grace))
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("short-session-counts")
                       .withCachingDisabled());
        sessionValues.leftJoin(shortCounts, (v, n) -> v + "%" + text(n)).toStream().to(outSessionLeft, sessionKeys);
        KTable<Windowed<String>, String> oddPair = sessionCounts.filter((windowed, n) -> n % 2 == 1)
            .outerJoin(sessionValues, (n, v) -> text(n) + "~" + text(v));
        oddPair.toStream().to(outSessionOuter, sessionKeys);
        SessionJoinChains.add(shortCounts, sessionPair, oddPair, outSessionPairRegrouped, outSessionPairJoined);
        SessionJoinChains.addMaterialized(builder, s, grace, outSessionMaterialized, outSessionJoinedRegrouped,
                                          outSessionRejoined);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        Topology topology = build(args[3], args[4], args[5], args[6], args[7], args[8], args[9], args[10], args[11],
                                  args[12], args[13], args[14], args[15], args[16], args[17], args[18], args[19],
                                  args[20], args[21], args[22], args[23], args[24], args[25], args[26], args[27],
                                  args[28], args[29], args[30], args[31]);
        // The test reads the session re-groupings' repartition topics whole afterwards: never purged (a run
        // longer than the 30 s purge interval would delete what it read of them).
        Properties props = KafkaStreamsRuns.properties(args[0], args[1], args[2]);
        props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, Long.MAX_VALUE);
        // The repartition topics too: the sub-topologies reading them must have read them to the end.
        KafkaStreamsRuns.runUntilConsumed(topology, props,
                                          () -> List.of(args[3], args[1] + "-by-key-repartition",
                                                        args[1] + "-rekeyed-repartition",
                                                        args[1] + "-joined-by-key-repartition",
                                                        args[1] + "-pair-by-key-repartition",
                                                        args[1] + "-slid-repartition",
                                                        args[1] + "-slid-by-key-repartition",
                                                        args[1] + "-sessioned-repartition",
                                                        args[1] + "-session-by-key-repartition",
                                                        args[1] + "-sessions-by-size-repartition",
                                                        args[1] + "-long-sessions-repartition",
                                                        args[1] + "-session-joins-repartition",
                                                        args[1] + "-session-joined-by-key-repartition",
                                                        args[1] + "-session-pair-by-key-repartition"),
                                          Duration.ofMinutes(5), streams -> KafkaStreamsRuns.describeJson(topology));
    }
}
