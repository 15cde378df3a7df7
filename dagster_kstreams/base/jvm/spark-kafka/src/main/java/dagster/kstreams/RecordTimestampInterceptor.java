package dagster.kstreams;

import java.nio.ByteBuffer;
import java.util.Map;

import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Gives each record Spark's Kafka sink writes the timestamp a task gave it.
 *
 * <p>Spark's sink has no timestamp column, so the batch writer puts the record's timestamp (the one
 * Kafka Streams' {@code SinkNode} would write) in the header {@code __dagster_kstreams.timestamp}
 * (8 bytes, big-endian). This interceptor, set as the sink's {@code interceptor.classes}, makes it the
 * record's own timestamp and drops the header. A negative timestamp, which the producer refuses,
 * stays in the header (readers of repartition topics look there first).
 */
public final class RecordTimestampInterceptor implements ProducerInterceptor<byte[], byte[]> {
    static final String HEADER = "__dagster_kstreams.timestamp";

    @Override
    public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
        Header header = record.headers().lastHeader(HEADER);
        if (header == null || header.value() == null || header.value().length != Long.BYTES) {
            return record;
        }
        long timestamp = ByteBuffer.wrap(header.value()).getLong();
        if (timestamp < 0) {
            return record;
        }
        RecordHeaders headers = new RecordHeaders(record.headers().toArray());
        headers.remove(HEADER);
        return new ProducerRecord<>(record.topic(), record.partition(), timestamp, record.key(), record.value(),
                headers);
    }

    @Override
    public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
    }

    @Override
    public void close() {
    }

    @Override
    public void configure(Map<String, ?> configs) {
    }
}
