package kstreams.oracle;

import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * Each record with a key, its timestamp and what the plain store {@code storeName} holds for the key, in a
 * sub-topology where a foreign-key join reads the same store (a processor of VersionedConsumerExamples; twin:
 * StoreReads in tests/versioned_consumers_topology.py).
 */
final class StoreReads implements Processor<String, String, String, String> {
    private final String storeName;
    private ProcessorContext<String, String> context;
    private TimestampedKeyValueStore<String, String> store;

    StoreReads(String storeName) {
        this.storeName = storeName;
    }

    @Override
    public void init(ProcessorContext<String, String> context) {
        this.context = context;
        this.store = context.getStateStore(storeName);
    }

    @Override
    public void process(Record<String, String> record) {
        if (record.key() == null) {
            return;
        }
        ValueAndTimestamp<String> stored = store.get(record.key());
        String storedText = stored == null ? "null" : stored.value() + "@" + stored.timestamp();
        String value = VersionedConsumerExamples.text(record.value());
        context.forward(record.withValue(value + "|t" + record.timestamp() + "|" + storedText));
    }
}
