"""The catalog's stores given by their suppliers (``Materialized.as_(Stores...)``,
``StreamJoined.with_this_store_supplier``/``with_other_store_supplier``) and the DSL's default store
kind (``StreamsBuilder(TopologyConfig({"default.dsl.store": "in_memory"}))``): the supplier names the
store, the kind changes no name.

Entries of tests/topology_catalog.py; their Java twins, under the same names, are in
tests/oracle/src/main/java/kstreams/oracle/StoreSupplierCatalog.java. Keep the two in step.
``REFUSED``: topologies both sides refuse to build (Kafka Streams' twins in the same class, outside
the catalog: ``StoreSupplierCatalog.refused()``).
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams import (
    JoinWindows,
    Materialized,
    SessionWindows,
    SlidingWindows,
    Stores,
    StreamJoined,
    StreamsBuilder,
    StreamsConfig,
    TimeWindows,
    TopologyConfig,
)

from topology_catalog_entries import CatalogEntries

ENTRIES = CatalogEntries()
topology = ENTRIES.add
REFUSED = CatalogEntries()
refused = REFUSED.add

_SECOND = timedelta(seconds=1)
_JOIN_WINDOWS = JoinWindows.of_time_difference_and_grace(2 * _SECOND, 3 * _SECOND)  # size 4 s, retention 7 s


def _joiner(left, right):
    return f"{left}+{right}"


# ---- Aggregations' and tables' stores by supplier ----------------------------------------


@topology
def windowed_count_in_memory_window_store():
    b = StreamsBuilder()
    (b.stream("clicks").group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(10 * _SECOND, 5 * _SECOND))
     .count(Materialized.as_(Stores.in_memory_window_store("click-counts", 60 * _SECOND, 10 * _SECOND, False)))
     .to_stream().map(lambda wk, v: (wk.key, str(v))).to("click-counts-out"))
    return b.build()


@topology
def sliding_and_session_persistent_suppliers():
    b = StreamsBuilder()
    grouped = b.stream("clicks").group_by_key()
    (grouped.windowed_by(SlidingWindows.of_time_difference_and_grace(5 * _SECOND, 2 * _SECOND))
     .reduce(lambda a, v: a + v,
             Materialized.as_(Stores.persistent_window_store("sliding-sums", 20 * _SECOND, 5 * _SECOND, False)))
     .to_stream().map(lambda wk, v: (wk.key, v)).to("sliding-out"))
    (grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(3 * _SECOND, 1 * _SECOND))
     .count(Materialized.as_(Stores.in_memory_session_store("session-counts", 10 * _SECOND)))
     .to_stream().map(lambda wk, v: (wk.key, str(v))).to("sessions-out"))
    return b.build()


@topology
def windowed_count_supplier_retention_below_window_and_grace():
    # Kafka Streams checks the Materialized retention only, not the supplier's (WindowStoreMaterializer)
    b = StreamsBuilder()
    (b.stream("clicks").group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(10 * _SECOND, 5 * _SECOND))
     .count(Materialized.as_(Stores.persistent_window_store("short-counts", 12 * _SECOND, 10 * _SECOND, False)))
     .to_stream().map(lambda wk, v: (wk.key, str(v))).to("short-out"))
    return b.build()


@topology
def tables_and_counts_in_key_value_suppliers():
    b = StreamsBuilder()
    prices = b.table("prices", Materialized.as_(Stores.in_memory_key_value_store("prices-store")))
    (prices.filter(lambda k, v: v != "0", Materialized.as_(Stores.persistent_key_value_store("priced")))
     .group_by(lambda k, v: (v, k)).count(Materialized.as_(Stores.in_memory_key_value_store("per-price")))
     .to_stream().map(lambda k, v: (k, str(v))).to("per-price-out"))
    b.stream("orders").group_by_key().count(
        Materialized.as_(Stores.persistent_timestamped_key_value_store("order-counts"))).to_stream().to("orders-out")
    return b.build()


@topology
def windowed_cogroup_in_memory_window_store():
    b = StreamsBuilder()
    clicks = b.stream("clicks").group_by_key()
    views = b.stream("views").group_by_key()
    (clicks.cogroup(lambda k, v, agg: agg + v).cogroup(views, lambda k, v, agg: agg + v)
     .windowed_by(TimeWindows.of_size_with_no_grace(10 * _SECOND))
     .aggregate(lambda: "", Materialized.as_(Stores.in_memory_window_store("cogrouped", 10 * _SECOND,
                                                                            10 * _SECOND, False)))
     .to_stream().map(lambda wk, v: (wk.key, v)).to("cogrouped-out"))
    return b.build()


# ---- Stream-stream joins' stores by supplier ---------------------------------------------


@topology
def stream_join_with_both_store_suppliers():
    b = StreamsBuilder()
    b.stream("orders").join(
        b.stream("payments"), _joiner, _JOIN_WINDOWS,
        StreamJoined.with_(Stores.in_memory_window_store("orders-window", 7 * _SECOND, 4 * _SECOND, True),
                           Stores.persistent_window_store("payments-window", 7 * _SECOND, 4 * _SECOND, True)),
    ).to("paid-orders")
    return b.build()


@topology
def outer_join_with_this_store_supplier():
    b = StreamsBuilder()
    b.stream("orders").outer_join(
        b.stream("payments"), _joiner, _JOIN_WINDOWS,
        StreamJoined.as_("order-payment").with_this_store_supplier(
            Stores.in_memory_window_store("orders-side", 7 * _SECOND, 4 * _SECOND, True)),
    ).to("orders-or-payments")
    return b.build()


@topology
def left_join_with_other_store_supplier():
    b = StreamsBuilder()
    b.stream("orders").left_join(
        b.stream("payments"), _joiner, _JOIN_WINDOWS,
        StreamJoined.as_("order-payment").with_other_store_supplier(
            Stores.persistent_window_store("payments-side", 7 * _SECOND, 4 * _SECOND, True)),
    ).to("orders-maybe-paid")
    return b.build()


# ---- The DSL's default store kind ---------------------------------------------------------


@topology
def default_dsl_store_in_memory():
    b = StreamsBuilder(TopologyConfig({StreamsConfig.DEFAULT_DSL_STORE_CONFIG: StreamsConfig.IN_MEMORY}))
    orders = b.stream("orders")
    orders.left_join(b.stream("payments"), _joiner, _JOIN_WINDOWS).to("orders-maybe-paid")
    (orders.group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10 * _SECOND)).count()
     .to_stream().map(lambda wk, v: (wk.key, str(v))).to("order-counts"))
    return b.build()


# ---- Refused by both ---------------------------------------------------------------------


@refused
def refused_join_supplier_without_duplicates():
    b = StreamsBuilder()
    b.stream("orders").join(b.stream("payments"), _joiner, _JOIN_WINDOWS, StreamJoined.with_(
        Stores.in_memory_window_store("orders-window", 7 * _SECOND, 4 * _SECOND, False),
        Stores.in_memory_window_store("payments-window", 7 * _SECOND, 4 * _SECOND, True))).to("out")
    return b.build()


@refused
def refused_join_supplier_retention_mismatch():
    b = StreamsBuilder()
    b.stream("orders").join(b.stream("payments"), _joiner, _JOIN_WINDOWS, StreamJoined.with_(
        Stores.in_memory_window_store("orders-window", 7 * _SECOND, 4 * _SECOND, True),
        Stores.in_memory_window_store("payments-window", 8 * _SECOND, 4 * _SECOND, True))).to("out")
    return b.build()


@refused
def refused_join_supplier_window_size_mismatch():
    b = StreamsBuilder()
    b.stream("orders").join(b.stream("payments"), _joiner, _JOIN_WINDOWS, StreamJoined.with_(
        Stores.in_memory_window_store("orders-window", 7 * _SECOND, 2 * _SECOND, True),
        Stores.in_memory_window_store("payments-window", 7 * _SECOND, 4 * _SECOND, True))).to("out")
    return b.build()


@refused
def refused_join_suppliers_of_one_name():
    b = StreamsBuilder()
    b.stream("orders").join(b.stream("payments"), _joiner, _JOIN_WINDOWS, StreamJoined.with_(
        Stores.in_memory_window_store("window", 7 * _SECOND, 4 * _SECOND, True),
        Stores.persistent_window_store("window", 7 * _SECOND, 4 * _SECOND, True))).to("out")
    return b.build()


@refused
def refused_window_retention_below_window_and_grace():
    b = StreamsBuilder()
    (b.stream("clicks").group_by_key().windowed_by(TimeWindows.of_size_and_grace(10 * _SECOND, 5 * _SECOND))
     .count(Materialized.as_(Stores.in_memory_window_store("counts", 60 * _SECOND, 10 * _SECOND, False))
            .with_retention(14 * _SECOND)))
    return b.build()


@refused
def refused_sliding_retention_below_twice_difference_and_grace():
    b = StreamsBuilder()
    (b.stream("clicks").group_by_key().windowed_by(SlidingWindows.of_time_difference_and_grace(5 * _SECOND, _SECOND))
     .count(Materialized.as_("counts").with_retention(10 * _SECOND)))
    return b.build()


@refused
def refused_session_retention_below_gap_and_grace():
    b = StreamsBuilder()
    (b.stream("clicks").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(3 * _SECOND, _SECOND))
     .count(Materialized.as_(Stores.persistent_session_store("sessions", 60 * _SECOND)).with_retention(3 * _SECOND)))
    return b.build()
