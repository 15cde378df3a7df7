package kstreams.oracle;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;

/**
 * Runs an app that commits exactly once, after its whole input: what a comparison of the record
 * cache needs, since the cache forwards at each commit. The app never commits by time (its commit
 * interval is Long.MAX_VALUE: StreamThread commits when now - lastCommit exceeds it, which never
 * happens), so its caches are flushed only when it is closed, cleanly, once its one stream thread has
 * processed every record of the watched topics (its "process-total" equals the sum of their end
 * offsets, records produced without transactions, so one offset per record).
 */
final class CommitOnceRuns {
    private CommitOnceRuns() {
    }

    /** The settings of {@link KafkaStreamsRuns#properties} with no commit but the one at close, one thread. */
    static Properties properties(String bootstrap, String applicationId, String stateDir) throws Exception {
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Long.MAX_VALUE);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        return props;
    }

    /**
     * Runs {@code topology} until its thread has processed every record of the watched topics (asked
     * again each time: repartition topics fill while it runs; the same count twice in a row, half a
     * second apart, so that nothing its producer still held is missed), then closes it, which
     * flushes the caches and commits once. Fails after {@code timeout}.
     */
    static void runUntilProcessed(Topology topology, Properties props, KafkaStreamsRuns.WatchedTopics watched,
                                  Duration timeout) throws Exception {
        String bootstrap = props.getProperty(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG);
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            long deadline = System.nanoTime() + timeout.toNanos();
            long lastSeen = -1;
            while (true) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("Kafka Streams did not process its input within " + timeout);
                }
                Thread.sleep(500);
                List<String> topics = watched.get();
                if (topics == null || streams.state() != KafkaStreams.State.RUNNING) {
                    continue;
                }
                long records = endOffsets(admin, topics);
                if (processed(streams) == records && records == lastSeen) {
                    break;
                }
                lastSeen = processed(streams) == records ? records : -1;
            }
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }

    private static long endOffsets(Admin admin, List<String> topics) throws Exception {
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        for (var description : admin.describeTopics(topics).allTopicNames().get().values()) {
            description.partitions().forEach(p ->
                request.put(new TopicPartition(description.name(), p.partition()), OffsetSpec.latest()));
        }
        long sum = 0;
        for (var end : admin.listOffsets(request).all().get().values()) {
            sum += end.offset();
        }
        return sum;
    }

    /** The records the app's threads processed ("process-total" of "stream-thread-metrics"). */
    private static long processed(KafkaStreams streams) {
        double total = 0;
        for (Map.Entry<MetricName, ? extends Metric> metric : streams.metrics().entrySet()) {
            MetricName name = metric.getKey();
            if (name.group().equals("stream-thread-metrics") && name.name().equals("process-total")) {
                total += ((Number) metric.getValue().metricValue()).doubleValue();
            }
        }
        return (long) total;
    }
}
