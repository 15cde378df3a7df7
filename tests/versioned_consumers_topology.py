"""A versioned table's updates consumed downstream, the Python twin of
kstreams.oracle.VersionedConsumerExamples (Java): keep the two in step.

Prices are a table read from a topic into a versioned store (10 s of history); limits a plain table
(no record cache). The prices are outer-joined with the limits (the prices' side skips an
out-of-order update); filtered (no store) and re-grouped by a partner user (the re-grouping skips
them) into an aggregate of additions and subtractions kept in a versioned store (1 s of history: each
update stamped with the larger of the record's and the aggregate's time, and dropped when older than
that; its changes carry their timestamps); filtered into a plain store of
their own (which takes an out-of-order update as its latest value), whose changes go to a topic and
which the limits are left-joined with; and mapped into another plain store, whose changes go to a
topic. The limits are filtered into a versioned store (3 s of history: it drops an update older than
that, and marks an out-of-order one not latest), whose changes go to a topic, which is joined with
the prices (each side skips the other's out-of-order updates), and which orders, a stream, join as
of their own timestamps. The orders are counted per user into a versioned store (2 s of history:
each count is stamped with the larger of the order's and the previous count's time, and dropped when
older than that), whose changes go to a topic and which the orders join as of their own timestamps.
The prices are joined on a foreign key (their number's region) with regions, another versioned table
(4 s of history): the subscriptions skip the prices' out-of-order updates, the answers the regions'.
Steps into versioned stores after tables Kafka Streams stamps with other times than their records':
the re-grouped aggregate mapped into one of 500 ms of history; the limits left-joined with the prices
(stamped with the larger of both rows' times) filtered into one of 2 s; the last order per user (a
plain store: each stamped with the larger of the order's and the previous one's time) filtered into
one of 1 s; their changes carry their timestamps. :class:`HistoryVersions`, on the re-grouped
aggregate's changes, works on its versioned store and on its tails' (``out-history-versions``). The
orders and the limits' changes are cogrouped into a plain store, mapped into a versioned one of 1 s
(``out-cogroup-tails``); the limits suppressed for 500 ms are filtered into one of 2 s
(``out-suppressed-limits``); :class:`StepVersions`, on the cogroup tails' changes, reads both and the
prices' filter's plain store (``out-step-versions``). Each order flags its user (a table of "o", the same
value every time) left-joined on a foreign key, the user, with owners (a plain table): the result filtered
into a versioned store of 2 s (``out-fk-steps``). Windowed tables' steps into versioned stores keyed by
windows, each read by a :class:`WindowVersions` on its changes: the orders counted in 10 s windows (grace
2 s) filtered into one of 3 s (``out-window-steps``: the processor puts versions ahead into it), then
re-grouped by user into a reduce of its windows' values (``out-window-step-groups``); the
limits' changes counted in sliding windows of 2 s (grace 1 s) mapped into one of 2 s
(``out-sliding-steps``), re-grouped alike (``out-sliding-step-groups``); the regions' changes counted in
sessions (gap 3 s, grace 1 s) filtered into one of 1 s (``out-session-steps``). Beside the foreign-key join, which reads the flags' store (its answers)
and the owners' (its subscriptions), :class:`StoreReads` reads each on its table's side: the orders'
flags (``out-flag-reads``), the owners' updates (``out-owner-reads``). Its functions are self-contained:
Spark's Python workers cannot import modules of tests/.
"""

from __future__ import annotations

from datetime import timedelta

from equivalence_io import StampValues
from dagster_kstreams.topology import (
    BufferConfig, Materialized, Processor, Record, SessionWindows, SlidingWindows, Stores, StreamsBuilder, Suppressed,
    TableJoined, TimeWindows, WindowedSerde,
)
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.serdes import Serdes

INPUTS = ("prices", "limits", "orders", "regions", "owners")
OUTPUTS = ("out-joined", "out-history", "out-filtered", "out-kept-joined", "out-marked", "out-versioned-filtered",
           "out-versioned-joined", "out-orders", "out-order-counts", "out-counted", "out-priced-regions",
           "out-join-steps", "out-last-orders", "out-history-tails", "out-history-versions", "out-cogroup-tails",
           "out-suppressed-limits", "out-step-versions", "out-fk-steps", "out-window-steps", "out-sliding-steps",
           "out-session-steps", "out-flag-reads", "out-owner-reads", "out-window-step-groups",
           "out-sliding-step-groups")
