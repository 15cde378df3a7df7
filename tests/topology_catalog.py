"""Topologies written with dagster_kstreams' DSL, one function per name.

Each one is built again, under the same name and in the same way, with Kafka Streams' own DSL
in tests/oracle/src/main/java/kstreams/oracle/TopologyCatalog.java; the differential test
(tests/test_describe_oracle.py) compares the two describe() strings byte for byte. Keep the
two files in step: same operations, same order, same names, same configuration.

Static factories whose Java name equals a field name take a trailing underscore in the DSL
(``Repartitioned.number_of_partitions(2)``, ``Suppressed.BufferConfig.max_records(1000)``).

Keys and values are strings; a record value is a comma-separated row such as "alice,fr,42"
(user, country, amount), so that the functions mean the same thing on both sides.
"""

from __future__ import annotations

from collections.abc import Callable
import re
from datetime import timedelta

from dagster_kstreams import (
    Branched,
    Consumed,
    EmitStrategy,
    Grouped,
    Joined,
    JoinWindows,
    Materialized,
    Named,
    Printed,
    Produced,
    Repartitioned,
    SessionWindows,
    SlidingWindows,
    StreamJoined,
    StreamsBuilder,
    Suppressed,
    Serdes,
    TimeWindows,
    WallclockTimestampExtractor,
)

from assets import click_regions
from cogroup_topology import cogroup_examples
from filtered_window_topology import filtered_window_examples
from fk_join_topology import fk_join_examples
from global_stream_join_topology import global_stream_join_examples
from global_topology import global_examples
from regroup_topology import regroup_examples
from suppress_topology import suppress_examples
from versioned_topology import versioned_examples
from processor_api_topology import processor_api_examples, processor_api_low_level
from dagster_kstreams.topology.processor_api import FixedKeyProcessor, Processor, ProcessorSupplier, Stores
from dagster_kstreams.topology import Topology

CATALOG: dict[str, Callable[[], object]] = {}


def topology(fn: Callable[[], object]) -> Callable[[], object]:
    """Register a catalog entry under its function name."""
    CATALOG[fn.__name__] = fn
    return fn


def field(row: str, index: int) -> str:
    return row.split(",")[index]


# ---- The snippets of the DSL issue ---------------------------------------------------


@topology
def issue_users_per_country():
    b = StreamsBuilder()
    users = b.stream("users")
    users.group_by(lambda k, v: field(v, 1)).count().to_stream().to("users-per-country")
    return b.build()


@topology
def issue_clicks_enriched_with_profiles():
    b = StreamsBuilder()
    clicks = b.stream("clicks")
    profiles = b.table("profiles")
    clicks.select_key(lambda k, v: field(v, 0)).join(
        profiles, lambda click, profile: click + "," + profile
    ).to("enriched")
    return b.build()


@topology
def issue_windowed_word_count():
    b = StreamsBuilder()
    words = b.stream("words")
    words.flat_map_values(lambda v: v.split(" ")).group_by(lambda k, w: w).windowed_by(
        TimeWindows.of_size_with_no_grace(timedelta(minutes=1))
    ).count()
    return b.build()


@topology
def issue_table_filter_map_values():
    b = StreamsBuilder()
    t = b.table("t")
    t.filter(lambda k, v: v is not None).map_values(lambda v: v)
    return b.build()


@topology
def issue_map_to_table_to_stream():
    b = StreamsBuilder()
    b.stream("input").map(lambda k, v: (k[0], v)).to_table().to_stream().to("output")
    return b.build()


@topology
def issue_count_store():
    b = StreamsBuilder()
    b.stream("input-topic").group_by_key().count(Materialized.as_("count-store"))
    return b.build()


# ---- Stateless operators ----------------------------------------------------------


@topology
def stateless_chain():
    b = StreamsBuilder()
    rows = b.stream("rows")
    (
        rows.filter(lambda k, v: v is not None)
        .filter_not(lambda k, v: v == "")
        .map_values(lambda v: v.upper())
        .peek(lambda k, v: None)
        .map_values(lambda k, v: k + ":" + v)
        .to("rows-upper")
    )
    return b.build()


@topology
def multi_topic_source():
    b = StreamsBuilder()
    both = b.stream(["orders-eu", "orders-us"])
    both.map_values(lambda v: field(v, 2)).to("order-amounts")
    return b.build()


@topology
def merge_two_streams():
    b = StreamsBuilder()
    left = b.stream("left")
    right = b.stream("right")
    left.merge(right).filter(lambda k, v: v is not None).to("merged")
    return b.build()


@topology
def merge_after_key_change_then_count():
    b = StreamsBuilder()
    web = b.stream("web-orders")
    shop = b.stream("shop-orders")
    (
        web.select_key(lambda k, v: field(v, 0))
        .merge(shop)
        .group_by_key()
        .count()
        .to_stream()
        .to("orders-per-user")
    )
    return b.build()


@topology
def flat_map_then_reduce():
    b = StreamsBuilder()
    lines = b.stream("lines")
    (
        lines.flat_map(lambda k, v: [(word, word) for word in v.split(" ")])
        .group_by_key()
        .reduce(lambda a, c: a + c)
        .to_stream()
        .to("words-concatenated")
    )
    return b.build()


@topology
def peek_flat_map_values():
    b = StreamsBuilder()
    rows = b.stream("rows")
    (
        rows.peek(lambda k, v: None)
        .flat_map_values(lambda v: v.split(","))
        .flat_map_values(lambda k, v: [k, v])
        .to("cells")
    )
    return b.build()


