"""The catalog's stream-stream joins, stream-table joins and joins with global tables.

Entries of tests/topology_catalog.py; their Java twins, under the same names, are in
tests/oracle/src/main/java/kstreams/oracle/StreamJoinCatalog.java. Keep the two in step.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams import (
    Consumed,
    Joined,
    JoinWindows,
    Materialized,
    Named,
    Repartitioned,
    StreamJoined,
    StreamsBuilder,
    TimeWindows,
)

from assets import click_regions
from global_stream_join_topology import global_stream_join_examples
from global_topology import global_examples
from topology_catalog_entries import CatalogEntries, field

ENTRIES = CatalogEntries()
topology = ENTRIES.add


# ---- Stream-stream joins -----------------------------------------------------------------


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
def stream_stream_self_join():
    b = StreamsBuilder()
    ticks = b.stream("ticks")
    ticks.join(
        ticks, lambda a, c: a + "|" + c, JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=1))
    ).to("tick-pairs")
    return b.build()


@topology
def stream_stream_joins_old_join_windows():
    # JoinWindows.of (deprecated, still in 4.3.1): no spurious-result fix, so no outer-join store
    b = StreamsBuilder()
    clicks = b.stream("clicks")
    views = b.stream("views")
    clicks.left_join(views, lambda c, v: f"{c}|{v}", JoinWindows.of(timedelta(seconds=5))).to("left-old")
    clicks.outer_join(views, lambda c, v: f"{c}|{v}",
                      JoinWindows.of(timedelta(seconds=5)).grace(timedelta(seconds=1)).after(timedelta(0))) \
        .to("outer-old")
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
def table_to_stream_rekey_join_stream():
    b = StreamsBuilder()
    accounts = b.table("accounts")
    transactions = b.stream("transactions")
    accounts.to_stream(lambda k, v: field(v, 0)).join(
        transactions, lambda a, t: a + "|" + t,
        JoinWindows.of_time_difference_with_no_grace(timedelta(minutes=1)),
    ).to("account-transactions")
    return b.build()


# ---- Stream-table joins ------------------------------------------------------------------


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


# ---- Global tables -----------------------------------------------------------------------


@topology
def global_table_join():
    b = StreamsBuilder()
    profiles = b.global_table("profiles")
    b.stream("clicks").join(profiles, lambda k, v: field(v, 0), lambda click, profile: click + "," + profile) \
        .to("enriched")
    return b.build()


@topology
def click_regions_example():
    # assets/click_regions.py as the demo runs it: a foreign-key join, then a global table.
    return click_regions.build_topology()


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
def global_stream_join_examples_of_the_equivalence_test():
    names = {"profiles": "profiles", "orders": "orders", "payments": "payments", "out-left-outer": "left-outer-out",
             "out-inner": "inner-out"}
    return global_stream_join_examples(names).build()
