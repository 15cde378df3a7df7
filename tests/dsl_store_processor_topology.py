"""User processors on DSL operations' stores, the Python twin of kstreams.oracle.DslStoreProcessorExamples
(Java): keep the two in step.

``CountCorrector`` (``process`` on ``count(Materialized.as_("counts"))``'s stream, store ``counts``,
uncached): per count update it forwards the count, its timestamp and what ``counts`` holds for the key
(a ``ValueAndTimestamp``); a count of 3 is corrected to 10 (stamped 7 ms after the record), a count of
13 or more is deleted (forwarding what it held), so the next records of the key count on from what
the processor wrote. A punctuator on stream time every 10 s walks ``counts.all()`` in key order and,
for the keys of the 10 s buckets that ended by then (keys start with their bucket), forwards what
each holds and deletes it.

``PriceReader`` (``process`` on the ``orders`` stream, store ``prices-store`` of a table read from
the ``prices`` topic, in the same sub-topology): forwards each order with the key's price and its
timestamp as the table holds them at that point of the task's processing order.

``StoreEditor`` (``process`` on a table's updates, with the stores it names: ``kept`` and ``mapped``
of a table's materialized ``filter`` (which sends old values) then ``map_values``; ``joined`` of an
inner table-table join; ``left-kept`` of a left join's filter; ``outer-joined`` and ``outer-mapped`` of
an outer join and its ``map_values``; ``regrouped`` of a re-grouped table's ``reduce``; ``cogrouped``
of a cogroup's ``aggregate``; all uncached): per update it forwards the value, its timestamp and what
each store holds for the key (and, ``lists_all``, every entry of the first store, where a step's or a
join's next update of a key overwrites what the processor wrote); an update stamped at a multiple of
5 ms (+0) makes it put ``edited`` stamped 3 ms later into each store, one at +1 delete the key from
each (forwarding what it held), so the next aggregation goes on from what it wrote (and stamps with
the larger of the record's and the stored timestamp) and the next step or join update overwrites it
(a join's update is stamped with the larger of both rows' timestamps, whatever its store holds).

The same StoreEditor edits the stores keyed by windows (``win-joined`` of a tumbling count outer-joined
with a hopping concatenation, ``win-kept`` of its filter, ``win-labels`` of the count's map_values,
``win-final`` of the map_values of the count suppressed until its windows close, ``win-cog-labels`` of
a windowed cogroup's map_values, ``win-closed`` of a count emitting on window close's map_values;
``slide-joined``, ``slide-labels`` and ``slide-closed`` of the same in sliding windows;
``session-labels`` of a session count's map_values, keyed by the session-windowed serde): its keys are
windows, which it lists as Java's ``Windowed.toString()`` writes them (``key_text``), and which are
forwarded as that text. And ``items-later``, the store of a filter of the items table suppressed for
700 ms.

Every value starts with ``p<partition>|``: the task that produced it. Its classes are
self-contained: Spark's Python workers cannot import modules of tests/, and the test ships this
module by value.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams.topology import (
    BufferConfig, EmitStrategy, Materialized, Named, Serdes, SessionWindows, SlidingWindows, StreamsBuilder, Suppressed,
    TimeWindows, WindowedSerde,
)
from dagster_kstreams.topology.processor_api import Processor, PunctuationType, Record, ValueAndTimestamp
from dagster_kstreams.topology.serdes import Windowed
from old_value_write_topology import old_value_writes

BUCKET_MS = 10_000
WINDOW_MS = 1_000  # the windowed tables' windows (their stores' time-windowed key serde)


def stored_text(stored) -> str:
    """A ValueAndTimestamp as both twins write it (``value@timestamp``, or ``null``)."""
    return "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"


def key_text(key) -> str:
    """A key as both twins write it: a window as Java's ``Windowed.toString()`` (``[key@start/end]``)."""
    if isinstance(key, Windowed):
        return f"[{key.key}@{key.window.start}/{key.window.end}]"
    return str(key)


class CountCorrector(Processor):
    def init(self, context) -> None:
        self.context = context
        self.counts = context.get_state_store("counts")
        context.schedule(BUCKET_MS, PunctuationType.STREAM_TIME, self.close_buckets)

    def process(self, record: Record) -> None:
        tag = f"p{self.context.record_metadata().partition}|"
        stored = self.counts.get(record.key)
        self.context.forward(record.with_value(f"{tag}count|{record.value}|t{record.timestamp}|{stored_text(stored)}"))
        if record.value == 3:
            self.counts.put(record.key, ValueAndTimestamp.make(10, record.timestamp + 7))
        elif record.value >= 13:
            old = self.counts.delete(record.key)
            self.context.forward(record.with_value(f"{tag}deleted|{stored_text(old)}"))

    def close_buckets(self, now: int) -> None:
        tag = f"p{self.context.task_id().partition}|"
        for entry in self.counts.all():
            end = (int(entry.key[:12]) + 1) * BUCKET_MS
            if end > now:
                break
            self.context.forward(Record(entry.key, f"{tag}closed|{stored_text(entry.value)}", end - 1))
            self.counts.delete(entry.key)