@topology
def split_into_named_branches():
    b = StreamsBuilder()
    orders = b.stream("orders")
    # The dict keys are the split name followed by the branch name.
    branches = (
        orders.split(Named.as_("country-"))
        .branch(lambda k, v: field(v, 1) == "fr", Branched.as_("france"))
        .branch(lambda k, v: field(v, 1) == "de", Branched.as_("x").with_name("germany"))
        .default_branch()
    )
    branches["country-france"].to("orders-fr")
    branches["country-germany"].to("orders-de")
    branches["country-0"].to("orders-other")
    return b.build()


@topology
def split_unnamed_with_consumers():
    b = StreamsBuilder()
    logs = b.stream("logs")
    (
        logs.split()
        .branch(lambda k, v: v.startswith("ERROR"),
                Branched.with_consumer(lambda ks: ks.to("errors")))
        .branch(lambda k, v: v.startswith("WARN"),
                Branched.with_consumer(lambda ks: ks.map_values(lambda v: v[5:]).to("warnings")))
        .no_default_branch()
    )
    return b.build()


@topology
def split_with_prefix_and_chains():
    b = StreamsBuilder()
    orders = b.stream("orders")
    branches = (
        orders.split(Named.as_("route-"))
        .branch(lambda k, v: int(field(v, 2)) > 100,
                Branched.with_function(lambda ks: ks.map_values(lambda v: "big:" + v), "big"))
        .branch(lambda k, v: int(field(v, 2)) == 0,
                Branched.with_consumer(lambda ks: ks.to("orders-free")))
        .default_branch(Branched.as_("small"))
    )
    branches["route-big"].to("orders-big")
    branches["route-small"].to("orders-small")
    return b.build()


@topology
def merge_of_branches():
    b = StreamsBuilder()
    events = b.stream("events")
    branches = (
        events.split(Named.as_("kind-"))
        .branch(lambda k, v: v.startswith("a"))
        .default_branch()
    )
    (
        branches["kind-1"].map_values(lambda v: v.upper())
        .merge(branches["kind-0"])
        .to("events-normalised")
    )
    return b.build()


# ---- Repartitioning -----------------------------------------------------------------


@topology
def repartition_default():
    b = StreamsBuilder()
    b.stream("input").repartition().map_values(lambda v: v).to("output")
    return b.build()


@topology
def repartition_named_with_partitions():
    b = StreamsBuilder()
    purchases = b.stream("purchases")
    (
        purchases.select_key(lambda k, v: field(v, 0))
        .repartition(Repartitioned.as_("by-user").with_number_of_partitions(4))
        .group_by_key()
        .count()
        .to_stream()
        .repartition(Repartitioned.number_of_partitions(2))
        .to("purchase-counts")
    )
    return b.build()


@topology
def chain_of_repartitions():
    b = StreamsBuilder()
    sales = b.stream("sales")
    per_user = sales.select_key(lambda k, v: field(v, 0)).group_by_key().count()
    per_country = (
        per_user.to_stream()
        .select_key(lambda user, count: user[0])
        .map_values(lambda count: str(count))
        .group_by_key()
        .reduce(lambda a, c: a + "," + c)
    )
    (
        per_country.to_stream()
        .group_by(lambda k, v: "long" if len(v) > 10 else "short")
        .aggregate(lambda: "", lambda k, v, agg: agg + v)
        .to_stream()
        .to("sales-buckets")
    )
    return b.build()


@topology
def count_then_group_by_key_again():
    b = StreamsBuilder()
    clicks = b.stream("clicks")
    (
        clicks.group_by_key()
        .count()
        .to_stream()
        .map_values(lambda c: str(c))
        .group_by_key()
        .reduce(lambda a, c: c)
        .to_stream()
        .to("latest-click-count")
    )
    return b.build()


@topology
def select_key_twice_then_count():
    b = StreamsBuilder()
    rows = b.stream("rows")
    (
        rows.select_key(lambda k, v: field(v, 0))
        .filter(lambda k, v: v is not None)
        .select_key(lambda k, v: field(v, 1))
        .group_by_key()
        .count()
    )
    return b.build()


@topology
def one_rekeyed_stream_two_aggregations():
    b = StreamsBuilder()
    orders = b.stream("orders")
    by_user = orders.select_key(lambda k, v: field(v, 0))
    by_user.group_by_key().count().to_stream().to("orders-per-user")
    by_user.group_by_key().reduce(lambda a, c: c).to_stream().to("last-order-per-user")
    return b.build()


@topology
def rekeyed_stream_joined_and_aggregated():
    b = StreamsBuilder()
    clicks = b.stream("clicks")
    users = b.table("users")
    by_user = clicks.select_key(lambda k, v: field(v, 0))
    by_user.join(users, lambda c, u: c + "|" + u).to("clicks-with-user")
    by_user.group_by_key().count().to_stream().to("clicks-per-user")
    return b.build()


@topology
def stream_table_join_after_named_repartition():
    b = StreamsBuilder()
    events = b.stream("events")
    devices = b.table("devices")
    (
        events.repartition(Repartitioned.as_("events-by-device"))
        .left_join(devices, lambda e, d: f"{e}|{d}")
        .to("events-with-device")
    )
    return b.build()


# ---- Aggregations ---------------------------------------------------------------------


@topology
def group_by_key_aggregate():
    b = StreamsBuilder()
    payments = b.stream("payments")
    (
        payments.group_by_key()
        .aggregate(lambda: "0", lambda k, v, total: str(int(total) + int(field(v, 2))))
        .to_stream()
        .to("payment-totals")
    )
    return b.build()


