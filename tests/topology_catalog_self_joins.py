"""The catalog's stream-stream joins built with ``topology.optimization`` naming the single-store
self-join (Kafka Streams' ``InternalStreamsBuilderTest`` self-join cases, ``KStreamKStreamSelfJoinTest``
and ``SelfJoinUpgradeIntegrationTest``): the ones Kafka Streams rewrites into one self-join processor
and the ones it leaves as two window stores.

Entries of tests/topology_catalog.py; their Java twins, under the same names, are in
tests/oracle/src/main/java/kstreams/oracle/SelfJoinCatalog.java (each built with ``build(props)``).
Keep the two in step.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams import JoinWindows, StreamJoined, StreamsBuilder
from dagster_kstreams.topology import StreamsConfig

from topology_catalog_entries import CatalogEntries

ENTRIES = CatalogEntries()
topology = ENTRIES.add

ALL = {StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: StreamsConfig.OPTIMIZE}
SELF_JOIN_ONLY = {StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: StreamsConfig.SINGLE_STORE_SELF_JOIN}
OTHER_TWO = {StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG:
             f"{StreamsConfig.REUSE_KTABLE_SOURCE_TOPICS},{StreamsConfig.MERGE_REPARTITION_TOPICS}"}
WINDOW = JoinWindows.of_time_difference_with_no_grace(timedelta(milliseconds=100))


def concat(a, b):
    return a + b


# ---- Rewritten into one self-join processor ------------------------------------------------


@topology
def self_join_single_stream_optimized():
    b = StreamsBuilder()
    stream = b.stream("t1")
    stream.join(stream, concat, WINDOW).to("out")
    return b.build(ALL)


@topology
def self_join_only_setting_optimized():
    b = StreamsBuilder()
    stream = b.stream("t1")
    stream.join(stream, concat, WINDOW).to("out")
    return b.build(SELF_JOIN_ONLY)


@topology
def self_join_two_streams_same_topic_optimized():
    b = StreamsBuilder()
    b.stream("t1").join(b.stream("t1"), concat, WINDOW).to("out")
    return b.build(ALL)


@topology
def self_join_of_merged_streams_optimized():
    b = StreamsBuilder()
    merged = b.stream("t1").merge(b.stream("t2"))
    merged.join(merged, concat, WINDOW).to("out")
    return b.build(ALL)


@topology
def self_join_then_join_third_stream_optimized():
    b = StreamsBuilder()
    b.stream("t1").join(b.stream("t1"), concat, WINDOW).join(b.stream("t3"), concat, WINDOW).to("out")
    return b.build(ALL)


@topology
def self_join_then_join_same_source_optimized():
    b = StreamsBuilder()
    b.stream("t1").join(b.stream("t1"), concat, WINDOW).join(b.stream("t1"), concat, WINDOW).to("out")
    return b.build(ALL)


@topology
def two_self_joins_merged_optimized():
    b = StreamsBuilder()
    first = b.stream("t1").join(b.stream("t1"), concat, WINDOW)
    second = b.stream("t2").join(b.stream("t2"), concat, WINDOW)
    first.merge(second).to("out")
    return b.build(ALL)


@topology
def two_self_joins_same_source_optimized():
    b = StreamsBuilder()
    b.stream("t1").join(b.stream("t1"), concat, WINDOW).to("out1")
    b.stream("t1").join(b.stream("t1"), concat, WINDOW).to("out2")
    return b.build(ALL)


@topology
def self_join_with_filter_sibling_optimized():
    b = StreamsBuilder()
    stream1, stream2 = b.stream("t1"), b.stream("t1")
    stream1.filter(lambda k, v: v is not None).to("filtered")
    stream1.join(stream2, concat, WINDOW).to("out")
    return b.build(ALL)


@topology
def self_join_named_stream_joined_optimized():
    b = StreamsBuilder()
    stream = b.stream("t1")
    stream.join(stream, concat, JoinWindows.of_time_difference_and_grace(timedelta(seconds=11), timedelta(seconds=10)),
                StreamJoined.as_("pair-store").with_name("pairs")).to("out")
    return b.build(ALL)


@topology
def self_join_asymmetric_window_optimized():
    b = StreamsBuilder()
    stream = b.stream("t1")
    stream.join(stream, concat, WINDOW.after(timedelta(milliseconds=30))).to("out")
    return b.build(ALL)


@topology
def self_left_and_outer_joins_optimized():
    # Kafka Streams 4.3.1 rewrites these too (into the inner self-join): no join type is checked
    b = StreamsBuilder()
    stream = b.stream("t1")
    stream.left_join(stream, concat, WINDOW).to("left-out")
    stream.outer_join(stream, concat, WINDOW).to("outer-out")
    return b.build(ALL)


# ---- Left as two window stores --------------------------------------------------------------


@topology
def self_join_filter_between_not_optimized():
    b = StreamsBuilder()
    b.stream("t1").filter(lambda k, v: v is not None).join(b.stream("t1"), concat, WINDOW).to("out")
    return b.build(ALL)


@topology
def self_join_map_values_between_not_optimized():
    b = StreamsBuilder()
    b.stream("t1").map_values(lambda v: v).join(b.stream("t1"), concat, WINDOW).to("out")
    return b.build(ALL)


@topology
def join_of_two_sources_not_optimized():
    b = StreamsBuilder()
    b.stream("t1").join(b.stream("t2"), concat, WINDOW).to("out")
    return b.build(ALL)


@topology
def self_join_other_settings_not_optimized():
    b = StreamsBuilder()
    stream = b.stream("t1")
    stream.join(stream, concat, WINDOW).to("out")
    return b.build(OTHER_TWO)
