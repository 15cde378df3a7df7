"""DSL behaviour: naming, repartition insertion, the read-only view's content (function forms:
tests/test_topology_dsl_functions.py).

(The byte-for-byte comparison with Kafka Streams is tests/test_describe_oracle.py; these tests
pin down the behaviour the runner and the Dagster layer rely on.)
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from dagster_kstreams import (
    Branched, Consumed, FunctionForm, Grouped, Joined, JoinWindows, KStream, KTable, Materialized, Named,
    NodeKind, Produced, Repartitioned, Serdes, SessionWindows, SlidingWindows, StoreType, StreamJoined,
    StreamsBuilder, Suppressed, BufferConfig, TimeWindows, TopologyException,
)


def node_names(topology):
    return [node.name for sub in topology.subtopologies for node in sub.nodes]


def find(topology, name):
    for sub in topology.subtopologies:
        for node in sub.nodes:
            if node.name == name:
                return sub, node
    raise KeyError(name)


def test_issue_example_builds_and_describes():
    b = StreamsBuilder()
    users = b.stream("users")
    users.group_by(lambda k, v: v["country"]).count().to_stream().to("users-per-country")
    b.stream("clicks").select_key(lambda k, v: v["user"]).join(
        b.table("profiles"), lambda click, profile: {**click, **profile}).to("enriched")
    b.stream("words").flat_map_values(lambda v: v.split()).group_by(lambda k, w: w) \
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(minutes=1))).count()
    b.table("t").filter(lambda k, v: v is not None).map_values(lambda v: v)
    b.stream("input").map(lambda k, v: (k[0], v)).to_table().to_stream().to("output")
    b.stream("input-topic").group_by_key().count(Materialized.as_("count-store"))
    topology = b.build()
    text = str(topology.describe())
    assert text.startswith("Topologies:\n   Sub-topology: 0\n    Source: KSTREAM-SOURCE-0000000000 (topics: [users])")
    assert "Processor: KSTREAM-AGGREGATE-0000000042 (stores: [count-store])" in text
    assert [s.id for s in topology.subtopologies] == list(range(10))
    assert topology.source_topics() == ["clicks", "input", "input-topic", "profiles", "t", "users", "words"]
    assert topology.sink_topics() == ["enriched", "output", "users-per-country"]


def test_naming_counter_is_shared_by_nodes_and_stores():
    b = StreamsBuilder()
    b.stream("in").filter(lambda k, v: True).group_by_key().count().to_stream().to("out")
    topology = b.build()
    assert node_names(topology) == [
        "KSTREAM-SOURCE-0000000000", "KSTREAM-FILTER-0000000001", "KSTREAM-AGGREGATE-0000000003",
        "KTABLE-TOSTREAM-0000000004", "KSTREAM-SINK-0000000005",
    ]
    assert list(topology.state_stores) == ["KSTREAM-AGGREGATE-STATE-STORE-0000000002"]


def test_a_given_name_still_burns_an_index():
    b = StreamsBuilder()
    b.stream("in").filter(lambda k, v: True, Named.as_("keep")).map_values(lambda v: v).to("out")
    assert node_names(b.build()) == [
        "KSTREAM-SOURCE-0000000000", "keep", "KSTREAM-MAPVALUES-0000000002", "KSTREAM-SINK-0000000003"]


def test_key_change_then_grouping_inserts_repartition_topic_and_cuts_subtopology():
    b = StreamsBuilder()
    b.stream("in").select_key(lambda k, v: v).group_by_key().count()
    topology = b.build()
    assert len(topology.subtopologies) == 2
    first, second = topology.subtopologies
    topic = "KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition"
    assert dict(topology.repartition_topics) == {topic: None}
    assert first.repartition_sink_topics == (topic,)
    assert second.repartition_source_topics == (topic,)
    assert second.external_source_topics == ()
    assert [n.kind for n in first.nodes] == [NodeKind.SOURCE, NodeKind.SELECT_KEY, NodeKind.REPARTITION_FILTER,
                                             NodeKind.SINK]
    assert [n.kind for n in second.nodes] == [NodeKind.SOURCE, NodeKind.AGGREGATE]
    assert first.nodes[-1].is_repartition and second.nodes[0].is_repartition


def test_value_only_operations_keep_co_location():
    b = StreamsBuilder()
    b.stream("in").map_values(lambda v: v).filter(lambda k, v: True).flat_map_values(lambda v: [v]) \
        .peek(lambda k, v: None).group_by_key().count()
    topology = b.build()
    assert len(topology.subtopologies) == 1
    assert topology.repartition_topics == {}


def test_group_by_always_repartitions_and_grouped_name_names_the_topic():
    b = StreamsBuilder()
    b.stream("in").group_by(lambda k, v: v, Grouped.as_("by-value")).count()
    topology = b.build()
    assert list(topology.repartition_topics) == ["by-value-repartition"]
    _, select = find(topology, "by-value")
    assert select.kind is NodeKind.SELECT_KEY
    names = node_names(topology)
    assert "by-value-repartition-sink" in names and "by-value-repartition-source" in names


def test_repartition_always_repartitions_even_without_key_change():
    b = StreamsBuilder()
    b.stream("in").repartition(Repartitioned.as_("again").with_number_of_partitions(6)).to("out")
    topology = b.build()
    assert dict(topology.repartition_topics) == {"again-repartition": 6}
    assert len(topology.subtopologies) == 2
    assert topology.partition_counts({"in": 2})["again-repartition"] == 6
    assert [str(t) for t in topology.tasks({"in": 2})] == ["0_0", "0_1"] + [f"1_{p}" for p in range(6)]


def test_merge_of_rekeyed_stream_requires_repartition():
    b = StreamsBuilder()
    left = b.stream("a").select_key(lambda k, v: v)
    right = b.stream("b")
    left.merge(right).group_by_key().count()
    topology = b.build()
    assert len(topology.repartition_topics) == 1
    _, merge = find(topology, "KSTREAM-MERGE-0000000003")
    assert merge.kind is NodeKind.MERGE
    assert set(merge.parents) == {"KSTREAM-KEY-SELECT-0000000001", "KSTREAM-SOURCE-0000000002"}


def test_multiple_topics_and_duplicate_subscriptions():
    b = StreamsBuilder()
    b.stream(["a", "b"]).to("out")
    topology = b.build()
    assert topology.subtopologies[0].external_source_topics == ("a", "b")
    b = StreamsBuilder()
    b.stream("a").to("x")
    b.stream("a").to("y")
    topology = b.build()  # Kafka Streams merges the two sources of the same topic
    assert len(topology.subtopologies) == 1
    assert [n.kind for n in topology.subtopologies[0].nodes].count(NodeKind.SOURCE) == 1
    b = StreamsBuilder()
    b.stream(["a", "b"]).to("x")
    b.stream("a").to("y")
    with pytest.raises(TopologyException, match="overlapping but not equal"):
        b.build()


def test_serdes_flow_to_sources_and_sinks():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).map_values(lambda v: v + 1) \
        .to("out", Produced.with_(Serdes.String(), Serdes.Long()))
    b.stream("in2", Consumed.with_(Serdes.String(), Serdes.Json())).filter(lambda k, v: True).to("out2")
    nodes = b.build().subtopologies
    source, *_, sink = nodes[0].nodes
    assert source.serdes["key_serde"] == Serdes.String() and source.serdes["value_serde"] == Serdes.Long()
    assert sink.serdes["value_serde"] == Serdes.Long()
    sink2 = nodes[1].nodes[-1]
    assert sink2.serdes["value_serde"] == Serdes.Json()  # preserved through filter


def test_table_source_store_exists_only_when_needed():
    b = StreamsBuilder()
    b.table("plain").to_stream().to("o")
    joined = b.table("joined")
    b.stream("s").join(joined, lambda v, t: v).to("o2")
    topology = b.build()
    _, plain = find(topology, "KTABLE-SOURCE-0000000002")
    assert plain.stores == ()
    _, joined_source = find(topology, "KTABLE-SOURCE-0000000007")
    assert joined_source.stores == ("joined-STATE-STORE-0000000005",)
    store = topology.state_stores["joined-STATE-STORE-0000000005"]
    assert store.type is StoreType.KEY_VALUE and store.changelog


def test_stream_table_join_shares_the_subtopology_of_the_table():
    b = StreamsBuilder()
    b.stream("s").join(b.table("t"), lambda v, t: v).to("o")
    topology = b.build()
    assert len(topology.subtopologies) == 1
    sub = topology.subtopologies[0]
    assert set(sub.external_source_topics) == {"s", "t"}
    assert topology.copartition_groups == (("s", "t"),)


def test_stream_stream_join_nodes_and_stores():
    b = StreamsBuilder()
    b.stream("l").left_join(b.stream("r"), lambda a, c: (a, c),
                            JoinWindows.of_time_difference_and_grace(timedelta(seconds=5), timedelta(seconds=1)),
                            StreamJoined.with_(Serdes.String(), Serdes.String(), Serdes.String())).to("o")
    topology = b.build()
    sub = topology.subtopologies[0]
    kinds = [n.kind for n in sub.nodes]
    assert kinds.count(NodeKind.JOIN_WINDOW) == 2 and kinds.count(NodeKind.STREAM_STREAM_JOIN) == 2
    merge = next(n for n in sub.nodes if n.kind is NodeKind.STREAM_STREAM_JOIN_MERGE)
    assert merge.params["join_type"] == "left"
    this_side = next(n for n in sub.nodes if n.kind is NodeKind.STREAM_STREAM_JOIN and n.params["side"] == "this")
    assert set(this_side.stores) == {merge.params["other_store_name"], merge.params["outer_store_name"]}
    types = {s.name: s.type for s in sub.state_stores}
    assert types[merge.params["outer_store_name"]] is StoreType.OUTER_JOIN_SHARED
    assert types[merge.params["this_store_name"]] is StoreType.JOIN_WINDOW
    assert topology.state_stores[merge.params["this_store_name"]].retention_ms == 11000


def test_windowed_aggregations_record_their_windows():
    b = StreamsBuilder()
    g = b.stream("in").group_by_key()
    hopping = TimeWindows.of_size_with_no_grace(timedelta(minutes=5)).advance_by(timedelta(minutes=1))
    g.windowed_by(hopping).count()
    g.windowed_by(SlidingWindows.of_time_difference_with_no_grace(timedelta(seconds=30))).reduce(lambda a, v: a + v)
    g.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(minutes=2))).aggregate(
        lambda: 0, lambda k, v, agg: agg + 1, lambda k, a1, a2: a1 + a2)
    topology = b.build()
    aggs = [n for n in topology.subtopologies[0].nodes if n.kind is NodeKind.WINDOWED_AGGREGATE]
    assert [a.params["windows"] for a in aggs] == [
        hopping, SlidingWindows(30000, 0), SessionWindows(120000, 0)]
    assert [a.params["operation"] for a in aggs] == ["count", "reduce", "aggregate"]
    assert aggs[2].params["merger"].form is FunctionForm.MERGER
    stores = {s.type for s in topology.subtopologies[0].state_stores}
    assert stores == {StoreType.WINDOW, StoreType.SESSION}


def test_suppress_needs_a_windowed_parent_for_until_window_closes():
    b = StreamsBuilder()
    table = b.stream("in").group_by_key().count()
    with pytest.raises(TopologyException, match="Window close time is only defined for windowed computations"):
        table.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    windowed = b.stream("in2").group_by_key().windowed_by(
        TimeWindows.of_size_and_grace(timedelta(minutes=1), timedelta(seconds=10))).count()
    windowed.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to("o")
    suppress = next(n for s in b.build().subtopologies for n in s.nodes if n.kind is NodeKind.SUPPRESS)
    assert suppress.params["grace_ms"] == 10000 and suppress.params["until_window_closes"]


def test_split_branches():
    b = StreamsBuilder()
    branches = b.stream("in").split(Named.as_("s-")) \
        .branch(lambda k, v: v > 0, Branched.as_("pos")) \
        .branch(lambda k, v: v < 0) \
        .default_branch()
    assert list(branches) == ["s-pos", "s-2", "s-0"]
    assert all(isinstance(stream, KStream) for stream in branches.values())
    for name, stream in branches.items():
        stream.to(name + "-out")
    sub = b.build().subtopologies[0]
    splitter = sub.node("s-")
    assert splitter.kind is NodeKind.BRANCH
    assert list(splitter.params["children"]) == ["s-pos", "s-2", "s-0"]
    assert len(splitter.params["predicates"]) == 2


def test_to_with_topic_extractor():
    b = StreamsBuilder()
    b.stream("in").to(lambda k, v: f"topic-{k}")
    sink = b.build().subtopologies[0].nodes[-1]
    assert sink.kind is NodeKind.SINK and sink.topic is None and sink.topic_extractor("k", "v") == "topic-k"
    assert "extractor class:" in str(b.build().describe())


def test_table_group_by_aggregate_and_table_joins():
    b = StreamsBuilder()
    t1, t2 = b.table("t1"), b.table("t2")
    joined = t1.outer_join(t2, lambda a, c: (a, c), Materialized.as_("joined"))
    assert isinstance(joined, KTable) and joined.queryable_store_name == "joined"
    t1.group_by(lambda k, v: (v, k)).aggregate(lambda: 0, lambda k, v, a: a + 1, lambda k, v, a: a - 1)
    topology = b.build()
    kinds = [n.kind for s in topology.subtopologies for n in s.nodes]
    assert NodeKind.TABLE_TABLE_JOIN_MERGE in kinds and NodeKind.TABLE_AGGREGATE in kinds
    assert NodeKind.TABLE_GROUP_BY_MAP in kinds
    # both table sources are materialized: the join reads them
    assert {"t1-STATE-STORE-0000000000", "t2-STATE-STORE-0000000003", "joined"} <= set(topology.state_stores)


def test_invalid_names_are_rejected():
    with pytest.raises(TopologyException, match="illegal"):
        Named.as_("has space")
    with pytest.raises(TopologyException, match="longer than 249"):
        Materialized.as_("x" * 250)


def test_duplicate_processor_name_is_rejected():
    b = StreamsBuilder()
    s = b.stream("in")
    s.filter(lambda k, v: True, Named.as_("same")).to("a")
    s.filter(lambda k, v: True, Named.as_("same")).to("b")
    with pytest.raises(TopologyException, match="Processor same is already added"):
        b.build()


def test_joins_need_the_right_arguments():
    b = StreamsBuilder()
    with pytest.raises(TypeError, match="needs JoinWindows"):
        b.stream("a").join(b.stream("b"), lambda x, y: x)
    with pytest.raises(TypeError, match="unexpected argument"):
        b.stream("a").join(b.table("t"), lambda x, y: x, JoinWindows.of_time_difference_with_no_grace(timedelta(1)))
    with pytest.raises(TypeError, match="KStream or a KTable"):
        b.stream("a").join("t", lambda x, y: x)
    with pytest.raises(TopologyException, match="versioned"):
        b.stream("a").join(b.table("t2"), lambda x, y: x, Joined.as_("j").with_grace_period(timedelta(seconds=1)))


def test_build_is_idempotent_and_nodes_are_read_only():
    b = StreamsBuilder()
    b.stream("in").to("out")
    topology = b.build()
    assert b.build() is topology
    node = topology.subtopologies[0].nodes[0]
    with pytest.raises(Exception):
        node.name = "other"  # frozen dataclass
    with pytest.raises(TypeError):
        node.params["x"] = 1  # read-only mapping


def test_repartition_drops_null_keys_unless_a_left_or_outer_join_follows():
    b = StreamsBuilder()
    b.stream("a").group_by(lambda k, v: v).count()
    b.stream("b").select_key(lambda k, v: v).left_join(b.table("t"), lambda x, y: x).to("o1")
    b.stream("c").select_key(lambda k, v: v).join(b.table("t2"), lambda x, y: x).to("o2")
    filters = [n for s in b.build().subtopologies for n in s.nodes if n.kind is NodeKind.REPARTITION_FILTER]
    assert [f.params["drop_null_keys"] for f in filters] == [True, False, True]


def test_java_static_factories_that_share_a_field_name():
    assert Grouped.key_serde(Serdes.String()) == Grouped(None, Serdes.String(), None)
    assert Grouped.as_("g").key_serde is None  # on an instance it is the field
    assert Repartitioned.number_of_partitions(4).number_of_partitions == 4
    assert Repartitioned.number_of_partitions_(4) == Repartitioned.number_of_partitions(4)
    assert Produced.value_serde(Serdes.Long()).value_serde == Serdes.Long()
    assert Joined.other_value_serde(Serdes.Long()).other_value_serde == Serdes.Long()
    assert BufferConfig.max_records(10).max_records == 10


def test_deep_topologies_build_and_describe():
    b = StreamsBuilder()
    stream = b.stream("in")
    for _ in range(3000):
        stream = stream.filter(lambda k, v: True)
    stream.select_key(lambda k, v: v).group_by_key().count()
    topology = b.build()
    text = str(topology.describe())
    assert text.count("Processor: KSTREAM-FILTER-") == 3001  # 3000 filters + the repartition filter
    assert len(topology.subtopologies) == 2


def test_clashing_names_fail_as_in_kafka_streams():
    b = StreamsBuilder()
    b.stream("a").group_by_key().count(Materialized.as_("s"))
    b.stream("b").group_by_key().count(Materialized.as_("s"))
    with pytest.raises(TopologyException, match="A different StateStore has already been added with the name s"):
        b.build()
    b = StreamsBuilder()
    b.stream("a").to("x")
    b.table("a")
    with pytest.raises(TopologyException, match="Topic a has already been registered by another source"):
        b.build()
