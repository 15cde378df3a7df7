package kstreams.oracle;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * Tables whose own stores a user processor writes while their updates travel on to a re-grouping and a
 * table-table join (part of DslStoreProcessorExamples' topology, its first sub-topologies): Kafka Streams fixes
 * each update's old value before it forwards the {@code Change} to the table's children, so a processor's write
 * becomes the old value of the key's next update only, whichever child comes first. The owners table's
 * processor is its first child (before the re-grouping's reduce and the outer join); the pets table's is its
 * last (after the join and the re-grouping's count). A rewriter puts the value + "!" (stamped 1 ms later) at a
 * timestamp that is a multiple of 3, deletes the key at one past it. Groups are the key's parity ("odd",
 * "even") and the value's first letter, so each group's updates come from one task (and the groups of either
 * parity fall on both partitions of the repartition topic).
 *
 * The Python twin is tests/old_value_write_topology.py; keep the two in step.
 */
final class OldValueWriteExamples {
    private OldValueWriteExamples() {}

    /** Writes the table's store per update (see the class comment) and forwards what it did. */
    static final class StoreRewriter implements Processor<String, String, String, String> {
        private final String storeName;
        private TimestampedKeyValueStore<String, String> store;
        private ProcessorContext<String, String> context;

        StoreRewriter(String storeName) {
            this.storeName = storeName;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore(storeName);
        }

        @Override
        public void process(Record<String, String> record) {
            String did = "kept";
            if (record.value() != null && record.timestamp() % 3 == 0) {
                store.put(record.key(), ValueAndTimestamp.make(record.value() + "!", record.timestamp() + 1));
                did = "put";
            } else if (record.timestamp() % 3 == 1) {
                store.delete(record.key());
                did = "deleted";
            }
            context.forward(record.withValue(tagged(context, storeName, did + "|" + record.value(), record)));
        }
    }

    /** Forwards each update tagged with its task, a name and ({@code stamped}) its timestamp. */
    static final class Tagger<V> implements Processor<String, V, String, String> {
        private final String name;
        private final boolean stamped;
        private ProcessorContext<String, String> context;

        Tagger(String name, boolean stamped) {
            this.name = name;
            this.stamped = stamped;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(Record<String, V> record) {
            String tagged = tagged(context, name, String.valueOf(record.value()), record);
            context.forward(record.withValue(stamped ? tagged : tagged.substring(0, tagged.lastIndexOf("|t"))));
        }
    }

    static String tagged(ProcessorContext<String, String> context, String name, String text, Record<?, ?> record) {
        return "p" + context.recordMetadata().orElseThrow().partition() + "|" + name + "|" + text + "|t"
            + record.timestamp();
    }

    static String group(String key, String value) {
        return ((key.charAt(key.length() - 1) - '0') % 2 == 1 ? "odd" : "even") + value.substring(0, 1);
    }

    static void build(StreamsBuilder builder, String owners, String pets, String outTables) {
        // the re-groupings' updates without their timestamps: the runner stamps an aggregation's update with the
        // larger of the record's and the aggregate's only where its store keeps timestamps (README, "Record
        // timestamps written by the runner")
        KTable<String, String> ownerTable = builder.table(owners, DslStoreProcessorExamples.uncached("owners-store"));
        KTable<String, String> petTable = builder.table(pets, DslStoreProcessorExamples.uncached("pets-store"));
        ownerTable.toStream().process(() -> new StoreRewriter("owners-store"), "owners-store").to(outTables);
        ownerTable.groupBy((key, value) -> KeyValue.pair(group(key, value), value))
            .reduce((total, value) -> DslStoreProcessorExamples.tail(total + "+" + value),
                (total, value) -> DslStoreProcessorExamples.tail(total + "-" + value),
                DslStoreProcessorExamples.uncached("owner-groups"))
            .toStream().process(() -> new Tagger<String>("owner-groups", false)).to(outTables);
        // a filter of a join sends old values: its tombstones depend on the join's old value
        KTable<String, String> joined = ownerTable.outerJoin(petTable, (o, p) -> o + "+" + p);
        joined.toStream().process(() -> new Tagger<String>("owners-pets", true)).to(outTables);
        joined.filter((key, value) -> !value.startsWith("x"))
            .toStream().process(() -> new Tagger<String>("owners-pets-kept", true)).to(outTables);
        petTable.groupBy((key, value) -> KeyValue.pair(group(key, value), value))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("pet-groups").withCachingDisabled())
            .toStream().process(() -> new Tagger<Long>("pet-groups", false)).to(outTables);
        petTable.toStream().process(() -> new StoreRewriter("pets-store"), "pets-store").to(outTables);
    }
}
