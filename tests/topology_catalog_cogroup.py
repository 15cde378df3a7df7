"""The catalog's cogroup topologies, plain and windowed.

Entries of tests/topology_catalog.py; their Java twins, under the same names, are in
tests/oracle/src/main/java/kstreams/oracle/CogroupCatalog.java. Keep the two in step.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams import Grouped, Materialized, Named, SessionWindows, SlidingWindows, StreamsBuilder, TimeWindows

from cogroup_topology import cogroup_examples
from topology_catalog_entries import CatalogEntries, field

ENTRIES = CatalogEntries()
topology = ENTRIES.add


# ---- cogroup (tests/test_equivalence_cogroup.py runs the last one) -----------------------


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


# ---- Kafka Streams' own (CogroupedKStreamImplTest): a re-keyed grouped stream reused -----------------


@topology
def cogroup_rekeyed_grouped_reused_in_two_cogroups_of_the_same_streams():
    b = StreamsBuilder()
    one = b.stream("one").map(lambda k, v: (v, k)).group_by_key()
    two = b.stream("two").group_by_key()
    first = one.cogroup(lambda k, v, agg: agg + v).cogroup(two, lambda k, v, agg: agg + v).aggregate(lambda: "")
    second = one.cogroup(lambda k, v, agg: agg + v).cogroup(two, lambda k, v, agg: agg + v).aggregate(lambda: "")
    second.to_stream().to("output")
    first.to_stream().to("output-2")
    return b.build()


@topology
def cogroup_rekeyed_grouped_reused_in_different_cogroups():
    b = StreamsBuilder()
    one = b.stream("one").map(lambda k, v: (v, k)).group_by_key()
    two = b.stream("two").group_by_key()
    three = b.stream("three").group_by_key()
    one.cogroup(lambda k, v, agg: agg + v).cogroup(three, lambda k, v, agg: agg + v).aggregate(lambda: "")
    one.cogroup(lambda k, v, agg: agg + v).cogroup(two, lambda k, v, agg: agg + v).aggregate(lambda: "")
    return b.build()


@topology
def cogroup_rekeyed_grouped_reused_by_an_aggregate():
    b = StreamsBuilder()
    one = b.stream("one").map(lambda k, v: (v, k)).group_by_key()
    two = b.stream("two").group_by_key()
    one.cogroup(lambda k, v, agg: agg + v).cogroup(two, lambda k, v, agg: agg + v).aggregate(lambda: "")
    one.aggregate(lambda: "", lambda k, v, agg: agg + v)
    return b.build()


@topology
def cogroup_aggregated_twice_with_a_named_grouping():
    b = StreamsBuilder()
    one = b.stream("one").map(lambda k, v: (v, k)).group_by_key(Grouped.as_("foo")).cogroup(lambda k, v, agg: agg + v)
    one.aggregate(lambda: "")
    one.aggregate(lambda: "")
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
