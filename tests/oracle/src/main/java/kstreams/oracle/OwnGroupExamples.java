package kstreams.oracle;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Stores after processors that forward records of other keys, in one sub-topology on the events: a
 * FixedKeyProcessor whose stream-time punctuator forwards each key's 2 s bucket once it ended (any
 * key, while another key's record is processed) into a reduce; a table suppressed until a 1 s time
 * limit (its buffer evicts any key) into a count; a 2 s windowed count whose stream, grouped again by
 * the windowed key, goes into a reduce; a session count whose stream, grouped again by the session key,
 * goes into a count. Three stream-stream joins fed by those forwarders: the punctuator's buckets
 * left-joined with the events (1 s before, 0 after, 2 s grace), the suppression's evictions
 * left-joined with the events (1.5 s, 1 s grace), the windowed count's stream outer-joined with its
 * own counts times ten (500 ms, 500 ms grace); and three outer joins of windowed streams with their
 * own later updates: the session count's, stamped with their second (its session-windowed key serde
 * orders the outer-join store by key, end, start), a 1 s sliding count's emitting on window close, a 2 s windowed cogroup's. Each
 * output stamped with its records' timestamps (StampValues). Every store is uncached. Run by Kafka Streams itself
 * until its input is consumed; prints JSON {"describe": ...}.
 *
 * Args: bootstrap applicationId stateDir events outPunctuated outSuppressed outWindowed outSessions
 * outHeldJoined outEvictedJoined outWindowsJoined outSessionsJoined outSlidingJoined outCogroupJoined
 *
 * The Python twin is tests/own_groups_topology.py; keep the two in step.
 */
public final class OwnGroupExamples {
    private OwnGroupExamples() {}

    static final long BUCKET_MS = 2_000L;
    static final long WINDOW_MS = 2_000L;
    static final long SLIDING_MS = 1_000L;

    /** Keeps each record's value under its bucket and key; the punctuator forwards the ended buckets. */
    static final class HoldBuckets implements FixedKeyProcessor<String, String, String> {
        private FixedKeyProcessorContext<String, String> context;
        private KeyValueStore<String, String> buckets;
        // A FixedKeyRecord of each key (the only records a FixedKeyProcessor may forward): its key and
        // headers (none) are all the punctuator takes from it.
        private final Map<String, FixedKeyRecord<String, String>> records = new HashMap<>();

        @Override
        public void init(FixedKeyProcessorContext<String, String> context) {
            this.context = context;
            this.buckets = context.getStateStore("buckets");
            context.schedule(Duration.ofMillis(BUCKET_MS), PunctuationType.STREAM_TIME, this::release);
        }

        @Override
        public void process(FixedKeyRecord<String, String> record) {
            if (record.key() == null) {
                return;
            }
            records.put(record.key(), record);
            long bucket = record.timestamp() / BUCKET_MS;
            if ((bucket + 1) * BUCKET_MS <= context.currentStreamTimeMs()) {
                return;
            }
            String slot = String.format("%012d|%s", bucket, record.key());
            String held = buckets.get(slot);
            String value = record.value() == null ? "~" : record.value();
            buckets.put(slot, held == null ? value : held + "," + value);
        }

        private void release(long now) {
            List<KeyValue<String, String>> ended = new java.util.ArrayList<>();
            try (KeyValueIterator<String, String> entries = buckets.all()) {
                while (entries.hasNext()) {
                    KeyValue<String, String> entry = entries.next();
                    long bucket = Long.parseLong(entry.key.substring(0, 12));
                    if ((bucket + 1) * BUCKET_MS > now) {
                        break;
                    }
                    ended.add(entry);
                }
            }
            for (KeyValue<String, String> entry : ended) {
                long bucket = Long.parseLong(entry.key.substring(0, 12));
                String key = entry.key.substring(13);
                context.forward(records.get(key).withValue(bucket + ":" + entry.value)
                    .withTimestamp((bucket + 1) * BUCKET_MS - 1));
                buckets.delete(entry.key);
            }
        }
    }

    /** Each record stamped with the start of its second. */
    static final class SecondTimestamps<K, V> implements FixedKeyProcessor<K, V, V> {
        private FixedKeyProcessorContext<K, V> context;

        @Override
        public void init(FixedKeyProcessorContext<K, V> context) {
            this.context = context;
        }

        @Override
        public void process(FixedKeyRecord<K, V> record) {
            context.forward(record.withTimestamp(record.timestamp() / 1000 * 1000));
        }
    }