# The foreign-key join's output, whose sequence depends on when its answers come back (compared by final values)
FK_OUTPUT = "out-priced-regions"
FK_JOIN_NAME = "prices-regions"  # its internal topics: <app>-prices-regions-subscription-{registration,response}-topic
OWNERS_JOIN_NAME = "flags-owners"  # the foreign-key join whose result a versioned step puts
REPARTITION_TOPIC = "by-partner-repartition"
# A user's partner in its partition (u1, u2, u3 in partition 0 of 2; u5, u11, u15 in 1).
PARTNER = {"u1": "u2", "u2": "u3", "u3": "u1", "u5": "u11", "u11": "u15", "u15": "u5"}


def _versioned_record(record) -> str:
    """ProcessorApiExamples.VersionLog.versioned: "value@timestamp~validTo" ("-": no validTo; "null": none)."""
    if record is None:
        return "null"
    valid_to = record.valid_to()
    return f"{record.value()}@{record.timestamp()}~{'-' if valid_to is None else valid_to}"


class HistoryVersions(Processor):
    """VersionedConsumerExamples.HistoryVersions: per change of the re-grouped aggregate, a change whose
    value's length is a multiple of 3 puts a version 100 ms ahead into the aggregate's store (which the
    aggregation's next change of the key adds to), one of length 1 more than that puts one 300 ms ahead
    into the tails' store (a map_values'); then the latest version of both stores and each one's
    version 1 ms before the change (the tails' store before the map_values puts this change)."""

    def init(self, context) -> None:
        self.context = context
        self.history = context.get_state_store("price-history")
        self.tails = context.get_state_store("history-tails")

    def process(self, record: Record) -> None:
        key, t = record.key, record.timestamp
        value = "null" if record.value is None else record.value
        written = ""
        if len(value) % 3 == 0:
            written = f"put={self.history.put(key, 'w' + str(t), t + 100)}"
        elif len(value) % 3 == 1:
            written = f"tail={self.tails.put(key, 'x' + str(t), t + 300)}"
        reads = [self.history.get(key), self.history.get(key, t - 1), self.tails.get(key), self.tails.get(key, t - 1)]
        self.context.forward(record.with_value(
            f"{value}|t{t}|{written}|" + "|".join(_versioned_record(read) for read in reads)))


class StepVersions(Processor):
    """VersionedConsumerExamples.StepVersions: per change of the cogroup's tails, the latest version of the
    tails' store and of the suppressed limits' (both versioned stores of filter/map_values steps), each
    one's version 1 ms before the change, and what the prices' filter's plain store holds (an out-of-order
    price as the key's latest, at its own time)."""

    def init(self, context) -> None:
        self.context = context
        self.tails = context.get_state_store("cogroup-tails")
        self.kept = context.get_state_store("suppressed-limits")
        self.kept_prices = context.get_state_store("kept-store")

    def process(self, record: Record) -> None:
        key, t = record.key, record.timestamp
        reads = [self.tails.get(key), self.tails.get(key, t - 1), self.kept.get(key), self.kept.get(key, t - 1)]
        value = "null" if record.value is None else record.value
        stored = self.kept_prices.get(key)
        stored_text = "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"
        self.context.forward(record.with_value(
            f"{value}|t{t}|" + "|".join(_versioned_record(read) for read in reads) + f"|{stored_text}"))


class WindowVersions(Processor):
    """VersionedConsumerExamples.WindowVersions: per change of a windowed table's versioned step (its key
    a window), under the window's key: the window, the change and its time, the step's store read for the
    window (latest, and as of 1 ms before the change); with ``puts_ahead``, a change at a time divisible
    by 3 first puts a version 700 ms ahead (the step's next update of the window before it is then out of
    order)."""

    def __init__(self, store: str, puts_ahead: bool):
        self.store_name, self.puts_ahead = store, puts_ahead

    def init(self, context) -> None:
        self.context = context
        self.store = context.get_state_store(self.store_name)

    def process(self, record: Record) -> None:
        window, t = record.key, record.timestamp
        value = "null" if record.value is None else str(record.value)
        written = ""
        if self.puts_ahead and t % 3 == 0:
            written = f"put={self.store.put(window, 100 + (record.value or 0), t + 700)}"
        reads = "|".join(_versioned_record(read) for read in (self.store.get(window), self.store.get(window, t - 1)))
        self.context.forward(record.with_key(window.key).with_value(
            f"{window.window.start}-{window.window.end}|{value}|t{t}|{written}|{reads}"))


class StoreReads(Processor):
    """StoreReads (Java, a processor of VersionedConsumerExamples): each record with a key, its timestamp
    and what the plain store ``store_name`` holds for the key (``value@timestamp``, or ``null``), in a
    sub-topology where a foreign-key join reads the same store."""

    def __init__(self, store_name: str) -> None:
        self.store_name = store_name

    def init(self, context) -> None:
        self.context = context
        self.store = context.get_state_store(self.store_name)

    def process(self, record: Record) -> None:
        if record.key is None:  # Kafka Streams' store refuses a null key; a null-keyed record's partition is the producer's
            return
        stored = self.store.get(record.key)
        stored_text = "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"
        value = "null" if record.value is None else record.value
        self.context.forward(record.with_value(f"{value}|t{record.timestamp}|{stored_text}"))


