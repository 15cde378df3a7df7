"""Every translator hook takes effect, as a dagster-dbt user expects, and none breaks the graph;
the component's ``translation:`` reaches the same specs from YAML (no broker, no Spark)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import dagster as dg
import pytest
from dagster.components.testing import create_defs_folder_sandbox

from dagster_kstreams import DagsterKStreamsTranslator, KafkaResource, KStreamsSparkResource, kstreams_assets
from dagster_kstreams.orchestration.component import KStreamsComponent
from dagster_kstreams.orchestration.translator import KStreamsAssetKind, KStreamsAssetProps

from assets import users_per_country

COMPONENT = "dagster_kstreams.orchestration.component.KStreamsComponent"


def _specs(assets) -> dict[dg.AssetKey, dg.AssetSpec]:
    return {spec.key: spec for item in assets
            for spec in (item.specs if isinstance(item, dg.AssetsDefinition) else [item])}


def _build(translator: DagsterKStreamsTranslator) -> dict[dg.AssetKey, dg.AssetSpec]:
    return _specs(kstreams_assets(topology=users_per_country.build_topology(), app_id="upc",
                                  topic_partitions={"users": 2}, translator=translator))


def _shape(specs: dict[dg.AssetKey, dg.AssetSpec], unkey: Callable[[dg.AssetKey], dg.AssetKey]) -> dict:
    """The graph without the translator's choices: deps (with mapping types) and partitions, by default key."""
    return {unkey(key): (sorted((unkey(dep.asset_key).to_user_string(), type(dep.partition_mapping).__name__)
                                for dep in spec.deps),
                         spec.partitions_def.get_partition_keys())
            for key, spec in specs.items()}


DEFAULT = _build(DagsterKStreamsTranslator())


@dataclass(frozen=True)
class Hook:
    name: str
    override: Callable  # (translator, props) -> value; `super()` is the default translator
    holds: Callable[[dg.AssetSpec, KStreamsAssetProps], bool]
    unkey: Callable[[dg.AssetKey], dg.AssetKey] = lambda key: key


BASE = DagsterKStreamsTranslator()
HOOKS = [
    Hook("get_asset_key", lambda t, props: BASE.get_asset_key(props).with_prefix("streams"),
         lambda spec, props: spec.key.path[0] == "streams", unkey=lambda key: dg.AssetKey(key.path[1:])),
    Hook("get_group_name", lambda t, props: "streaming", lambda spec, props: spec.group_name == "streaming"),
    Hook("get_description", lambda t, props: f"{props.kind.value} {props.name}",
         lambda spec, props: spec.description == f"{props.kind.value} {props.name}"),
    Hook("get_owners", lambda t, props: ["team:streams", "ops@example.com"],
         lambda spec, props: spec.owners == ["team:streams", "ops@example.com"]),
    Hook("get_tags", lambda t, props: {**BASE.get_tags(props), "tier": "gold"},
         lambda spec, props: spec.tags["tier"] == "gold" and spec.tags["dagster_kstreams/app_id"] == "upc"),
    Hook("get_metadata", lambda t, props: {**BASE.get_metadata(props), "runbook": f"https://runbooks/{props.name}"},
         lambda spec, props: spec.metadata["runbook"] == f"https://runbooks/{props.name}"),
    Hook("get_kinds", lambda t, props: {"redpanda"} if props.topic else {"pyspark"},
         lambda spec, props: set(spec.kinds) == ({"redpanda"} if props.topic else {"pyspark"})),
    Hook("get_automation_condition",
         lambda t, props: dg.AutomationCondition.eager() if props.kind is KStreamsAssetKind.SUBTOPOLOGY else None,
         lambda spec, props: (spec.automation_condition is not None) == (props.kind is KStreamsAssetKind.SUBTOPOLOGY)),
]


@pytest.mark.parametrize("hook", HOOKS, ids=[hook.name for hook in HOOKS])
def test_each_translator_hook_takes_effect_on_every_part_and_keeps_the_graph(hook: Hook):
    seen: list[KStreamsAssetProps] = []

    def override(self, props):
        seen.append(props)
        return hook.override(self, props)

    translator = type(f"Override_{hook.name}", (DagsterKStreamsTranslator,), {hook.name: override})()
    specs = _build(translator)
    # Every part went through the hook: 2 topics, 2 sub-topologies, a repartition topic and a store.
    assert {props.kind for props in seen} == set(KStreamsAssetKind)
    props_by_key = {translator.get_asset_key(props): props for props in list(seen)}
    for key, spec in specs.items():
        assert hook.holds(spec, props_by_key[key]), f"{hook.name} not applied to {key.to_user_string()}"
    assert _shape(specs, hook.unkey) == _shape(DEFAULT, lambda key: key)


def test_the_default_spec_has_no_owners_and_no_automation_condition_and_tags_its_app():
    for spec in DEFAULT.values():
        assert spec.owners == [] and spec.automation_condition is None
        assert spec.tags["dagster_kstreams/app_id"] == "upc"


def test_deps_a_translator_adds_stay_beside_the_topology_and_its_partitions_cannot_change():
    audit = dg.AssetKey(["audit", "users_schema"])

    class AddsADep(DagsterKStreamsTranslator):
        def get_asset_spec(self, props):
            spec = super().get_asset_spec(props)
            return spec.replace_attributes(deps=[audit]) if props.kind is KStreamsAssetKind.SUBTOPOLOGY else spec

    specs = _build(AddsADep())
    sub0 = specs[dg.AssetKey(["upc", "subtopology_0"])]
    assert [dep.asset_key for dep in sub0.deps] == [dg.AssetKey(["kafka", "users"]), audit]
    assert isinstance(sub0.deps[0].partition_mapping, dg.IdentityPartitionMapping)

    class OwnPartitions(DagsterKStreamsTranslator):
        def get_asset_spec(self, props):
            return super().get_asset_spec(props).replace_attributes(partitions_def=dg.StaticPartitionsDefinition(["a"]))

    with pytest.raises(ValueError, match=r"the translator gave kafka/users of 'upc' partitions of its own; "
                                         r"they are the Kafka partitions \(or tasks\) \['0', '1'\]"):
        _build(OwnPartitions())


