package kstreams.oracle;

import java.time.Duration;
import java.util.List;

import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.processor.RecordContext;
import org.apache.kafka.streams.processor.TopicNameExtractor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.RecordMetadata;

/**
 * The suppressed prices' record context, a part of SuppressExamples (which calls suppressedContexts):
 * Kafka Streams' suppression buffer keeps each update's record context and emits the update in it, so a
 * processor after the suppressed table's toStream sees the buffered record's topic, partition and offset
 * (it writes them into the value), and so does a topic-name extractor (it routes by the offset).
 *
 * The Python twin is tests/suppress_context_topology.py; keep the two in step.
 */
final class SuppressContextExamples {
    private SuppressContextExamples() {}

    /** value|topic|p<partition>|o<offset>|t<timestamp> ("null" for a tombstone's value). */
    static final class StampRecordMetadata implements FixedKeyProcessor<String, String, String> {
        private FixedKeyProcessorContext<String, String> context;

        @Override
        public void init(FixedKeyProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(FixedKeyRecord<String, String> record) {
            RecordMetadata metadata = context.recordMetadata().orElseThrow();
            context.forward(record.withValue(record.value() + "|" + metadata.topic() + "|p" + metadata.partition()
                                             + "|o" + metadata.offset() + "|t" + record.timestamp()));
        }
    }

    /** To odd when the record context's offset is odd, else to even. */
    static final class ContextOffsetRouter implements TopicNameExtractor<String, String> {
        private final String even;
        private final String odd;

        ContextOffsetRouter(String even, String odd) {
            this.even = even;
            this.odd = odd;
        }

        @Override
        public String extract(String key, String value, RecordContext context) {
            return context.offset() % 2 == 1 ? odd : even;
        }

        @Override
        public String toString() {  // what describe() prints: the twin's str()
            return "ContextOffsetRouter";
        }
    }

    /** outputs: the even offsets' topic, the odd ones'. */
    static void suppressedContexts(KTable<String, String> priceTable, List<String> outputs) {
        priceTable
            .suppress(Suppressed.<String>untilTimeLimit(Duration.ofSeconds(3), BufferConfig.maxRecords(4).emitEarlyWhenFull())
                .withName("held-context"))
            .toStream()
            .processValues(StampRecordMetadata::new)
            .to(new ContextOffsetRouter(outputs.get(0), outputs.get(1)));
    }
}