@topology
def group_by_named_reduce():
    b = StreamsBuilder()
    users = b.stream("users")
    (
        users.group_by(lambda k, v: field(v, 1), Grouped.as_("by-country"))
        .reduce(lambda a, c: a if len(a) >= len(c) else c,
                Named.as_("longest-row"), Materialized.as_("longest-row-store"))
        .to_stream(Named.as_("longest-row-changes"))
        .to("longest-row-per-country")
    )
    return b.build()


@topology
def tumbling_window_aggregate_with_grace():
    b = StreamsBuilder()
    readings = b.stream("readings")
    (
        readings.group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(minutes=5), timedelta(seconds=30)))
        .aggregate(lambda: "", lambda k, v, agg: agg + v)
        .to_stream()
        .map(lambda wk, v: (f"{wk.key}@{wk.window.start}", v))
        .to("readings-5m")
    )
    return b.build()


@topology
def hopping_window_count():
    b = StreamsBuilder()
    views = b.stream("page-views")
    (
        views.group_by(lambda k, v: field(v, 0))
        .windowed_by(
            TimeWindows.of_size_with_no_grace(timedelta(minutes=10)).advance_by(timedelta(minutes=1))
        )
        .count(Materialized.as_("views-10m-hopping"))
    )
    return b.build()


@topology
def sliding_window_reduce():
    b = StreamsBuilder()
    trades = b.stream("trades")
    (
        trades.group_by_key()
        .windowed_by(
            SlidingWindows.of_time_difference_and_grace(timedelta(seconds=30), timedelta(seconds=5))
        )
        .reduce(lambda a, c: a if a >= c else c)
        .to_stream()
        .select_key(lambda wk, v: wk.key)
        .to("trade-max-30s")
    )
    return b.build()


@topology
def session_window_count():
    b = StreamsBuilder()
    clicks = b.stream("clicks")
    (
        clicks.group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(minutes=30)))
        .count()
    )
    return b.build()


@topology
def session_window_aggregate():
    b = StreamsBuilder()
    clicks = b.stream("clicks")
    (
        clicks.select_key(lambda k, v: field(v, 0))
        .group_by_key(Grouped.as_("sessions-by-user"))
        .windowed_by(
            SessionWindows.of_inactivity_gap_and_grace(timedelta(minutes=5), timedelta(minutes=1))
        )
        .aggregate(lambda: "", lambda k, v, agg: agg + v, lambda k, a, c: a + c,
                   Materialized.as_("user-sessions"))
        .to_stream()
        .to("user-sessions")
    )
    return b.build()


@topology
def windowed_count_suppressed():
    b = StreamsBuilder()
    alerts = b.stream("alerts")
    (
        alerts.group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(minutes=1), timedelta(seconds=10)))
        .count()
        .suppress(Suppressed.until_window_closes(Suppressed.BufferConfig.unbounded()))
        .to_stream()
        .filter(lambda wk, count: count > 3)
        .to("alert-storms")
    )
    return b.build()


# ---- Joins -----------------------------------------------------------------------------


@topology
def stream_stream_inner_join():
    b = StreamsBuilder()
    orders = b.stream("orders")
    payments = b.stream("payments")
    orders.join(
        payments, lambda o, p: o + "|" + p,
        JoinWindows.of_time_difference_with_no_grace(timedelta(minutes=5)),
    ).to("paid-orders")
    return b.build()


@topology
def stream_stream_left_join_both_rekeyed():
    b = StreamsBuilder()
    impressions = b.stream("impressions")
    clicks = b.stream("ad-clicks")
    impressions_by_ad = impressions.select_key(lambda k, v: field(v, 1))
    clicks_by_ad = clicks.map(lambda k, v: (field(v, 1), v))
    impressions_by_ad.left_join(
        clicks_by_ad, lambda i, c: f"{i}|{c}",
        JoinWindows.of_time_difference_and_grace(timedelta(minutes=1), timedelta(seconds=10)),
    ).to("impressions-with-clicks")
    return b.build()


@topology
def stream_stream_outer_join_stream_joined():
    b = StreamsBuilder()
    left = b.stream("left-events")
    right = b.stream("right-events")
    left.select_key(lambda k, v: field(v, 0)).outer_join(
        right, lambda l, r: f"{l}|{r}",
        JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=10)),
        StreamJoined.as_("pairing").with_store_name("pairing-store"),
    ).to("paired-events")
    return b.build()


@topology
def stream_join_fed_by_tables():
    # A stream-stream join whose sides are a table's to_stream and a stream-table join's result, in
    # one sub-topology (join 7 of tests/test_equivalence_stream_joins.py has the same shape).
    b = StreamsBuilder()
    profiles = b.table("profiles", Materialized.as_("profiles-store").with_caching_disabled())
    clicks = b.stream("clicks").left_join(profiles, lambda c, p: f"{c}|{p}")
    b.table("carts").filter(lambda k, v: v != "").map_values(lambda v: v.upper()).to_stream().outer_join(
        clicks, lambda cart, click: f"{cart}|{click}",
        JoinWindows.of_time_difference_and_grace(timedelta(seconds=4), timedelta(seconds=3)).after(timedelta(seconds=6)),
    ).to("carts-with-clicks")
    return b.build()


@topology
def stream_table_left_join():
    b = StreamsBuilder()
    orders = b.stream("orders")
    customers = b.table("customers")
    orders.left_join(customers, lambda o, c: f"{o}|{c}").to("orders-with-customer")
    return b.build()