def _window_groups(steps, store: str, output: str) -> None:
    """``steps`` re-grouped by the key into a reduce of its windows' values (``start:value``)."""
    steps.group_by(lambda window, value: (window.key, f"{window.window.start}:{value}")) \
        .reduce(lambda total, value: f"{total}+{value}"[-60:], lambda total, value: f"{total}-{value}"[-60:],
                Materialized.as_(store).with_caching_disabled()) \
        .to_stream().to(output)


def _window_steps(builder: StreamsBuilder, orders, limits, regions, topics: dict[str, str]) -> None:
    """Windowed tables' steps into versioned stores keyed by windows (see the module docstring)."""
    def versioned(store: str, history: timedelta, key_serde) -> Materialized:
        return Materialized.as_(Stores.persistent_versioned_key_value_store(store, history)) \
            .with_key_serde(key_serde).with_value_serde(Serdes.Long())

    window_steps = orders.group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))) \
        .count(Materialized.as_("order-windows").with_caching_disabled()) \
        .filter(lambda window, count: count % 3 != 0,
                versioned("window-steps", timedelta(seconds=3), WindowedSerde(Serdes.String(), 10_000)))
    window_steps.to_stream().process(lambda: WindowVersions("window-steps", True), "window-steps") \
        .to(topics["out-window-steps"])
    # re-grouped by user after the processor that puts versions ahead into the step's store: each latest
    # update subtracts the window's value before it (a version put ahead among them), an out-of-order one
    # goes to no group
    _window_groups(window_steps, "window-step-groups", topics["out-window-step-groups"])
    sliding_steps = limits.to_stream().group_by_key() \
        .windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(seconds=2), timedelta(seconds=1))) \
        .count(Materialized.as_("limit-windows").with_caching_disabled()) \
        .map_values(lambda count: count * 10,
                    versioned("sliding-steps", timedelta(seconds=2), WindowedSerde(Serdes.String(), 2_000)))
    sliding_steps.to_stream().process(lambda: WindowVersions("sliding-steps", False), "sliding-steps") \
        .to(topics["out-sliding-steps"])
    _window_groups(sliding_steps, "sliding-step-groups", topics["out-sliding-step-groups"])
    regions.to_stream().group_by_key() \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=3), timedelta(seconds=1))) \
        .count(Materialized.as_("region-sessions").with_caching_disabled()) \
        .filter(lambda session, count: count % 3 != 0,
                versioned("session-steps", timedelta(seconds=1), Serdes.SessionWindowed(Serdes.String()))) \
        .to_stream().process(lambda: WindowVersions("session-steps", False), "session-steps") \
        .to(topics["out-session-steps"])


