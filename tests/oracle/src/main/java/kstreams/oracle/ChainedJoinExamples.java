package kstreams.oracle;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Chained table-table joins run by Kafka Streams itself until its input (and the re-grouping's
 * repartition topic) is consumed; prints JSON {"describe": ...}. Tables a, b, c and a stream s,
 * every store without the record cache:
 * a.join(b) left-joined with c; c outer-joined with a.leftJoin(b) into "outer-store";
 * a.outerJoin(b) into "ab-store" joined with c; s left-joined with a.leftJoin(b).mapValues;
 * a.join(b) re-grouped by its b part ("pairs") and counted into "counts".
 * Filtered tables (kept: the value's number is not a multiple of 3), each sent to its own topic:
 * a.filter left-joined with c; b.filterNot outer-joined with that a.filter; that a.filter's toStream;
 * a.filter materialized into "kept-store"; s.toTable (unnamed, uncached: materialized by the join
 * below) filtered then left-joined with c; that filter's toStream (old values sent: the join asks);
 * the same table's filterNot toStream (old values not sent).
 *
 * Args: bootstrap applicationId stateDir a b c s outLeft outOuter outInner outStream outCounts
 *       outFilterLeft outFilterOuter outFilterStream outFilterStore outSLeft outSKept outSDropped
 *
 * The Python twin is chained_join_examples() in tests/chained_join_topology.py; keep the two in step.
 */
public final class ChainedJoinExamples {
    private ChainedJoinExamples() {}

    private static Materialized<String, String, KeyValueStore<Bytes, byte[]>> uncached(String store) {
        return Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(store).withCachingDisabled();
    }

    static Topology chainedJoinExamples(String a, String b, String c, String s, String outLeft, String outOuter,
                                        String outInner, String outStream, String outCounts,
                                        String outFilterLeft, String outFilterOuter, String outFilterStream,
                                        String outFilterStore, String outSLeft, String outSKept,
                                        String outSDropped) {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> ta = builder.table(a, uncached("a-store"));
        KTable<String, String> tb = builder.table(b, uncached("b-store"));
        KTable<String, String> tc = builder.table(c, uncached("c-store"));
        KTable<String, String> inner = ta.join(tb, (x, y) -> "(" + x + "+" + y + ")");
        inner.leftJoin(tc, (ab, z) -> ab + "*" + z).toStream().to(outLeft);
        KTable<String, String> left = ta.leftJoin(tb, (x, y) -> "(" + x + "/" + y + ")");
        tc.outerJoin(left, (z, ab) -> z + "%" + ab, uncached("outer-store")).toStream().to(outOuter);
        KTable<String, String> outer = ta.outerJoin(tb, (x, y) -> "(" + x + "~" + y + ")", uncached("ab-store"));
        outer.join(tc, (ab, z) -> ab + "^" + z).toStream().to(outInner);
        KStream<String, String> ts = builder.stream(s);
        ts.leftJoin(left.mapValues(v -> v.toUpperCase()), (v, ab) -> v + "|" + ab).to(outStream);
        inner.groupBy((key, value) -> KeyValue.pair(value.split("\\+")[1], key), Grouped.as("pairs"))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts").withCachingDisabled())
            .toStream().mapValues(count -> Long.toString(count)).to(outCounts);
        // Filtered tables: a's filter sends old values from the start (a-store is materialized).
        KTable<String, String> kept = ta.filter((k, v) -> kept(v));
        kept.leftJoin(tc, (x, z) -> x + "<" + z).toStream().to(outFilterLeft);
        tb.filterNot((k, v) -> kept(v)).outerJoin(kept, (y, x) -> y + ">" + x).toStream().to(outFilterOuter);
        kept.toStream().to(outFilterStream);
        ta.filter((k, v) -> kept(v), uncached("kept-store")).toStream().to(outFilterStore);
        // s's table has no store when its filters are made: they send old values only if asked to.
        KTable<String, String> st = ts.toTable(
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String())
                .withCachingDisabled());
        KTable<String, String> sKept = st.filter((k, v) -> kept(v));
        KTable<String, String> sDropped = st.filterNot((k, v) -> kept(v));
        sKept.leftJoin(tc, (x, z) -> x + "<" + z).toStream().to(outSLeft);
        sKept.toStream().to(outSKept);
        sDropped.toStream().to(outSDropped);
        return builder.build();
    }

    /** Whether a value passes the filters: its number (after the table's letter) is not a multiple of 3. */
    private static boolean kept(String value) {
        return Integer.parseInt(value.substring(1)) % 3 != 0;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String stateDir = args[2];
        Topology topology = chainedJoinExamples(args[3], args[4], args[5], args[6], args[7], args[8], args[9],
                                                args[10], args[11], args[12], args[13], args[14], args[15],
                                                args[16], args[17], args[18]);
        List<String> watched = List.of(args[3], args[4], args[5], args[6], applicationId + "-pairs-repartition");
        Properties props = KafkaStreamsRuns.properties(bootstrap, applicationId, stateDir);
        // Wait for every input of a task rather than run ahead on one (the timestamp merge).
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 5_000L);
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            KafkaStreamsRuns.waitUntilConsumed(admin, streams, applicationId, () -> watched, Duration.ofMinutes(5));
            System.out.println(KafkaStreamsRuns.describeJson(topology));
        } finally {
            KafkaStreamsRuns.close(streams, Duration.ofSeconds(30));
        }
    }
}
