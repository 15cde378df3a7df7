"""The catalog's table operations and re-grouping, table-table and foreign-key joins, versioned
tables.

Entries of tests/topology_catalog.py; their Java twins, under the same names, are in
tests/oracle/src/main/java/kstreams/oracle/TableCatalog.java. Keep the two in step.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams import Consumed, Grouped, Materialized, Named, StreamsBuilder, Suppressed, Serdes

from fk_join_topology import fk_join_examples
from regroup_topology import regroup_examples
from topology_catalog_entries import CatalogEntries, field
from versioned_topology import versioned_examples

ENTRIES = CatalogEntries()
topology = ENTRIES.add


# ---- Tables ------------------------------------------------------------------------------


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


# ---- Table-table joins -------------------------------------------------------------------


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


@topology
def rekeyed_to_table_joined_with_table():
    b = StreamsBuilder()
    users = b.stream("user-updates").select_key(lambda k, v: field(v, 0)).to_table()
    prefs = b.table("user-prefs")
    users.join(prefs, lambda u, p: u + "|" + p).to_stream().to("users-with-prefs")
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


# ---- Foreign-key joins and versioned tables ----------------------------------------------


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


@topology
def versioned_examples_of_the_equivalence_test():
    names = {"prices": "prices", "rates": "rates", "orders": "orders", "out-changes": "changes-out",
             "out-inner": "inner-out", "out-left": "left-out", "out-grace": "grace-out"}
    return versioned_examples(names).build()
