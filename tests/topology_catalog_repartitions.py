"""The catalog's key-changing operations and the repartition topics they bring, and its
aggregations of streams without windows.

Entries of tests/topology_catalog.py; their Java twins, under the same names, are in
tests/oracle/src/main/java/kstreams/oracle/RepartitionCatalog.java. Keep the two in step.
"""

from __future__ import annotations

from dagster_kstreams import Branched, Grouped, Materialized, Named, Repartitioned, StreamsBuilder

from topology_catalog_entries import CatalogEntries, field

ENTRIES = CatalogEntries()
topology = ENTRIES.add


# ---- Repartitioning ----------------------------------------------------------------------


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


# ---- Aggregations ------------------------------------------------------------------------


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
