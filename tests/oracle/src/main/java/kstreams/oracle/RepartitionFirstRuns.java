package kstreams.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;

/**
 * Runs an app whose joins read a repartition topic that its own upstream task fills while the app runs,
 * in the order the Spark runner gives it: that topic written before the join's task starts. A running
 * app waits for it only max.task.idle.ms of wall-clock time from when the join's task finds it empty at
 * its end, then runs ahead on the join's other input: on a loaded machine the upstream task took longer
 * than 20 s, and the reference missed most of the join's output (a race no wait settles). So a first run
 * of the same topology (same node names, so the same repartition topics) fills them, on empty stand-ins
 * of every input but those the re-keying reads; then the app runs on all its input, written before.
 */
final class RepartitionFirstRuns {
    private RepartitionFirstRuns() {
    }

    /** The app's topology on the given input topics, in the main's order. */
    interface TopologyOn {
        Topology of(List<String> inputs);
    }

    /**
     * The first run: {@code topology} on an empty topic of its own (same partition count) in place of
     * every input but {@code rekeyed}, waiting a day for an empty partition, so that the joins' tasks
     * process nothing, until {@code rekeyed} is consumed to its end. Fails if a join's task committed an
     * offset of a repartition topic (it processed some of it). Returns the run's dropped records.
     */
    static long fillRepartitionTopics(Admin admin, Properties props, TopologyOn topology, List<String> inputs,
                                      Set<String> rekeyed) throws Exception {
        String applicationId = props.getProperty(StreamsConfig.APPLICATION_ID_CONFIG);
        Map<String, TopicDescription> described = admin.describeTopics(inputs).allTopicNames().get();
        List<String> standIns = new ArrayList<>();
        List<NewTopic> emptyTopics = new ArrayList<>();
        for (String input : inputs) {
            String standIn = rekeyed.contains(input) ? input : input + "-empty";
            standIns.add(standIn);
            if (!standIn.equals(input)) {
                emptyTopics.add(new NewTopic(standIn, Optional.of(described.get(input).partitions().size()),
                                             Optional.empty()));
            }
        }
        KafkaStreamsRuns.createTopics(admin, emptyTopics);
        Properties first = new Properties();
        first.putAll(props);
        first.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, Duration.ofDays(1).toMillis());
        KafkaStreams streams = new KafkaStreams(topology.of(standIns), first);
        streams.start();
        long dropped;
        try {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> List.copyOf(rekeyed),
                                               Duration.ofMinutes(5));
            dropped = droppedRecords(streams);
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
        List<String> repartitionTopics = withRepartitionTopics(admin, applicationId, List.of());
        for (TopicPartition partition : admin.listConsumerGroupOffsets(applicationId)
                .partitionsToOffsetAndMetadata().get().keySet()) {
            if (repartitionTopics.contains(partition.topic())) {
                throw new IllegalStateException("a task processed " + partition + " before it was filled");
            }
        }
        return dropped;
    }

    /** {@code inputs} and the app's repartition topics: what the second run must consume to their end. */
    static List<String> withRepartitionTopics(Admin admin, String applicationId, List<String> inputs)
            throws Exception {
        List<String> topics = new ArrayList<>(inputs);
        for (String topic : admin.listTopics().names().get()) {
            if (topic.startsWith(applicationId + "-") && topic.endsWith("-repartition")) {
                topics.add(topic);
            }
        }
        return topics;
    }

    /** The app's dropped-records-total over its tasks. */
    static long droppedRecords(KafkaStreams streams) {
        double dropped = 0;
        for (var metric : streams.metrics().entrySet()) {
            if (metric.getKey().name().equals("dropped-records-total")
                    && metric.getKey().group().equals("stream-task-metrics")) {
                dropped += ((Number) metric.getValue().metricValue()).doubleValue();
            }
        }
        return (long) dropped;
    }
}