@topology
def stream_table_join_after_map_joined_named():
    b = StreamsBuilder()
    orders = b.stream("orders")
    products = b.table("products", Materialized.as_("products-store"))
    (
        orders.map(lambda k, v: (field(v, 1), v))
        .join(products, lambda o, p: o + "|" + p, Joined.as_("order-product"))
        .to("orders-with-product")
    )
    return b.build()


@topology
def stream_to_table_then_join():
    b = StreamsBuilder()
    latest_price = b.stream("prices").to_table(
        Named.as_("latest-price"), Materialized.as_("latest-price-store")
    )
    quotes = b.stream("quotes")
    quotes.join(latest_price, lambda q, p: q + "@" + p).to("priced-quotes")
    return b.build()


@topology
def join_result_then_windowed_count():
    b = StreamsBuilder()
    searches = b.stream("searches")
    results = b.stream("results")
    (
        searches.select_key(lambda k, v: field(v, 0))
        .join(results.select_key(lambda k, v: field(v, 0)), lambda s, r: s + "|" + r,
              JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=30)))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(hours=1)))
        .count()
        .to_stream()
        .to("searches-with-results-per-hour")
    )
    return b.build()


@topology
def table_table_inner_join():
    b = StreamsBuilder()
    users = b.table("users")
    addresses = b.table("addresses")
    users.join(addresses, lambda u, a: u + "|" + a).to_stream().to("users-with-address")
    return b.build()


@topology
def table_table_left_join_materialized():
    b = StreamsBuilder()
    accounts = b.table("accounts")
    limits = b.table("limits")
    (
        accounts.left_join(limits, lambda a, l: f"{a}|{l}", Materialized.as_("accounts-with-limits"))
        .to_stream()
        .to("accounts-with-limits")
    )
    return b.build()


@topology
def table_table_outer_join_named():
    b = StreamsBuilder()
    stock = b.table("stock", Consumed.as_("stock-source"))
    reservations = b.table("reservations")
    (
        stock.outer_join(reservations, lambda s, r: f"{s}|{r}", Named.as_("stock-vs-reserved"))
        .to_stream()
        .to("stock-positions")
    )
    return b.build()


@topology
def aggregated_table_joined_with_source_table():
    b = StreamsBuilder()
    sales = b.stream("sales")
    targets = b.table("targets")
    totals = sales.group_by(lambda k, v: field(v, 0)).aggregate(
        lambda: "0", lambda k, v, total: str(int(total) + int(field(v, 2)))
    )
    totals.join(targets, lambda total, target: total + "/" + target).to_stream().to("sales-vs-target")
    return b.build()


# ---- Tables --------------------------------------------------------------------------------


@topology
def table_source_materialized():
    b = StreamsBuilder()
    config = b.table("config", Materialized.as_("config-store"))
    (
        config.filter_not(lambda k, v: v is None)
        .map_values(lambda v: v.strip(), Materialized.as_("config-trimmed"))
        .to_stream()
        .to("config-trimmed")
    )
    return b.build()


@topology
def table_filter_materialized():
    b = StreamsBuilder()
    accounts = b.table("accounts")
    (
        accounts.filter(lambda k, v: field(v, 1) != "closed", Materialized.as_("open-accounts"))
        .to_stream()
        .to("open-accounts")
    )
    return b.build()


@topology
def table_group_by_count():
    b = StreamsBuilder()
    users = b.table("users")
    users.group_by(lambda k, v: (field(v, 1), v)).count().to_stream().to("users-by-country")
    return b.build()


@topology
def table_group_by_aggregate():
    b = StreamsBuilder()
    balances = b.table("balances")
    (
        balances.group_by(lambda k, v: (field(v, 1), field(v, 2)), Grouped.as_("balances-by-branch"))
        .aggregate(
            lambda: "0",
            lambda k, v, total: str(int(total) + int(v)),
            lambda k, v, total: str(int(total) - int(v)),
        )
        .to_stream()
        .to("branch-totals")
    )
    return b.build()


@topology
def table_group_by_reduce_named():
    b = StreamsBuilder()
    scores = b.table("scores")
    (
        scores.group_by(lambda k, v: (field(v, 1), field(v, 2)))
        .reduce(
            lambda a, c: str(int(a) + int(c)),
            lambda a, c: str(int(a) - int(c)),
            Named.as_("team-score"),
            Materialized.as_("team-score-store"),
        )
        .to_stream()
        .to("team-scores")
    )
    return b.build()


@topology
def table_regroup_examples():
    # The topology tests/test_equivalence_regroup.py runs on Spark and with Kafka Streams.
    names = {"users": "users", "accounts": "accounts", "out-counts": "users-per-country-out",
             "out-sums": "branch-sums-out", "out-history": "branch-history-out"}
    return regroup_examples(names).build()


@topology
def table_suppress_time_limit():
    b = StreamsBuilder()
    temperatures = b.stream("temperatures")
    (
        temperatures.group_by_key()
        .reduce(lambda a, c: c)
        .suppress(
            Suppressed.until_time_limit(
                timedelta(seconds=15), Suppressed.BufferConfig.max_records(1000)
            ).with_name("rate-limit")
        )
        .to_stream()
        .to("temperatures-rate-limited")
    )
    return b.build()


# ---- Naming and layout -----------------------------------------------------------------


