"""``topology.optimization``'s graph rewrites without a broker: ``merge.repartition.topics`` (one
repartition topic per key changer, what stays unmerged, what Kafka Streams refuses the same way),
the optimized topologies compile for the runner and show one intermediate asset, and
``reuse.ktable.source.topics`` (a table's store lists no changelog topic). Their describe() is
compared with Kafka Streams in tests/test_describe_oracle.py (the catalog's ``optimization`` family)."""

from __future__ import annotations

import re

import dagster as dg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams import (Grouped, Materialized, Serdes, StreamsBuilder, StreamsConfig, TopologyException,
                              kstreams_assets)
from dagster_kstreams.orchestration.translator import DagsterKStreamsTranslator
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology.graph import GraphNode
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.repartition_merge import find_ancestor

from topology_catalog_optimization import ENTRIES as OPTIMIZED

ALL = {StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: StreamsConfig.OPTIMIZE}
MERGE = {StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: StreamsConfig.MERGE_REPARTITION_TOPICS}
REUSE = {StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: StreamsConfig.REUSE_KTABLE_SOURCE_TOPICS}


def _two_counts(props=None):
    b = StreamsBuilder()
    by_user = b.stream("orders").select_key(lambda k, v: v)
    by_user.group_by_key(Grouped.as_("first")).count().to_stream().to("a")
    by_user.group_by_key(Grouped.as_("second")).count().to_stream().to("b")
    return b.build(props)


def test_merge_applies_only_when_the_setting_names_it():
    assert set(_two_counts().repartition_topics) == {"first-repartition", "second-repartition"}
    assert set(_two_counts(REUSE).repartition_topics) == {"first-repartition", "second-repartition"}
    assert set(_two_counts(MERGE).repartition_topics) == {"first-repartition"}
    assert set(_two_counts(ALL).repartition_topics) == {"first-repartition"}


def test_two_cogrouped_streams_rekeyed_apart_are_refused_as_kafka_streams_refuses_them():
    # Both cogroup repartition topics are named after the one store, and so are their nodes (the name
    # does not look generated), with the merge or without: Kafka Streams 4.3.1's own message under
    # `all`, from the oracle; the catalog's optimized_cogroup_of_a_rekeyed_stream is the case that runs.
    b = StreamsBuilder()
    clicks = b.stream("clicks").select_key(lambda k, v: v)
    views = b.stream("views").select_key(lambda k, v: v)
    clicks.group_by_key().cogroup(lambda k, v, agg: agg + "c").cogroup(
        views.group_by_key(), lambda k, v, agg: agg + "v").aggregate(lambda: "").to_stream().to("activity")
    with pytest.raises(TopologyException, match=re.escape(
            "Invalid topology: Processor COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-filter "
            "is already added.")):
        b.build(ALL)


@pytest.mark.parametrize("name", list(OPTIMIZED))
def test_every_optimized_catalog_topology_compiles_for_the_runner(name):
    assert compile_topology(OPTIMIZED[name](), "app") is not None


def test_the_merged_topic_takes_the_first_name_and_the_first_serdes_set_among_the_groupings():
    # getFirstRepartitionTopicName and getRepartitionSerdes: each serde from the first grouping that sets it
    b = StreamsBuilder()
    rekeyed = b.stream("in").select_key(lambda k, v: v)
    rekeyed.group_by_key(Grouped.as_("plain")).count().to_stream().to("a")
    rekeyed.group_by_key(Grouped.as_("longs").with_value_serde(Serdes.Long())).count().to_stream().to("b")
    rekeyed.group_by_key(Grouped.with_(Serdes.String(), Serdes.String())).count().to_stream().to("c")
    topology = b.build(MERGE)
    assert set(topology.repartition_topics) == {"plain-repartition"}
    sink = next(node for subtopology in topology.subtopologies for node in subtopology.nodes
                if node.name == "plain-repartition-sink")
    assert type(sink.serdes["key_serde"]) is type(Serdes.String())
    assert type(sink.serdes["value_serde"]) is type(Serdes.Long())


def test_the_merged_topic_stays_co_partitioned_with_the_table_its_joins_read():
    # the joins' co-partition groups name the merged topic's source: it takes the table's 3 partitions
    topology = OPTIMIZED["optimized_rekeyed_stream_joined_with_table_and_aggregated"]()
    assert topology.partition_counts({"users": 3, "clicks": 2})["KSTREAM-KEY-SELECT-0000000004-repartition"] == 3


def test_the_asset_graph_shows_the_one_merged_repartition_topic():
    specs = [spec for item in kstreams_assets(topology=_two_counts(ALL), app_id="app",
                                              topic_partitions={"orders": 2}, translator=DagsterKStreamsTranslator())
             for spec in (item.specs if isinstance(item, dg.AssetsDefinition) else [item])]
    keys = {spec.key.to_user_string() for spec in specs}
    assert "app/first_repartition" in keys and "app/second_repartition" not in keys
    downstream = next(spec for spec in specs if spec.key.to_user_string() == "app/subtopology_1")
    assert {dep.asset_key.to_user_string() for dep in downstream.deps} == {"app/first_repartition"}


