package kstreams.oracle;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Windowed aggregations fed through a filter, a filterNot, a branch and a flatMapValues, all in the
 * sub-topology of one source that also merges a second source (clicks) into a sink, run by Kafka
 * Streams itself until its input is consumed; prints JSON {"describe": ..., "dropped": n} (n: the
 * tasks' dropped-records-total). Each windowed processor keeps its own stream time of the records
 * that reach it, which here is not the task's: records the filters drop and the clicks jump ahead.
 * A tumbling count straight on the source (whose stream time is the task's) shares the sub-topology.
 * In a sub-topology of their own, slides go straight to a sliding reduce and a tumbling count: the
 * sliding windows skip null values, which the tumbling windows (whose stream time is the task's) count.
 * Every store runs without the record cache, so the output is fixed by the input alone.
 *
 * In a third sub-topology, the twin of PySpark Column expressions in front of a hopping count (and its
 * suppression until the windows close), a tumbling reduce, a session count (and its suppression by a time
 * limit), a sliding reduce and a hopping reduce of each value's words, each update stamped with its timestamp,
 * a tumbling cogroup of a filter's records and a mapValues' and a session cogroup of a filterNot's and the
 * same mapValues', and beside them, with no Column in front, a hopping count with grace straight on the
 * source and a tumbling reduce behind a Python mapValues, each update stamped with its timestamp
 * (columnWindows; null columns: without it, as the describe catalog has it).
 *
 * Args: bootstrap applicationId stateDir events clicks slides columns outFiltered outSessions outSliding
 *       outBranch outDirect outMerged outMixedSliding outMixedTumbling outColumnHopping outColumnTumbling
 *       outColumnSessions outColumnSliding outColumnFinal outColumnLimited outColumnWords outColumnCogroup
 *       outColumnSessionCogroup outColumnStraight outColumnPython
 *
 * The Python twin is filtered_window_examples() in tests/filtered_window_topology.py; keep the two in step.
 */
public final class FilteredWindowExamples {
    private FilteredWindowExamples() {}

    static Serde<Windowed<String>> windowed(long sizeMs) {
        return WindowedSerdes.timeWindowedSerdeFrom(String.class, sizeMs);
    }

    static String tail(String aggregate) {
        return aggregate.substring(Math.max(0, aggregate.length() - 60));
    }

    static Topology filteredWindowExamples(String events, String clicks, String slides, String outFiltered,
                                           String outSessions, String outSliding, String outBranch,
                                           String outDirect, String outMerged, String outMixedSliding,
                                           String outMixedTumbling, String columns, String outColumnHopping,
                                           String outColumnTumbling, String outColumnSessions,
                                           String outColumnSliding, String outColumnFinal, String outColumnLimited,
                                           String outColumnWords, String outColumnCogroup,
                                           String outColumnSessionCogroup, String outColumnStraight,
                                           String outColumnPython) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> eventStream = builder.stream(events);
        // Another source of the sub-topology: its records reach no windowed aggregation.
        // (Records with a key only: a null key's partition is the producer's choice.)
        eventStream.merge(builder.<String, String>stream(clicks)).filter((key, value) -> key != null).to(outMerged);
        eventStream.filter((key, value) -> value != null && !value.endsWith("x"))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2))
                .advanceBy(Duration.ofSeconds(5)))
            .aggregate(() -> "", (key, value, agg) -> tail(agg + "," + value), Named.as("filtered-windows"),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("filtered-windows-store")
                    .withCachingDisabled())
            .toStream()
            .to(outFiltered, Produced.with(windowed(10_000), Serdes.String()));
        eventStream.filterNot((key, value) -> value != null && value.endsWith("y"))
            .groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(2)))
            .count(Named.as("filtered-sessions"),
                Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("filtered-sessions-store")
                    .withCachingDisabled())
            .toStream()
            .to(outSessions, Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
        eventStream.flatMapValues(value -> value == null ? List.<String>of() : List.of(value + "a", value + "b"))
            .groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
            .reduce((agg, value) -> tail(agg + "+" + value), Named.as("doubled-sliding"),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("doubled-sliding-store")
                    .withCachingDisabled())
            .toStream()
            .to(outSliding, Produced.with(windowed(5_000), Serdes.String()));
        Map<String, KStream<String, String>> branches = eventStream.split(Named.as("split-"))
            .branch((key, value) -> key != null && key.compareTo("u3") < 0, Branched.as("low"))
            .defaultBranch(Branched.as("rest"));
        branches.get("split-low")
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofSeconds(5)))
            .count(Named.as("branch-count"),
                Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("branch-count-store").withCachingDisabled())
            .toStream()
            .to(outBranch, Produced.with(windowed(5_000), Serdes.Long()));
        eventStream.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(3)))
            .count(Named.as("direct-count"),
                Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("direct-count-store").withCachingDisabled())
            .toStream()
            .to(outDirect, Produced.with(windowed(10_000), Serdes.Long()));
        KGroupedStream<String, String> slidesByKey = builder.<String, String>stream(slides).groupByKey();
        slidesByKey.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
            .reduce((agg, value) -> tail(agg + "+" + value), Named.as("mixed-sliding"),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("mixed-sliding-store")
                    .withCachingDisabled())
            .toStream()
            .to(outMixedSliding, Produced.with(windowed(5_000), Serdes.String()));
        slidesByKey.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2)))
            .count(Named.as("mixed-tumbling"),
                Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("mixed-tumbling-store").withCachingDisabled())
            .toStream()
            .to(outMixedTumbling, Produced.with(windowed(10_000), Serdes.Long()));
        if (columns != null) {
            columnWindows(builder, columns, outColumnHopping, outColumnTumbling, outColumnSessions, outColumnSliding,
                          outColumnFinal, outColumnLimited, outColumnWords, outColumnCogroup,
                          outColumnSessionCogroup, outColumnStraight, outColumnPython);
        }
        return builder.build();
    }

    /**
     * The twin of the Python side's PySpark Column expressions (a sub-topology of its own): a filter
     * in front of a hopping count, a filterNot and a mapValues in front of a tumbling reduce, a
     * mapValues in front of a session count, a filter in front of a sliding reduce, and a flatMapValues
     * (Spark's split of the value at each space) in front of a hopping reduce of the words; beside them,
     * no Column in front: a hopping count with grace straight on the source and a tumbling reduce behind a
     * mapValues (a Python function on the other side), whose windows the records ahead that the filters
     * drop do close, and a null key's (which the task's stream time counts) do not.
     */
    static void columnWindows(StreamsBuilder builder, String columns, String outColumnHopping,
                              String outColumnTumbling, String outColumnSessions, String outColumnSliding,
                              String outColumnFinal, String outColumnLimited, String outColumnWords,
                              String outColumnCogroup, String outColumnSessionCogroup, String outColumnStraight,
                              String outColumnPython) {
        KStream<String, String> columnStream = builder.stream(columns);
        KTable<Windowed<String>, Long> hopping = columnStream
            .filter((key, value) -> value != null && !value.endsWith("x"))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2))
                .advanceBy(Duration.ofSeconds(5)))
            .count(Named.as("column-hopping"),
                Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("column-hopping-store")
                    .withCachingDisabled());
        hopping.toStream()
            .to(outColumnHopping, Produced.with(windowed(10_000), Serdes.Long()));
        hopping.suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
            .toStream()
            .to(outColumnFinal, Produced.with(windowed(10_000), Serdes.Long()));
        columnStream.filterNot((key, value) -> value != null && value.endsWith("y"))
            .mapValues(value -> value == null ? "-" : value.toUpperCase())
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(1)))
            .reduce((agg, value) -> tail(agg + "+" + value), Named.as("column-tumbling"),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("column-tumbling-store")
                    .withCachingDisabled())
            .toStream()
            .to(outColumnTumbling, Produced.with(windowed(5_000), Serdes.String()));
        KTable<Windowed<String>, Long> sessions = columnStream.mapValues(value -> value == null ? null : value + "!")
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(2)))
            .count(Named.as("column-sessions"),
                Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("column-sessions-store")
                    .withCachingDisabled());
        sessions.toStream()
            .to(outColumnSessions, Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
        sessions.suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(2), BufferConfig.unbounded()))
            .toStream()
            .to(outColumnLimited, Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
        columnStream.filter((key, value) -> value != null && !value.endsWith("y"))
            .groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
            .reduce((agg, value) -> tail(agg + "+" + value), Named.as("column-sliding"),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("column-sliding-store")
                    .withCachingDisabled())
            .toStream()
            .to(outColumnSliding, Produced.with(windowed(5_000), Serdes.String()));
        // F.split(value, " "): a null value gives no words, and empty words are kept (limit -1).
        columnStream.flatMapValues(value -> value == null ? List.<String>of() : Arrays.asList(value.split(" ", -1)))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2))
                .advanceBy(Duration.ofSeconds(5)))
            .reduce((agg, word) -> tail(agg + "+" + word), Named.as("column-words"),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("column-words-store")
                    .withCachingDisabled())
            .toStream()
            .processValues(StampValues::new)
            .to(outColumnWords, Produced.with(windowed(10_000), Serdes.String()));
        // A windowed cogroup of a filter's records and a mapValues': each input keeps its own stream time.
        KGroupedStream<String, String> filtered = columnStream
            .filter((key, value) -> value != null && !value.endsWith("x"))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        KGroupedStream<String, String> marked = columnStream.mapValues(value -> value == null ? null : value + "!")
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        filtered.<String>cogroup((key, value, agg) -> tail(agg + "f" + value))
            .cogroup(marked, (key, value, agg) -> tail(agg + "m" + (value == null ? "null" : value)))
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2)))
            .aggregate(() -> "", Named.as("column-cogroup"),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("column-cogroup-store")
                    .withCachingDisabled())
            .toStream()
            .processValues(StampValues::new)
            .to(outColumnCogroup, Produced.with(windowed(10_000), Serdes.String()));
        KGroupedStream<String, String> unmarked = columnStream
            .filterNot((key, value) -> value != null && value.endsWith("y"))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        unmarked.<String>cogroup((key, value, agg) -> tail(agg + "n" + (value == null ? "null" : value)))
            .cogroup(marked, (key, value, agg) -> tail(agg + "m" + (value == null ? "null" : value)))
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(2)))
            .aggregate(() -> "", (key, left, right) -> tail(left + "|" + right), Named.as("column-session-cogroup"),
                Materialized.<String, String, SessionStore<Bytes, byte[]>>as("column-session-cogroup-store")
                    .withCachingDisabled())
            .toStream()
            .processValues(StampValues::new)
            .to(outColumnSessionCogroup,
                Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String()));
        columnStream.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2))
                .advanceBy(Duration.ofSeconds(5)))
            .count(Named.as("column-straight"),
                Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("column-straight-store")
                    .withCachingDisabled())
            .toStream()
            .mapValues(count -> String.valueOf(count))
            .processValues(StampValues::new)
            .to(outColumnStraight, Produced.with(windowed(10_000), Serdes.String()));
        columnStream.mapValues(value -> value == null ? "-" : value + "?")
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(1)))
            .reduce((agg, value) -> tail(agg + "+" + value), Named.as("column-python"),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("column-python-store")
                    .withCachingDisabled())
            .toStream()
            .processValues(StampValues::new)
            .to(outColumnPython, Produced.with(windowed(5_000), Serdes.String()));
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        List<String> inputs = List.of(args[3], args[4], args[5], args[6]);
        Topology topology = filteredWindowExamples(args[3], args[4], args[5], args[7], args[8], args[9], args[10],
                                                   args[11], args[12], args[13], args[14], args[6], args[15],
                                                   args[16], args[17], args[18], args[19], args[20], args[21],
                                                   args[22], args[23], args[24], args[25]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        // The timestamp merge of a task's inputs, as the runner orders them. 0, not a wait: every input is
        // written before this process starts (no repartition topic), and a task still waits for each
        // partition whose lag it does not know yet or whose records it has not fetched (KIP-695), so it
        // merges all of it; a wait only idled at the end of each task's shorter input.
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 0L);
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> inputs, Duration.ofMinutes(5));
            double dropped = 0;
            for (Map.Entry<MetricName, ? extends Metric> metric : streams.metrics().entrySet()) {
                if (metric.getKey().name().equals("dropped-records-total")
                        && metric.getKey().group().equals("stream-task-metrics")) {
                    dropped += ((Number) metric.getValue().metricValue()).doubleValue();
                }
            }
            System.out.println("{\"describe\": " + Json.quote(topology.describe().toString())
                + ", \"dropped\": " + (long) dropped + "}");
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
