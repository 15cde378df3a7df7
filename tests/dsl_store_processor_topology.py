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

Every value starts with ``p<partition>|``: the task that produced it. Its classes are
self-contained: Spark's Python workers cannot import modules of tests/, and the test ships this
module by value.
"""

from __future__ import annotations

from dagster_kstreams.topology import Materialized, Named, StreamsBuilder
from dagster_kstreams.topology.processor_api import Processor, PunctuationType, Record, ValueAndTimestamp

BUCKET_MS = 10_000


def stored_text(stored) -> str:
    """A ValueAndTimestamp as both twins write it (``value@timestamp``, or ``null``)."""
    return "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"


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
            read += "|all=" + ",".join(f"{entry.key}={stored_text(entry.value)}" for entry in self.stores[0].all())
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
    # First (sub-topologies 0 to 4): a killed run, running one sub-topology after another, is killed in
    # the joins' (1), and leaves the prices' to the rerun, whose batches are not capped (the order of its
    # two topics in a task depends on the caps; the joins' inputs come in rounds that a cap cuts between)
    _filter_stores(builder, topics)
    _join_stores(builder, topics)
    _aggregation_stores(builder, topics)
    counts = builder.stream(topics["events"]).group_by_key().count(Materialized.as_("counts").with_caching_disabled())
    counts.to_stream().process(CountCorrector, "counts").to(topics["out"])
    builder.table(topics["prices"], Materialized.as_("prices-store"))
    builder.stream(topics["orders"]).process(PriceReader, "prices-store").to(topics["out-prices"])
    return builder
