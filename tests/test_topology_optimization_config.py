"""``StreamsBuilder.build(props)``'s ``topology.optimization``: the values Kafka Streams accepts and the
one-line refusal of the others (``StreamsConfig.verifyTopologyOptimizationConfigs``)."""
import pytest

from dagster_kstreams import StreamsBuilder, StreamsConfig, TopologyException
from dagster_kstreams.topology.optimization import optimizations_of

EACH = {StreamsConfig.REUSE_KTABLE_SOURCE_TOPICS, StreamsConfig.MERGE_REPARTITION_TOPICS,
        StreamsConfig.SINGLE_STORE_SELF_JOIN}


def test_all_none_and_a_list():
    assert optimizations_of(None) == frozenset()
    assert optimizations_of({}) == frozenset()
    assert optimizations_of({"topology.optimization": "none"}) == frozenset()
    assert optimizations_of({"topology.optimization": "all"}) == EACH
    assert optimizations_of({"topology.optimization": "merge.repartition.topics, single.store.self.join"}) == {
        StreamsConfig.MERGE_REPARTITION_TOPICS, StreamsConfig.SINGLE_STORE_SELF_JOIN}


@pytest.mark.parametrize("value", ["everything", "all,merge.repartition.topics", "none,single.store.self.join", 3])
def test_a_bad_value_names_the_setting(value):
    with pytest.raises(TopologyException, match=r"topology\.optimization") as raised:
        optimizations_of({"topology.optimization": value})
    assert "\n" not in str(raised.value)


def test_build_reads_the_setting_and_refuses_a_bad_one():
    builder = StreamsBuilder()
    builder.stream("in").to("out")
    with pytest.raises(TopologyException, match="topology.optimization"):
        builder.build({StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: "sometimes"})
    topology = builder.build({StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: StreamsConfig.NO_OPTIMIZATION})
    assert "Source: KSTREAM-SOURCE-0000000000 (topics: [in])" in str(topology.describe())


def test_a_trailing_comma_is_dropped_as_java_splits():
    assert optimizations_of({"topology.optimization": "merge.repartition.topics,"}) == {
        StreamsConfig.MERGE_REPARTITION_TOPICS}


def test_a_second_build_with_other_optimizations_is_refused():
    builder = StreamsBuilder()
    builder.stream("in").to("out")
    first = builder.build({"topology.optimization": "all"})
    assert builder.build({"topology.optimization": "all"}) is first
    with pytest.raises(TopologyException, match="new StreamsBuilder"):
        builder.build()
