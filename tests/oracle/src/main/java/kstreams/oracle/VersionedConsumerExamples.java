package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;

/**
 * A versioned table's updates consumed downstream (KIP-914: an out-of-order update is forwarded
 * marked not latest), run by Kafka Streams itself until its input is consumed; prints JSON
 * {"describe": ...}. Prices are a table read from a topic into a versioned store (10 s of history);
 * limits a plain table (no record cache). The prices are outer-joined with the limits (the prices'
 * side skips an out-of-order update); filtered (no store) and re-grouped by a partner user (the
 * re-grouping skips them) into an aggregate of additions and subtractions kept in a versioned store
 * (1 s of history: each update stamped with the larger of the record's and the aggregate's time, and
 * dropped when older than that; its changes carry their timestamps); filtered into a
 * plain store of their own (which takes an out-of-order update as its latest value), whose changes
 * go to a topic and which the limits are left-joined with; and mapped into another plain store,
 * whose changes go to a topic. The limits are filtered into a versioned store (3 s of history: it drops
 * an update older than that, and marks an out-of-order one not latest), whose changes go to a topic,
 * which is joined with the prices (each side skips the other's out-of-order updates), and which
 * orders, a stream, join as of their own timestamps. The orders are counted per user into a versioned
 * store (2 s of history: each count is stamped with the larger of the order's and the previous
 * count's time, and dropped when older than that), whose changes go to a topic and which the orders
 * join as of their own timestamps. The prices are joined on a foreign key (their number's region)
 * with regions, another versioned table (4 s of history): the subscriptions skip the prices'
 * out-of-order updates, the answers the regions'. Steps into versioned stores after tables stamped with
 * other times than their records': the re-grouped aggregate mapped into one of 500 ms of history; the
 * limits left-joined with the prices (stamped with the larger of both rows' times) filtered into one of
 * 2 s; the last order per user (a plain store: each stamped with the larger of the order's and the
 * previous one's time) filtered into one of 1 s; their changes carry their timestamps.
 *
 * Args: bootstrap applicationId stateDir prices limits orders regions owners outJoined outHistory outFiltered
 *       outKeptJoined outMarked outVersionedFiltered outVersionedJoined outOrders outOrderCounts
 *       outCounted outPricedRegions outJoinSteps outLastOrders outHistoryTails outHistoryVersions
 *       outCogroupTails outSuppressedLimits outStepVersions outFkSteps outWindowSteps outSlidingSteps
 *       outSessionSteps outFlagReads outOwnerReads
 *
 * HistoryVersions, on the re-grouped aggregate's changes, works on its versioned store and on its
 * tails' (outHistoryVersions). The orders and the limits' changes are cogrouped into a plain store (each
 * update stamped with the larger of the record's and the aggregate's time), mapped into a versioned
 * store of 1 s (outCogroupTails); the limits are suppressed for 500 ms (emitted with the buffered update's
 * time) and filtered into a versioned store of 2 s (outSuppressedLimits); StepVersions, on the cogroup
 * tails' changes, reads both stores and the prices' filter's plain one (outStepVersions). Each order
 * flags its user (a table of "o", the same value every time) left-joined on a foreign key, the user,
 * with owners (a plain table): the result filtered into a versioned store of 2 s (outFkSteps).
 * Windowed tables' steps into versioned stores keyed by windows, each read by a WindowVersions on its
 * changes: the orders counted in 10 s windows (grace 2 s) filtered into one of 3 s (outWindowSteps: the
 * processor puts versions ahead into it); the limits' changes counted in sliding windows of 2 s (grace
 * 1 s) mapped into one of 2 s (outSlidingSteps); the regions' changes counted in sessions (gap 3 s, grace
 * 1 s) filtered into one of 1 s (outSessionSteps); the first two re-grouped by user (WindowStepGroups:
 * outWindowStepGroups, outSlidingStepGroups). Beside the foreign-key join, which reads the flags'
 * store (its answers) and the owners' (its subscriptions), StoreReads reads each on its table's side: the
 * orders' flags (outFlagReads), the owners' updates (outOwnerReads).
 *
 * The Python twin is versioned_consumer_examples() in tests/versioned_consumers_topology.py; keep
 * the two in step.
 */
