package kstreams.oracle;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.Record;

/**
 * A first run's topology (RepartitionFirstRuns.fillRepartitionTopics) whose sub-topologies that read a
 * repartition topic each also read an empty topic of their own: with max.task.idle.ms a day, their tasks
 * wait for it and process nothing, while the upstream tasks fill the repartition topics. Without it, a
 * join whose two sides are both re-keyed would start joining as soon as both had records, in an order
 * that depends on the two upstream tasks' timing. The added nodes (a source and a processor that
 * ignores everything) come after the DSL's, so every other node and repartition topic keeps its name.
 */
final class BlockedJoins {
    private final Admin admin;
    private final String applicationId;
    private final int partitions;
    private final List<String> created = new ArrayList<>();

    BlockedJoins(Admin admin, String applicationId, int partitions) {
        this.admin = admin;
        this.applicationId = applicationId;
        this.partitions = partitions;
    }

    /** {@code topology} with every repartition topic's reader held back by an empty topic. */
    Topology of(Topology topology) {
        int index = 0;
        for (TopologyDescription.Subtopology subtopology : topology.describe().subtopologies()) {
            Optional<TopologyDescription.Source> reader = subtopology.nodes().stream()
                .filter(node -> node instanceof TopologyDescription.Source)
                .map(node -> (TopologyDescription.Source) node)
                .filter(source -> source.topicSet() != null
                        && source.topicSet().stream().anyMatch(topic -> topic.endsWith("-repartition")))
                .findFirst();
            if (reader.isEmpty()) {
                continue;
            }
            String topic = applicationId + "-first-run-block-" + index;
            if (!created.contains(topic)) {
                create(topic);
            }
            topology.addSource("first-run-block-source-" + index, topic);
            topology.addProcessor("first-run-block-" + index, Ignored::new, "first-run-block-source-" + index,
                                  reader.get().name());
            index++;
        }
        return topology;
    }

    private void create(String topic) {
        try {
            KafkaStreamsRuns.createTopics(admin, List.of(new NewTopic(topic, Optional.of(partitions), Optional.empty())));
        } catch (Exception e) {
            throw new IllegalStateException("could not create " + topic, e);
        }
        created.add(topic);
    }

    /** Ignores what it is given: it only ties the empty topic to the sub-topology. */
    static final class Ignored implements Processor<Object, Object, Void, Void> {
        @Override
        public void process(Record<Object, Object> record) {
        }
    }
}