@topology
def named_operators_everywhere():
    b = StreamsBuilder()
    events = b.stream("events", Consumed.as_("events-source"))
    (
        events.filter(lambda k, v: v is not None, Named.as_("drop-nulls"))
        .map_values(lambda v: v.strip(), Named.as_("trim"))
        .select_key(lambda k, v: field(v, 0), Named.as_("key-by-user"))
        .group_by_key(Grouped.as_("events-by-user"))
        .count(Named.as_("count-events"), Materialized.as_("events-per-user"))
        .to_stream(Named.as_("count-changes"))
        .map_values(lambda c: str(c), Named.as_("format-count"))
        .to("events-per-user", Produced.as_("events-per-user-sink"))
    )
    return b.build()


@topology
def two_independent_pipelines():
    b = StreamsBuilder()
    a = b.stream("topic-a")
    c = b.stream("topic-c")
    a.map_values(lambda v: v + "!").to("topic-a-out")
    c.group_by(lambda k, v: v).count()
    bb = b.stream("topic-b")
    bb.filter(lambda k, v: len(v) > 3).to("topic-b-out")
    return b.build()


# ---- Combinations -----------------------------------------------------------------------


@topology
def pattern_source():
    b = StreamsBuilder()
    orders = b.stream(re.compile("orders-.*"))
    orders.map_values(lambda v: v.upper()).to("orders-upper")
    return b.build()


@topology
def foreach_and_print():
    b = StreamsBuilder()
    audit = b.stream("audit")
    audit.foreach(lambda k, v: None)
    audit.filter(lambda k, v: v.startswith("ERROR")).print(Printed.to_sys_out().with_label("audit"))
    audit.peek(lambda k, v: None, Named.as_("log-audit")).foreach(lambda k, v: None, Named.as_("discard"))
    return b.build()


@topology
def merge_and_peek_named():
    b = StreamsBuilder()
    card = b.stream("card-payments")
    bank = b.stream("bank-payments")
    (
        card.merge(bank, Named.as_("all-payments"))
        .peek(lambda k, v: None, Named.as_("audit-payment"))
        .to("payments-all")
    )
    return b.build()


@topology
def branch_of_rekeyed_stream_aggregated():
    b = StreamsBuilder()
    orders = b.stream("orders")
    by_size = (
        orders.select_key(lambda k, v: field(v, 0))
        .split(Named.as_("size-"))
        .branch(lambda k, v: int(field(v, 2)) > 100, Branched.as_("big"))
        .default_branch(Branched.as_("small"))
    )
    by_size["size-big"].group_by_key().count().to_stream().to("big-orders-per-user")
    by_size["size-small"].to("small-orders")
    return b.build()


@topology
def rekeyed_to_table_joined_with_table():
    b = StreamsBuilder()
    users = b.stream("user-updates").select_key(lambda k, v: field(v, 0)).to_table()
    prefs = b.table("user-prefs")
    users.join(prefs, lambda u, p: u + "|" + p).to_stream().to("users-with-prefs")
    return b.build()


@topology
def table_to_stream_rekey_join_stream():
    b = StreamsBuilder()
    accounts = b.table("accounts")
    transactions = b.stream("transactions")
    accounts.to_stream(lambda k, v: field(v, 0)).join(
        transactions, lambda a, t: a + "|" + t,
        JoinWindows.of_time_difference_with_no_grace(timedelta(minutes=1)),
    ).to("account-transactions")
    return b.build()


@topology
def table_table_join_then_group_by():
    b = StreamsBuilder()
    users = b.table("users")
    addresses = b.table("addresses")
    (
        users.join(addresses, lambda u, a: u + "," + a)
        .group_by(lambda k, v: (field(v, 1), v))
        .count()
        .to_stream()
        .to("addressed-users-per-country")
    )
    return b.build()


@topology
def chained_table_table_joins():
    b = StreamsBuilder()
    orders = b.table("order-rows")
    customers = b.table("customer-rows")
    regions = b.table("region-rows")
    (
        orders.join(customers, lambda o, c: o + "|" + c)
        .left_join(regions, lambda oc, r: oc + "|" + str(r))
        .outer_join(b.table("discount-rows"), lambda ocr, d: str(ocr) + "|" + str(d), Materialized.as_("enriched"))
        .to_stream()
        .to("enriched-orders")
    )
    return b.build()


@topology
def stream_joined_with_a_table_join_then_regrouped():
    b = StreamsBuilder()
    users = b.table("user-rows")
    homes = b.table("home-rows", Materialized.as_("homes"))
    joined = users.left_join(homes, lambda u, h: u + "@" + str(h)).filter(lambda k, v: not v.endswith("@None"))
    b.stream("visits").join(joined, lambda visit, user: visit + ":" + user).to("visits-by-user")
    joined.group_by(lambda k, v: (field(v, 1), v)).count().to_stream().to("users-per-home")
    return b.build()


@topology
def session_window_count_suppressed():
    b = StreamsBuilder()
    clicks = b.stream("clicks")
    (
        clicks.group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(minutes=10), timedelta(minutes=1)))
        .count(Named.as_("session-count"), Materialized.as_("session-counts"))
        .suppress(
            Suppressed.until_window_closes(Suppressed.BufferConfig.unbounded()).with_name("final-sessions")
        )
        .to_stream()
        .to("final-sessions")
    )
    return b.build()


@topology
def sliding_window_count_named():
    b = StreamsBuilder()
    trades = b.stream("trades")
    (
        trades.group_by(lambda k, v: field(v, 0), Grouped.as_("trades-by-symbol"))
        .windowed_by(SlidingWindows.of_time_difference_with_no_grace(timedelta(minutes=1)))
        .count(Named.as_("trades-per-minute"), Materialized.as_("trades-per-minute-store"))
        .to_stream()
        .map(lambda wk, c: (wk.key, str(c)))
        .to("trades-per-minute")
    )
    return b.build()