class PriceReader(Processor):
    def init(self, context) -> None:
        self.context = context
        self.prices = context.get_state_store("prices-store")

    def process(self, record: Record) -> None:
        tag = f"p{self.context.record_metadata().partition}|"
        order = "null" if record.value is None else record.value  # as Java writes a null
        if record.key is None:
            self.context.forward(record.with_value(f"{tag}nokey|{order}"))
            return
        price = self.prices.get(record.key)
        self.context.forward(record.with_value(f"{tag}order|{order}|t{record.timestamp}|{stored_text(price)}"))


class StoreEditor(Processor):
    def __init__(self, *store_names: str, lists_all: bool = False) -> None:
        self.store_names, self.lists_all = store_names, lists_all

    def init(self, context) -> None:
        self.context = context
        self.stores = [context.get_state_store(name) for name in self.store_names]

    def process(self, record: Record) -> None:
        tag = f"p{self.context.record_metadata().partition}|{self.store_names[0]}|"
        read = "|".join(stored_text(store.get(record.key)) for store in self.stores)
        if self.lists_all:
            read += "|all=" + ",".join(f"{key_text(entry.key)}={stored_text(entry.value)}"
                                       for entry in self.stores[0].all())
        value = "null" if record.value is None else record.value
        self.context.forward(record.with_value(f"{tag}update|{value}|t{record.timestamp}|{read}"))
        if record.timestamp % 5 == 0:
            for store in self.stores:
                store.put(record.key, ValueAndTimestamp.make("edited", record.timestamp + 3))
        elif record.timestamp % 5 == 1:
            deleted = "|".join(stored_text(store.delete(record.key)) for store in self.stores)
            self.context.forward(record.with_value(f"{tag}deleted|{deleted}"))


def _tail(text: str) -> str:
    return text[-40:]


