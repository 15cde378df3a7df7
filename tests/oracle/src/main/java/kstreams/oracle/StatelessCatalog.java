package kstreams.oracle;

import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Pattern;

import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Printed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.RecordContext;
import org.apache.kafka.streams.processor.TopicNameExtractor;

import static kstreams.oracle.CatalogRow.field;

/**
 * Stateless operators (filter, map, flat_map, peek, merge, split, foreach, print, a pattern source,
 * sinks whose topic an extractor picks),
 * the DSL issue's snippets, and naming and layout.
 *
 * Entries of TopologyCatalog, built with Kafka Streams' own DSL; their Python twins, under the same
 * names, are in tests/topology_catalog_stateless.py. Keep the two in step.
 */
final class StatelessCatalog {
    private StatelessCatalog() {}

    static Map<String, Supplier<Topology>> topologies() {
        Map<String, Supplier<Topology>> topologies = new LinkedHashMap<>();
        // The snippets of the DSL issue.
        topologies.put("issue_users_per_country", StatelessCatalog::issue_users_per_country);
        topologies.put("issue_clicks_enriched_with_profiles", StatelessCatalog::issue_clicks_enriched_with_profiles);
        topologies.put("issue_windowed_word_count", StatelessCatalog::issue_windowed_word_count);
        topologies.put("issue_table_filter_map_values", StatelessCatalog::issue_table_filter_map_values);
        topologies.put("issue_map_to_table_to_stream", StatelessCatalog::issue_map_to_table_to_stream);
        topologies.put("issue_count_store", StatelessCatalog::issue_count_store);
        // Stateless operators.
        topologies.put("stateless_chain", StatelessCatalog::stateless_chain);
        topologies.put("multi_topic_source", StatelessCatalog::multi_topic_source);
        topologies.put("merge_two_streams", StatelessCatalog::merge_two_streams);
        topologies.put("merge_after_key_change_then_count", StatelessCatalog::merge_after_key_change_then_count);
        topologies.put("flat_map_then_reduce", StatelessCatalog::flat_map_then_reduce);
        topologies.put("peek_flat_map_values", StatelessCatalog::peek_flat_map_values);
        topologies.put("split_into_named_branches", StatelessCatalog::split_into_named_branches);
        topologies.put("split_unnamed_with_consumers", StatelessCatalog::split_unnamed_with_consumers);
        topologies.put("split_with_prefix_and_chains", StatelessCatalog::split_with_prefix_and_chains);
        topologies.put("merge_of_branches", StatelessCatalog::merge_of_branches);
        topologies.put("pattern_source", StatelessCatalog::pattern_source);
        topologies.put("foreach_and_print", StatelessCatalog::foreach_and_print);
        topologies.put("merge_and_peek_named", StatelessCatalog::merge_and_peek_named);
        // Naming and layout.
        topologies.put("named_operators_everywhere", StatelessCatalog::named_operators_everywhere);
        topologies.put("two_independent_pipelines", StatelessCatalog::two_independent_pipelines);
        topologies.put("more_than_ten_subtopologies", StatelessCatalog::more_than_ten_subtopologies);
        // Sinks whose topic an extractor picks.
        topologies.put("sinks_with_topic_extractors", StatelessCatalog::sinks_with_topic_extractors);
        return topologies;
    }

    // ---- The snippets of the DSL issue ------------------------------------------------------

