package kstreams.oracle;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.ValueTransformerWithKey;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.ProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * The Processor API (process, processValues, suppliers with stores, the low-level Topology,
 * KTable.transformValues).
 *
 * Entries of TopologyCatalog, built with Kafka Streams' own DSL; their Python twins, under the same
 * names, are in tests/topology_catalog_processor_api.py. Keep the two in step.
 */
final class ProcessorApiCatalog {
    private ProcessorApiCatalog() {}

    static Map<String, Supplier<Topology>> topologies() {
        Map<String, Supplier<Topology>> topologies = new LinkedHashMap<>();
        // The Processor API.
        topologies.put("processor_api_examples",
                       () -> ProcessorApiExamples.processorApiExamples("events", "out", "processed", "punctuated"));
        topologies.put("processor_api_named_then_count", ProcessorApiCatalog::processor_api_named_then_count);
        topologies.put("processor_api_low_level_examples", () -> ProcessorApiExamples.lowLevel("events", "out"));
        topologies.put("processor_api_low_level_wiring", ProcessorApiCatalog::processor_api_low_level_wiring);
        topologies.put("processor_api_supplier_with_stores", ProcessorApiCatalog::processor_api_supplier_with_stores);
        topologies.put("processor_api_low_level_supplier_with_stores",
                       ProcessorApiCatalog::processor_api_low_level_supplier_with_stores);
        topologies.put("table_transform_values_overloads", ProcessorApiCatalog::table_transform_values_overloads);
        topologies.put("table_transform_values_old_values", ProcessorApiCatalog::table_transform_values_old_values);
        return topologies;
    }

    // ---- The Processor API ------------------------------------------------------------------

    static final class Nothing implements Processor<String, String, String, String> {
        @Override
        public void process(Record<String, String> record) { }
    }

    static final class NothingFixedKey implements FixedKeyProcessor<String, String, String> {
        @Override
        public void process(FixedKeyRecord<String, String> record) { }
    }

    static Topology processor_api_named_then_count() {
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore("last-seen"), Serdes.String(), Serdes.String()));
        KStream<String, String> processed = b.<String, String>stream("orders")
            .<String, String>process(Nothing::new, Named.as("dedup"), "last-seen");
        processed.<String>processValues(NothingFixedKey::new, "last-seen")
            .to("audited");
        processed.groupByKey()
            .count()
            .toStream()
            .to("order-counts", Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    static Topology processor_api_low_level_wiring() {
        Serde<String> strings = Serdes.String();
        Topology t = new Topology();
        t.addSource("orders-source", "orders");
        t.addSource("payments-source", "payments", "refunds");
        t.addProcessor("match", Nothing::new, "orders-source", "payments-source");
        t.addProcessor("audit", Nothing::new, "match");
        t.addStateStore(Stores.keyValueStoreBuilder(
            Stores.persistentKeyValueStore("pending"), strings, strings), "match");
        t.addStateStore(Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore("audit-log"), strings, strings));
        t.connectProcessorAndStateStores("audit", "audit-log", "pending");
        t.addSink("matched-sink", "matched", "match");
        t.addSink("audit-sink", "audited", "audit", "match");
        t.addSource("other-source", "other");
        t.addProcessor("lonely", Nothing::new, "other-source");
        t.addSink("lonely-sink", "lonely-out", "lonely");
        return t;
    }

    /** A supplier that brings its own store (ConnectedStoreProvider.stores()). */
    static final class WithStores implements ProcessorSupplier<String, String, String, String> {
        @Override
        public Processor<String, String, String, String> get() {
            return new Nothing();
        }

        @Override
        public Set<StoreBuilder<?>> stores() {
            return Set.of(Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore("own-store"), Serdes.String(), Serdes.String()));
        }
    }

    static Topology processor_api_supplier_with_stores() {
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore("shared"), Serdes.String(), Serdes.String()));
        b.<String, String>stream("events").process(new WithStores(), "shared").to("processed");
        return b.build();
    }

    static Topology processor_api_low_level_supplier_with_stores() {
        return new Topology()
            .addSource("src", "more-events")
            .addProcessor("own", new WithStores(), "src")
            .addSink("sink", "more-processed", "own");
    }

    static final class Same implements ValueTransformerWithKey<String, String, String> {
        @Override
        public void init(final ProcessorContext context) {}

        @Override
        public String transform(final String readOnlyKey, final String value) {
            return value;
        }

        @Override
        public void close() {}
    }

    static Topology table_transform_values_overloads() {
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore("tv-shared"), Serdes.String(), Serdes.String()));
        KTable<String, String> prices = b.table("prices",
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("prices-store"));
        KTable<String, String> steps = prices.transformValues(Same::new)
            .transformValues(Same::new, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("tv-own"))
            .transformValues(Same::new, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(
                Serdes.String(), Serdes.String()))
            .filter((k, v) -> true, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(
                Serdes.String(), Serdes.String()))
            .transformValues(Same::new, Named.as("tv-named"), "tv-shared")
            .transformValues(Same::new, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("tv-own-2"),
                             Named.as("tv-both"), "tv-shared", "prices-store");
        steps.toStream().to("transformed-prices");
        steps.groupBy((k, v) -> KeyValue.pair(v, k), Grouped.as("tv-regroup"))
            .count()
            .toStream()
            .to("price-counts", Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    static Topology table_transform_values_old_values() {
        // Without a store of its own, re-grouped, filtered and through a map_values re-grouped: asked for old
        // values, it asks the table behind, whose source is then materialized (its store in describe()).
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> transformed = b.<String, String>table("rates").transformValues(Same::new);
        transformed.groupBy((k, v) -> KeyValue.pair(v, k), Grouped.as("rates-regroup")).count()
            .toStream().to("rate-counts", Produced.with(Serdes.String(), Serdes.Long()));
        transformed.filter((k, v) -> v.startsWith("a")).toStream().to("rates-kept");
        transformed.mapValues(v -> v.substring(0, 1)).groupBy((k, v) -> KeyValue.pair(v, k)).reduce((a, c) -> a, (a, c) -> a)
            .toStream().to("rate-kinds");
        return b.build();
    }
}
