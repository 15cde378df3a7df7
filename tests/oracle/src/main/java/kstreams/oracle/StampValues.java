package kstreams.oracle;

import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;

/**
 * The value ("null" for null), "|t" and the record's timestamp: what the mains that compare
 * timestamps write, so that a record's timestamp is part of the sequence compared.
 */
final class StampValues implements FixedKeyProcessor<String, String, String> {
    private FixedKeyProcessorContext<String, String> context;

    @Override
    public void init(FixedKeyProcessorContext<String, String> context) {
        this.context = context;
    }

    @Override
    public void process(FixedKeyRecord<String, String> record) {
        context.forward(record.withValue(record.value() + "|t" + record.timestamp()));
    }
}
