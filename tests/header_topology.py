"""Record headers through the runner, the Python twin of kstreams.oracle.HeaderExamples (Java):
keep the two in step.

On one source: stateless operations and a sink (``flat|``), a repartition topic whose downstream
sub-topology is Column expressions, run in the JVM (``rekeyed|``), mixed with Python functions run
in segments of the same plan (``mixmap|``, ``mixa|``, ``mixb|``), a count without the record cache
(``count|``), ``HeaderEditor`` (``process``), which reads, removes and adds headers and forwards a
record with new ones (``proc|``, ``fresh|``), and over a repartition topic that keeps each key in
its partition, a windowed count without the cache (``win|``) and its final results (``final|``: a
suppression, which emits an update with the headers of the record behind it); and on a second
source, Column expressions in front of an uncached reduce (``sum|``), of a join with a table of the
events (``join|``) and, after a key change, of ``HeaderEditor`` (``rproc|``); and on a third, a
Column ``flat_map_values`` (a line split into its words) in front of an uncached count of the
non-empty words, through a ``split`` on a Column predicate (``wc|``), and of an uncached reduce that strings each
key's words together (``ws|``), each update stamped with its timestamp behind a repartition topic.
Every record each produces should carry the headers Kafka Streams gives it. Sinks whose topic
``ContextRouter`` (or a function) picks from the record context, to ``out`` or ``routed``: after the
source (``xsrc|``), after ``HeaderEditor``'s forwards (``xproc|``, ``xfresh|``) and behind Columns
after the repartition topic (``xrep|``).

Its classes are self-contained: Spark's Python workers cannot import modules of tests/, and the
test ships this module by value (``StampValues``, the harness's own, comes from equivalence_io, as
the other twins that stamp take it).
"""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import functions as F

from equivalence_io import StampValues
from dagster_kstreams.topology import (
    BufferConfig, Branched, Consumed, Grouped, Headers, Materialized, Named, Processor, Record, Repartitioned, Serdes,
    StreamsBuilder, Suppressed, TimeWindows, TopicNameExtractor,
)


class HeaderEditor(Processor):
    def process(self, record: Record) -> None:
        headers = record.headers
        count = len(headers)
        dup = headers.last_header("dup")
        last_dup = "none" if dup is None else "null" if dup.value is None else dup.value.decode()
        headers.remove("drop").add("seen", str(count).encode())
        self.context.forward(record.with_value(f"proc|{count}|{last_dup}|{_java(record.value)}"))
        if record.value is not None and record.value.endswith("2"):
            fresh = Headers().add("fresh", None).add("src", headers.last_header("src").value)
            self.context.forward(record.with_headers(fresh).with_value(f"fresh|{record.value}"))


def context_score(record_context, by_offset: bool) -> int:
    """A number of everything a topic-name extractor's context holds (ContextRouter.score in Java):
    its partition, timestamp, offset (``by_offset``), whether its topic is a repartition topic or
    none (a punctuator's), its ``dup`` headers and whether it has a ``seen`` one. Topic names and
    a repartition topic's offsets are the app's own: only what both apps share counts."""
    topic = record_context.topic()
    score = record_context.partition() + record_context.timestamp() // 7
    score += record_context.offset() if by_offset else 0
    score += 1 if topic is None else 2 if topic.endswith("-repartition") else 0
    headers = record_context.headers()
    score += sum(1 for header in headers if header.key == "dup")
    return score + (1 if headers.last_header("seen") is not None else 0)


class ContextRouter(TopicNameExtractor):
    """To ``routed`` when the record context's :func:`context_score` is odd, else to ``kept``."""

    def __init__(self, label: str, kept: str, routed: str, by_offset: bool):
        self.label, self.kept, self.routed, self.by_offset = label, kept, routed, by_offset

    def extract(self, key, value, record_context) -> str:
        return self.routed if context_score(record_context, self.by_offset) % 2 else self.kept

    def __str__(self) -> str:  # what describe() prints; the Java twin's toString() says the same
        return f"ContextRouter({self.label})"


def _must_have_a_value(key, value) -> None:
    """A peek's or foreach's action behind a Column filter of null values: a null one fails the task."""
    if value is None:
        raise ValueError(f"the Column filter let a null value through (key {key!r})")


def _java(value) -> str:
    return "null" if value is None else value


