"""Sources subscribed by a pattern: resolved once, with the partition counts, into the topics they
match (ApplicationTopology), and seen so by the Spark programs and the Dagster assets. No broker,
no Spark: tests/test_equivalence_pattern.py runs them against Kafka Streams."""

from __future__ import annotations

import re

import dagster as dg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams import KafkaResource, StreamsBuilder, TopologyException, kstreams_assets
from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.execution import task_runner
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology.application import ApplicationTopology

PATTERN = "orders-[a-z]+"


def _pattern_count() -> StreamsBuilder:
    """Orders from every topic matching ``PATTERN``, upper-cased and counted by value after a repartition."""
    b = StreamsBuilder()
    orders = b.stream(re.compile(PATTERN))
    orders.map_values(lambda v: v.upper()).to("orders-upper-out")
    orders.group_by(lambda k, v: v).count().to_stream().to("order-counts")
    return b


topic_counts = st.dictionaries(st.sampled_from(["orders-a", "orders-eu", "orders-us", "orders-", "orders-1",
                                                "xorders-a", "orders-a-old", "other"]),
                               st.integers(1, 6), min_size=1)


@settings(max_examples=200, deadline=None)
@given(counts=topic_counts)
def test_a_pattern_reads_exactly_the_topics_it_matches_and_has_as_many_tasks_as_the_largest(counts):
    matched = sorted(topic for topic in counts if re.fullmatch(PATTERN, topic))
    if not matched:
        with pytest.raises(KeyError, match=f"matches the source pattern '{re.escape(PATTERN)}' of sub-topology 0"):
            ApplicationTopology(_pattern_count(), "app", counts)
        return
    app = ApplicationTopology(_pattern_count(), "app", counts)
    assert app.source_topics(0) == app.subscribed_topics == matched
    assert app.task_count(0) == app.task_count(1) == max(counts[topic] for topic in matched)
    # Task p reads partition p of each matched topic that has it: every partition once, nothing else.
    read = [tp for task in app.tasks(0) for tp in app.assigned_partitions(task)]
    assert sorted(read) == sorted((topic, p) for topic in matched for p in range(counts[topic]))
    for topic in counts.keys() - set(matched):
        assert app.readers(topic) == [] and topic not in app.external_source_topics
    # The counts a broker gives for the topics it asks about keep the resolution (what a worker reads).
    again = app.with_source_partitions({topic: counts[topic] for topic in app.external_source_topics})
    assert again.source_topics(0) == matched and again.task_counts == app.task_counts


def test_a_pattern_is_pending_until_the_counts_are_known():
    app = ApplicationTopology(_pattern_count(), "app")
    assert app.patterns_pending and app.source_topics(0) == []
    assert app.pattern_matches(["orders-b", "orders-a", "other", "__consumer_offsets"]) == ["orders-a", "orders-b"]
    assert not app.with_source_partitions({"orders-a": 1}).patterns_pending
    with pytest.raises(KeyError) as missing:
        app.pattern_matches(["other"])
    assert "\n" not in str(missing.value) and "'orders-[a-z]+' of sub-topology 0" in str(missing.value)


def test_a_topic_matched_by_a_pattern_and_read_by_name_is_an_error_naming_both():
    b = StreamsBuilder()
    b.stream("orders-a").to("x")
    b.stream(re.compile(PATTERN)).to("y")
    with pytest.raises(TopologyException, match=r"topic 'orders-a' matches the source pattern 'orders-\[a-z\]\+' of "
                                                r"sub-topology 1 and is already read by source KSTREAM-SOURCE-0000000000"):
        ApplicationTopology(b, "app", {"orders-a": 1, "orders-b": 1})


def _specs_by_key(assets) -> dict[dg.AssetKey, dg.AssetSpec]:
    return {spec.key: spec for item in assets
            for spec in (item.specs if isinstance(item, dg.AssetsDefinition) else [item])}


def test_definitions_show_each_matched_topic_upstream_of_the_sub_topology_with_the_largest_count():
    declared = {"orders-eu": 3, "orders-us": 2, "orders-2024": 4, "returns": 5}
    specs = _specs_by_key(kstreams_assets(topology=_pattern_count(), app_id="pat", topic_partitions=declared))
    sub0, sub1 = dg.AssetKey(["pat", "subtopology_0"]), dg.AssetKey(["pat", "subtopology_1"])
    eu, us = dg.AssetKey(["kafka", "orders_eu"]), dg.AssetKey(["kafka", "orders_us"])
    deps = {dep.asset_key: dep.partition_mapping for dep in specs[sub0].deps}
    assert set(deps) == {eu, us} and all(isinstance(m, dg.IdentityPartitionMapping) for m in deps.values())
    assert specs[eu].partitions_def.get_partition_keys() == ["0", "1", "2"]
    assert specs[us].partitions_def.get_partition_keys() == ["0", "1"]
    assert specs[sub0].partitions_def.get_partition_keys() == specs[sub1].partitions_def.get_partition_keys() \
        == ["0", "1", "2"]
    # Declared, not matched: no asset (orders-2024 has digits, returns another name).
    assert not any(key.path[-1] in ("orders_2024", "returns") for key in specs)
    assert "each topic matching `orders-[a-z]+`" in specs[sub0].description


def test_a_worker_runs_the_topics_its_definitions_resolved():
    app = KStreamsApp(_pattern_count(), "pat", {"orders-eu": 3, "orders-us": 2})
    runner = task_runner(app, KafkaResource(bootstrap_servers="broker:9092"), spark=None)  # nothing connects
    assert runner.application.source_topics(0) == ["orders-eu", "orders-us"]
    (source,) = [node for node in runner.compiled.program(0).nodes if node.kind == "source"]
    assert source.topics == ("orders-eu", "orders-us")
    assert runner.compiled.program(0).needs_processing_order  # two topics: Kafka Streams' timestamp merge


def test_no_matching_topic_fails_the_definitions_in_one_line_naming_the_pattern_and_sub_topology():
    with pytest.raises(KeyError) as error:
        kstreams_assets(topology=_pattern_count(), app_id="pat", topic_partitions={"returns": 2})
    assert str(error.value) == ("\"no topic among ['returns'] matches the source pattern 'orders-[a-z]+' of "
                                "sub-topology 0\"")


def test_a_program_is_not_compiled_before_its_pattern_is_matched():
    with pytest.raises(ValueError, match="'pat' has a source subscribed by a pattern"):
        compile_topology(_pattern_count(), "pat")
    program = compile_topology(_pattern_count(), "pat", source_partitions={"orders-eu": 1, "other": 2}).program(0)
    assert [node.topics for node in program.nodes if node.kind == "source"] == [("orders-eu",)]