@topology
def session_window_reduce():
    b = StreamsBuilder()
    chats = b.stream("chats")
    (
        chats.group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(minutes=2)))
        .reduce(lambda a, c: a + c)
        .to_stream()
        .to("chat-sessions")
    )
    return b.build()


@topology
def chained_windowed_aggregations():
    b = StreamsBuilder()
    views = b.stream("page-views")
    (
        views.group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(minutes=1)))
        .count()
        .to_stream()
        .map(lambda wk, c: (str(c), wk.key))
        .group_by_key()
        .count()
        .to_stream()
        .to("views-per-minute-histogram")
    )
    return b.build()


@topology
def stream_stream_self_join():
    b = StreamsBuilder()
    ticks = b.stream("ticks")
    ticks.join(
        ticks, lambda a, c: a + "|" + c, JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=1))
    ).to("tick-pairs")
    return b.build()


@topology
def stream_stream_join_chain():
    b = StreamsBuilder()
    orders = b.stream("orders")
    payments = b.stream("payments")
    shipments = b.stream("shipments")
    orders.join(
        payments, lambda o, p: o + "|" + p, JoinWindows.of_time_difference_with_no_grace(timedelta(minutes=5))
    ).left_join(
        shipments, lambda op, s: f"{op}|{s}",
        JoinWindows.of_time_difference_and_grace(timedelta(minutes=10), timedelta(minutes=1)),
    ).to("shipped-orders")
    return b.build()


@topology
def stream_joined_with_two_streams():
    b = StreamsBuilder()
    orders = b.stream("orders")
    orders.join(
        b.stream("payments"), lambda o, p: o + "|" + p, JoinWindows.of_time_difference_with_no_grace(timedelta(minutes=5))
    ).to("paid-orders")
    orders.outer_join(
        b.stream("shipments"), lambda o, s: f"{o}|{s}",
        JoinWindows.of_time_difference_and_grace(timedelta(minutes=10), timedelta(minutes=1)),
    ).to("orders-and-shipments")
    return b.build()


@topology
def both_sides_repartitioned_with_partition_counts():
    b = StreamsBuilder()
    left = b.stream("left-events")
    right = b.stream("right-events")
    left.repartition(Repartitioned.number_of_partitions(3)).join(
        right.repartition(Repartitioned.as_("right-by-key").with_number_of_partitions(3)),
        lambda l, r: f"{l}|{r}",
        JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=5)),
    ).to("joined-events")
    return b.build()


@topology
def table_filter_join_uses_value_getters():
    b = StreamsBuilder()
    products = b.table("products")
    prices = b.table("prices")
    (
        products.filter(lambda k, v: v != "")
        .join(prices.map_values(lambda v: v.strip()), lambda p, price: p + "@" + price)
        .to_stream()
        .to("products-with-price")
    )
    return b.build()


@topology
def table_left_join_then_suppress():
    b = StreamsBuilder()
    accounts = b.table("accounts")
    limits = b.table("limits")
    (
        accounts.left_join(limits, lambda a, l: f"{a}|{l}", Named.as_("with-limits"))
        .suppress(
            Suppressed.until_time_limit(
                timedelta(seconds=1), Suppressed.BufferConfig.max_bytes(1_000_000).emit_early_when_full()
            )
        )
        .to_stream()
        .to("accounts-with-limits-debounced")
    )
    return b.build()


@topology
def windowed_table_filter_named():
    b = StreamsBuilder()
    requests = b.stream("requests")
    (
        requests.group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(minutes=5)))
        .count()
        .filter(lambda wk, c: c > 10, Named.as_("hot-windows"))
        .to_stream(Named.as_("hot-window-changes"))
        .to("hot-windows")
    )
    return b.build()


@topology
def more_than_ten_subtopologies():
    # Sub-topology ids 10 and up: ordered as numbers, not as strings.
    b = StreamsBuilder()
    for i in range(6):
        b.stream(f"in-{i}").group_by(lambda k, v: v).count().to_stream().to(f"counts-{i}")
    return b.build()


@topology
def windowed_emit_on_window_close():
    b = StreamsBuilder()
    clicks = b.stream("clicks")
    (
        clicks.group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(minutes=1), timedelta(seconds=10)))
        .emit_strategy(EmitStrategy.on_window_close())
        .count(Materialized.as_("final-click-counts"))
        .to_stream()
        .to("final-click-counts")
    )
    return b.build()


@topology
def sliding_and_session_emit_on_window_close():
    b = StreamsBuilder()
    grouped = b.stream("visits").group_by_key()
    (
        grouped.windowed_by(SlidingWindows.of_time_difference_with_no_grace(timedelta(seconds=30)))
        .emit_strategy(EmitStrategy.on_window_close())
        .reduce(lambda a, v: a + v)
        .to_stream()
        .to("sliding-visits")
    )
    (
        grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(minutes=5)))
        .emit_strategy(EmitStrategy.on_window_close())
        .count()
        .to_stream()
        .to("visit-sessions")
    )
    return b.build()