public final class VersionedConsumerExamples {
    private VersionedConsumerExamples() {}

    // A user's partner in its partition (u1, u2, u3 in partition 0 of 2; u5, u11, u15 in 1).
    private static final Map<String, String> PARTNER = Map.of(
        "u1", "u2", "u2", "u3", "u3", "u1", "u5", "u11", "u11", "u15", "u15", "u5");

    private static final String FK_JOIN_NAME = "prices-regions";
    private static final String OWNERS_JOIN_NAME = "flags-owners";

    private static int number(String value) {
        return Integer.parseInt(value.substring(1));
    }

    static String text(String value) {
        return value == null ? "null" : value;
    }

    private static Materialized<String, String, KeyValueStore<Bytes, byte[]>> uncached(String store) {
        return Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(store).withCachingDisabled();
    }

    /**
     * Per change of the re-grouped aggregate: one whose value's length is a multiple of 3 puts a
     * version 100 ms ahead into the aggregate's store, one of length 1 more than that one 300 ms ahead
     * into the tails' store; then the latest version of both stores and each one's version 1 ms before
     * the change (twin: HistoryVersions).
     */
    static final class HistoryVersions implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private VersionedKeyValueStore<String, String> history;
        private VersionedKeyValueStore<String, String> tails;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.history = context.getStateStore("price-history");
            this.tails = context.getStateStore("history-tails");
        }

        @Override
        public void process(Record<String, String> record) {
            String key = record.key();
            long t = record.timestamp();
            String value = text(record.value());
            String written = "";
            if (value.length() % 3 == 0) {
                written = "put=" + history.put(key, "w" + t, t + 100);
            } else if (value.length() % 3 == 1) {
                written = "tail=" + tails.put(key, "x" + t, t + 300);
            }
            String reads = String.join("|", ProcessorApiExamples.VersionLog.versioned(history.get(key)),
                ProcessorApiExamples.VersionLog.versioned(history.get(key, t - 1)),
                ProcessorApiExamples.VersionLog.versioned(tails.get(key)),
                ProcessorApiExamples.VersionLog.versioned(tails.get(key, t - 1)));
            context.forward(record.withValue(value + "|t" + t + "|" + written + "|" + reads));
        }
    }

    /**
     * Per change of the cogroup's tails: the latest version of the tails' store and of the suppressed
     * limits' (both a filter's or map_values' versioned store), each one's version 1 ms before the
     * change, and what the prices' filter's plain store holds (twin: StepVersions).
     */
    static final class StepVersions implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private VersionedKeyValueStore<String, String> tails;
        private VersionedKeyValueStore<String, String> kept;
        private TimestampedKeyValueStore<String, String> keptPrices;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.tails = context.getStateStore("cogroup-tails");
            this.kept = context.getStateStore("suppressed-limits");
            this.keptPrices = context.getStateStore("kept-store");
        }

        @Override
        public void process(Record<String, String> record) {
            String key = record.key();
            long t = record.timestamp();
            String reads = String.join("|", ProcessorApiExamples.VersionLog.versioned(tails.get(key)),
                ProcessorApiExamples.VersionLog.versioned(tails.get(key, t - 1)),
                ProcessorApiExamples.VersionLog.versioned(kept.get(key)),
                ProcessorApiExamples.VersionLog.versioned(kept.get(key, t - 1)),
                DslStoreProcessorExamples.storedText(keptPrices.get(key)));
            context.forward(record.withValue(text(record.value()) + "|t" + t + "|" + reads));
        }
    }

    /**
     * Per change of a windowed table's versioned step (its key a window), under the window's key: the
     * window, the change and its time, the step's store read for the window (latest, and as of 1 ms
     * before the change); with putsAhead, a change at a time divisible by 3 first puts a version 700 ms
     * ahead (twin: WindowVersions).
     */
    static final class WindowVersions implements Processor<Windowed<String>, Long, String, String> {
        private final String storeName;
        private final boolean putsAhead;
        private ProcessorContext<String, String> context;
        private VersionedKeyValueStore<Windowed<String>, Long> store;

        WindowVersions(String storeName, boolean putsAhead) {
            this.storeName = storeName;
            this.putsAhead = putsAhead;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore(storeName);
        }

        @Override
        public void process(Record<Windowed<String>, Long> record) {
            Windowed<String> window = record.key();
            long t = record.timestamp();
            String written = "";
            if (putsAhead && t % 3 == 0) {
                written = "put=" + store.put(window, 100 + (record.value() == null ? 0 : record.value()), t + 700);
            }
            String reads = String.join("|", versioned(store.get(window)), versioned(store.get(window, t - 1)));
            context.forward(record.withKey(window.key()).withValue(window.window().start() + "-"
                + window.window().end() + "|" + record.value() + "|t" + t + "|" + written + "|" + reads));
        }
    }

    /** As ProcessorApiExamples.VersionLog.versioned writes a record, of a Long. */
    private static String versioned(VersionedRecord<Long> record) {
        return record == null ? "null"
            : record.value() + "@" + record.timestamp() + "~" + record.validTo().map(String::valueOf).orElse("-");
    }

    private static Materialized<Windowed<String>, Long, KeyValueStore<Bytes, byte[]>> versionedWindows(
            String store, Duration history, Serde<Windowed<String>> keySerde) {
        return Materialized.<Windowed<String>, Long>as(Stores.persistentVersionedKeyValueStore(store, history))
            .withKeySerde(keySerde).withValueSerde(Serdes.Long());
    }

    private static <S extends StateStore> Materialized<String, Long, S> uncachedCounts(String store) {
        return Materialized.<String, Long, S>as(store).withCachingDisabled();
    }

    /** Windowed tables' steps into versioned stores keyed by windows (see the class comment). */
    static void windowSteps(KStream<String, String> orderStream, KTable<String, String> limitTable,
                            KTable<String, String> regionTable, String outWindowSteps, String outSlidingSteps,
                            String outSessionSteps, String outWindowStepGroups, String outSlidingStepGroups) {
        KTable<Windowed<String>, Long> windowSteps = orderStream.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2)))
            .count(uncachedCounts("order-windows"))
            .filter((window, count) -> count % 3 != 0, versionedWindows("window-steps", Duration.ofSeconds(3),
                new WindowedSerdes.TimeWindowedSerde<>(Serdes.String(), 10_000L)));
        windowSteps.toStream()
            .process(() -> new WindowVersions("window-steps", true), "window-steps")
            .to(outWindowSteps);
        WindowStepGroups.regroup(windowSteps, "window-step-groups", outWindowStepGroups);
        KTable<Windowed<String>, Long> slidingSteps = limitTable.toStream().groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(2), Duration.ofSeconds(1)))
            .count(uncachedCounts("limit-windows"))
            .mapValues(count -> count * 10, versionedWindows("sliding-steps", Duration.ofSeconds(2),
                new WindowedSerdes.TimeWindowedSerde<>(Serdes.String(), 2_000L)));
        slidingSteps.toStream()
            .process(() -> new WindowVersions("sliding-steps", false), "sliding-steps")
            .to(outSlidingSteps);
        WindowStepGroups.regroup(slidingSteps, "sliding-step-groups", outSlidingStepGroups);
        regionTable.toStream().groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(1)))
            .count(uncachedCounts("region-sessions"))
            .filter((session, count) -> count % 3 != 0, versionedWindows("session-steps", Duration.ofSeconds(1),
                WindowedSerdes.sessionWindowedSerdeFrom(String.class)))
            .toStream()
            .process(() -> new WindowVersions("session-steps", false), "session-steps")
            .to(outSessionSteps);
    }

    static Topology versionedConsumerExamples(String prices, String limits, String outJoined, String outHistory,
                                              String outFiltered, String outKeptJoined, String outMarked,
                                              String orders, String outVersionedFiltered, String outVersionedJoined,
                                              String outOrders, String regions, String outOrderCounts,
                                              String outCounted, String outPricedRegions, String outJoinSteps,
                                              String outLastOrders, String outHistoryTails, String outHistoryVersions,
                                              String outCogroupTails, String outSuppressedLimits,
                                              String outStepVersions, String owners, String outFkSteps,
                                              String outWindowSteps, String outSlidingSteps, String outSessionSteps,
                                              String outFlagReads, String outOwnerReads,
                                              String outWindowStepGroups, String outSlidingStepGroups) {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> priceTable = builder.table(prices,
            Materialized.as(Stores.persistentVersionedKeyValueStore("prices-store", Duration.ofSeconds(10))));
        KTable<String, String> limitTable = builder.table(limits, uncached("limits-store"));
        priceTable.outerJoin(limitTable, (price, limit) -> text(price) + "&" + text(limit)).toStream().to(outJoined);
        KTable<String, String> history = priceTable.filter((user, price) -> number(price) % 5 != 0)
            .groupBy((user, price) -> KeyValue.pair(number(price) % 2 == 0 ? user : PARTNER.get(user), price),
                     Grouped.as("by-partner"))
            .aggregate(() -> "",
                       (partner, price, agg) -> agg + "+" + price,
                       (partner, price, agg) -> agg + "-" + price,
                       Materialized.as(Stores.persistentVersionedKeyValueStore("price-history", Duration.ofSeconds(1))));
        KStream<String, String> historyChanges = history.toStream();
        historyChanges.processValues(StampValues::new).to(outHistory);
        history.mapValues(agg -> agg.substring(Math.max(0, agg.length() - 8)),
                          Materialized.<String, String>as(
                              Stores.persistentVersionedKeyValueStore("history-tails", Duration.ofMillis(500))))
            .toStream()
            .processValues(StampValues::new)
            .to(outHistoryTails);
        historyChanges.process(HistoryVersions::new, "price-history", "history-tails").to(outHistoryVersions);
        KTable<String, String> kept = priceTable.filter((user, price) -> number(price) % 3 != 0, uncached("kept-store"));
        kept.toStream().to(outFiltered);
        limitTable.leftJoin(kept, (limit, price) -> limit + "<" + text(price)).toStream().to(outKeptJoined);
        priceTable.mapValues(price -> price + "!", uncached("marked-store")).toStream().to(outMarked);
        KTable<String, String> versionedLimits = limitTable.filter((user, limit) -> number(limit) % 4 != 0,
            Materialized.as(Stores.persistentVersionedKeyValueStore("limits-versioned", Duration.ofSeconds(3))));
        versionedLimits.toStream().to(outVersionedFiltered);
        versionedLimits.join(priceTable, (limit, price) -> limit + "^" + price).toStream().to(outVersionedJoined);
        limitTable.leftJoin(priceTable, (limit, price) -> limit + "~" + text(price))
            .filter((user, joined) -> number(joined.split("~")[0]) % 3 != 0, Materialized.<String, String>as(
                Stores.persistentVersionedKeyValueStore("join-steps", Duration.ofSeconds(2))))
            .toStream()
            .processValues(StampValues::new)
            .to(outJoinSteps);
        KStream<String, String> orderStream = builder.stream(orders);
        orderStream.groupByKey().reduce((last, order) -> order, uncached("last-orders"))
            .filter((user, order) -> number(order) % 4 != 0, Materialized.<String, String>as(
                Stores.persistentVersionedKeyValueStore("last-orders-versioned", Duration.ofSeconds(1))))
            .toStream()
            .processValues(StampValues::new)
            .to(outLastOrders);
        orderStream.join(versionedLimits, (order, limit) -> text(order) + "@" + limit).to(outOrders);
        KTable<String, Long> orderCounts = orderStream.groupByKey().count(Materialized.<String, Long>as(
            Stores.persistentVersionedKeyValueStore("order-counts", Duration.ofSeconds(2))));
        orderCounts.toStream().mapValues(count -> String.valueOf(count)).to(outOrderCounts);
        orderStream.join(orderCounts, (order, count) -> text(order) + "#" + count).to(outCounted);
        KTable<String, String> regionTable = builder.table(regions,
            Materialized.as(Stores.persistentVersionedKeyValueStore("regions-store", Duration.ofSeconds(4))));
        priceTable.join(regionTable, price -> "r" + number(price) % 4, (price, region) -> price + "/" + region,
                        TableJoined.as(FK_JOIN_NAME))
            .toStream()
            .to(outPricedRegions);
        KTable<String, String> orderLimitLog = orderStream.groupByKey()
            .<String>cogroup((user, order, log) -> log + "+" + order)
            .cogroup(limitTable.toStream().groupByKey(), (user, limit, log) -> log + "-" + limit)
            .aggregate(() -> "", uncached("order-limit-log"));
        KStream<String, String> cogroupChanges = orderLimitLog
            .mapValues(log -> log.substring(Math.max(0, log.length() - 8)), Materialized.<String, String>as(
                Stores.persistentVersionedKeyValueStore("cogroup-tails", Duration.ofSeconds(1))))
            .toStream();
        cogroupChanges.processValues(StampValues::new).to(outCogroupTails);
        limitTable.suppress(Suppressed.untilTimeLimit(Duration.ofMillis(500), BufferConfig.unbounded()))
            .filter((user, limit) -> number(limit) % 3 != 0, Materialized.<String, String>as(
                Stores.persistentVersionedKeyValueStore("suppressed-limits", Duration.ofSeconds(2))))
            .toStream()
            .processValues(StampValues::new)
            .to(outSuppressedLimits);
        cogroupChanges.process(StepVersions::new, "cogroup-tails", "suppressed-limits", "kept-store").to(outStepVersions);
        KTable<String, String> ownerTable = builder.table(owners, uncached("owners-store"));
        KTable<String, String> flags = orderStream.filter((user, order) -> order != null)
            .mapValues(order -> "o")
            .toTable(uncached("order-flags"));
        flags.leftJoin(ownerTable, (user, flag) -> user, (flag, owner) -> flag + "/" + text(owner),
                       TableJoined.as(OWNERS_JOIN_NAME))
            .filter((user, joined) -> !joined.endsWith("null"), Materialized.<String, String>as(
                Stores.persistentVersionedKeyValueStore("fk-steps", Duration.ofSeconds(2))))
            .toStream()
            .processValues(StampValues::new)
            .to(outFkSteps);
        windowSteps(orderStream, limitTable, regionTable, outWindowSteps, outSlidingSteps, outSessionSteps,
                    outWindowStepGroups, outSlidingStepGroups);
        orderStream.process(() -> new StoreReads("order-flags"), "order-flags").to(outFlagReads);
        ownerTable.toStream().process(() -> new StoreReads("owners-store"), "owners-store").to(outOwnerReads);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        // The internal topics too: the aggregate's and the foreign-key join's sub-topologies must have
        // read them to the end.
        // Inputs args[3..7] (prices limits orders regions owners), outputs from args[8].
        String[] out = java.util.Arrays.copyOfRange(args, 8, args.length);
        List<String> watched = List.of(args[3], args[4], args[5], args[6], args[7],
            applicationId + "-by-partner-repartition", applicationId + "-window-step-groups-repartition",
            applicationId + "-sliding-step-groups-repartition",
            applicationId + "-" + FK_JOIN_NAME + "-subscription-registration-topic",
            applicationId + "-" + FK_JOIN_NAME + "-subscription-response-topic",
            applicationId + "-" + OWNERS_JOIN_NAME + "-subscription-registration-topic",
            applicationId + "-" + OWNERS_JOIN_NAME + "-subscription-response-topic");
        Topology topology = versionedConsumerExamples(args[3], args[4], out[0], out[1], out[2], out[3], out[4],
                                                      args[5], out[5], out[6], out[7], args[6], out[8],
                                                      out[9], out[10], out[11], out[12], out[13], out[14],
                                                      out[15], out[16], out[17], args[7], out[18], out[19],
                                                      out[20], out[21], out[22], out[23], out[24], out[25]);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        // Wait for every input of a task rather than run ahead on one (the timestamp merge).
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 5_000L);
        // The test reads the foreign-key join's subscription topic whole afterwards: never purged.
        props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, Long.MAX_VALUE);
        KafkaStreamsRuns.runUntilConsumed(topology, props, () -> watched, Duration.ofMinutes(5),
                                          streams -> KafkaStreamsRuns.describeJson(topology));
    }
}
