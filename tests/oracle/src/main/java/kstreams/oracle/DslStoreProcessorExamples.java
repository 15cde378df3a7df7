package kstreams.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * User processors on DSL operations' stores (a count's, a table's, a table filter's and map_values',
 * table-table joins' and their filter's and map_values', a re-grouped table's reduce's, a cogroup's) run
 * by Kafka Streams itself against a real broker until the input is consumed to its end; prints JSON
 * {"describe": ..., "counts": {...}, "prices-store": {...}, "kept": ..., "mapped": ..., "regrouped": ...,
 * "cogrouped": ..., "joined": ..., "left-kept": ..., "outer-joined": ..., "outer-mapped": ...} (the stores
 * as interactive queries read them then).
 *
 * Args: bootstrap applicationId stateDir events prices orders items accounts clicks views lefts rights out
 *       outPrices outTables
 *
 * The Python twin is tests/dsl_store_processor_topology.py (CountCorrector, PriceReader, StoreEditor); keep the
 * two in step.
 */
public final class DslStoreProcessorExamples {
    private DslStoreProcessorExamples() {}

    static final long BUCKET_MS = 10_000L;

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

    /** Edits the stores it names (String values) by the update's timestamp: see the Python twin. */
    static final class StoreEditor implements Processor<String, String, String, String> {
        private final boolean listsAll;
        private final List<String> storeNames;
        private final List<TimestampedKeyValueStore<String, String>> stores = new ArrayList<>();
        private ProcessorContext<String, String> context;

        StoreEditor(boolean listsAll, String... storeNames) {
            this.listsAll = listsAll;
            this.storeNames = List.of(storeNames);
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            for (String name : storeNames) {
                stores.add(context.getStateStore(name));
            }
        }

        @Override
        public void process(Record<String, String> record) {
            String tag = "p" + context.recordMetadata().orElseThrow().partition() + "|" + storeNames.get(0) + "|";
            String read = stores.stream().map(store -> storedText(store.get(record.key())))
                .collect(Collectors.joining("|"));
            if (listsAll) {
                List<String> entries = new ArrayList<>();
                try (KeyValueIterator<String, ValueAndTimestamp<String>> all = stores.get(0).all()) {
                    all.forEachRemaining(entry -> entries.add(entry.key + "=" + storedText(entry.value)));
                }
                read += "|all=" + String.join(",", entries);
            }
            context.forward(record.withValue(
                tag + "update|" + record.value() + "|t" + record.timestamp() + "|" + read));
            if (record.timestamp() % 5 == 0) {
                for (TimestampedKeyValueStore<String, String> store : stores) {
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
        KTable<String, String> kept = builder.<String, String>table(items, uncached("items-store"))
            .filter((key, value) -> !value.startsWith("x"), uncached("kept"));
        kept.mapValues(value -> value.toUpperCase(), uncached("mapped"))
            .toStream().process(() -> new StoreEditor(true, "kept", "mapped"), "kept", "mapped").to(outTables);
    }

    /** The stores of an inner join, of a left join's filter, of an outer join and its map_values, each edited by a
     *  StoreEditor. */
    static void joinStores(StreamsBuilder builder, String lefts, String rights, String outTables) {
        KTable<String, String> left = builder.table(lefts, uncached("lefts-store"));
        KTable<String, String> right = builder.table(rights, uncached("rights-store"));
        left.join(right, (l, r) -> l + "+" + r, uncached("joined"))
            .toStream().process(() -> new StoreEditor(true, "joined"), "joined").to(outTables);
        left.leftJoin(right, (l, r) -> l + "+" + r)
            .filter((key, value) -> !value.startsWith("x"), uncached("left-kept"))
            .toStream().process(() -> new StoreEditor(true, "left-kept"), "left-kept").to(outTables);
        left.outerJoin(right, (l, r) -> l + "+" + r, uncached("outer-joined"))
            .mapValues(value -> value.toUpperCase(), uncached("outer-mapped"))
            .toStream().process(() -> new StoreEditor(true, "outer-joined", "outer-mapped"), "outer-joined",
                "outer-mapped")
            .to(outTables);
    }

    /** The stores of a re-grouped table's reduce and a cogroup's aggregate, each edited by a StoreEditor. */
    static void aggregationStores(StreamsBuilder builder, String accounts, String clicks, String views,
                                  String outTables) {
        builder.<String, String>table(accounts, uncached("accounts-store"))
            .groupBy((account, value) -> KeyValue.pair(value.split(":")[0], value.split(":")[1]))
            .reduce((total, amount) -> tail(total + "+" + amount), (total, amount) -> tail(total + "-" + amount),
                uncached("regrouped"))
            .toStream().process(() -> new StoreEditor(true, "regrouped"), "regrouped").to(outTables);
        KGroupedStream<String, String> clicksByKey = builder.<String, String>stream(clicks).groupByKey();
        KGroupedStream<String, String> viewsByKey = builder.<String, String>stream(views).groupByKey();
        clicksByKey.<String>cogroup((key, value, aggregate) -> tail(aggregate + "c" + value))
            .cogroup(viewsByKey, (key, value, aggregate) -> tail(aggregate + "v" + value))
            .aggregate(() -> "", Named.as("activity"), uncached("cogrouped"))
            .toStream().process(() -> new StoreEditor(false, "cogrouped"), "cogrouped").to(outTables);
    }

    static Topology dslStoreProcessorExamples(String events, String prices, String orders, String items,
                                              String accounts, String clicks, String views, String lefts,
                                              String rights, String out, String outPrices, String outTables) {
        StreamsBuilder builder = new StreamsBuilder();
        // first, in this order, as in the Python twin
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
            args[10], args[11], args[12], args[13], args[14]);
        List<String> stores = List.of("counts", "prices-store", "kept", "mapped", "regrouped", "cogrouped", "joined",
            "left-kept", "outer-joined", "outer-mapped");
        KafkaStreamsRuns.runUntilConsumed(topology, args[0], args[1], args[2],
            // the re-grouping's repartition topic too: the reduce's sub-topology must have read it to the end
            () -> List.of(args[3], args[4], args[5], args[6], args[7], args[8], args[9], args[10], args[11],
                          args[1] + "-regrouped-repartition"),
            Duration.ofMinutes(5),
            streams -> "{\"describe\": " + Json.quote(topology.describe().toString())
                + stores.stream().map(store -> ", " + Json.quote(store) + ": "
                    + Json.objectOfStrings(KafkaStreamsRuns.storeContent(streams, store))).collect(Collectors.joining())
                + "}");
    }
}
