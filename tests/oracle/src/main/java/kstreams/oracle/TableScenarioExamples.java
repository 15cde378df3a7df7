package kstreams.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
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
import org.apache.kafka.streams.kstream.ValueTransformerWithKey;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * Kafka Streams' own table, cogroup and Processor API scenarios in one topology (see the Python
 * twin's docstring for which of Kafka Streams' tests each follows), run until every input and
 * repartition topic is consumed to its end; prints JSON {"describe": topology.describe(), "rows-keyed":
 * the transformer's own store by an interactive query}. Every
 * store is uncached, so the output is fixed by the input.
 *
 * Args: bootstrap applicationId stateDir rows prices events clicks lookups outSource outFilter outFilterKept
 *       outRegrouped outMapped outMappedRegrouped outPrices outPricesCounts outBranches outRest outEvens
 *       outOdds outCogroup outCogroupJoin outEventsJoined outPrefixed outRowsPrefixed
 *       outShared outToTable outMerged outRoutedSink outCogroupOuter outWhereFrom outSelfJoin outTransformed
 *       outPricesTransformed outRowsKeyed outRowsKeyedRegrouped outPricesCalled outLookupsJoined outLookupsLeft
 *       outLookupsTableJoined
 *
 * The Python twin is table_scenarios() in tests/kstreams_table_scenarios_topology.py; keep the two
 * in step.
 */
public final class TableScenarioExamples {
    private TableScenarioExamples() {}

    /** The value (a tombstone's: "null"), "#" and how many updates of its key the store "transform-seen"
     *  has counted, "@" and the update's time as the transformer's context gives it. */
    static final class CountingTransformer implements ValueTransformerWithKey<String, String, String> {
        private org.apache.kafka.streams.processor.ProcessorContext context;
        private KeyValueStore<String, Long> seen;

        @Override
        public void init(final org.apache.kafka.streams.processor.ProcessorContext context) {
            this.context = context;
            this.seen = context.getStateStore("transform-seen");
        }

        @Override
        public String transform(final String readOnlyKey, final String value) {
            Long count = seen.get(readOnlyKey);
            long next = (count == null ? 0L : count) + 1;
            seen.put(readOnlyKey, next);
            return value + "#" + next + "@" + context.timestamp();
        }

        @Override
        public void close() {}
    }

    /** The key, ":" and the value (a tombstone's: "null"). */
    static final class KeyedTransformer implements ValueTransformerWithKey<String, String, String> {
        @Override
        public void init(final org.apache.kafka.streams.processor.ProcessorContext context) {}

        @Override
        public String transform(final String readOnlyKey, final String value) {
            return readOnlyKey + ":" + value;
        }

        @Override
        public void close() {}
    }

    /** A value ending in 0 to the sink "routed-sink"; another even digit to the child "evens" 5 ms later; an odd digit to "odds" 3 ms
     * earlier, its key marked; any other (null too) to every child, unchanged. */
    static final class Router implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(Record<String, String> record) {
            String value = record.value();
            char last = value == null || value.isEmpty() ? ' ' : value.charAt(value.length() - 1);
            if (last == '0') {
                context.forward(record, "routed-sink");
            } else if (Character.isDigit(last) && (last - '0') % 2 == 0) {
                context.forward(record.withTimestamp(record.timestamp() + 5), "evens");
            } else if (Character.isDigit(last)) {
                context.forward(record.withKey(record.key() + "~").withTimestamp(record.timestamp() - 3), "odds");
            } else {
                context.forward(record);
            }
        }
    }

    /** Puts each record with a key and a value under "key:<the value's last two characters>" into
     * "prefixed", then forwards the entries under "key:" and under "key". */
    static final class PrefixScanner implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, String> store;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore("prefixed");
        }

        @Override
        public void process(Record<String, String> record) {
            if (record.key() == null || record.value() == null) {
                return;
            }
            store.put(record.key() + ":" + record.value().substring(record.value().length() - 2), record.value());
            List<String> scans = new ArrayList<>();
            for (String prefix : List.of(record.key() + ":", record.key())) {
                List<String> entries = new ArrayList<>();
                try (KeyValueIterator<String, String> it = store.prefixScan(prefix, new StringSerializer())) {
                    it.forEachRemaining(entry -> entries.add(entry.key + "=" + entry.value));
                }
                scans.add(String.join(",", entries));
            }
            context.forward(record.withValue(String.join("|", scans)));
        }
    }

    /** After each update of the rows table, the rows of "rows-store" whose key starts with the
     * updated key's family letter. */
    static final class RowsPrefixScanner implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private TimestampedKeyValueStore<String, String> store;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore("rows-store");
        }

        @Override
        public void process(Record<String, String> record) {
            List<String> entries = new ArrayList<>();
            try (KeyValueIterator<String, ValueAndTimestamp<String>> it =
                     store.prefixScan(record.key().substring(0, 1), new StringSerializer())) {
                it.forEachRemaining(entry -> entries.add(entry.key + "=" + entry.value.value()));
            }
            context.forward(record.withValue(String.join(",", entries)));
        }
    }

    /** Puts each record with a key and a value into "shared"; forwards nothing. */
    static final class SharedWriter implements Processor<String, String, Void, Void> {
        private KeyValueStore<String, String> store;

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            this.store = context.getStateStore("shared");
        }

        @Override
        public void process(Record<String, String> record) {
            if (record.key() != null && record.value() != null) {
                store.put(record.key(), record.value());
            }
        }
    }

    /** The value, then what "shared" holds for the key and its entry count. */
    static final class SharedReader implements FixedKeyProcessor<String, String, String> {
        private FixedKeyProcessorContext<String, String> context;
        private KeyValueStore<String, String> store;

        @Override
        public void init(FixedKeyProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore("shared");
        }

        @Override
        public void process(FixedKeyRecord<String, String> record) {
            String held = record.key() == null ? "none" : store.get(record.key());
            context.forward(record.withValue(record.value() + "<" + held + "#" + store.approximateNumEntries()));
        }
    }

    /** The value, then the record's partition and offset, the task's stream time and id. */
    static final class WhereFrom implements FixedKeyProcessor<String, String, String> {
        private FixedKeyProcessorContext<String, String> context;

        @Override
        public void init(FixedKeyProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(FixedKeyRecord<String, String> record) {
            RecordMetadata metadata = context.recordMetadata().orElseThrow();
            context.forward(record.withValue(record.value() + "|p" + metadata.partition() + "o" + metadata.offset()
                + "|st" + context.currentStreamTimeMs() + "|task" + context.taskId()));
        }
    }

    static String tail(String text, int length) {
        return text.length() > length ? text.substring(text.length() - length) : text;
    }

    static <K, V> Materialized<K, V, KeyValueStore<Bytes, byte[]>> uncached(String name) {
        return Materialized.<K, V, KeyValueStore<Bytes, byte[]>>as(name).withCachingDisabled();
    }

    static Topology tableScenarios(Map<String, String> topics) {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> rows = builder.table(topics.get("rows"), uncached("rows-store"));
        rows.toStream().processValues(StampValues::new).to(topics.get("out-source"));
        rows.filter((key, value) -> value.startsWith("acc"))
            .toStream().processValues(StampValues::new).to(topics.get("out-filter"));
        rows.toStream().process(RowsPrefixScanner::new, "rows-store").to(topics.get("out-rows-prefixed"));
        KTable<String, String> accepted = rows.filter((key, value) -> value.startsWith("acc"),
                                                      uncached("accepted-store"));
        accepted.toStream().processValues(StampValues::new).to(topics.get("out-filter-kept"));
        rows.filter((key, value) -> value.startsWith("acc"))
            .groupBy((key, value) -> KeyValue.pair(key.substring(0, 1), value), Grouped.as("accepted-by-family"))
            .reduce((total, value) -> total + "+" + value, (total, value) -> total + "-" + value,
                    uncached("accepted-reduced"))
            .toStream().processValues(StampValues::new).to(topics.get("out-regrouped"));
        rows.mapValues(value -> value.toUpperCase()).toStream().processValues(StampValues::new)
            .to(topics.get("out-mapped"));
        rows.mapValues(value -> value.substring(0, 3), TableScenarioExamples.<String, String>uncached("verdicts"))
            .groupBy((key, verdict) -> KeyValue.pair(key.substring(0, 1) + verdict, key), Grouped.as("by-verdict"))
            .reduce((keys, key) -> keys + "+" + key, (keys, key) -> keys + "-" + key, uncached("keys-by-verdict"))
            .toStream().processValues(StampValues::new).to(topics.get("out-mapped-regrouped"));

        rows.leftJoin(rows.filter((key, value) -> value.startsWith("acc")).mapValues(value -> value.substring(3)),
                      (full, number) -> full + "/" + number)
            .toStream().processValues(StampValues::new).to(topics.get("out-self-join"));

        builder.addStateStore(Stores.keyValueStoreBuilder(
            Stores.persistentKeyValueStore("transform-seen"), Serdes.String(), Serdes.Long()));
        rows.transformValues(CountingTransformer::new, "transform-seen")
            .toStream().processValues(StampValues::new).to(topics.get("out-transformed"));

        KTable<String, String> prices = builder.table(topics.get("prices"));
        prices.transformValues(KeyedTransformer::new, Named.as("prices-keyed"))
            .toStream().processValues(StampValues::new).to(topics.get("out-prices-transformed"));
        prices.filter((key, value) -> !value.startsWith("x"))
            .toStream().processValues(StampValues::new).to(topics.get("out-prices"));
        prices.groupBy((key, value) -> KeyValue.pair(key.substring(0, 1) + value.substring(0, 1), value),
                       Grouped.as("prices-by-kind"))
            .count(uncached("price-counts"))
            .toStream().mapValues(count -> String.valueOf(count)).processValues(StampValues::new)
            .to(topics.get("out-prices-counts"));
        TransformValuesGetterExamples.addTo(builder, prices, topics);

        KStream<String, String> events = builder.stream(topics.get("events"));
        Map<String, KStream<String, String>> routes = events.split(Named.as("route-"))
            .branch((key, value) -> value != null && value.endsWith("1"), Branched.as("ones"))
            .branch((key, value) -> value != null && value.endsWith("2"),
                    Branched.withFunction(stream -> stream.mapValues(value -> value.toUpperCase()), "twos"))
            .defaultBranch(Branched.as("rest"));
        routes.get("route-ones").merge(routes.get("route-twos"), Named.as("ones-and-twos"))
            .peek((key, value) -> { }, Named.as("looked-at"))
            .processValues(StampValues::new).to(topics.get("out-branches"));
        routes.get("route-rest").processValues(StampValues::new).to(topics.get("out-rest"));
        builder.addStateStore(Stores.keyValueStoreBuilder(
            Stores.persistentKeyValueStore("prefixed"), Serdes.String(), Serdes.String()));
        events.process(PrefixScanner::new, "prefixed").processValues(StampValues::new).to(topics.get("out-prefixed"));
        builder.addStateStore(Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore("shared"), Serdes.String(), Serdes.String()));
        events.process(SharedWriter::new, "shared");
        events.processValues(SharedReader::new, "shared").processValues(StampValues::new).to(topics.get("out-shared"));
        events.toTable(uncached("events-table"))
            .toStream().processValues(StampValues::new).to(topics.get("out-to-table"));
        KStream<String, String> routed = events.process(Router::new, Named.as("router"));
        routed.processValues(StampValues::new, Named.as("evens")).to(topics.get("out-evens"));
        routed.processValues(StampValues::new, Named.as("odds")).to(topics.get("out-odds"));
        routed.to(topics.get("out-routed-sink"), Produced.as("routed-sink"));

        KStream<String, String> clicks = builder.stream(topics.get("clicks"));
        events.processValues(WhereFrom::new).to(topics.get("out-where-from"));
        events.merge(clicks).processValues(StampValues::new).to(topics.get("out-merged"));
        KGroupedStream<String, String> eventsByKey = events.groupByKey();
        KGroupedStream<String, String> clicksByKey = clicks.groupByKey();
        KGroupedStream<String, String> onesByKey =
            events.filter((key, value) -> value != null && value.endsWith("1")).groupByKey();
        KTable<String, String> activity = eventsByKey
            .<String>cogroup((key, value, total) -> tail(total + "e" + value, 60))
            .cogroup(clicksByKey, (key, value, total) -> tail(total + "c" + value, 60))
            .cogroup(onesByKey, (key, value, total) -> tail(total + "1", 60))
            .aggregate(() -> "", Named.as("activity"), uncached("activity-store"));
        activity.toStream().processValues(StampValues::new).to(topics.get("out-cogroup"));
        KTable<String, String> clicked = clicksByKey
            .<String>cogroup((key, value, total) -> tail(total + "C" + value, 40))
            .cogroup(onesByKey, (key, value, total) -> tail(total + "O", 40))
            .aggregate(() -> "", uncached("clicked-store"));
        activity.join(clicked, (all, clickTotal) -> tail(all, 20) + "&" + tail(clickTotal, 20))
            .toStream().processValues(StampValues::new).to(topics.get("out-cogroup-join"));
        activity.outerJoin(clicked, (all, clickTotal) -> tail(String.valueOf(all), 20) + "|"
                           + tail(String.valueOf(clickTotal), 20))
            .toStream().processValues(StampValues::new).to(topics.get("out-cogroup-outer"));
        events.join(activity, (event, all) -> event + "@" + tail(all, 20))
            .processValues(StampValues::new).to(topics.get("out-events-joined"));
        // shouldTransformValuesWithKeyMaterialized: a store of its own, uncached, read back by an interactive query;
        // shouldCalculateCorrectOldValuesIfMaterializedEvenIfStateful: re-grouped, its old values read from that store.
        KTable<String, String> keyed = rows.transformValues(KeyedTransformer::new, uncached("rows-keyed"));
        keyed.toStream().processValues(StampValues::new).to(topics.get("out-rows-keyed"));
        keyed.groupBy((key, value) -> KeyValue.pair(key.substring(0, 1)
                                                    + value.substring(value.indexOf(':') + 1, value.indexOf(':') + 4), key),
                      Grouped.as("keyed-by-verdict"))
            .reduce((keys, key) -> keys + "+" + key, (keys, key) -> keys + "-" + key, uncached("keyed-keys-by-verdict"))
            .toStream().processValues(StampValues::new).to(topics.get("out-rows-keyed-regrouped"));
        TransformValuesOldValuesExamples.addTo(prices, topics);
        return builder.build();
    }

    static final List<String> INPUTS = List.of("rows", "prices", "events", "clicks", "lookups");
    static final List<String> OUTPUTS = List.of("out-source", "out-filter", "out-filter-kept", "out-regrouped",
        "out-mapped", "out-mapped-regrouped", "out-prices", "out-prices-counts", "out-branches", "out-rest",
        "out-evens", "out-odds", "out-cogroup", "out-cogroup-join", "out-events-joined",
        "out-prefixed", "out-rows-prefixed", "out-shared", "out-to-table", "out-merged",
        "out-routed-sink", "out-cogroup-outer", "out-where-from", "out-self-join", "out-transformed",
        "out-prices-transformed", "out-rows-keyed", "out-rows-keyed-regrouped", "out-prices-called",
        "out-lookups-joined", "out-lookups-left", "out-lookups-table-joined", "out-prices-recounted",
        "out-recounted-kept", "out-recounted-kind-counts");

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        Map<String, String> topics = new java.util.HashMap<>();
        for (int i = 0; i < INPUTS.size() + OUTPUTS.size(); i++) {
            topics.put(i < INPUTS.size() ? INPUTS.get(i) : OUTPUTS.get(i - INPUTS.size()), args[3 + i]);
        }
        Topology topology = tableScenarios(topics);
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        KafkaStreams streams = new KafkaStreams(topology, props);
        KafkaStreamsRuns.failFast(streams);
        streams.start();
        List<String> inputs = INPUTS.stream().map(topics::get).toList();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            // The repartition topics too: their sub-topologies must have consumed them (created on startup).
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> {
                List<String> repartition = admin.listTopics().names().get().stream()
                    .filter(topic -> topic.startsWith(applicationId + "-") && topic.endsWith("-repartition")).toList();
                return repartition.size() < 6 ? null
                    : java.util.stream.Stream.concat(inputs.stream(), repartition.stream()).toList();
            }, Duration.ofMinutes(5));
            String describe = KafkaStreamsRuns.describeJson(topology);
            System.out.println(describe.substring(0, describe.length() - 1) + ", \"rows-keyed\": "
                               + StreamsApp.dump(streams, "rows-keyed") + "}");
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
