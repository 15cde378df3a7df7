package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.ProcessingExceptionHandler;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/**
 * suppress (until a window closes, until a time limit) and emit-on-window-close, run by Kafka
 * Streams itself against a real broker until every input topic is consumed to its end; prints
 * JSON {"describe": topology.describe()}. Windowed aggregations and tables run without the record
 * cache, so every update reaches the suppression as it happens and the output is fixed by the
 * input alone. Emit-on-window-close checks after every record (its wall-clock throttle set to 0).
 *
 * Args: bootstrap applicationId stateDir events prices slides outFinal outClosed outSessions outLimited
 *       outDebounced outClosedSliding outClosedSessions outBytes outBothBounds outRaised outFinalFiltered
 *       outWindowedBytes outSessionsFiltered outSessionBytes outSlidingFiltered outSlidingBytes outHeld
 *       outClosedWritten outClosedReads outClosedSessionsWritten outClosedSessionReads
 *       outClosedSlidingWritten outClosedSlidingReads outHeldRegrouped outHeldJoined outHeldLookedUp
 *       outHeldKeptJoined outJoinedHeldJoined outJoinedHeldRegrouped outHeldKeptRegrouped outHeldTwiceJoined
 *       outHeldTwiceLookedUp outHeldContext outHeldContextOdd outClosedMemory outClosedMemorySessions outShutDown
 *
 * A second application (applicationId + "-shut-down", started first, run at once) suppresses the
 * prices table in a buffer of SHUT_DOWN_BYTES bytes that shuts down when full: it stops at the first
 * record that overfills the buffer. The JSON then also holds "failure": the topic, partition and
 * offset of that record and the suppression's name, as the processing exception handler saw them.
 *
 * The Python twin is suppress_examples() in tests/suppress_topology.py; keep the two in step. The
 * processors that write the stores of the aggregates emitting on window close are classes of their
 * own: ClosedWindowWriter, ClosedSessionWriter, ClosedSlidingWriter; the suppressed table's other readers
 * are SuppressedReaderExamples'.
 */
public final class SuppressExamples {
    private SuppressExamples() {}

