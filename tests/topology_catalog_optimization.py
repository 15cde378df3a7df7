"""The catalog's topologies built with ``topology.optimization``: the repartition topics merged per
key-changing operation, and the cases Kafka Streams leaves alone.

Entries of tests/topology_catalog.py; their Java twins, under the same names, are in
tests/oracle/src/main/java/kstreams/oracle/OptimizationCatalog.java (built with the same props).
Keep the two in step.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams import (
    Grouped,
    JoinWindows,
    Materialized,
    Repartitioned,
    StreamsBuilder,
    StreamsConfig,
    TimeWindows,
)

from repartition_merge_topology import INPUTS, OUTPUTS, repartition_optimizing_test
from topology_catalog_entries import CatalogEntries, field

ENTRIES = CatalogEntries()
topology = ENTRIES.add

ALL = {StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: StreamsConfig.OPTIMIZE}
MERGE_ONLY = {StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: StreamsConfig.MERGE_REPARTITION_TOPICS}


@topology
def optimized_repartition_optimizing_test():
    return repartition_optimizing_test({name: name for name in (*INPUTS, *OUTPUTS)})


@topology
def optimized_two_aggregations_of_one_rekeyed_stream():
    b = StreamsBuilder()
    by_user = b.stream("orders").select_key(lambda k, v: field(v, 0))
    by_user.group_by_key().count().to_stream().to("orders-per-user")
    by_user.group_by_key().reduce(lambda a, c: c).to_stream().to("last-order-per-user")
    return b.build(ALL)


@topology
def optimized_single_grouping_gets_renamed_nodes():
    b = StreamsBuilder()
    b.stream("rows").select_key(lambda k, v: field(v, 0)).group_by_key().count().to_stream().to("counts")
    return b.build(MERGE_ONLY)


@topology
def optimized_groupeds_with_different_names():
    b = StreamsBuilder()
    by_country = b.stream("users").map(lambda k, v: (field(v, 1), v))
    by_country.group_by_key(Grouped.as_("first-name")).count().to_stream().to("users-per-country")
    by_country.group_by_key(Grouped.as_("second-name")).reduce(lambda a, c: c).to_stream().to("last-user")
    return b.build(ALL)


@topology
def optimized_rekeyed_stream_joined_with_table_and_aggregated():
    b = StreamsBuilder()
    users = b.table("users")
    by_user = b.stream("clicks").select_key(lambda k, v: field(v, 0))
    by_user.join(users, lambda c, u: c + "|" + u).to("clicks-with-user")
    by_user.left_join(users, lambda c, u: f"{c}|{u}").to("clicks-maybe-with-user")
    by_user.group_by_key().count().to_stream().to("clicks-per-user")
    return b.build(ALL)


@topology
def optimized_group_by_counted_and_reduced():
    b = StreamsBuilder()
    grouped = b.stream("users").group_by(lambda k, v: field(v, 1))
    grouped.count().to_stream().to("users-per-country")
    grouped.reduce(lambda a, c: c).to_stream().to("last-user-per-country")
    return b.build(ALL)


@topology
def optimized_named_grouped_reused():
    b = StreamsBuilder()
    grouped = b.stream("users").select_key(lambda k, v: field(v, 1)).group_by_key(Grouped.as_("by-country"))
    grouped.count().to_stream().to("users-per-country")
    grouped.reduce(lambda a, c: c).to_stream().to("last-user-per-country")
    return b.build(ALL)


@topology
def optimized_value_change_keeps_its_own_topic():
    b = StreamsBuilder()
    by_user = b.stream("orders").select_key(lambda k, v: field(v, 0))
    by_user.map_values(lambda v: field(v, 2)).group_by_key().reduce(lambda a, c: c).to_stream().to("last-amount")
    by_user.group_by_key().count().to_stream().to("orders-per-user")
    by_user.filter(lambda k, v: True).group_by_key().reduce(lambda a, c: c).to_stream().to("last-order")
    return b.build(ALL)


@topology
def optimized_repartition_is_not_merged():
    b = StreamsBuilder()
    by_user = b.stream("orders").select_key(lambda k, v: field(v, 0))
    by_user.repartition(Repartitioned.as_("by-user")).group_by_key().count().to_stream().to("counted-after")
    by_user.group_by_key().count().to_stream().to("orders-per-user")
    by_user.to_table().to_stream().to("last-order")
    return b.build(ALL)


@topology
def optimized_merge_of_two_rekeyed_streams():
    b = StreamsBuilder()
    a = b.stream("a").select_key(lambda k, v: field(v, 0))
    c = b.stream("c").map(lambda k, v: (field(v, 0), v))
    merged = a.merge(c)
    merged.group_by_key().count().to_stream().to("merged-counts")
    merged.group_by_key().reduce(lambda x, y: y).to_stream().to("merged-last")
    return b.build(ALL)


@topology
def optimized_stream_stream_join_of_rekeyed_streams():
    b = StreamsBuilder()
    left = b.stream("left").select_key(lambda k, v: field(v, 0))
    right = b.stream("right").select_key(lambda k, v: field(v, 0))
    left.join(right, lambda x, y: x + "|" + y,
              JoinWindows.of_time_difference_with_no_grace(timedelta(minutes=1))).to("joined")
    left.group_by_key().count().to_stream().to("left-counts")
    return b.build(ALL)


@topology
def optimized_cogroup_of_a_rekeyed_stream():
    b = StreamsBuilder()
    clicks = b.stream("clicks").select_key(lambda k, v: field(v, 0))
    views = b.stream("views")
    clicks.group_by_key().cogroup(lambda k, v, agg: agg + "c").cogroup(
        views.group_by_key(), lambda k, v, agg: agg + "v").aggregate(lambda: "").to_stream().to("activity")
    clicks.group_by_key().count().to_stream().to("click-counts")
    return b.build(ALL)


# ---- Kafka Streams' StreamsGraphTest ---------------------------------------------------------


@topology
def optimized_nested_key_changing_nodes():
    b = StreamsBuilder()
    changed = b.stream("inputTopic").select_key(lambda k, v: v[:5])
    changed.group_by_key(Grouped.as_("count-repartition")).count(Materialized.as_("count-store")) \
        .to_stream().to("count-topic")
    changed.group_by_key(Grouped.as_("windowed-repartition")) \
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=5))) \
        .count(Materialized.as_("windowed-count-store")) \
        .to_stream().map(lambda wk, v: (wk.key, v)).to("windowed-count")
    return b.build(ALL)


@topology
def optimized_value_changes_after_the_key_change_keep_both_topics():
    b = StreamsBuilder()
    mapped = b.stream("input").select_key(lambda k, v: k + v)
    mapped.map_values(lambda v: v.upper()).group_by_key().count().to_stream().to("output")
    mapped.flat_map_values(lambda v: v.split()).group_by_key() \
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=5))).count().to_stream().to("windowed-output")
    return b.build(ALL)


@topology
def optimized_several_merge_nodes_with_a_common_key_changer():
    b = StreamsBuilder()
    parent = b.stream("input_topic").select_key(lambda k, v: k + v)
    first, second, third = (parent.map_values(lambda v, n=n: v + n) for n in ("1", "2", "3"))
    first.merge(second).merge(third).to("output_topic")
    return b.build(ALL)


@topology
def optimized_repartition_operations_are_kept():
    b = StreamsBuilder()
    rekeyed = b.stream("input").select_key(lambda k, v: k + v)
    rekeyed.repartition().group_by_key().count().to_stream().to("output")
    rekeyed.repartition().group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=5))) \
        .count().to_stream().to("windowed-output")
    return b.build(ALL)


@topology
def reused_table_source_describe_unchanged():
    b = StreamsBuilder()
    b.table("users", Materialized.as_("users-store")).to_stream().to("users-out")
    return b.build({StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: StreamsConfig.REUSE_KTABLE_SOURCE_TOPICS})
