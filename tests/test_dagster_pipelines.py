"""Several applications, one lineage graph (no broker, no Spark): word count writes ``word-counts``,
top words reads it. Loaded together (``kstreams_definitions``), merged (``Definitions.merge`` with
``topics_declared_elsewhere``), or from two code locations of one workspace (by asset key), the
graph is word count's sub-topology -> the topic -> top words' sub-topology, with topic partition
``p`` feeding task ``p``; and the load-time errors when apps disagree on a shared topic."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget

from dagster_kstreams import DagsterKStreamsTranslator, KafkaResource, KStreamsApp, KStreamsSparkResource
from dagster_kstreams.orchestration.definitions import kstreams_definitions
from dagster_kstreams.orchestration.translator import KStreamsAssetKind

import definitions
from assets import click_enrichment, click_regions, clicks_per_country, top_words, users_per_country, word_count
from dagster_kstreams.orchestration.workers import ElasticWorkers

REPO_ROOT = Path(__file__).resolve().parent.parent
WORD_COUNTS = dg.AssetKey(["kafka", "word_counts"])
COUNTING = dg.AssetKey(["word_count", "subtopology_1"])  # writes word-counts
TOP_WORDS = dg.AssetKey(["top_words", "subtopology_0"])  # reads it


def _with_resources(*defs: dg.Definitions) -> dg.Definitions:
    """Nothing connects at load: the resources are there only so the definitions validate."""
    resources = {"kafka": KafkaResource(), "pyspark": KStreamsSparkResource()}
    return dg.Definitions.merge(*defs, dg.Definitions(resources=resources))


def _specs(defs: dg.Definitions) -> dict[dg.AssetKey, list[dg.AssetSpec]]:
    """Every spec the definitions hold, by key (a key declared twice has two)."""
    specs: dict[dg.AssetKey, list[dg.AssetSpec]] = {}
    for item in defs.assets:
        for spec in (item.specs if isinstance(item, dg.AssetsDefinition) else [item]):
            specs.setdefault(spec.key, []).append(spec)
    return specs


def _parent_partitions(graph, child: dg.AssetKey, parent: dg.AssetKey, partition: str) -> list[str]:
    subset = graph.get_parent_partition_keys_for_child(partition, parent_asset_key=parent, child_asset_key=child)
    return sorted(subset.partitions_subset.get_partition_keys())


def _assert_chain(graph, writer_mapping: bool = True) -> None:
    """word_count/subtopology_1 -> kafka/word_counts -> top_words/subtopology_0, partition p -> task p."""
    assert graph.get(WORD_COUNTS).parent_keys == {COUNTING}
    assert TOP_WORDS in graph.get(WORD_COUNTS).child_keys
    assert graph.get(TOP_WORDS).parent_keys == {WORD_COUNTS}
    for task in ("0", "1"):
        assert _parent_partitions(graph, TOP_WORDS, WORD_COUNTS, task) == [task]
    if writer_mapping:  # any counting task may write any partition of the topic
        assert _parent_partitions(graph, WORD_COUNTS, COUNTING, "1") == ["0", "1"]


def test_two_apps_loaded_together_are_one_graph_with_the_topic_declared_once():
    defs = _with_resources(kstreams_definitions(word_count.build_app(), top_words.build_app()))
    dg.Definitions.validate_loadable(defs)
    specs = _specs(defs)
    (topic,) = specs[WORD_COUNTS]  # the writer's spec, once
    assert topic.description == "Kafka topic `word-counts` (output of `word-count`)."
    assert topic.group_name == "word_count"
    _assert_chain(defs.resolve_asset_graph())
    # Both apps keep their own checks.
    check_keys = {key for checks in defs.asset_checks for key in checks.check_keys}
    assert dg.AssetCheckKey(TOP_WORDS, "freshness") in check_keys
    assert dg.AssetCheckKey(COUNTING, "lag_within_bound") in check_keys


def test_the_example_definitions_chain_word_count_into_top_words():
    _assert_chain(definitions.defs.resolve_asset_graph())


def test_a_plain_merge_needs_the_reader_told_that_the_topic_is_declared_elsewhere():
    # Built separately, each app declares word-counts: Dagster refuses the two specs.
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="conflicting AssetSpecs with the same key"):
        _with_resources(word_count.build_defs(), top_words.build_defs()).resolve_asset_graph()
    merged = _with_resources(word_count.build_defs(), top_words.build_defs(topics_declared_elsewhere=["word-counts"]))
    dg.Definitions.validate_loadable(merged)
    assert len(_specs(merged)[WORD_COUNTS]) == 1
    _assert_chain(merged.resolve_asset_graph())


def test_a_reader_alone_depends_on_the_topic_by_key_without_declaring_it():
    defs = _with_resources(top_words.build_defs(topics_declared_elsewhere=["word-counts"]))
    dg.Definitions.validate_loadable(defs)
    assert WORD_COUNTS not in _specs(defs)
    (spec,) = _specs(defs)[TOP_WORDS]
    (dep,) = spec.deps
    assert dep.asset_key == WORD_COUNTS and isinstance(dep.partition_mapping, dg.IdentityPartitionMapping)


def test_two_code_locations_of_one_workspace_join_by_asset_key(tmp_path):
    header = ("import dagster as dg\nfrom dagster_kstreams import KafkaResource, KStreamsSparkResource\n"
              "from assets import top_words, word_count\n"
              "resources = dg.Definitions(resources={'kafka': KafkaResource(), 'pyspark': KStreamsSparkResource()})\n")
    (tmp_path / "counting.py").write_text(f"{header}defs = dg.Definitions.merge(word_count.build_defs(), resources)\n")
    (tmp_path / "ranking.py").write_text(
        f"{header}defs = dg.Definitions.merge(top_words.build_defs(topics_declared_elsewhere=['word-counts']), resources)\n")
    origins = [InProcessCodeLocationOrigin(
        LoadableTargetOrigin(python_file=str(tmp_path / f"{name}.py"), attribute="defs",
                             working_directory=str(REPO_ROOT)), location_name=name)
        for name in ("counting", "ranking")]
    with dg.instance_for_test() as instance, \
            WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origins)) as workspace:
        context = workspace.create_request_context()
        assert {name: entry.load_error for name, entry in context.get_code_location_entries().items()} == {
            "counting": None, "ranking": None}
        graph = context.asset_graph
        # (A workspace's graph keeps the partition mappings of materializable assets only: the
        # topic's own, to its writers, is not there. The one that matters, topic -> reader, is.)
        _assert_chain(graph, writer_mapping=False)
        # The topic is word count's (partitioned by its Kafka partitions) in the workspace; top
        # words' location only refers to it (Dagster's stub for a key it depends on).
        assert graph.get(WORD_COUNTS).partitions_def.get_partition_keys() == ["0", "1"]
        stub = {info.asset_node.repository_handle.location_name:
                bool(info.asset_node.metadata.get("dagster/auto_created_stub_asset"))
                for info in graph.get(WORD_COUNTS).repo_scoped_asset_infos}
        assert stub == {"counting": False, "ranking": True}


def test_a_topic_two_apps_read_and_none_writes_is_declared_once():
    first = word_count.build_app("count-a", word_counts="counts-a")
    second = word_count.build_app("count-b", word_counts="counts-b")
    defs = _with_resources(kstreams_definitions(first, second))
    lines = dg.AssetKey(["kafka", "text_lines"])
    assert len(_specs(defs)[lines]) == 1
    graph = defs.resolve_asset_graph()
    assert graph.get(lines).child_keys == {dg.AssetKey(["count_a", "subtopology_0"]),
                                           dg.AssetKey(["count_b", "subtopology_0"])}


def test_a_topic_two_apps_write_depends_on_both_writers():
    first = top_words.build_app("top-a", top_words="shared-top")
    second = top_words.build_app("top-b", top_words="shared-top", min_count=10)
    defs = _with_resources(kstreams_definitions(first, second))
    shared = dg.AssetKey(["kafka", "shared_top"])
    assert defs.resolve_asset_graph().get(shared).parent_keys == {dg.AssetKey(["top_a", "subtopology_0"]),
                                                                  dg.AssetKey(["top_b", "subtopology_0"])}


def test_apps_that_disagree_on_a_shared_topic_fail_at_load_naming_the_topic_and_both_apps():
    reader = KStreamsApp(top_words.build_topology(), "top-words", {"word-counts": 3})
    with pytest.raises(ValueError, match=r"topic 'word-counts' has 2 partitions in 'word-count' but 3 in 'top-words'"):
        kstreams_definitions(word_count.build_app(), reader)

    class Elsewhere(DagsterKStreamsTranslator):
        def get_asset_key(self, props):
            key = super().get_asset_key(props)
            return key.with_prefix("other") if props.kind is KStreamsAssetKind.SOURCE_TOPIC else key

    reader = KStreamsApp(top_words.build_topology(), "top-words", {"word-counts": 2}, Elsewhere())
    with pytest.raises(ValueError, match=r"topic 'word-counts' is asset kafka/word_counts in 'word-count' but "
                                         r"other/kafka/word_counts in 'top-words'"):
        kstreams_definitions(word_count.build_app(), reader)
    with pytest.raises(ValueError, match="several applications have the app id 'word-count'"):
        kstreams_definitions(word_count.build_app(), word_count.build_app(word_counts="other"))


def test_topics_declared_elsewhere_must_be_inputs_the_app_does_not_write():
    with pytest.raises(ValueError, match=r"topics_declared_elsewhere of 'top-words' names 'top-words', which is not "
                                         r"an input topic it reads and does not write \(its inputs: \['word-counts'\]\)"):
        top_words.build_app(topics_declared_elsewhere=["top-words"])
    with pytest.raises(ValueError, match="names 'nowhere'"):
        top_words.build_app(topics_declared_elsewhere=["nowhere"])


@pytest.mark.parametrize("example", [users_per_country, word_count, click_enrichment, clicks_per_country,
                                     click_regions, top_words],
                         ids=lambda module: module.__name__)
def test_each_example_takes_its_resources_and_workers(example):
    """What a code location of one example passes (the latency and autoscaling benches do):
    resources and elastic workers; the definitions then hold both, with the worker job and sensor."""
    resources = {"kafka": KafkaResource(bootstrap_servers="127.0.0.1:9"), "pyspark": KStreamsSparkResource()}
    defs = example.build_defs(resources=resources, elastic_workers=ElasticWorkers())
    assert set(resources) <= set(defs.resources)
    assert [job.name for job in defs.jobs] and [sensor.name for sensor in defs.sensors]
    defs.resolve_asset_graph()