    static Topology suppressExamples(String events, String prices, String slides, String outFinal,
                                     String outClosed, String outSessions, String outLimited, String outDebounced,
                                     String outClosedSliding, String outClosedSessions, String outBytes,
                                     String outBothBounds, String outRaised, String outFinalFiltered,
                                     String outWindowedBytes, String outSessionsFiltered, String outSessionBytes,
                                     String outSlidingFiltered, String outSlidingBytes, String outHeld,
                                     String outClosedWritten, String outClosedReads,
                                     String outClosedSessionsWritten, String outClosedSessionReads,
                                     String outClosedSlidingWritten, String outClosedSlidingReads,
                                     String outHeldRegrouped, String outHeldJoined, List<String> outReaders) {
        StreamsBuilder builder = new StreamsBuilder();
        // The suppression buffer serializes the windowed keys: the grouping names the key serde.
        KStream<String, String> eventStream = builder.<String, String>stream(events);
        KGroupedStream<String, String> grouped = eventStream.groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        KTable<Windowed<String>, Long> counts = grouped
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("suppressed-counts")
                .withCachingDisabled());
        counts.suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
            .toStream()
            .to(outFinal, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.Long()));
        // A filter of the windowed table before the suppression: it sends old values, so an update whose
        // old and new counts both fail (1 -> 2) never reaches the suppression, and a new window's first
        // (old: the initializer's 0, which passes; new 1, which fails) reaches it as a tombstone.
        counts.filter((window, count) -> count % 4 != 1 && count % 4 != 2)
            .suppress(Suppressed.<Windowed<String>>untilWindowCloses(BufferConfig.unbounded()).withName("final-filtered"))
            .toStream()
            .to(outFinalFiltered,
                Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.Long()));
        // The same filter, then until a time limit (tombstones go out: a new window's first update is one)
        // in a buffer bounded in bytes, whose records' sizes count their updates' old counts (a new
        // window's: the initializer's 0); the oldest go out early.
        counts.filter((window, count) -> count % 4 != 1 && count % 4 != 2)
            .suppress(Suppressed.<Windowed<String>>untilTimeLimit(Duration.ofMillis(500),
                    BufferConfig.maxBytes(WINDOWED_BYTES).emitEarlyWhenFull()).withName("windowed-bytes"))
            .toStream()
            .to(outWindowedBytes,
                Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.Long()));
        grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2))
                .advanceBy(Duration.ofSeconds(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "", (key, value, agg) -> agg + "," + value,
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("closed-hopping").withCachingDisabled())
            .toStream()
            .to(outClosed, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.String()));
        KTable<Windowed<String>, Long> sessionCounts = grouped
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(2)))
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("session-counts").withCachingDisabled());
        sessionCounts.suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()).withName("final-sessions"))
            .toStream()
            .to(outSessions, Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
        // A filter of the session table before the suppression: a new session's update has no old value
        // (count 1 fails: dropped), a merged-away session's removal carries its old count (1 and 4 fail:
        // dropped; 2 and 3 pass: a tombstone).
        sessionCounts.filter((window, count) -> count % 3 != 1)
            .suppress(Suppressed.<Windowed<String>>untilWindowCloses(BufferConfig.unbounded())
                .withName("final-sessions-filtered"))
            .toStream()
            .to(outSessionsFiltered,
                Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
        // Until a time limit in a buffer bounded in bytes: removals go out as tombstones, and each record's
        // size counts its update's old count; the oldest go out early.
        sessionCounts.suppress(Suppressed.<Windowed<String>>untilTimeLimit(Duration.ofSeconds(30),
                    BufferConfig.maxBytes(SESSION_BYTES).emitEarlyWhenFull()).withName("session-bytes"))
            .toStream()
            .to(outSessionBytes, Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
        grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(1)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "", (key, value, agg) -> agg + "," + value, (key, one, two) -> one + "|" + two,
                Materialized.<String, String, SessionStore<Bytes, byte[]>>as("closed-sessions").withCachingDisabled())
            .toStream()
            .to(outClosedSessions,
                Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String()));

        KTable<String, String> priceTable = builder.table(
            prices,
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("prices-store").withCachingDisabled());
        // At most 3 keys held: the oldest goes out early when a fourth arrives.
        priceTable
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(4), BufferConfig.maxRecords(3).emitEarlyWhenFull()))
            .toStream()
            .to(outLimited);
        priceTable
            .filter((key, value) -> !value.startsWith("x"))
            .suppress(Suppressed.<String>untilTimeLimit(Duration.ofSeconds(2), BufferConfig.unbounded())
                .withName("debounce"))
            .toStream()
            .to(outDebounced);
        // Bounded in bytes as Kafka Streams sizes a buffered record (key, prior/old/new values, the
        // record context's topic and headers): the oldest go out early.
        priceTable
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(4), BufferConfig.maxBytes(200).emitEarlyWhenFull())
                .withName("bytes-limited"))
            .toStream()
            .to(outBytes);
        priceTable
            .mapValues((key, value) -> value.toUpperCase())
            .suppress(Suppressed.<String>untilTimeLimit(Duration.ofSeconds(3),
                    BufferConfig.maxRecords(3).withMaxBytes(230).emitEarlyWhenFull())
                .withName("both-bounds"))
            .toStream()
            .to(outBothBounds);
        // The shut-down application's suppression with its bound raised: never full.
        priceTable
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(4), BufferConfig.maxBytes(RAISED_BYTES)
                    .shutDownWhenFull())
                .withName("bounded"))
            .toStream()
            .to(outRaised);

        // Sliding windows skip null values (their stream time too): a sub-topology of their own.
        KStream<String, String> slideStream = builder.<String, String>stream(slides);
        KGroupedStream<String, String> slidesGrouped = slideStream
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        slidesGrouped
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "", (key, value, agg) -> agg + "," + value,
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("closed-sliding").withCachingDisabled())
            .toStream()
            .to(outClosedSliding,
                Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 5_000), Serdes.String()));
        // A sliding count emitting on update, kept a minute (so that a record later than grace finds the
        // windows it reads in both), then the filter and the byte bound: an update's old count is the one
        // it was computed from (a new window's: the initializer's 0, or its neighbour's; none for the
        // record's right window).
        KTable<Windowed<String>, Long> slidingCounts = slidesGrouped
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("sliding-counts").withCachingDisabled()
                .withRetention(Duration.ofMinutes(1)));
        slidingCounts.filter((window, count) -> count % 4 != 1 && count % 4 != 2)
            .suppress(Suppressed.<Windowed<String>>untilWindowCloses(BufferConfig.unbounded())
                .withName("final-sliding-filtered"))
            .toStream()
            .to(outSlidingFiltered,
                Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 5_000), Serdes.Long()));
        slidingCounts.suppress(Suppressed.<Windowed<String>>untilTimeLimit(Duration.ofSeconds(30),
                    BufferConfig.maxBytes(SLIDING_BYTES).emitEarlyWhenFull()).withName("sliding-bytes"))
            .toStream()
            .to(outSlidingBytes,
                Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 5_000), Serdes.Long()));
        // A filter after a suppression sends old values (the suppression's parent does): an update
        // the suppression emits whose new value and old value (its latest update's) both fail goes nowhere.
        priceTable
            .suppress(Suppressed.<String>untilTimeLimit(Duration.ofSeconds(2), BufferConfig.unbounded()).withName("held"))
            .filter((key, value) -> !value.startsWith("x"))
            .toStream()
            .to(outHeld);
        // A suppressed table re-grouped by key family (each update it emits subtracts the old value it
        // sends: its latest buffered update's) and left-joined by the table itself (whose updates read it
        // through the buffer: a buffered key's prior value, else the table's).
        KTable<String, String> heldRead = priceTable
            .suppress(Suppressed.<String>untilTimeLimit(Duration.ofSeconds(2), BufferConfig.unbounded())
                .withName("held-read"));
        heldRead.groupBy((key, value) -> KeyValue.pair(key.substring(0, 1), value), Grouped.as("held-by-family"))
            .aggregate(() -> "", (key, value, agg) -> agg + "+" + value, (key, value, agg) -> agg + "-" + value,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("held-families").withCachingDisabled())
            .toStream()
            .to(outHeldRegrouped);
        KTable<String, String> heldJoined = priceTable.leftJoin(heldRead, (mine, held) -> mine + "|" + held);
        heldJoined.toStream().to(outHeldJoined);
        SuppressedReaderExamples.otherSuppressedReaders(priceTable, heldRead, heldJoined, outReaders.subList(0, 7));
        SuppressContextExamples.suppressedContexts(priceTable, outReaders.subList(7, 9));
        // A processor writes and reads the store of an aggregate emitting on window close: what it writes
        // is what the emit sends (each window with its timestamp).
        grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2))
                .advanceBy(Duration.ofSeconds(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "", (key, value, agg) -> agg + "," + value,
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("closed-written").withCachingDisabled())
            .toStream()
            .processValues(StampWindowValues::new)
            .to(outClosedWritten,
                Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000), Serdes.String()));
        eventStream.process(ClosedWindowWriter::new, "closed-written").to(outClosedReads);
        grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(1)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "", (key, value, agg) -> agg + "," + value, (key, one, two) -> one + "|" + two,
                Materialized.<String, String, SessionStore<Bytes, byte[]>>as("closed-sessions-written")
                    .withCachingDisabled())
            .toStream()
            .processValues(StampWindowValues::new)
            .to(outClosedSessionsWritten,
                Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String()));
        eventStream.process(ClosedSessionWriter::new, "closed-sessions-written").to(outClosedSessionReads);
        // The same on sliding windows: a processor on the slides writes and reads the time-ordered store
        // (with its key index) of a sliding aggregate emitting on window close.
        slidesGrouped
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "", (key, value, agg) -> agg + "," + value,
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("closed-sliding-written")
                    .withCachingDisabled())
            .toStream()
            .processValues(StampWindowValues::new)
            .to(outClosedSlidingWritten,
                Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 5_000), Serdes.String()));
        slideStream.process(ClosedSlidingWriter::new, "closed-sliding-written").to(outClosedSlidingReads);
        // Emitting on window close from suppliers' stores kept in memory (suppress_memory_topology.py): the
        // closed hopping windows from a plain InMemoryWindowStore, the closed sessions from a plain
        // InMemorySessionStore (kept 10 s: a jump of stream time longer leaves the sessions before it unemitted).
        grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2))
                .advanceBy(Duration.ofSeconds(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "", (key, value, agg) -> agg + "," + value,
                Materialized.<String, String>as(Stores.inMemoryWindowStore("closed-memory", Duration.ofSeconds(15),
                    Duration.ofSeconds(10), false)).withCachingDisabled())
            .toStream()
            .to(outReaders.get(9), Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000),
                                                 Serdes.String()));
        grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(1)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "", (key, value, agg) -> agg + "," + value, (key, one, two) -> one + "|" + two,
                Materialized.<String, String>as(Stores.inMemorySessionStore("closed-memory-sessions",
                    Duration.ofSeconds(10))).withCachingDisabled())
            .toStream()
            .to(outReaders.get(10), Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String()));
        // And from a timestamped RocksDB supplier's store kept 60 s: its segmented store (60 s segments).
        grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2))
                .advanceBy(Duration.ofSeconds(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "", (key, value, agg) -> agg + "," + value,
                Materialized.<String, String>as(Stores.persistentTimestampedWindowStore("closed-rocksdb",
                    Duration.ofSeconds(60), Duration.ofSeconds(10), false)).withCachingDisabled())
            .toStream()
            .to(outReaders.get(11), Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000),
                                                  Serdes.String()));
        return builder.build();
    }

    /** The value, "|t" and the record's timestamp (StampWindowValues in suppress_topology.py). */
    static final class StampWindowValues implements FixedKeyProcessor<Windowed<String>, String, String> {
        private FixedKeyProcessorContext<Windowed<String>, String> context;

        @Override
        public void init(FixedKeyProcessorContext<Windowed<String>, String> context) {
            this.context = context;
        }

        @Override
        public void process(FixedKeyRecord<Windowed<String>, String> record) {
            context.forward(record.withValue(record.value() + "|t" + record.timestamp()));
        }
    }

    /** The shut-down application's bound: what the prices' records fit until big headers come. */
    static final long SHUT_DOWN_BYTES = 480;
    static final long RAISED_BYTES = 2_000;
    /** The windowed table's byte bound: about three of its buffered records. */
    static final long WINDOWED_BYTES = 300;
    /** The session and sliding tables' byte bounds: about three of their buffered records. */
    static final long SESSION_BYTES = 300;
    static final long SLIDING_BYTES = 300;

    static Topology shutDownExample(String prices, String outShutDown) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>table(prices,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("prices-store").withCachingDisabled())
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(4), BufferConfig.maxBytes(SHUT_DOWN_BYTES)
                    .shutDownWhenFull())
                .withName("bounded"))
            .toStream()
            .to(outShutDown);
        return builder.build();
    }

    /** Where the first processing error happened, as Kafka Streams' handler context says it. */
    static final AtomicReference<String> FAILURE = new AtomicReference<>();

    /** Records the failed record's coordinates, then fails as the default handler does. */
    public static final class RecordingHandler implements ProcessingExceptionHandler {
        @Override
        public void configure(Map<String, ?> configs) {
        }

        @Override
        public Response handleError(ErrorHandlerContext context, Record<?, ?> record, Exception exception) {
            FAILURE.compareAndSet(null, "{\"topic\": " + Json.quote(context.topic()) + ", \"partition\": "
                + context.partition() + ", \"offset\": " + context.offset() + ", \"node\": "
                + Json.quote(context.processorNodeId()) + ", \"task\": " + Json.quote(context.taskId().toString())
                + ", \"message\": " + Json.quote(String.valueOf(exception.getMessage())) + "}");
            return Response.fail();
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        Topology shutDown = shutDownExample(args[4], args[args.length - 1]);
        Properties shutDownProps = KafkaStreamsRuns.properties(bootstrap, applicationId + "-shut-down",
                                                               stateDir + "/shut-down");
        shutDownProps.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, RecordingHandler.class);
        KafkaStreams shutDownStreams = new KafkaStreams(shutDown, shutDownProps);
        shutDownStreams.setUncaughtExceptionHandler(
            exception -> StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT);
        shutDownStreams.start();

        Topology topology = suppressExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9],
                                             args[10], args[11], args[12], args[13], args[14], args[15], args[16],
                                             args[17], args[18], args[19], args[20], args[21], args[22], args[23],
                                             args[24], args[25], args[26], args[27], args[28], args[29], args[30],
                                             List.of(args).subList(31, args.length - 1));
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        props.put("__emit.interval.ms.kstreams.windowed.aggregation__", 0L);

        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> List.of(args[3], args[4], args[5],
                                               applicationId + "-held-by-family-repartition",
                                               applicationId + "-joined-held-by-family-repartition",
                                               applicationId + "-held-kept-by-family-repartition"),
                                               Duration.ofMinutes(5));
            long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
            while (FAILURE.get() == null && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            System.out.println("{\"describe\": " + Json.quote(topology.describe().toString()) + ", \"failure\": "
                               + FAILURE.get() + "}");
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
            KafkaStreamsRuns.close(shutDownStreams, Duration.ofSeconds(30));
        }
    }
}
