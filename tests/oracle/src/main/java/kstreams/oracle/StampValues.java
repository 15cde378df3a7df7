package kstreams.oracle;

import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;

/**
 * The value ("null" for null), "|t" and the record's timestamp: what the mains that compare
 * timestamps write, so that a record's timestamp is part of the sequence compared. Of any key type
 * (a windowed key too).
 */
final class StampValues<K> implements FixedKeyProcessor<K, String, String> {
    private FixedKeyProcessorContext<K, String> context;

    @Override
    public void init(FixedKeyProcessorContext<K, String> context) {
        this.context = context;
    }

    @Override
    public void process(FixedKeyRecord<K, String> record) {
        context.forward(record.withValue(record.value() + "|t" + record.timestamp()));
    }
}