def header_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of HeaderExamples.java on ``topics`` (``events``, ``amounts``, ``lines``, ``out`` and
    ``routed`` -> topic)."""
    builder = StreamsBuilder()
    events = builder.stream(topics["events"])
    events.flat_map_values(lambda v: ["null"] if v is None else [v, v + "+"]) \
        .filter(lambda k, v: not v.endswith("3+")) \
        .map_values(lambda v: "flat|" + v) \
        .to(topics["out"])
    add_rekeyed(events, topics)
    events.group_by_key() \
        .count(Materialized.as_("counts").with_caching_disabled()) \
        .to_stream() \
        .map_values(lambda n: f"count|{n}") \
        .to(topics["out"])
    events.process(HeaderEditor).to(topics["out"])
    # Sinks whose topic an extractor picks from the record context: after the source, and after a
    # user processor's forwards (their new headers and timestamps, the input record's place).
    events.map_values(lambda v: f"xsrc|{_java(v)}") \
        .to(ContextRouter("source", topics["out"], topics["routed"], by_offset=True))
    events.process(HeaderEditor).map_values(lambda v: "x" + v) \
        .to(ContextRouter("processor", topics["out"], topics["routed"], by_offset=True))
    windowed = events.select_key(lambda k, v: k) \
        .group_by_key(Grouped.as_("windowed").with_key_serde(Serdes.String())) \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=2), timedelta(seconds=1))) \
        .count(Materialized.as_("window-counts").with_caching_disabled())
    windowed.to_stream() \
        .map(lambda key, n: (key.key, f"win|{key.window.start}|{n}")) \
        .to(topics["out"])
    windowed.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())) \
        .to_stream() \
        .map(lambda key, n: (key.key, f"final|{key.window.start}|{n}")) \
        .to(topics["out"])
    # Column expressions in front of state (spark/column_hand_off.py): amounts (Long values, some
    # malformed) filtered and mapped by Columns, then summed (an uncached reduce) and joined with each
    # key's first event (a table of sub-topology 0, set before any amount: the amounts join its tasks;
    # a table that changed among the amounts would pair by where the killed run's batches cut the two
    # topics: README, "Order across co-partitioned inputs").
    first_events = events.group_by_key().reduce(lambda first, later: first, Materialized.as_("first-events"))
    amounts = builder.stream(topics["amounts"], Consumed.with_(Serdes.String(), Serdes.Long()))
    big = amounts.filter(F.col("value").isNull() | (F.col("value") > 10))
    big.map_values(F.col("value") * 2) \
        .group_by_key(Grouped.with_(Serdes.String(), Serdes.Long())) \
        .reduce(lambda total, amount: total + amount, Materialized.as_("amount-sums").with_caching_disabled()) \
        .to_stream() \
        .map_values(lambda total: f"sum|{total}") \
        .to(topics["out"])
    big.filter_not(F.col("value") > 25) \
        .map_values(F.concat(F.lit("a"), F.col("value").cast("string"))) \
        .join(first_events, lambda amount, event: f"join|{_java(amount)}|{_java(event)}") \
        .to(topics["out"])
    # A key change by Columns in front of a user processor (no repartition in Kafka Streams; the
    # sub-topology is task-grouped): the processor sees the new key, as Kafka Streams' does.
    big.select_key(F.concat(F.lit("r"), F.coalesce(F.col("value").cast("string"), F.lit("null")))) \
        .map_values(F.col("value").cast("string")) \
        .process(HeaderEditor) \
        .map_values(lambda value: "r" + value) \
        .to(topics["out"])
    add_words(builder, topics)
    return builder


def rekeyed_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The events re-keyed by their values and the Column sub-topology behind (:func:`add_rekeyed`)
    alone, for a killed run that cuts that sub-topology's task itself (its records: the same as in
    :func:`header_examples`, per source partition and key)."""
    builder = StreamsBuilder()
    add_rekeyed(builder.stream(topics["events"]), topics)
    return builder