@topology
def suppress_and_emit_on_close_examples():
    # The topology tests/test_equivalence_suppress.py runs on Spark and with Kafka Streams.
    names = {"events": "events", "prices": "prices", "out-final": "final-counts", "out-closed": "closed-hopping-out",
             "out-sessions": "final-sessions-out", "out-limited": "limited-prices", "out-debounced": "debounced-prices",
             "slides": "slides", "out-closed-sliding": "closed-sliding-out",
             "out-closed-sessions": "closed-sessions-out", "out-bytes": "bytes-limited-prices",
             "out-both-bounds": "both-bounds-prices", "out-raised": "raised-prices",
             "out-final-filtered": "final-filtered-counts", "out-windowed-bytes": "windowed-bytes-counts",
             "out-sessions-filtered": "sessions-filtered-out", "out-session-bytes": "session-bytes-out",
             "out-sliding-filtered": "sliding-filtered-out", "out-sliding-bytes": "sliding-bytes-out",
             "out-held": "held-prices", "out-closed-written": "closed-written-out", "out-closed-reads": "closed-reads",
             "out-closed-sessions-written": "closed-sessions-written-out",
             "out-closed-session-reads": "closed-session-reads",
             "out-closed-sliding-written": "closed-sliding-written-out",
             "out-closed-sliding-reads": "closed-sliding-reads"}
    return suppress_examples(names).build()


@topology
def foreign_key_join_examples():
    # The topology tests/test_equivalence_fk_join.py runs on Spark and with Kafka Streams.
    names = {"accounts": "accounts", "users": "users", "out-inner": "accounts-inner-out",
             "out-left": "accounts-left-out"}
    return fk_join_examples(names).build()


@topology
def foreign_key_join_result_read_downstream():
    b = StreamsBuilder()
    orders = b.table("orders")
    products = b.stream("products").to_table()
    priced = orders.join(products, lambda order: order.split(",")[0], lambda order, product: order + "|" + product,
                         Materialized.with_(Serdes.String(), Serdes.String()))
    priced.map_values(lambda value: value.upper()) \
        .join(b.table("discounts"), lambda line, discount: line + "-" + discount) \
        .to_stream().to("priced-orders")
    return b.build()


def processor_api_examples_topology():
    # The topology tests/test_equivalence_processor_api.py runs on Spark and with Kafka Streams.
    return processor_api_examples({"events": "events", "out": "out"}).build()


CATALOG["processor_api_examples"] = processor_api_examples_topology


class _Nothing(Processor):
    def process(self, record):
        pass


class _NothingFixedKey(FixedKeyProcessor):
    def process(self, record):
        pass


@topology
def processor_api_named_then_count():
    b = StreamsBuilder()
    b.add_state_store(Stores.key_value_store_builder(
        Stores.in_memory_key_value_store("last-seen"), Serdes.String(), Serdes.String()))
    processed = b.stream("orders").process(_Nothing, Named.as_("dedup"), "last-seen")
    processed.process_values(_NothingFixedKey, "last-seen").to("audited")
    processed.group_by_key().count().to_stream().to("order-counts", Produced.with_(Serdes.String(), Serdes.Long()))
    return b.build()


def processor_api_low_level_examples_topology():
    # The low-level twin tests/test_equivalence_processor_api.py also runs on Spark.
    return processor_api_low_level({"events": "events", "out": "out"})


CATALOG["processor_api_low_level_examples"] = processor_api_low_level_examples_topology


@topology
def processor_api_low_level_wiring():
    strings = Serdes.String()
    t = Topology()
    t.add_source("orders-source", "orders")
    t.add_source("payments-source", "payments", "refunds")
    t.add_processor("match", _Nothing, "orders-source", "payments-source")
    t.add_processor("audit", _Nothing, "match")
    t.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("pending"), strings, strings),
                      "match")
    t.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("audit-log"), strings, strings))
    t.connect_processor_and_state_stores("audit", "audit-log", "pending")
    t.add_sink("matched-sink", "matched", "match")
    t.add_sink("audit-sink", "audited", "audit", "match")
    t.add_source("other-source", "other")
    t.add_processor("lonely", _Nothing, "other-source")
    t.add_sink("lonely-sink", "lonely-out", "lonely")
    return t


class _WithStores(ProcessorSupplier):
    def get(self):
        return _Nothing()

    def stores(self):
        return [Stores.key_value_store_builder(Stores.persistent_key_value_store("own-store"),
                                               Serdes.String(), Serdes.String())]


@topology
def processor_api_supplier_with_stores():
    b = StreamsBuilder()
    b.add_state_store(Stores.key_value_store_builder(
        Stores.in_memory_key_value_store("shared"), Serdes.String(), Serdes.String()))
    b.stream("events").process(_WithStores(), "shared").to("processed")
    return b.build()


@topology
def click_regions_example():
    # assets/click_regions.py as the demo runs it: a foreign-key join, then a global table.
    return click_regions.build_topology()


@topology
def global_table_join():
    b = StreamsBuilder()
    profiles = b.global_table("profiles")
    b.stream("clicks").join(profiles, lambda k, v: field(v, 0), lambda click, profile: click + "," + profile) \
        .to("enriched")
    return b.build()


@topology
def processor_api_low_level_supplier_with_stores():
    return Topology().add_source("src", "more-events").add_processor("own", _WithStores(), "src") \
        .add_sink("sink", "more-processed", "own")


@topology
def global_table_examples():
    # The topology tests/test_equivalence_global.py runs on Spark and with Kafka Streams.
    names = {"profiles": "profiles", "clicks": "clicks", "pings": "pings", "out-inner": "enriched-clicks",
             "out-left": "left-enriched-clicks", "out-windowed": "windowed-clicks", "out-wallclock": "pings-per-hour"}
    return global_examples(names).build()