def _filter_stores(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    """The stores of a table's filter and map_values, edited by a StoreEditor."""
    # the items table has a store: the filter sends old values, read from its own store (which the
    # processor writes), and drops an update that neither passes nor replaces a value it holds
    items = builder.table(topics["items"], Materialized.as_("items-store").with_caching_disabled())
    kept = items.filter(lambda key, value: not value.startswith("x"), Materialized.as_("kept").with_caching_disabled())
    kept.map_values(lambda value: value.upper(), Materialized.as_("mapped").with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor("kept", "mapped", lists_all=True), "kept", "mapped") \
        .to(topics["out-tables"])
    # a suppressed table's filter: its store stamps each evicted update with the update's own time (a
    # tombstone is evicted too), and its processor's writes are what all() lists next
    items.suppress(Suppressed.until_time_limit(timedelta(milliseconds=700), BufferConfig.unbounded())) \
        .filter(lambda key, value: not value.startswith("x"), Materialized.as_("items-later").with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor("items-later", lists_all=True), "items-later") \
        .to(topics["out-tables"])


def joined_text(left, right) -> str:
    """Both rows of a joined update, as Java concatenates them (a missing one: ``null``)."""
    return f"{'null' if left is None else left}+{'null' if right is None else right}"


def _join_stores(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    """The stores of table-table joins of two tables and of their filter and map_values, each edited by
    a StoreEditor: an inner join's, a filter's of a left join without a store (a filter of a join sends
    old values: it reads its own store), an outer join's and its map_values'."""
    lefts = builder.table(topics["lefts"], Materialized.as_("lefts-store").with_caching_disabled())
    rights = builder.table(topics["rights"], Materialized.as_("rights-store").with_caching_disabled())
    out = topics["out-tables"]
    lefts.join(rights, joined_text, Materialized.as_("joined").with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor("joined", lists_all=True), "joined").to(out)
    lefts.left_join(rights, joined_text) \
        .filter(lambda key, value: not value.startswith("x"), Materialized.as_("left-kept").with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor("left-kept", lists_all=True), "left-kept").to(out)
    lefts.outer_join(rights, joined_text, Materialized.as_("outer-joined").with_caching_disabled()) \
        .map_values(lambda value: value.upper(), Materialized.as_("outer-mapped").with_caching_disabled()) \
        .to_stream() \
        .process(lambda: StoreEditor("outer-joined", "outer-mapped", lists_all=True), "outer-joined", "outer-mapped") \
        .to(out)


def _windowed_stores(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    """The stores keyed by windows, each edited by a StoreEditor: the ``wins`` stream counted in tumbling
    windows of 1 s and concatenated in hopping ones (1 s advancing by 500 ms), both with a grace of
    500 ms, outer-joined into ``win-joined`` (a hopping window starting half-way has no count) and that
    join's filter's ``win-kept`` (values without "null"), and the count's map_values' ``win-labels``;
    each store keyed by Kafka Streams' time-windowed serde. The editor's keys are windows: they are
    forwarded as text (``key_text``)."""
    def text(value) -> str:  # as Java's string concatenation writes it
        return "null" if value is None else str(value)

    windowed_keys = WindowedSerde(Serdes.String(), WINDOW_MS)
    size, grace = timedelta(milliseconds=WINDOW_MS), timedelta(milliseconds=500)
    grouped = builder.stream(topics["wins"]).group_by_key()
    # a key serde: the suppression's buffer writes the windowed keys with the table's (Kafka Streams fails
    # with the default one, a plain String serde)
    counts = grouped.windowed_by(TimeWindows.of_size_and_grace(size, grace)) \
        .count(Materialized.as_("win-counts").with_key_serde(Serdes.String()).with_caching_disabled())
    values = grouped.windowed_by(TimeWindows.of_size_and_grace(size, grace).advance_by(timedelta(milliseconds=500))) \
        .reduce(lambda x, y: _tail(x + "," + text(y)), Materialized.as_("win-values").with_caching_disabled())
    out = topics["out-tables"]
    counts.outer_join(values, lambda n, v: f"{text(n)}/{text(v)}",
                      Materialized.as_("win-joined").with_key_serde(windowed_keys).with_caching_disabled()) \
        .filter(lambda windowed, value: "null" not in value,
                Materialized.as_("win-kept").with_key_serde(windowed_keys).with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor("win-joined", "win-kept", lists_all=True), "win-joined", "win-kept") \
        .select_key(lambda windowed, value: key_text(windowed)).to(out)
    counts.map_values(lambda n: f"#{n}", Materialized.as_("win-labels").with_key_serde(windowed_keys)
                      .with_value_serde(Serdes.String()).with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor("win-labels", lists_all=True), "win-labels") \
        .select_key(lambda windowed, value: key_text(windowed)).to(out)
    # the count suppressed until its windows close: the map_values' store keeps each final count stamped
    # with its window's last update's time
    counts.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())) \
        .map_values(lambda n: f"#{n}", Materialized.as_("win-final").with_key_serde(windowed_keys)
                    .with_value_serde(Serdes.String()).with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor("win-final", lists_all=True), "win-final") \
        .select_key(lambda windowed, value: key_text(windowed)).to(out)
    # a windowed cogroup's table (its inputs' processors share one store, which stamps a window with the
    # largest time of its records): the map_values' store keeps its stamps
    grouped.cogroup(lambda key, value, aggregate: _tail(f"{aggregate}{text(value)}")) \
        .windowed_by(TimeWindows.of_size_and_grace(size, grace)) \
        .aggregate(lambda: "", Materialized.as_("win-cogrouped").with_caching_disabled()) \
        .map_values(lambda value: f"~{value}", Materialized.as_("win-cog-labels").with_key_serde(windowed_keys)
                    .with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor("win-cog-labels", lists_all=True), "win-cog-labels") \
        .select_key(lambda windowed, value: key_text(windowed)).to(out)
    # a count emitting on window close: the map_values' store keeps each closed window stamped with its
    # records' largest time (Kafka Streams' emit interval set to 0, the runner's)
    _closed_labels(grouped.windowed_by(TimeWindows.of_size_and_grace(size, grace)), "win-closed", out)


def _sliding_stores(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    """The stores keyed by sliding windows (time difference 1 s, grace 500 ms; a window's end is its
    start plus 1 s, as the time-windowed serde of size 1 s reads it back), in a sub-topology of their
    own (a sliding aggregation beside time windows keeps its own stream time, whose tables the runner
    does not join): the ``slides`` stream counted and concatenated, outer-joined into ``slide-joined``,
    and the count's map_values' ``slide-labels``, each edited by a StoreEditor."""
    def text(value) -> str:  # as Java's string concatenation writes it
        return "null" if value is None else str(value)

    windowed_keys = WindowedSerde(Serdes.String(), WINDOW_MS)
    windows = SlidingWindows.of_time_difference_and_grace(timedelta(milliseconds=WINDOW_MS),
                                                          timedelta(milliseconds=500))
    grouped = builder.stream(topics["slides"]).group_by_key()
    sliding = grouped.windowed_by(windows)
    counts = sliding.count(Materialized.as_("slide-counts").with_caching_disabled())
    values = sliding.reduce(lambda x, y: _tail(x + "," + text(y)),
                            Materialized.as_("slide-values").with_caching_disabled())
    out = topics["out-tables"]
    counts.outer_join(values, lambda n, v: f"{text(n)}/{text(v)}",
                      Materialized.as_("slide-joined").with_key_serde(windowed_keys).with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor("slide-joined", lists_all=True), "slide-joined") \
        .select_key(lambda windowed, value: key_text(windowed)).to(out)
    counts.map_values(lambda n: f"#{n}", Materialized.as_("slide-labels").with_key_serde(windowed_keys)
                      .with_value_serde(Serdes.String()).with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor("slide-labels", lists_all=True), "slide-labels") \
        .select_key(lambda windowed, value: key_text(windowed)).to(out)
    _closed_labels(grouped.windowed_by(windows), "slide-closed", out)


def _closed_labels(windowed, store: str, out: str) -> None:
    """A count of ``windowed`` emitting on window close, and its map_values' ``store``, edited by a
    StoreEditor."""
    windowed.emit_strategy(EmitStrategy.on_window_close()) \
        .count(Materialized.as_(f"{store}-counts").with_caching_disabled()) \
        .map_values(lambda n: f"%{n}", Materialized.as_(store).with_key_serde(WindowedSerde(Serdes.String(), WINDOW_MS))
                    .with_value_serde(Serdes.String()).with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor(store, lists_all=True), store) \
        .select_key(lambda windowed, value: key_text(windowed)).to(out)


def _session_stores(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    """The ``sessions`` stream counted in sessions (gap 1 s, grace 500 ms), in a sub-topology of its own
    (beside time windows, each windowed table would keep its own stream time), and the count's map_values'
    ``session-labels``, keyed by Kafka Streams' session-windowed serde (the key, the session's end, its
    start), edited by a StoreEditor: each session stamped with its end, a session merged away deleted."""
    builder.stream(topics["sessions"]).group_by_key() \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=WINDOW_MS),
                                                                timedelta(milliseconds=500))) \
        .count(Materialized.as_("session-counts").with_caching_disabled()) \
        .map_values(lambda n: f"&{n}", Materialized.as_("session-labels")
                    .with_key_serde(Serdes.SessionWindowed(Serdes.String())).with_value_serde(Serdes.String())
                    .with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor("session-labels", lists_all=True), "session-labels") \
        .select_key(lambda windowed, value: key_text(windowed)).to(topics["out-tables"])


