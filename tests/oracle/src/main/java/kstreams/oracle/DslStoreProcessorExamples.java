package kstreams.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.stream.Collectors;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StoreQueryParameters;
import java.util.Map;
import java.util.TreeMap;

/**
 * User processors on DSL operations' stores (a count's, a table's, a table filter's and map_values', a
 * suppressed table's filter's, table-table joins' and their filter's and map_values', a re-grouped table's
 * reduce's, a cogroup's; keyed by windows: windowed joins', their filter's, the map_values' of windowed counts
 * (suppressed, emitting on window close or not) and of a windowed cogroup) run
 * by Kafka Streams itself against a real broker until the input is consumed to its end; prints JSON
 * {"describe": ..., "counts": {...}, "prices-store": {...}, "kept": ..., "mapped": ..., "regrouped": ...,
 * "cogrouped": ..., "joined": ..., "left-kept": ..., "outer-joined": ..., "outer-mapped": ..., "items-later": ...,
 * and the stores keyed by windows} (the stores as interactive queries read them then). Emit interval 0: a count
 * emitting on window close checks for closed windows after every record, as the runner does.
 *
 * Args: bootstrap applicationId stateDir events prices orders items accounts clicks views lefts rights wins
 *       slides sessions owners pets out outPrices outTables
 *
 * The Python twin is tests/dsl_store_processor_topology.py (CountCorrector, PriceReader, StoreEditor); keep the
 * two in step.
 */
public final class DslStoreProcessorExamples {
    private DslStoreProcessorExamples() {}

    static final long BUCKET_MS = 10_000L;
    static final long WINDOW_MS = 1_000L;

    /** A key as both twins write it: a window as {@code Windowed.toString()} ({@code [key@start/end]}). */
    static String keyText(Object key) {
        return String.valueOf(key);
    }

    static String storedText(ValueAndTimestamp<?> stored) {
        return stored == null ? "null" : stored.value() + "@" + stored.timestamp();
    }

    static final class CountCorrector implements Processor<String, Long, String, String> {
        private ProcessorContext<String, String> context;
        private TimestampedKeyValueStore<String, Long> counts;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.counts = context.getStateStore("counts");
            context.schedule(Duration.ofMillis(BUCKET_MS), PunctuationType.STREAM_TIME, this::closeBuckets);
        }

        @Override
        public void process(Record<String, Long> record) {
            String tag = "p" + context.recordMetadata().orElseThrow().partition() + "|";
            ValueAndTimestamp<Long> stored = counts.get(record.key());
            context.forward(record.withValue(
                tag + "count|" + record.value() + "|t" + record.timestamp() + "|" + storedText(stored)));
            if (record.value() == 3L) {
                counts.put(record.key(), ValueAndTimestamp.make(10L, record.timestamp() + 7));
            } else if (record.value() >= 13L) {
                ValueAndTimestamp<Long> old = counts.delete(record.key());
                context.forward(record.withValue(tag + "deleted|" + storedText(old)));
            }
        }