def test_reuse_lists_no_changelog_for_a_table_source_store_and_keeps_describe():
    def build(props):
        b = StreamsBuilder()
        b.table("users", Materialized.as_("users-store")).group_by(lambda k, v: (v, k)).count(
            Materialized.as_("per-country")).to_stream().to("out")
        return b.build(props)

    plain, reused = build(None), build(REUSE)
    assert str(plain.describe()) == str(reused.describe())
    assert set(plain.changelog_topics("app", {"users": 2})) == {"app-users-store-changelog", "app-per-country-changelog"}
    assert set(reused.changelog_topics("app", {"users": 2})) == {"app-per-country-changelog"}
    assert set(build(MERGE).changelog_topics("app", {"users": 2})) == set(plain.changelog_topics("app", {"users": 2}))


# -- properties --------------------------------------------------------------------------------

@st.composite
def _branches(draw):
    """Branches off one re-keyed stream: each an optional chain (filter, peek, map_values) before a
    grouping (named or not) counted, or a repartition() then counted."""
    return draw(st.lists(st.tuples(st.lists(st.sampled_from(["filter", "peek", "map_values"]), max_size=2),
                                   st.sampled_from(["group", "named", "repartition"])), min_size=1, max_size=4))


def _rekeyed(branches, props):
    b = StreamsBuilder()
    rekeyed = b.stream("in").select_key(lambda k, v: v)
    for i, (chain, grouping) in enumerate(branches):
        stream = rekeyed
        for operation in chain:
            stream = getattr(stream, operation)(lambda *args: True if len(args) == 2 else args[-1])
        if grouping == "repartition":
            stream = stream.repartition()
        grouped = stream.group_by_key(Grouped.as_(f"g{i}") if grouping == "named" else None)
        grouped.count().to_stream().to(f"out{i}")
    return b.build(props)


@settings(max_examples=60, deadline=None)
@given(_branches())
def test_one_topic_per_key_changer_unless_a_value_changer_or_repartition_comes_first(branches):
    plain, merged = _rekeyed(branches, None), _rekeyed(branches, MERGE)
    merged_branches = [i for i, (chain, grouping) in enumerate(branches)
                       if grouping != "repartition" and "map_values" not in chain]
    kept = [topic for topic in plain.repartition_topics
            if not any(topic == _topic_of(plain, i) for i in merged_branches)]
    expected = set(kept) | ({_topic_of(plain, merged_branches[0])} if merged_branches else set())
    assert set(merged.repartition_topics) == expected
    # the same processors but the repartition topics' own (filters, sinks and sources)
    assert _processors(plain) - _repartition_nodes(plain) == _processors(merged) - _repartition_nodes(merged)


def _topic_of(topology, branch: int) -> str:
    """The repartition topic the branch's count reads (its sink is ``out<branch>``)."""
    for subtopology in topology.subtopologies:
        if f"out{branch}" in subtopology.sink_topics:
            return next(topic for topic in subtopology.source_topic_names if topic.endswith("-repartition"))
    raise AssertionError(branch)


def _processors(topology) -> set[str]:
    return {node.name for subtopology in topology.subtopologies for node in subtopology.nodes}


def _repartition_nodes(topology) -> set[str]:
    return {node.name for subtopology in topology.subtopologies for node in subtopology.nodes
            if node.is_repartition or node.kind is NodeKind.REPARTITION_FILTER}


def _chain(length: int, parents_of) -> list[GraphNode]:
    nodes = [GraphNode(f"n{i}") for i in range(length)]
    for i, node in enumerate(nodes):
        for parent in parents_of(i):
            nodes[parent].add_child(node)
    return nodes


@given(st.integers(min_value=1, max_value=12), st.data())
def test_find_ancestor_is_the_first_match_depth_first_through_parents_in_order(length, data):
    parents = {i: sorted(set(data.draw(st.lists(st.integers(0, i - 1), max_size=2)))) if i else [] for i in range(length)}
    nodes = _chain(length, parents.get)
    marked = set(data.draw(st.lists(st.integers(0, length - 1), max_size=3)))

    def first(i):  # the order Kafka Streams' findParentNodeMatching walks: itself, each parent, its ancestors
        if i in marked:
            return i
        for parent in parents[i]:
            if parent in marked:
                return parent
            found = first(parent)
            if found is not None:
                return found
        return None

    expected = first(length - 1)
    found = find_ancestor(nodes[-1], lambda node: int(node.name[1:]) in marked)
    assert (found.name if found else None) == (f"n{expected}" if expected is not None else None)