    static Topology ownGroupExamples(String events, String outPunctuated, String outSuppressed, String outWindowed,
                                     String outSessions, String outHeldJoined, String outEvictedJoined,
                                     String outWindowsJoined, String outSessionsJoined, String outSlidingJoined,
                                     String outCogroupJoined) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("buckets"),
            Serdes.String(), Serdes.String()));
        KStream<String, String> eventStream = builder.stream(events);
        KStream<String, String> held = eventStream.processValues(HoldBuckets::new, "buckets");
        held.groupByKey()
            .reduce((total, bucket) -> tail(total + "+" + bucket),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("bucket-totals").withCachingDisabled())
            .toStream()
            .to(outPunctuated);
        KStream<String, String> evictions = eventStream
            .toTable(Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("latest").withCachingDisabled())
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(1), Suppressed.BufferConfig.unbounded()))
            .toStream();
        evictions.groupByKey()
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("eviction-counts").withCachingDisabled())
            .toStream()
            .to(outSuppressed, Produced.with(Serdes.String(), Serdes.Long()));
        Serde<Windowed<String>> windowed = WindowedSerdes.timeWindowedSerdeFrom(String.class, WINDOW_MS);
        KStream<Windowed<String>, Long> windowStream = eventStream.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(WINDOW_MS), Duration.ofSeconds(1)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("window-counts").withCachingDisabled())
            .toStream();
        windowStream.groupByKey(Grouped.with(windowed, Serdes.Long()))
            .reduce(Long::sum,
                Materialized.<Windowed<String>, Long, KeyValueStore<Bytes, byte[]>>as("window-sums")
                    .withCachingDisabled())
            .toStream()
            .to(outWindowed, Produced.with(windowed, Serdes.Long()));
        Serde<Windowed<String>> sessionKeys = WindowedSerdes.sessionWindowedSerdeFrom(String.class);
        KStream<Windowed<String>, Long> sessionStream = eventStream.groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(300), Duration.ofMillis(500)))
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("session-counts").withCachingDisabled())
            .toStream();
        sessionStream.groupByKey(Grouped.with(sessionKeys, Serdes.Long()))
            .count(Materialized.<Windowed<String>, Long, KeyValueStore<Bytes, byte[]>>as("session-updates")
                .withCachingDisabled())
            .toStream()
            .to(outSessions, Produced.with(sessionKeys, Serdes.Long()));
        held.leftJoin(eventStream, (bucket, event) -> bucket + "|" + event,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(2))
                    .after(Duration.ZERO))
            .processValues(StampValues::new)
            .to(outHeldJoined);
        evictions.leftJoin(eventStream, (evicted, event) -> evicted + "|" + event,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(1500), Duration.ofSeconds(1)))
            .processValues(StampValues::new)
            .to(outEvictedJoined);
        windowStream.outerJoin(windowStream.mapValues(count -> count * 10), (count, tenfold) -> count + "/" + tenfold,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(500), Duration.ofMillis(500)),
                StreamJoined.with(windowed, Serdes.Long(), Serdes.Long()))
            .processValues(StampValues::new)
            .to(outWindowsJoined, Produced.with(windowed, Serdes.String()));
        joinsAfterOtherWindows(eventStream, sessionStream, sessionKeys, outSessionsJoined, outSlidingJoined,
            outCogroupJoined);
        return builder.build();
    }

    /**
     * Three outer joins of windowed streams with their own later updates (a session's count above 2, its
     * updates stamped with their second, a sliding window's above 1, a cogroup's window's aggregate
     * longer than one mark).
     */
    static void joinsAfterOtherWindows(KStream<String, String> eventStream, KStream<Windowed<String>, Long> sessionStream,
                                       Serde<Windowed<String>> sessionKeys, String outSessionsJoined,
                                       String outSlidingJoined, String outCogroupJoined) {
        KStream<Windowed<String>, Long> bucketed = sessionStream.processValues(SecondTimestamps::new);
        bucketed.outerJoin(bucketed.filter((session, count) -> count != null && count > 5)
                    .mapValues(count -> count * 10),
                (count, tenfold) -> count + "/" + tenfold,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(300), Duration.ofMillis(300)),
                StreamJoined.with(sessionKeys, Serdes.Long(), Serdes.Long()))
            .processValues(StampValues::new)
            .to(outSessionsJoined, Produced.with(sessionKeys, Serdes.String()));
        Serde<Windowed<String>> slidingKeys = WindowedSerdes.timeWindowedSerdeFrom(String.class, SLIDING_MS);
        KStream<Windowed<String>, Long> slidingStream = eventStream.groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(SLIDING_MS), Duration.ofMillis(500)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("sliding-counts").withCachingDisabled())
            .toStream();
        slidingStream.outerJoin(slidingStream.filter((window, count) -> count > 1).mapValues(count -> count * 10),
                (count, tenfold) -> count + "/" + tenfold,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(500), Duration.ofMillis(500)),
                StreamJoined.with(slidingKeys, Serdes.Long(), Serdes.Long()))
            .processValues(StampValues::new)
            .to(outSlidingJoined, Produced.with(slidingKeys, Serdes.String()));
        Serde<Windowed<String>> cogroupKeys = WindowedSerdes.timeWindowedSerdeFrom(String.class, WINDOW_MS);
        KStream<Windowed<String>, String> cogroupStream = eventStream.groupByKey()
            .<String>cogroup((key, event, marks) -> marks + (event == null ? "." : "x"))
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(WINDOW_MS), Duration.ofSeconds(1)))
            .aggregate(() -> "",
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("cogroup-marks").withCachingDisabled())
            .toStream();
        cogroupStream.outerJoin(cogroupStream.filter((window, marks) -> marks.length() > 1),
                (marks, later) -> marks + "/" + later,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(400), Duration.ofMillis(400)),
                StreamJoined.with(cogroupKeys, Serdes.String(), Serdes.String()))
            .processValues(StampValues::new)
            .to(outCogroupJoined, Produced.with(cogroupKeys, Serdes.String()));
    }

    static String tail(String text) {
        return text.substring(Math.max(0, text.length() - 80));
    }

    public static void main(String[] args) throws Exception {
        Topology topology = ownGroupExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9], args[10],
            args[11], args[12], args[13]);
        Properties props = KafkaStreamsRuns.properties(args[0], args[1], args[2]);
        // Left/outer joins: emit non-joined records as soon as stream time allows, not at most once per
        // second of wall-clock time (which records find a late partner first would depend on speed).
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
        // Emit on window close: forward closed windows as soon as stream time allows, not at most once per
        // second of wall-clock time.
        props.put("__emit.interval.ms.kstreams.windowed.aggregation__", 0L);
        KafkaStreamsRuns.runUntilConsumed(topology, props, () -> List.of(args[3]), Duration.ofMinutes(5),
            streams -> KafkaStreamsRuns.describeJson(topology));
    }
}