@topology
def global_tables_left_join_named_then_count():
    # The stream comes first (sub-topology 0), a global store between, a repartition after the
    # key change (the global join keeps the flag), a second global table read by key and value.
    b = StreamsBuilder()
    clicks = b.stream("clicks").select_key(lambda k, v: field(v, 1))
    countries = b.global_table("countries", Consumed.as_("countries-in"), Materialized.as_("countries-store"))
    enriched = clicks.left_join(countries, lambda k, v: k, lambda k, click, country: k + "," + click + "," + str(country),
                                Named.as_("with-country"))
    users = b.global_table("users")
    enriched.join(users, lambda k, v: field(v, 0), lambda click, user: click + "," + user) \
        .group_by_key().count().to_stream().to("clicks-per-country")
    return b.build()


@topology
def wallclock_timestamps_then_windowed_count():
    # describe() does not show a timestamp extractor (Kafka Streams' does not either).
    b = StreamsBuilder()
    b.stream("events", Consumed.with_timestamp_extractor(WallclockTimestampExtractor())) \
        .group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(minutes=1))).count() \
        .to_stream().to("events-per-minute")
    return b.build()


# ---- cogroup (tests/test_equivalence_cogroup.py runs the last one) --------------------------


@topology
def cogroup_two_streams():
    b = StreamsBuilder()
    clicks = b.stream("clicks").group_by_key()
    views = b.stream("views").group_by_key()
    (
        clicks.cogroup(lambda k, v, agg: agg + "c")
        .cogroup(views, lambda k, v, agg: agg + "v")
        .aggregate(lambda: "")
        .to_stream()
        .to("activity")
    )
    return b.build()


@topology
def cogroup_three_with_repartitions_named():
    b = StreamsBuilder()
    clicks = b.stream("clicks").group_by_key()
    views = b.stream("views").group_by(lambda k, v: field(v, 0))
    orders = b.stream("orders").group_by(lambda k, v: field(v, 0), Grouped.as_("orders-by-user"))
    (
        clicks.cogroup(lambda k, v, agg: agg + "c")
        .cogroup(views, lambda k, v, agg: agg + "v")
        .cogroup(orders, lambda k, v, agg: agg + "o")
        .aggregate(lambda: "", Named.as_("activity"), Materialized.as_("activity-store"))
        .to_stream(Named.as_("activity-changes"))
        .to("activity")
    )
    return b.build()


@topology
def cogroup_windowed_twice_shares_its_repartition():
    # One cogrouped stream aggregated twice: the repartition node of the first aggregation is reused
    # (the second still draws the names of its own).
    b = StreamsBuilder()
    clicks = b.stream("clicks").group_by_key()
    views = b.stream("views").group_by(lambda k, v: field(v, 0))
    cogrouped = clicks.cogroup(lambda k, v, agg: agg + "c").cogroup(views, lambda k, v, agg: agg + "v")
    (
        cogrouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(minutes=1), timedelta(seconds=10)))
        .aggregate(lambda: "")
        .to_stream()
        .to("per-minute")
    )
    (
        cogrouped.windowed_by(SlidingWindows.of_time_difference_with_no_grace(timedelta(seconds=30)))
        .aggregate(lambda: "", Named.as_("sliding"), Materialized.as_("sliding-store"))
        .to_stream()
        .to("sliding")
    )
    return b.build()


@topology
def cogroup_session_windowed():
    b = StreamsBuilder()
    clicks = b.stream("clicks").group_by_key()
    views = b.stream("views").group_by_key()
    (
        clicks.cogroup(lambda k, v, agg: agg + "c")
        .cogroup(views, lambda k, v, agg: agg + "v")
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(minutes=5), timedelta(seconds=30)))
        .aggregate(lambda: "", lambda k, a, b: a + b, Named.as_("visits"))
        .to_stream()
        .to("visits")
    )
    return b.build()


@topology
def cogroup_examples_of_the_equivalence_test():
    names = {"clicks": "clicks", "views": "views", "orders": "orders", "refunds": "refunds", "visits": "visits",
             "calls": "calls", "texts": "texts",
             "out-plain": "activity-out", "out-windowed": "activity-windows-out", "out-final": "final-windows-out",
             "out-sliding": "sliding-out", "out-sessions": "sessions-out",
             "out-final-filtered": "final-filtered-windows-out", "out-session-bytes": "session-bytes-out",
             "out-store-windows": "store-windows-out", "out-store-sessions": "store-sessions-out",
             "out-merged-counts": "merged-counts-out", "out-merged-windowed": "merged-windows-out"}
    return cogroup_examples(names).build()


@topology
def filtered_window_examples_of_the_equivalence_test():
    names = {"events": "events", "clicks": "clicks", "slides": "slides", "out-filtered": "filtered-out",
             "out-sessions": "sessions-out", "out-sliding": "sliding-out", "out-branch": "branch-out",
             "out-direct": "direct-count-out", "out-merged": "merged-out", "out-mixed-sliding": "mixed-sliding-out",
             "out-mixed-tumbling": "mixed-tumbling-out"}
    return filtered_window_examples(names, with_columns=False).build()  # Columns need Spark: the equivalence test's


@topology
def global_stream_join_examples_of_the_equivalence_test():
    names = {"profiles": "profiles", "orders": "orders", "payments": "payments", "out-left-outer": "left-outer-out",
             "out-inner": "inner-out"}
    return global_stream_join_examples(names).build()


@topology
def versioned_examples_of_the_equivalence_test():
    names = {"prices": "prices", "rates": "rates", "orders": "orders", "out-changes": "changes-out",
             "out-inner": "inner-out", "out-left": "left-out", "out-grace": "grace-out"}
    return versioned_examples(names).build()
