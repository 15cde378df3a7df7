package kstreams.oracle;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.RecordContext;
import org.apache.kafka.streams.processor.TopicNameExtractor;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Record headers through Kafka Streams itself: stateless operations and a sink, a repartition
 * topic, a count without the record cache, a user processor that reads, removes and adds
 * headers, a windowed count with its suppressed final results, and on a second source (Long values, some
 * malformed: skipped by LogAndContinueExceptionHandler) filters and mapValues in front of an uncached
 * reduce, of a join with each key's first event and, after a key change, of the same user processor;
 * and on a third a flatMapValues (a line's words)
 * in front of an uncached count of the non-empty words (a split's default branch) and an uncached reduce that
 * strings each key's words together, each update stamped with its timestamp behind a repartition topic.
 * Sinks whose topic an extractor picks from the record context (to out or routed): after the source,
 * after the user processor's forwards, after the repartition topic.
 * Runs against a real broker until the input is consumed to its end; prints JSON
 * {"describe": topology.describe(), "stores": {the reduce's store}}.
 *
 * Args: bootstrap applicationId stateDir events amounts lines out routed
 *
 * The Python twin is tests/header_topology.py; keep the two in step.
 */
public final class HeaderExamples {
    private HeaderExamples() {}

    /** Forwards each record with its header count and last "dup" header in the value, without
     * "drop" headers and with a "seen" one; a record whose value ends in 2 also goes out with new headers. */
    static final class HeaderEditor implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(Record<String, String> record) {
            // A copy: Kafka Streams hands this very record to the source's later children too, and
            // changing its headers in place would change theirs (README, "Semantics that differ").
            Headers headers = new RecordHeaders(record.headers().toArray());
            int count = headers.toArray().length;
            Header dup = headers.lastHeader("dup");
            String lastDup = dup == null ? "none" : dup.value() == null ? "null" : new String(dup.value(), UTF_8);
            headers.remove("drop").add("seen", Integer.toString(count).getBytes(UTF_8));
            context.forward(record.withHeaders(headers).withValue("proc|" + count + "|" + lastDup + "|" + record.value()));
            if (record.value() != null && record.value().endsWith("2")) {
                Headers fresh = new RecordHeaders().add("fresh", null).add("src", headers.lastHeader("src").value());
                context.forward(record.withHeaders(fresh).withValue("fresh|" + record.value()));
            }
        }
    }

    /** To routed when the score of everything the record context holds is odd, else to kept (the
     * twin's ContextRouter and context_score): its partition, timestamp, offset (byOffset), whether its
     * topic is a repartition topic or none, its "dup" headers and whether it has a "seen" one. */
    static final class ContextRouter implements TopicNameExtractor<String, String> {
        private final String described;
        private final String kept;
        private final String routed;
        private final boolean byOffset;

        ContextRouter(String described, String kept, String routed, boolean byOffset) {
            this.described = described;
            this.kept = kept;
            this.routed = routed;
            this.byOffset = byOffset;
        }

        @Override
        public String extract(String key, String value, RecordContext context) {
            String topic = context.topic();
            long score = context.partition() + context.timestamp() / 7 + (byOffset ? context.offset() : 0);
            score += topic == null ? 1 : topic.endsWith("-repartition") ? 2 : 0;
            for (Header header : context.headers()) {
                score += header.key().equals("dup") ? 1 : 0;
            }
            score += context.headers().lastHeader("seen") != null ? 1 : 0;
            return score % 2 == 1 ? routed : kept;
        }

        @Override
        public String toString() {  // what describe() prints: the twin's str() or function name
            return described;
        }
    }

    static Topology headerExamples(String events, String amounts, String lines, String out, String routed) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> stream = builder.stream(events);
        stream.flatMapValues(v -> v == null ? List.of("null") : List.of(v, v + "+"))
            .filter((k, v) -> !v.endsWith("3+"))
            .mapValues(v -> "flat|" + v)
            .to(out);
        KStream<String, String> rekeyed = stream.selectKey((k, v) -> v == null ? "none" : v)
            .repartition(Repartitioned.as("rekeyed"));
        rekeyed.mapValues((k, v) -> "rekeyed|" + k + "|" + v).to(out);
        // The twin mixes Column expressions and Python functions in this sub-topology.
        rekeyed.filter((k, v) -> v != null).mapValues(v -> v.toUpperCase())
            .map((k, v) -> KeyValue.pair(k, "mixmap|" + k + "|" + v + "|" + v.length()))
            .to(out);
        KStream<String, String> mixed = rekeyed
            .flatMap((k, v) -> v == null ? List.<KeyValue<String, String>>of()
                : List.of(KeyValue.pair(k, v + "a"), KeyValue.pair(k + "!", v + "b")))
            .mapValues(v -> "fm+" + v.toUpperCase());
        mixed.filter((k, v) -> v.endsWith("A")).mapValues(v -> "mixa|" + v).to(out);
        mixed.filterNot((k, v) -> !k.endsWith("!")).mapValues((k, v) -> "mixb|" + v + "|" + k).to(out);
        // The twin runs a peek, a foreach and a split on Python predicates beside Column filters (segments
        // of its plan), and a split on Column predicates (DataFrame filters).
        KStream<String, String> present = rekeyed.filter((k, v) -> v != null);
        present.peek((k, v) -> { }).mapValues(v -> "peek|" + v).to(out);
        Map<String, KStream<String, String>> parts = present.peek((k, v) -> { }).split(Named.as("part-"))
            .branch((k, v) -> v.endsWith("1"), Branched.as("one"))
            .branch((k, v) -> v.endsWith("2"), Branched.as("two"))
            .defaultBranch(Branched.as("rest"));
        parts.get("part-one").mapValues(v -> "pone|" + v).to(out);
        parts.get("part-two").mapValues(v -> "ptwo|" + v).to(out);
        parts.get("part-rest").mapValues(v -> "prest|" + v).to(out);
        Map<String, KStream<String, String>> columns = rekeyed.split(Named.as("col-"))
            .branch((k, v) -> v != null && v.endsWith("3"), Branched.as("three"))
            .branch((k, v) -> !k.equals("v1"), Branched.as("other"))
            .noDefaultBranch();
        columns.get("col-three").mapValues(v -> "cthree|" + v).to(out);
        columns.get("col-other").mapValues((k, v) -> "cother|" + k + "|" + v).to(out);
        present.filter((k, v) -> v.endsWith("4")).foreach((k, v) -> { });
        // The twin picks the topic with a function, behind Column expressions.
        rekeyed.mapValues(v -> "xrep|" + v).to(new ContextRouter(
            "header_topology.add_rekeyed.<locals>.route_after_repartition", out, routed, false));
        stream.groupByKey()
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts").withCachingDisabled())
            .toStream()
            .mapValues(n -> "count|" + n)
            .to(out);
        stream.process(HeaderEditor::new).to(out);
        // Sinks whose topic an extractor picks from the record context.
        stream.mapValues(v -> "xsrc|" + v).to(new ContextRouter("ContextRouter(source)", out, routed, true));
        stream.process(HeaderEditor::new).mapValues(v -> "x" + v)
            .to(new ContextRouter("ContextRouter(processor)", out, routed, true));
        // A windowed count without the record cache, and its final results, over a repartition topic
        // that keeps each key in its partition (the input is placed by murmur2 of its keys).
        KTable<Windowed<String>, Long> windowed = stream.selectKey((k, v) -> k)
            .groupByKey(Grouped.<String, String>as("windowed").withKeySerde(Serdes.String()))  // the suppression's
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(2), Duration.ofSeconds(1)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("window-counts").withCachingDisabled());
        windowed.toStream()
            .map((key, n) -> KeyValue.pair(key.key(), "win|" + key.window().start() + "|" + n))
            .to(out);
        windowed.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
            .toStream()
            .map((key, n) -> KeyValue.pair(key.key(), "final|" + key.window().start() + "|" + n))
            .to(out);
        // The twin writes these filters and mapValues as Column expressions, in front of the state.
        KTable<String, String> firstEvents = stream.groupByKey()
            .reduce((first, later) -> first, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("first-events"));
        KStream<String, Long> big = builder.stream(amounts, Consumed.with(Serdes.String(), Serdes.Long()))
            .filter((k, v) -> v == null || v > 10);
        big.mapValues(v -> v == null ? null : v * 2)
            .groupByKey(Grouped.with(Serdes.String(), Serdes.Long()))
            .reduce(Long::sum, Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("amount-sums").withCachingDisabled())
            .toStream()
            .mapValues(total -> "sum|" + total)
            .to(out, Produced.with(Serdes.String(), Serdes.String()));
        big.filterNot((k, v) -> v != null && v > 25)
            .mapValues(v -> v == null ? null : "a" + v)
            .join(firstEvents, (amount, event) -> "join|" + amount + "|" + event)
            .to(out);
        // The twin changes the key and the value with Column expressions, in front of the processor.
        big.selectKey((k, v) -> "r" + v)
            .mapValues(v -> v == null ? null : v.toString())
            .process(HeaderEditor::new)
            .mapValues(v -> "r" + v)
            .to(out);
        // The twin explodes and filters with Column expressions, in front of the state.
        KStream<String, String> words = builder.<String, String>stream(lines)
            .flatMapValues(v -> v == null ? List.<String>of() : Arrays.asList(v.split(" ", -1)));
        // A split on Columns in the twin, in front of the state: the empty words go down a branch of their own.
        Map<String, KStream<String, String>> wordParts = words.split(Named.as("word-"))
            .branch((k, v) -> v.isEmpty(), Branched.as("empty"))
            .defaultBranch(Branched.as("rest"));
        KStream<String, String> counts = wordParts.get("word-rest")
            .groupByKey()
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("word-counts").withCachingDisabled())
            .toStream()
            .mapValues(n -> "wc|" + n);
        KStream<String, String> strung = words.groupByKey()
            .reduce((seen, word) -> seen + "," + word,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("words-seen").withCachingDisabled())
            .toStream()
            .mapValues(seen -> "ws|" + seen);
        // Through a repartition topic to a sub-topology that stamps each update with its timestamp.
        counts.merge(strung)
            .repartition(Repartitioned.as("word-updates"))
            .processValues(StampValues::new)
            .to(out);
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String applicationId = args[1];
        Topology topology = headerExamples(args[3], args[4], args[5], args[6], args[7]);
        Properties props = KafkaStreamsRuns.properties(args[0], applicationId, args[2]);
        // The amounts' malformed values are skipped, as the runner's log_and_continue does.
        props.put(StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG, LogAndContinueExceptionHandler.class);
        KafkaStreamsRuns.runUntilConsumed(topology, props,
            () -> List.of(args[3], args[4], args[5], applicationId + "-rekeyed-repartition",
                applicationId + "-windowed-repartition", applicationId + "-word-updates-repartition"),
            Duration.ofMinutes(2),
            streams -> "{\"describe\": " + Json.quote(topology.describe().toString())
                + ", \"stores\": " + Json.objectOfStrings(KafkaStreamsRuns.storeContent(streams, "amount-sums")) + "}");
    }
}
