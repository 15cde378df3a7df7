package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.VersionedKeyValueStore;

/**
 * Stream-stream joins fed by table-table joins' toStream in the same sub-topology, run by Kafka
 * Streams itself against a real broker until the input is consumed to its end: two uncached tables,
 * accounts and limits, joined inner, left and outer, each joined table's updates joined the same way
 * with the clicks. Kafka Streams stamps a table-table join's update with the larger of the update's
 * and the other row's timestamps, which the stream-stream join's windows pair by. Each output value
 * ends with "|t" and the record's timestamp. Prints JSON {"describe": ..., "stores": {store: {key:
 * "value|t" and its timestamp}}}: the latest version of each key of each versioned store.
 *
 * The same tables are joined into versioned stores (3 s of history: inner, left, outer), each join's
 * changes stamped, beside the plain inner join's changes; the clicks join the left join's versioned
 * table as of their own time; and the clicks are cogrouped per user into a versioned store. VersionsAt,
 * on the clicks, works on the inner join's and the cogroup's versioned stores (outVVersions).
 *
 * Args: bootstrap applicationId stateDir accounts limits clicks outInner outLeft outOuter
 *       outPlainInner outVInner outVLeft outVRead outVOuter outVClicks outVVersions
 *
 * The Python twin is table_join_timestamp_examples() in tests/test_equivalence_table_join_timestamps.py;
 * keep the two in step.
 */
public final class TableJoinTimestampExamples {
    private TableJoinTimestampExamples() {}

    static String s(String value) {
        return value == null ? "null" : value;
    }

    static final Duration HISTORY = Duration.ofSeconds(3);
    static final List<String> VERSIONED_STORES =
        List.of("inner-versioned", "left-versioned", "outer-versioned", "clicks-versioned");
    static final List<String> KEYS = List.of("k0", "k1", "k2", "k3", "k4", "k5");  // the test's keys

    /**
     * Per click with a key: one whose value ends in 1 puts a version 200 ms ahead into the cogroup's
     * store, one ending in 2 deletes the inner join's 100 ms behind; then the latest version of both
     * stores and each one's version as of the click (twin: VersionsAt).
     */
    static final class VersionsAt implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private VersionedKeyValueStore<String, String> joined;
        private VersionedKeyValueStore<String, String> clicked;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.joined = context.getStateStore("inner-versioned");
            this.clicked = context.getStateStore("clicks-versioned");
        }

        @Override
        public void process(Record<String, String> record) {
            String key = record.key();
            long t = record.timestamp();
            if (key == null) {
                return;
            }
            String value = s(record.value());
            String written = "";
            if (value.endsWith("1")) {
                written = "put=" + clicked.put(key, "w" + t, t + 200);
            } else if (value.endsWith("2")) {
                written = "del=" + ProcessorApiExamples.VersionLog.versioned(joined.delete(key, t - 100));
            }
            String reads = String.join("|", ProcessorApiExamples.VersionLog.versioned(joined.get(key)),
                ProcessorApiExamples.VersionLog.versioned(joined.get(key, t)),
                ProcessorApiExamples.VersionLog.versioned(clicked.get(key)),
                ProcessorApiExamples.VersionLog.versioned(clicked.get(key, t)));
            context.forward(record.withValue(value + "|t" + t + "|" + written + "|" + reads));
        }
    }

    static Materialized<String, String, KeyValueStore<Bytes, byte[]>> versioned(String store) {
        return Materialized.as(Stores.persistentVersionedKeyValueStore(store, HISTORY));
    }

    static Topology tableJoinTimestampExamples(String accounts, String limits, String clicks, String outInner,
                                               String outLeft, String outOuter, List<String> versionedOutputs) {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> accountTable = builder.table(accounts,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("accounts-store").withCachingDisabled());
        KTable<String, String> limitTable = builder.table(limits,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("limits-store").withCachingDisabled());
        KStream<String, String> clickStream = builder.stream(clicks);
        accountTable.join(limitTable, (account, limit) -> account + "&" + limit)
            .toStream()
            .join(clickStream, (row, click) -> row + "+" + click,
                  JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(2)))
            .processValues(StampValues::new)
            .to(outInner);
        accountTable.leftJoin(limitTable, (account, limit) -> account + "&" + s(limit))
            .toStream()
            .leftJoin(clickStream, (row, click) -> row + "+" + s(click),
                      JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(1))
                          .after(Duration.ofSeconds(2)))
            .processValues(StampValues::new)
            .to(outLeft);
        accountTable.outerJoin(limitTable, (account, limit) -> s(account) + "&" + s(limit))
            .toStream()
            .outerJoin(clickStream, (row, click) -> s(row) + "+" + s(click),
                       JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(2)))
            .processValues(StampValues::new)
            .to(outOuter);
        versionedJoins(accountTable, limitTable, clickStream, versionedOutputs);
        return builder.build();
    }

    static void versionedJoins(KTable<String, String> accountTable, KTable<String, String> limitTable,
                               KStream<String, String> clickStream, List<String> outputs) {
        accountTable.join(limitTable, (account, limit) -> account + "&" + limit)
            .toStream().processValues(StampValues::new).to(outputs.get(0));
        accountTable.join(limitTable, (account, limit) -> account + "&" + limit, versioned("inner-versioned"))
            .toStream().processValues(StampValues::new).to(outputs.get(1));
        KTable<String, String> left = accountTable.leftJoin(limitTable, (account, limit) -> account + "&" + s(limit),
                                                            versioned("left-versioned"));
        left.toStream().processValues(StampValues::new).to(outputs.get(2));
        clickStream.join(left, (click, row) -> click + "@" + row).processValues(StampValues::new).to(outputs.get(3));
        accountTable.outerJoin(limitTable, (account, limit) -> s(account) + "&" + s(limit), versioned("outer-versioned"))
            .toStream().processValues(StampValues::new).to(outputs.get(4));
        clickStream.groupByKey().<String>cogroup((user, click, seen) -> seen + click.substring(1) + ",")
            .aggregate(() -> "", versioned("clicks-versioned"))
            .toStream().processValues(StampValues::new).to(outputs.get(5));
        clickStream.process(VersionsAt::new, "inner-versioned", "clicks-versioned").to(outputs.get(6));
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        List<String> inputs = List.of(args).subList(3, 6);
        Topology topology = tableJoinTimestampExamples(args[3], args[4], args[5], args[6], args[7], args[8],
                                                       List.of(args).subList(9, 16));
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, args[2]);
        // Wait for every input of a task rather than run ahead on one (the timestamp merge).
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 5_000L);
        // The left and outer joins: emit non-joined records as soon as stream time allows, not at
        // most once per second of wall-clock time (which would depend on processing speed).
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
        KafkaStreamsRuns.runUntilConsumed(topology, props, () -> inputs, Duration.ofMinutes(5), streams -> {
            StringBuilder out = new StringBuilder("{\"describe\": ")
                .append(Json.quote(topology.describe().toString())).append(", \"stores\": {");
            String separator = "";
            for (String store : VERSIONED_STORES) {
                out.append(separator).append(Json.quote(store)).append(": ")
                    .append(Json.objectOfStrings(KafkaStreamsRuns.versionedStoreContent(streams, store, KEYS)));
                separator = ", ";
            }
            return out.append("}}").toString();
        });
    }
}