        private void closeBuckets(long now) {
            String tag = "p" + context.taskId().partition() + "|";
            try (KeyValueIterator<String, ValueAndTimestamp<Long>> entries = counts.all()) {
                while (entries.hasNext()) {
                    KeyValue<String, ValueAndTimestamp<Long>> entry = entries.next();
                    long end = (Long.parseLong(entry.key.substring(0, 12)) + 1) * BUCKET_MS;
                    if (end > now) {
                        break;
                    }
                    context.forward(new Record<>(entry.key, tag + "closed|" + storedText(entry.value), end - 1));
                    counts.delete(entry.key);
                }
            }
        }
    }

    static final class PriceReader implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private TimestampedKeyValueStore<String, String> prices;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.prices = context.getStateStore("prices-store");
        }

        @Override
        public void process(Record<String, String> record) {
            String tag = "p" + context.recordMetadata().orElseThrow().partition() + "|";
            if (record.key() == null) {
                context.forward(record.withValue(tag + "nokey|" + record.value()));
                return;
            }
            ValueAndTimestamp<String> price = prices.get(record.key());
            context.forward(record.withValue(
                tag + "order|" + record.value() + "|t" + record.timestamp() + "|" + storedText(price)));
        }
    }

    /** Edits the stores it names (String values) by the update's timestamp: see the Python twin. Its keys are
     *  K: strings, or windows. */
    static final class StoreEditor<K> implements Processor<K, String, K, String> {
        private final boolean listsAll;
        private final List<String> storeNames;
        private final List<TimestampedKeyValueStore<K, String>> stores = new ArrayList<>();
        private ProcessorContext<K, String> context;

        StoreEditor(boolean listsAll, String... storeNames) {
            this.listsAll = listsAll;
            this.storeNames = List.of(storeNames);
        }

        @Override
        public void init(ProcessorContext<K, String> context) {
            this.context = context;
            for (String name : storeNames) {
                stores.add(context.getStateStore(name));
            }
        }

        @Override
        public void process(Record<K, String> record) {
            String tag = "p" + context.recordMetadata().orElseThrow().partition() + "|" + storeNames.get(0) + "|";
            String read = stores.stream().map(store -> storedText(store.get(record.key())))
                .collect(Collectors.joining("|"));
            if (listsAll) {
                List<String> entries = new ArrayList<>();
                try (KeyValueIterator<K, ValueAndTimestamp<String>> all = stores.get(0).all()) {
                    all.forEachRemaining(entry -> entries.add(keyText(entry.key) + "=" + storedText(entry.value)));
                }
                read += "|all=" + String.join(",", entries);
            }
            context.forward(record.withValue(
                tag + "update|" + record.value() + "|t" + record.timestamp() + "|" + read));
            if (record.timestamp() % 5 == 0) {
                for (TimestampedKeyValueStore<K, String> store : stores) {
                    store.put(record.key(), ValueAndTimestamp.make("edited", record.timestamp() + 3));
                }
            } else if (record.timestamp() % 5 == 1) {
                String deleted = stores.stream().map(store -> storedText(store.delete(record.key())))
                    .collect(Collectors.joining("|"));
                context.forward(record.withValue(tag + "deleted|" + deleted));
            }
        }
    }

    static String tail(String text) {
        return text.substring(Math.max(0, text.length() - 40));
    }

    static Materialized<String, String, KeyValueStore<Bytes, byte[]>> uncached(String store) {
        return Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(store).withCachingDisabled();
    }

    /** The stores of a table's filter and map_values, edited by a StoreEditor. */
    static void filterStores(StreamsBuilder builder, String items, String outTables) {
        KTable<String, String> table = builder.<String, String>table(items, uncached("items-store"));
        KTable<String, String> kept = table.filter((key, value) -> !value.startsWith("x"), uncached("kept"));
        kept.mapValues(value -> value.toUpperCase(), uncached("mapped"))
            .toStream().process(() -> new StoreEditor<String>(true, "kept", "mapped"), "kept", "mapped").to(outTables);
        table.suppress(Suppressed.untilTimeLimit(Duration.ofMillis(700), Suppressed.BufferConfig.unbounded()))
            .filter((key, value) -> !value.startsWith("x"), uncached("items-later"))
            .toStream().process(() -> new StoreEditor<String>(true, "items-later"), "items-later").to(outTables);
    }

    /** The stores of an inner join, of a left join's filter, of an outer join and its map_values, each edited by a
     *  StoreEditor. */
    static void joinStores(StreamsBuilder builder, String lefts, String rights, String outTables) {
        KTable<String, String> left = builder.table(lefts, uncached("lefts-store"));
        KTable<String, String> right = builder.table(rights, uncached("rights-store"));
        left.join(right, (l, r) -> l + "+" + r, uncached("joined"))
            .toStream().process(() -> new StoreEditor<String>(true, "joined"), "joined").to(outTables);
        left.leftJoin(right, (l, r) -> l + "+" + r)
            .filter((key, value) -> !value.startsWith("x"), uncached("left-kept"))
            .toStream().process(() -> new StoreEditor<String>(true, "left-kept"), "left-kept").to(outTables);
        left.outerJoin(right, (l, r) -> l + "+" + r, uncached("outer-joined"))
            .mapValues(value -> value.toUpperCase(), uncached("outer-mapped"))
            .toStream().process(() -> new StoreEditor<String>(true, "outer-joined", "outer-mapped"), "outer-joined",
                "outer-mapped")
            .to(outTables);
    }

    static <V> Materialized<Windowed<String>, V, KeyValueStore<Bytes, byte[]>> windowKeyed(String store) {
        return Materialized.<Windowed<String>, V, KeyValueStore<Bytes, byte[]>>as(store)
            .withKeySerde(WindowedSerdes.timeWindowedSerdeFrom(String.class, WINDOW_MS)).withCachingDisabled();
    }

    /** The stores keyed by windows, each edited by a StoreEditor: see the Python twin. */
    static void windowedStores(StreamsBuilder builder, String wins, String outTables) {
        KGroupedStream<String, String> grouped = builder.<String, String>stream(wins).groupByKey();
        Duration size = Duration.ofMillis(WINDOW_MS);
        Duration grace = Duration.ofMillis(500);
        // a key serde: the suppression's buffer writes the windowed keys with the table's (Kafka Streams fails
        // with the default one, a plain String serde)
        KTable<Windowed<String>, Long> counts = grouped.windowedBy(TimeWindows.ofSizeAndGrace(size, grace)).count(
            Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("win-counts").withKeySerde(Serdes.String())
                .withCachingDisabled());
        KTable<Windowed<String>, String> values = grouped
            .windowedBy(TimeWindows.ofSizeAndGrace(size, grace).advanceBy(Duration.ofMillis(500)))
            .reduce((x, y) -> tail(x + "," + y),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("win-values").withCachingDisabled());
        counts.outerJoin(values, (n, v) -> n + "/" + v, DslStoreProcessorExamples.<String>windowKeyed("win-joined"))
            .filter((windowed, value) -> !value.contains("null"),
                DslStoreProcessorExamples.<String>windowKeyed("win-kept"))
            .toStream()
            .process(() -> new StoreEditor<Windowed<String>>(true, "win-joined", "win-kept"), "win-joined", "win-kept")
            .selectKey((windowed, value) -> keyText(windowed)).to(outTables);
        Materialized<Windowed<String>, String, KeyValueStore<Bytes, byte[]>> labels = windowKeyed("win-labels");
        counts.mapValues(n -> "#" + n, labels.withValueSerde(Serdes.String()))
            .toStream()
            .process(() -> new StoreEditor<Windowed<String>>(true, "win-labels"), "win-labels")
            .selectKey((windowed, value) -> keyText(windowed)).to(outTables);
        Materialized<Windowed<String>, String, KeyValueStore<Bytes, byte[]>> finals = windowKeyed("win-final");
        counts.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
            .mapValues(n -> "#" + n, finals.withValueSerde(Serdes.String()))
            .toStream()
            .process(() -> new StoreEditor<Windowed<String>>(true, "win-final"), "win-final")
            .selectKey((windowed, value) -> keyText(windowed)).to(outTables);
        grouped.<String>cogroup((key, value, aggregate) -> tail(aggregate + value))
            .windowedBy(TimeWindows.ofSizeAndGrace(size, grace))
            .aggregate(() -> "", Materialized.<String, String, WindowStore<Bytes, byte[]>>as("win-cogrouped")
                .withCachingDisabled())
            .mapValues(value -> "~" + value, DslStoreProcessorExamples.<String>windowKeyed("win-cog-labels"))
            .toStream()
            .process(() -> new StoreEditor<Windowed<String>>(true, "win-cog-labels"), "win-cog-labels")
            .selectKey((windowed, value) -> keyText(windowed)).to(outTables);
        closedLabels(grouped.windowedBy(TimeWindows.ofSizeAndGrace(size, grace)), "win-closed", outTables);
    }

    /** The stores keyed by sliding windows, each edited by a StoreEditor: see the Python twin. */
    static void slidingStores(StreamsBuilder builder, String slides, String outTables) {
        SlidingWindows windows =
            SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(WINDOW_MS), Duration.ofMillis(500));
        KGroupedStream<String, String> grouped = builder.<String, String>stream(slides).groupByKey();
        TimeWindowedKStream<String, String> sliding = grouped.windowedBy(windows);
        KTable<Windowed<String>, Long> counts = sliding.count(
            Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("slide-counts").withCachingDisabled());
        KTable<Windowed<String>, String> values = sliding.reduce((x, y) -> tail(x + "," + y),
            Materialized.<String, String, WindowStore<Bytes, byte[]>>as("slide-values").withCachingDisabled());
        counts.outerJoin(values, (n, v) -> n + "/" + v, DslStoreProcessorExamples.<String>windowKeyed("slide-joined"))
            .toStream()
            .process(() -> new StoreEditor<Windowed<String>>(true, "slide-joined"), "slide-joined")
            .selectKey((windowed, value) -> keyText(windowed)).to(outTables);
        Materialized<Windowed<String>, String, KeyValueStore<Bytes, byte[]>> labels = windowKeyed("slide-labels");
        counts.mapValues(n -> "#" + n, labels.withValueSerde(Serdes.String()))
            .toStream()
            .process(() -> new StoreEditor<Windowed<String>>(true, "slide-labels"), "slide-labels")
            .selectKey((windowed, value) -> keyText(windowed)).to(outTables);
        closedLabels(grouped.windowedBy(windows), "slide-closed", outTables);
    }

    /** A count of {@code windowed} emitting on window close, and its map_values' {@code store}, edited by a
     *  StoreEditor. */
    static void closedLabels(TimeWindowedKStream<String, String> windowed, String store, String outTables) {
        Materialized<Windowed<String>, String, KeyValueStore<Bytes, byte[]>> labels = windowKeyed(store);
        windowed.emitStrategy(EmitStrategy.onWindowClose())
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as(store + "-counts").withCachingDisabled())
            .mapValues(n -> "%" + n, labels.withValueSerde(Serdes.String()))
            .toStream()
            .process(() -> new StoreEditor<Windowed<String>>(true, store), store)
            .selectKey((windowed_, value) -> keyText(windowed_)).to(outTables);
    }

    /** The sessions' count's map_values' store, keyed by the session-windowed serde, edited by a StoreEditor: see
     *  the Python twin. */
    static void sessionStores(StreamsBuilder builder, String sessions, String outTables) {
        Materialized<Windowed<String>, String, KeyValueStore<Bytes, byte[]>> labels =
            Materialized.<Windowed<String>, String, KeyValueStore<Bytes, byte[]>>as("session-labels")
                .withKeySerde(WindowedSerdes.sessionWindowedSerdeFrom(String.class)).withValueSerde(Serdes.String())
                .withCachingDisabled();
        builder.<String, String>stream(sessions).groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(WINDOW_MS), Duration.ofMillis(500)))
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("session-counts").withCachingDisabled())
            .mapValues(n -> "&" + n, labels)
            .toStream()
            .process(() -> new StoreEditor<Windowed<String>>(true, "session-labels"), "session-labels")
            .selectKey((windowed, value) -> keyText(windowed)).to(outTables);
    }

    /** A store keyed by windows as interactive queries read it: {@code {"[key@start/end]": value}}. */
    static Map<String, String> windowedStoreContent(KafkaStreams streams, String store) {
        ReadOnlyKeyValueStore<Windowed<String>, Object> view = streams.store(
            StoreQueryParameters.fromNameAndType(store, QueryableStoreTypes.keyValueStore()));
        Map<String, String> content = new TreeMap<>();
        try (KeyValueIterator<Windowed<String>, Object> entries = view.all()) {
            entries.forEachRemaining(entry -> content.put(keyText(entry.key), String.valueOf(entry.value)));
        }
        return content;
    }

    /** The stores of a re-grouped table's reduce and a cogroup's aggregate, each edited by a StoreEditor. */
    static void aggregationStores(StreamsBuilder builder, String accounts, String clicks, String views,
                                  String outTables) {
        builder.<String, String>table(accounts, uncached("accounts-store"))
            .groupBy((account, value) -> KeyValue.pair(value.split(":")[0], value.split(":")[1]))
            .reduce((total, amount) -> tail(total + "+" + amount), (total, amount) -> tail(total + "-" + amount),
                uncached("regrouped"))
            .toStream().process(() -> new StoreEditor<String>(true, "regrouped"), "regrouped").to(outTables);
        KGroupedStream<String, String> clicksByKey = builder.<String, String>stream(clicks).groupByKey();
        KGroupedStream<String, String> viewsByKey = builder.<String, String>stream(views).groupByKey();
        clicksByKey.<String>cogroup((key, value, aggregate) -> tail(aggregate + "c" + value))
            .cogroup(viewsByKey, (key, value, aggregate) -> tail(aggregate + "v" + value))
            .aggregate(() -> "", Named.as("activity"), uncached("cogrouped"))
            .toStream().process(() -> new StoreEditor<String>(false, "cogrouped"), "cogrouped").to(outTables);
    }

    static Topology dslStoreProcessorExamples(String events, String prices, String orders, String items,
                                              String accounts, String clicks, String views, String lefts,
                                              String rights, String wins, String slides, String sessions,
                                              String owners, String pets, String out, String outPrices,
                                              String outTables) {
        StreamsBuilder builder = new StreamsBuilder();
        // first, in this order, as in the Python twin
        OldValueWriteExamples.build(builder, owners, pets, outTables);
        windowedStores(builder, wins, outTables);
        slidingStores(builder, slides, outTables);
        sessionStores(builder, sessions, outTables);
        filterStores(builder, items, outTables);
        joinStores(builder, lefts, rights, outTables);
        aggregationStores(builder, accounts, clicks, views, outTables);
        builder.<String, String>stream(events)
            .groupByKey()
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts").withCachingDisabled())
            .toStream()
            .process(CountCorrector::new, "counts")
            .to(out);
        builder.<String, String>table(prices, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("prices-store"));
        builder.<String, String>stream(orders).process(PriceReader::new, "prices-store").to(outPrices);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        Topology topology = dslStoreProcessorExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9],
            args[10], args[11], args[12], args[13], args[14], args[15], args[16], args[17], args[18], args[19]);
        List<String> stores = List.of("counts", "prices-store", "kept", "mapped", "regrouped", "cogrouped", "joined",
            "left-kept", "outer-joined", "outer-mapped", "items-later", "owners-store", "pets-store", "owner-groups",
            "pet-groups");
        List<String> windowedStores = List.of("win-joined", "win-kept", "win-labels", "win-final", "win-cog-labels",
            "win-closed", "slide-joined", "slide-labels", "slide-closed", "session-labels");
        Properties props = KafkaStreamsRuns.properties(args[0], args[1], args[2]);
        // the counts emitting on window close check for closed windows after every record, as the runner does
        props.put("__emit.interval.ms.kstreams.windowed.aggregation__", 0L);
        KafkaStreamsRuns.runUntilConsumed(topology, props,
            // the re-grouping's repartition topic too: the reduce's sub-topology must have read it to the end
            () -> List.of(args[3], args[4], args[5], args[6], args[7], args[8], args[9], args[10], args[11], args[12],
                          args[13], args[14], args[15], args[16], args[1] + "-regrouped-repartition",
                          args[1] + "-owner-groups-repartition", args[1] + "-pet-groups-repartition"),
            Duration.ofMinutes(5),
            streams -> "{\"describe\": " + Json.quote(topology.describe().toString())
                + stores.stream().map(store -> ", " + Json.quote(store) + ": "
                    + Json.objectOfStrings(KafkaStreamsRuns.storeContent(streams, store))).collect(Collectors.joining())
                + windowedStores.stream().map(store -> ", " + Json.quote(store) + ": "
                    + Json.objectOfStrings(windowedStoreContent(streams, store))).collect(Collectors.joining())
                + "}");
    }
}
