package kstreams.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.VersionedKeyValueStore;

/**
 * Foreign-key joins whose left or right table is a table-table join's result, run by Kafka Streams
 * itself until every input and internal topic is consumed to its end; prints JSON
 * {"describe": topology.describe()}. Called once per phase of the input with the same application
 * id and state directory (the test writes the next phase only once this one is consumed).
 *
 * Args: bootstrap applicationId stateDir a b u v c outInner outLeft outRight outVersioned outVersions
 *
 * c (built first: sub-topology 0) is joined on its user with u into the versioned store fk-versioned
 * (1 s of history); its toStream is stamped (outVersioned) and read by VersionsRead (outVersions).
 *
 * The Python twin is chained_fk_join_examples() in tests/fk_chained_join_topology.py; keep the two in step.
 */
public final class ChainedForeignKeyJoinExamples {
    private ChainedForeignKeyJoinExamples() {}

    private static String text(String value) {
        return value == null ? "null" : value;
    }

    /** "user:aN" -> user; an empty user is a null foreign key. */
    private static String user(String value) {
        String user = value.substring(0, value.indexOf(':'));
        return user.isEmpty() ? null : user;
    }

    private static Materialized<String, String, KeyValueStore<Bytes, byte[]>> uncached(String store) {
        return Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(store).withCachingDisabled();
    }

    /**
     * Each update of the versioned join's result with its timestamp, then what its store fk-versioned
     * holds for the key: the latest version, the versions valid 1 ms and 600 ms before the update
     * (twin: VersionsRead).
     */
    static final class VersionsRead implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private VersionedKeyValueStore<String, String> store;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore("fk-versioned");
        }

        @Override
        public void process(Record<String, String> record) {
            long t = record.timestamp();
            String reads = String.join("|", ProcessorApiExamples.VersionLog.versioned(store.get(record.key())),
                ProcessorApiExamples.VersionLog.versioned(store.get(record.key(), t - 1)),
                ProcessorApiExamples.VersionLog.versioned(store.get(record.key(), t - 600)));
            context.forward(record.withValue(text(record.value()) + "|t" + t + "|" + reads));
        }
    }

    public static Topology build(String a, String b, String u, String v, String c, String outInner, String outLeft,
                                 String outRight, String outVersioned, String outVersions) {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> cTable = builder.table(c, uncached("c-store"));
        KTable<String, String> aTable = builder.table(a, uncached("a-store"));
        KTable<String, String> bTable = builder.table(b, uncached("b-store"));
        KTable<String, String> uTable = builder.table(u, uncached("u-store"));
        KTable<String, String> vTable = builder.table(v, uncached("v-store"));
        KTable<String, String> ab = aTable.join(bTable, (x, y) -> x + "+" + y);
        KTable<String, String> uv = uTable.leftJoin(vTable, (x, y) -> x + "/" + text(y));
        ab.join(uv, ChainedForeignKeyJoinExamples::user, (left, right) -> left + "@" + right)
            .toStream()
            .to(outInner);
        ab.filter((key, value) -> !value.startsWith("frozen"))
            .leftJoin(uTable, (key, value) -> user(value), (left, right) -> left + "@" + text(right),
                      TableJoined.as("chained-left"), uncached("fk-store"))
            .toStream()
            .to(outLeft);
        KTable<String, String> uvOuter = uTable.outerJoin(vTable, (x, y) -> text(x) + "~" + text(y), uncached("uv-store"));
        aTable.leftJoin(uvOuter.filter((key, value) -> !value.startsWith("null")), ChainedForeignKeyJoinExamples::user,
                        (left, right) -> left + "#" + text(right))
            .toStream()
            .to(outRight);
        KStream<String, String> changes = cTable.join(uTable, ChainedForeignKeyJoinExamples::user,
                (left, right) -> left + "%" + right, TableJoined.as("versioned"),
                Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("fk-versioned", Duration.ofSeconds(1))))
            .toStream();
        changes.processValues(StampValues::new).to(outVersioned);
        changes.process(VersionsRead::new, "fk-versioned").to(outVersions);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        List<String> inputs = List.of(args[3], args[4], args[5], args[6], args[7]);
        Topology topology = build(args[3], args[4], args[5], args[6], args[7], args[8], args[9], args[10], args[11],
                                  args[12]);
        // Every topic read: the inputs, and the joins' internal topics (the answers must have come back).
        List<String> watched = new ArrayList<>();
        for (TopologyDescription.Subtopology sub : topology.describe().subtopologies()) {
            for (TopologyDescription.Node node : sub.nodes()) {
                if (node instanceof TopologyDescription.Source source) {
                    for (String topic : source.topicSet()) {
                        watched.add(inputs.contains(topic) ? topic : applicationId + "-" + topic);
                    }
                }
            }
        }
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        // The timestamp merge of a task's inputs (u and v), as the runner orders them. 0, not a wait:
        // with 0 a task still waits for every partition whose lag it does not know yet or whose records
        // it has not fetched (KIP-695), so it merges the whole phase, written before this process
        // starts; it no longer waits for records not written yet, which here are only the joins' own
        // subscriptions and answers, sent after the phase's input (the test's phases). A wait of 5 s
        // each time a task's internal topic ran empty cost each phase about 26 s of its 37.
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 0L);
        KafkaStreamsRuns.runUntilConsumed(topology, props, () -> watched, Duration.ofMinutes(5),
                                          streams -> KafkaStreamsRuns.describeJson(topology));
    }
}