def _component_specs(attributes: dict) -> dict[dg.AssetKey, dg.AssetSpec]:
    with create_defs_folder_sandbox() as sandbox:
        sandbox.scaffold_component(KStreamsComponent, defs_path="upc",
                                   defs_yaml_contents={"type": COMPONENT, "attributes": attributes})
        with sandbox.build_all_defs() as defs:
            return _specs(defs.assets)


def test_component_translation_templates_reach_keys_groups_owners_tags_descriptions_and_metadata():
    specs = _component_specs({
        "topology": "assets.users_per_country:build_topology", "app_id": "upc", "topic_partitions": {"users": 2},
        "translation": {
            "key": "{{ spec.key.to_user_string() if props.topic and kind != 'repartition_topic' "
                   "else 'streams/' + spec.key.to_user_string() }}",
            "group_name": "{{ props.app_id | replace('-', '_') }}_streams",
            "owners": ["team:streams"],
            "tags": {"tier": "gold", "part": "{{ kind }}"},
            "description": "{{ kind }} {{ props.name }} ({{ props.partitions }} partitions)",
            "metadata": {"runbook": "https://runbooks/{{ props.name }}"},
            "automation_condition": "{{ automation_condition.eager() if kind == 'subtopology' else None }}",
        },
    })
    sub0 = dg.AssetKey(["streams", "upc", "subtopology_0"])
    repartition = dg.AssetKey(["streams", "upc", "users_per_country_store_repartition"])
    store = dg.AssetKey(["streams", "upc", "store", "users_per_country_store"])
    sink = dg.AssetKey(["kafka", "users_per_country"])
    assert set(specs) == {dg.AssetKey(["kafka", "users"]), sink, sub0, repartition, store,
                          dg.AssetKey(["streams", "upc", "subtopology_1"])}
    for spec in specs.values():
        assert spec.group_name == "upc_streams" and spec.owners == ["team:streams"]
        assert spec.tags["tier"] == "gold" and spec.tags["dagster_kstreams/app_id"] == "upc"  # merged into the defaults
        assert spec.metadata["runbook"].startswith("https://runbooks/")
        assert spec.metadata["dagster_kstreams/app_id"] == "upc"
    assert specs[sub0].tags["part"] == "subtopology" and specs[sink].tags["part"] == "sink_topic"
    assert specs[sub0].description == "subtopology subtopology_0 (2 partitions)"
    assert specs[store].metadata["runbook"] == "https://runbooks/users-per-country-store"
    assert specs[sub0].automation_condition is not None and specs[sink].automation_condition is None
    # The graph follows the new keys, with the topology's mappings.
    assert [dep.asset_key for dep in specs[repartition].deps] == [sub0]
    (read,) = specs[dg.AssetKey(["streams", "upc", "subtopology_1"])].deps
    assert read.asset_key == repartition and isinstance(read.partition_mapping, dg.IdentityPartitionMapping)
    assert specs[sub0].partitions_def.get_partition_keys() == ["0", "1"]


def test_component_key_prefix_moves_every_key_and_the_deps_follow():
    specs = _component_specs({"topology": "assets.users_per_country:build_topology", "app_id": "upc",
                              "topic_partitions": {"users": 2}, "translation": {"key_prefix": "prod"}})
    assert all(key.path[0] == "prod" for key in specs)
    assert [dep.asset_key for dep in specs[dg.AssetKey(["prod", "upc", "subtopology_0"])].deps] == [
        dg.AssetKey(["prod", "kafka", "users"])]


def test_two_components_chained_by_topics_declared_elsewhere_are_one_graph():
    with create_defs_folder_sandbox() as sandbox:
        sandbox.scaffold_component(KStreamsComponent, defs_path="word_count", defs_yaml_contents={
            "type": COMPONENT, "attributes": {"topology": "assets.word_count:build_topology", "app_id": "word-count",
                                              "topic_partitions": {"text-lines": 2, "word-counts": 2}}})
        sandbox.scaffold_component(KStreamsComponent, defs_path="top_words", defs_yaml_contents={
            "type": COMPONENT, "attributes": {"topology": "assets.top_words:build_topology", "app_id": "top-words",
                                              "topic_partitions": {"word-counts": 2},
                                              "topics_declared_elsewhere": ["word-counts"],
                                              "freshness_seconds": 60}})
        with sandbox.build_all_defs() as defs:
            # The project's other definitions bring the resources (nothing connects at load).
            resources = dg.Definitions(resources={"kafka": KafkaResource(), "pyspark": KStreamsSparkResource()})
            graph = dg.Definitions.merge(defs, resources).resolve_asset_graph()
            checks = {key for checks in defs.asset_checks for key in checks.check_keys}
    topic = dg.AssetKey(["kafka", "word_counts"])
    assert graph.get(topic).parent_keys == {dg.AssetKey(["word_count", "subtopology_1"])}
    assert graph.get(topic).child_keys == {dg.AssetKey(["top_words", "subtopology_0"])}
    assert dg.AssetCheckKey(dg.AssetKey(["top_words", "subtopology_0"]), "freshness") in checks