def _aggregation_stores(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    """The stores of a re-grouped table's reduce and a cogroup's aggregate, each edited by a StoreEditor."""
    # uncached, as every store here: Kafka Streams' cache would forward per commit, the runner's per batch
    builder.table(topics["accounts"], Materialized.as_("accounts-store").with_caching_disabled()) \
        .group_by(lambda account, value: (value.split(":")[0], value.split(":")[1])) \
        .reduce(lambda total, amount: _tail(f"{total}+{amount}"), lambda total, amount: _tail(f"{total}-{amount}"),
                Materialized.as_("regrouped").with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor("regrouped", lists_all=True), "regrouped").to(topics["out-tables"])
    clicks = builder.stream(topics["clicks"]).group_by_key()
    views = builder.stream(topics["views"]).group_by_key()
    clicks.cogroup(lambda key, value, aggregate: _tail(f"{aggregate}c{value}")) \
        .cogroup(views, lambda key, value, aggregate: _tail(f"{aggregate}v{value}")) \
        .aggregate(lambda: "", Named.as_("activity"), Materialized.as_("cogrouped").with_caching_disabled()) \
        .to_stream().process(lambda: StoreEditor("cogrouped"), "cogrouped").to(topics["out-tables"])


def dsl_store_processor_examples(topics: dict[str, str]) -> StreamsBuilder:
    builder = StreamsBuilder()
    # First (sub-topologies 0 to 10): a killed run, running one sub-topology after another, is killed in
    # the owners' and pets' (0: tables whose stores a processor writes beside a re-grouping and a join, then
    # their re-groupings, 1 and 2), the windowed stores' (3), the sliding ones' (4), the sessions' (5) or the
    # joins' (7), and leaves the prices' to the rerun, whose batches are not capped (the order of its two
    # topics in a task depends on the caps; the joins' and the owners' inputs come in rounds that a cap cuts
    # between)
    old_value_writes(builder, topics["owners"], topics["pets"], topics["out-tables"])
    _windowed_stores(builder, topics)
    _sliding_stores(builder, topics)
    _session_stores(builder, topics)
    _filter_stores(builder, topics)
    _join_stores(builder, topics)
    _aggregation_stores(builder, topics)
    counts = builder.stream(topics["events"]).group_by_key().count(Materialized.as_("counts").with_caching_disabled())
    counts.to_stream().process(CountCorrector, "counts").to(topics["out"])
    builder.table(topics["prices"], Materialized.as_("prices-store"))
    builder.stream(topics["orders"]).process(PriceReader, "prices-store").to(topics["out-prices"])
    return builder