def versioned_consumer_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of VersionedConsumerExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    partner = dict(PARTNER)

    def number(value):
        return int(value[1:])

    def text(value):  # as Java's string concatenation writes it
        return "null" if value is None else value

    prices = builder.table(topics["prices"], Materialized.as_(
        Stores.persistent_versioned_key_value_store("prices-store", timedelta(seconds=10))))
    limits = builder.table(topics["limits"], Materialized.as_("limits-store").with_caching_disabled())
    prices.outer_join(limits, lambda price, limit: f"{text(price)}&{text(limit)}").to_stream().to(topics["out-joined"])
    history = prices.filter(lambda user, price: number(price) % 5 != 0) \
        .group_by(lambda user, price: (user if number(price) % 2 == 0 else partner[user], price),
                  Grouped.as_("by-partner")) \
        .aggregate(lambda: "",
                   lambda user, price, history: history + "+" + price,
                   lambda user, price, history: history + "-" + price,
                   Materialized.as_(Stores.persistent_versioned_key_value_store("price-history", timedelta(seconds=1))))
    history_changes = history.to_stream()
    history_changes.process_values(StampValues).to(topics["out-history"])
    history.map_values(lambda history: history[-8:], Materialized.as_(
        Stores.persistent_versioned_key_value_store("history-tails", timedelta(milliseconds=500)))) \
        .to_stream().process_values(StampValues).to(topics["out-history-tails"])
    history_changes.process(HistoryVersions, "price-history", "history-tails").to(topics["out-history-versions"])
    kept = prices.filter(lambda user, price: number(price) % 3 != 0,
                         Materialized.as_("kept-store").with_caching_disabled())
    kept.to_stream().to(topics["out-filtered"])
    limits.left_join(kept, lambda limit, price: f"{limit}<{text(price)}").to_stream().to(topics["out-kept-joined"])
    prices.map_values(lambda price: price + "!", Materialized.as_("marked-store").with_caching_disabled()) \
        .to_stream().to(topics["out-marked"])
    versioned_limits = limits.filter(lambda user, limit: number(limit) % 4 != 0, Materialized.as_(
        Stores.persistent_versioned_key_value_store("limits-versioned", timedelta(seconds=3))))
    versioned_limits.to_stream().to(topics["out-versioned-filtered"])
    versioned_limits.join(prices, lambda limit, price: f"{limit}^{price}").to_stream() \
        .to(topics["out-versioned-joined"])
    limits.left_join(prices, lambda limit, price: f"{limit}~{text(price)}") \
        .filter(lambda user, joined: number(joined.split("~")[0]) % 3 != 0, Materialized.as_(
            Stores.persistent_versioned_key_value_store("join-steps", timedelta(seconds=2)))) \
        .to_stream().process_values(StampValues).to(topics["out-join-steps"])
    orders = builder.stream(topics["orders"])
    orders.group_by_key().reduce(lambda last, order: order, Materialized.as_("last-orders").with_caching_disabled()) \
        .filter(lambda user, order: number(order) % 4 != 0, Materialized.as_(
            Stores.persistent_versioned_key_value_store("last-orders-versioned", timedelta(seconds=1)))) \
        .to_stream().process_values(StampValues).to(topics["out-last-orders"])
    orders.join(versioned_limits, lambda order, limit: f"{text(order)}@{limit}").to(topics["out-orders"])
    order_counts = orders.group_by_key().count(Materialized.as_(
        Stores.persistent_versioned_key_value_store("order-counts", timedelta(seconds=2))))
    order_counts.to_stream().map_values(lambda count: str(count)).to(topics["out-order-counts"])
    orders.join(order_counts, lambda order, count: f"{text(order)}#{count}").to(topics["out-counted"])
    regions = builder.table(topics["regions"], Materialized.as_(
        Stores.persistent_versioned_key_value_store("regions-store", timedelta(seconds=4))))
    prices.join(regions, lambda price: f"r{number(price) % 4}", lambda price, region: f"{price}/{region}",
                TableJoined.as_(FK_JOIN_NAME)).to_stream().to(topics["out-priced-regions"])
    order_limit_log = orders.group_by_key().cogroup(lambda user, order, log: log + "+" + order) \
        .cogroup(limits.to_stream().group_by_key(), lambda user, limit, log: log + "-" + limit) \
        .aggregate(lambda: "", Materialized.as_("order-limit-log").with_caching_disabled())
    cogroup_tails = order_limit_log.map_values(lambda log: log[-8:], Materialized.as_(
        Stores.persistent_versioned_key_value_store("cogroup-tails", timedelta(seconds=1))))
    cogroup_changes = cogroup_tails.to_stream()
    cogroup_changes.process_values(StampValues).to(topics["out-cogroup-tails"])
    limits.suppress(Suppressed.until_time_limit(timedelta(milliseconds=500), BufferConfig.unbounded())) \
        .filter(lambda user, limit: number(limit) % 3 != 0, Materialized.as_(
            Stores.persistent_versioned_key_value_store("suppressed-limits", timedelta(seconds=2)))) \
        .to_stream().process_values(StampValues).to(topics["out-suppressed-limits"])
    cogroup_changes.process(StepVersions, "cogroup-tails", "suppressed-limits", "kept-store").to(topics["out-step-versions"])
    owners = builder.table(topics["owners"], Materialized.as_("owners-store").with_caching_disabled())
    flags = orders.filter(lambda user, order: order is not None).map_values(lambda order: "o") \
        .to_table(Materialized.as_("order-flags").with_caching_disabled())
    flags.left_join(owners, lambda user, flag: user, lambda flag, owner: f"{flag}/{text(owner)}",
                    TableJoined.as_(OWNERS_JOIN_NAME)) \
        .filter(lambda user, joined: not joined.endswith("null"), Materialized.as_(
            Stores.persistent_versioned_key_value_store("fk-steps", timedelta(seconds=2)))) \
        .to_stream().process_values(StampValues).to(topics["out-fk-steps"])
    _window_steps(builder, orders, limits, regions, topics)
    orders.process(lambda: StoreReads("order-flags"), "order-flags").to(topics["out-flag-reads"])
    owners.to_stream().process(lambda: StoreReads("owners-store"), "owners-store").to(topics["out-owner-reads"])
    return builder