def add_rekeyed(events, topics: dict[str, str]) -> None:
    """The events re-keyed by their values through a repartition topic, then Column expressions mixed
    with Python functions, to ``topics["out"]``."""
    rekeyed = events.select_key(lambda k, v: "none" if v is None else v).repartition(Repartitioned.as_("rekeyed"))
    rekeyed.map_values(F.concat(F.lit("rekeyed|"), F.col("key"), F.lit("|"), F.coalesce(F.col("value"), F.lit("null")))) \
        .to(topics["out"])
    # Columns and Python functions in one sub-topology (spark/python_segments.py): Columns, a Python
    # map, a sink; a Python flat_map, Columns, then two branches mixing both again.
    rekeyed.filter(F.col("value").isNotNull()).map_values(F.upper(F.col("value"))) \
        .map(lambda k, v: (k, f"mixmap|{k}|{v}|{len(v)}")) \
        .to(topics["out"])
    mixed = rekeyed.flat_map(lambda k, v: [] if v is None else [(k, v + "a"), (k + "!", v + "b")]) \
        .map_values(F.concat(F.lit("fm+"), F.upper(F.col("value"))))
    mixed.filter(F.col("value").endswith("A")).map_values(lambda v: "mixa|" + v).to(topics["out"])
    mixed.filter_not(lambda k, v: not k.endswith("!")) \
        .map_values(F.concat(F.lit("mixb|"), F.col("value"), F.lit("|"), F.col("key"))) \
        .to(topics["out"])
    # Peeks, a foreach and a split on Python predicates beside Column filters (segments of the plan;
    # the actions fail the task on a record the Column filter should have dropped), and a split on
    # Column predicates (DataFrame filters: a null one is false; a record matching both goes to the first).
    present = rekeyed.filter(F.col("value").isNotNull())
    present.peek(_must_have_a_value).map_values(F.concat(F.lit("peek|"), F.col("value"))).to(topics["out"])
    parts = present.peek(_must_have_a_value).split(Named.as_("part-")) \
        .branch(lambda k, v: v.endswith("1"), Branched.as_("one")) \
        .branch(lambda k, v: v.endswith("2"), Branched.as_("two")) \
        .default_branch(Branched.as_("rest"))
    parts["part-one"].map_values(F.concat(F.lit("pone|"), F.col("value"))).to(topics["out"])
    parts["part-two"].map_values(lambda v: "ptwo|" + v).to(topics["out"])
    parts["part-rest"].map_values(F.concat(F.lit("prest|"), F.col("value"))).to(topics["out"])
    columns = rekeyed.split(Named.as_("col-")) \
        .branch(F.col("value").endswith("3"), Branched.as_("three")) \
        .branch(F.col("key") != "v1", Branched.as_("other")) \
        .no_default_branch()
    columns["col-three"].map_values(F.concat(F.lit("cthree|"), F.col("value"))).to(topics["out"])
    columns["col-other"].map_values(F.concat(F.lit("cother|"), F.col("key"), F.lit("|"),
                                             F.coalesce(F.col("value"), F.lit("null")))).to(topics["out"])
    present.filter(F.col("value").endswith("4")).foreach(_must_have_a_value)
    # A topic picked from the record context behind Columns (the plan's Python pass over its output):
    # the repartition topic's place (its offsets are the app's own: not counted).
    kept, routed = topics["out"], topics["routed"]

    def route_after_repartition(key, value, record_context):
        return routed if context_score(record_context, by_offset=False) % 2 else kept

    rekeyed.map_values(F.concat(F.lit("xrep|"), F.coalesce(F.col("value"), F.lit("null")))) \
        .to(route_after_repartition)


def word_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The lines' part of :func:`header_examples` alone (its sub-topologies are its own: the same
    output for the lines), for a killed run that cuts the words' task itself."""
    builder = StreamsBuilder()
    add_words(builder, topics)
    return builder


def add_words(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    """The lines (``topics["lines"]``) split into words in front of a count and a reduce, to ``topics["out"]``."""
    # A Column flat_map_values in front of state: each line's words (Spark's split keeps trailing empty
    # words, as Java's split(" ", -1) does), each down both children before the next word.
    # Both go on through one repartition topic (which keeps their timestamps and each key's order) to
    # a sub-topology that stamps each update with its timestamp.
    words = builder.stream(topics["lines"]).flat_map_values(F.split(F.col("value"), " "))
    # A split on Columns in front of the state too: the empty words go down a branch of their own.
    non_empty = words.split(Named.as_("word-")) \
        .branch(F.col("value") == "", Branched.as_("empty")) \
        .default_branch(Branched.as_("rest"))["word-rest"]
    counts = non_empty \
        .group_by_key() \
        .count(Materialized.as_("word-counts").with_caching_disabled()) \
        .to_stream() \
        .map_values(lambda n: f"wc|{n}")
    strung = words.group_by_key() \
        .reduce(lambda seen, word: f"{seen},{word}", Materialized.as_("words-seen").with_caching_disabled()) \
        .to_stream() \
        .map_values(lambda seen: f"ws|{seen}")
    counts.merge(strung) \
        .repartition(Repartitioned.as_("word-updates")) \
        .process_values(StampValues) \
        .to(topics["out"])
