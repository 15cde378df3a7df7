package dagster_kstreams.bench;

import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A micro-batch's records sent by a Java producer in the driver JVM, the alternative to collecting
 * them to Python and sending them through librdkafka (bench/producer_paths.py measures both).
 * Columns: topic (string), key and value (binary), timestamp_ms (long, may be null).
 */
public final class BatchProducer {
    private BatchProducer() {}

    /** Through Spark's public API: each row converted to a Row object first. */
    public static long sendRows(Dataset<Row> batch, Producer<byte[], byte[]> producer) {
        Columns at = new Columns(batch.columns());
        List<Row> rows = batch.collectAsList();
        Failure failure = new Failure();
        for (Row row : rows) {
            Long timestamp = row.isNullAt(at.timestamp) ? null : row.getLong(at.timestamp);
            producer.send(new ProducerRecord<>(row.getString(at.topic), null, timestamp,
                    (byte[]) row.get(at.key), (byte[]) row.get(at.value)), failure);
        }
        return failure.flushed(producer, rows.size());
    }

    /** Spark's internal rows as its own Kafka sink reads them: no conversion per row. */
    public static long sendInternalRows(Dataset<Row> batch, Producer<byte[], byte[]> producer) {
        Columns at = new Columns(batch.columns());
        InternalRow[] rows = (InternalRow[]) batch.queryExecution().executedPlan().executeCollect();
        Failure failure = new Failure();
        UTF8String lastTopic = null;
        String topic = null;
        for (InternalRow row : rows) {
            UTF8String rowTopic = row.getUTF8String(at.topic);
            if (!rowTopic.equals(lastTopic)) {  // a batch's rows mostly share one topic
                lastTopic = rowTopic.clone();
                topic = rowTopic.toString();
            }
            Long timestamp = row.isNullAt(at.timestamp) ? null : row.getLong(at.timestamp);
            byte[] key = row.isNullAt(at.key) ? null : row.getBinary(at.key);
            byte[] value = row.isNullAt(at.value) ? null : row.getBinary(at.value);
            producer.send(new ProducerRecord<>(topic, null, timestamp, key, value), failure);
        }
        return failure.flushed(producer, rows.length);
    }

    private static final class Columns {
        final int topic, key, value, timestamp;

        Columns(String[] names) {
            List<String> all = List.of(names);
            topic = all.indexOf("topic");
            key = all.indexOf("key");
            value = all.indexOf("value");
            timestamp = all.indexOf("timestamp_ms");
        }
    }

    /** The first failed send, raised once the producer has flushed. */
    private static final class Failure implements Callback {
        private final AtomicReference<Exception> first = new AtomicReference<>();

        @Override
        public void onCompletion(org.apache.kafka.clients.producer.RecordMetadata metadata, Exception error) {
            if (error != null) first.compareAndSet(null, error);
        }

        long flushed(Producer<byte[], byte[]> producer, long sent) {
            producer.flush();
            if (first.get() != null) throw new KafkaException("a send failed", first.get());
            return sent;
        }
    }
}