    static Topology issue_users_per_country() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> users = b.stream("users");
        users.groupBy((k, v) -> field(v, 1)).count().toStream().to("users-per-country");
        return b.build();
    }

    static Topology issue_clicks_enriched_with_profiles() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks");
        KTable<String, String> profiles = b.table("profiles");
        clicks.selectKey((k, v) -> field(v, 0))
            .join(profiles, (click, profile) -> click + "," + profile)
            .to("enriched");
        return b.build();
    }

    static Topology issue_windowed_word_count() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> words = b.stream("words");
        words.flatMapValues(v -> Arrays.asList(v.split(" ", -1)))
            .groupBy((k, w) -> w)
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
            .count();
        return b.build();
    }

    static Topology issue_table_filter_map_values() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> t = b.table("t");
        t.filter((k, v) -> v != null).mapValues(v -> v);
        return b.build();
    }

    static Topology issue_map_to_table_to_stream() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> input = b.stream("input");
        input.map((k, v) -> KeyValue.pair(k.substring(0, 1), v)).toTable().toStream().to("output");
        return b.build();
    }

    static Topology issue_count_store() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> input = b.stream("input-topic");
        input.groupByKey().count(Materialized.as("count-store"));
        return b.build();
    }

    // ---- Stateless operators ----------------------------------------------------------------

    static Topology stateless_chain() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> rows = b.stream("rows");
        rows.filter((k, v) -> v != null)
            .filterNot((k, v) -> v.isEmpty())
            .mapValues(v -> v.toUpperCase())
            .peek((k, v) -> { })
            .mapValues((k, v) -> k + ":" + v)
            .to("rows-upper");
        return b.build();
    }

    static Topology multi_topic_source() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> both = b.stream(List.of("orders-eu", "orders-us"));
        both.mapValues(v -> field(v, 2)).to("order-amounts");
        return b.build();
    }

    static Topology merge_two_streams() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> left = b.stream("left");
        KStream<String, String> right = b.stream("right");
        left.merge(right).filter((k, v) -> v != null).to("merged");
        return b.build();
    }

    static Topology merge_after_key_change_then_count() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> web = b.stream("web-orders");
        KStream<String, String> shop = b.stream("shop-orders");
        web.selectKey((k, v) -> field(v, 0))
            .merge(shop)
            .groupByKey()
            .count()
            .toStream()
            .to("orders-per-user");
        return b.build();
    }

    static Topology flat_map_then_reduce() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> lines = b.stream("lines");
        lines.flatMap((k, v) -> {
                List<KeyValue<String, String>> out = new java.util.ArrayList<>();
                for (String word : v.split(" ", -1)) {
                    out.add(KeyValue.pair(word, word));
                }
                return out;
            })
            .groupByKey()
            .reduce((a, c) -> a + c)
            .toStream()
            .to("words-concatenated");
        return b.build();
    }

    static Topology peek_flat_map_values() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> rows = b.stream("rows");
        rows.peek((k, v) -> { })
            .flatMapValues(v -> Arrays.asList(v.split(",", -1)))
            .flatMapValues((k, v) -> List.of(k, v))
            .to("cells");
        return b.build();
    }

    static Topology split_into_named_branches() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        // The map keys are the split name followed by the branch name.
        Map<String, KStream<String, String>> branches = orders.split(Named.as("country-"))
            .branch((k, v) -> field(v, 1).equals("fr"), Branched.as("france"))
            .branch((k, v) -> field(v, 1).equals("de"), Branched.<String, String>as("x").withName("germany"))
            .defaultBranch();
        branches.get("country-france").to("orders-fr");
        branches.get("country-germany").to("orders-de");
        branches.get("country-0").to("orders-other");
        return b.build();
    }

    static Topology split_unnamed_with_consumers() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> logs = b.stream("logs");
        logs.split()
            .branch((k, v) -> v.startsWith("ERROR"), Branched.withConsumer(ks -> ks.to("errors")))
            .branch((k, v) -> v.startsWith("WARN"), Branched.withConsumer(ks -> ks.mapValues(v -> v.substring(5)).to("warnings")))
            .noDefaultBranch();
        return b.build();
    }

    static Topology split_with_prefix_and_chains() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        Map<String, KStream<String, String>> branches = orders.split(Named.as("route-"))
            .branch((k, v) -> Integer.parseInt(field(v, 2)) > 100,
                Branched.withFunction(ks -> ks.mapValues(v -> "big:" + v), "big"))
            .branch((k, v) -> Integer.parseInt(field(v, 2)) == 0,
                Branched.withConsumer(ks -> ks.to("orders-free")))
            .defaultBranch(Branched.as("small"));
        branches.get("route-big").to("orders-big");
        branches.get("route-small").to("orders-small");
        return b.build();
    }

    static Topology merge_of_branches() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> events = b.stream("events");
        Map<String, KStream<String, String>> branches = events.split(Named.as("kind-"))
            .branch((k, v) -> v.startsWith("a"))
            .defaultBranch();
        branches.get("kind-1").mapValues(v -> v.toUpperCase())
            .merge(branches.get("kind-0"))
            .to("events-normalised");
        return b.build();
    }

    static Topology pattern_source() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream(Pattern.compile("orders-.*"));
        orders.mapValues(v -> v.toUpperCase()).to("orders-upper");
        return b.build();
    }

    static Topology foreach_and_print() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> audit = b.stream("audit");
        audit.foreach((k, v) -> { });
        audit.filter((k, v) -> v.startsWith("ERROR")).print(Printed.<String, String>toSysOut().withLabel("audit"));
        audit.peek((k, v) -> { }, Named.as("log-audit")).foreach((k, v) -> { }, Named.as("discard"));
        return b.build();
    }

    static Topology merge_and_peek_named() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> card = b.stream("card-payments");
        KStream<String, String> bank = b.stream("bank-payments");
        card.merge(bank, Named.as("all-payments"))
            .peek((k, v) -> { }, Named.as("audit-payment"))
            .to("payments-all");
        return b.build();
    }

    // ---- Naming and layout ------------------------------------------------------------------

    static Topology named_operators_everywhere() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> events = b.stream("events", Consumed.as("events-source"));
        events.filter((k, v) -> v != null, Named.as("drop-nulls"))
            .mapValues(v -> v.trim(), Named.as("trim"))
            .selectKey((k, v) -> field(v, 0), Named.as("key-by-user"))
            .groupByKey(Grouped.as("events-by-user"))
            .count(Named.as("count-events"), Materialized.as("events-per-user"))
            .toStream(Named.as("count-changes"))
            .mapValues(c -> Long.toString(c), Named.as("format-count"))
            .to("events-per-user", Produced.as("events-per-user-sink"));
        return b.build();
    }

    static Topology two_independent_pipelines() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> a = b.stream("topic-a");
        KStream<String, String> c = b.stream("topic-c");
        a.mapValues(v -> v + "!").to("topic-a-out");
        c.groupBy((k, v) -> v).count();
        KStream<String, String> bb = b.stream("topic-b");
        bb.filter((k, v) -> v.length() > 3).to("topic-b-out");
        return b.build();
    }

    static Topology more_than_ten_subtopologies() {
        // Sub-topology ids 10 and up: ordered as numbers, not as strings.
        StreamsBuilder b = new StreamsBuilder();
        for (int i = 0; i < 6; i++) {
            KStream<String, String> input = b.stream("in-" + i);
            input.groupBy((k, v) -> v).count().toStream().to("counts-" + i);
        }
        return b.build();
    }

    // ---- Sinks whose topic an extractor picks ---------------------------------------------------

    /** An extractor whose toString() is what describe() prints: the twin's str() or function name. */
    static TopicNameExtractor<String, String> extractor(String described, TopicNameExtractor<String, String> extract) {
        return new TopicNameExtractor<>() {
            @Override
            public String extract(String key, String value, RecordContext recordContext) {
                return extract.extract(key, value, recordContext);
            }

            @Override
            public String toString() {
                return described;
            }
        };
    }

    static Topology sinks_with_topic_extractors() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream("orders");
        orders.to(extractor("RouteByPartition(orders-p)", (k, v, context) -> "orders-p" + context.partition()));
        orders.filter((k, v) -> v != null)
            .to(extractor("topology_catalog_stateless.route_by_key", (k, v, context) -> "orders-" + k),
                Produced.as("by-key"));
        orders.to(extractor("topology_catalog_stateless.sinks_with_topic_extractors.<locals>.<lambda>",
            (k, v, context) -> "orders-" + v));
        return b.build();
    }
}
