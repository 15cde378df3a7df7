"""A Dagster component: one Kafka Streams application declared in YAML (``dg`` projects).

``defs/top_words/defs.yaml``::

    type: dagster_kstreams.orchestration.component.KStreamsComponent
    attributes:
      topology: assets.top_words:build_topology   # a Topology, a StreamsBuilder, or a function returning one
      app_id: top-words
      topic_partitions:
        word-counts: 2
        top-words: 2
      lag_bound: 10000
      freshness_seconds: 300
      topics_declared_elsewhere: [word-counts]   # written (and declared) by the word-count component
      task_timeout_s: 300                        # a running task waits 5 minutes for a broker that is away
      statestore_cache_max_bytes: 0              # Kafka Streams' setting: every store forwards every update
      translation:
        group_name: streaming
        owners: [team:streams]
        tags:
          tier: gold
        # Any attribute can be a template. Topics keep their keys (kafka/<topic>), which the apps
        # that share them must agree on; the app's own parts move under streams/.
        key: "{{ spec.key.to_user_string() if kind in ('source_topic', 'sink_topic') else 'streams/' + spec.key.to_user_string() }}"
        description: "{{ kind }} {{ props.name }} of {{ props.app_id }}"

``translation`` works as in dagster-dbt's and dagster-sling's components: it applies to the spec
the default :class:`DagsterKStreamsTranslator` gives each part, and any of its attributes (``key``,
``key_prefix``, ``group_name``, ``owners``, ``tags``, ``kinds``, ``description``, ``metadata``,
``automation_condition``, ``code_version``, ``deps``) may be a template over

* ``props``: the part's :class:`KStreamsAssetProps` (``props.kind``, ``props.app_id``,
  ``props.name``, ``props.topic``, ``props.partitions``, ``props.subtopology``, ``props.store``),
* ``kind``: ``props.kind`` as a string (``source_topic``, ``subtopology``, ``repartition_topic``,
  ``sink_topic``, ``store``),
* ``spec``: the default spec (``spec.key``, ``spec.group_name``, ...).

``tags`` and ``metadata`` are merged into the defaults; the other attributes replace them.
``deps`` adds deps beside the topology's, which stay, and ``partitions_def`` cannot be set (the
partitions are Kafka's), as with a Python translator. In Python, subclass the component and
override :meth:`KStreamsComponent.get_asset_spec` instead.

Scaffold one with ``dg`` (dagster-dg-cli) in a project whose environment has dagster-kstreams
installed (its ``dagster_dg_cli.registry_modules`` entry point registers the component)::

    dg scaffold defs dagster_kstreams.orchestration.component.KStreamsComponent top_words \
        --topology assets.top_words:build_topology --app-id top-words --partitions 2

which writes ``defs/top_words/defs.yaml`` with the topology, the app id and every input topic of
the topology at ``--partitions`` partitions (edit them to match the broker).

Several components in one project are one graph by asset key: the app that writes a topic declares
it, and a component that reads it names it in ``topics_declared_elsewhere``. The component builds
the same definitions as :func:`build_kstreams_definitions`; the resources (``kafka``, ``pyspark``)
come from the project's other definitions.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import dagster as dg
from dagster.components import Scaffolder, ScaffoldRequest, scaffold_with
from dagster.components.component_scaffolding import scaffold_component
from dagster.components.utils.translation import TranslationFn, TranslationFnResolver
from pydantic import BaseModel, Field

from dagster_kstreams.orchestration.app import DEFAULT_FRESHNESS_SECONDS, DEFAULT_LAG_BOUND
from dagster_kstreams.orchestration.definitions import build_kstreams_definitions
from dagster_kstreams.orchestration.translator import DagsterKStreamsTranslator, KStreamsAssetProps
from dagster_kstreams.processors.record_cache import DEFAULT_CACHE_MAX_BYTES
from dagster_kstreams.spark.client_timeouts import DEFAULT_TASK_TIMEOUT_S
from dagster_kstreams.spark.internal_topics import PURGE_INTERVAL_S
from dagster_kstreams.topology.application import ApplicationTopology
from dagster_kstreams.topology.reference import load_topology as load_topology_and_module
from dagster_kstreams.topology.view import Topology

__all__ = ["KStreamsComponent", "KStreamsComponentScaffolder", "KStreamsScaffoldParams", "load_topology",
           "translation_template_vars"]


def load_topology(reference: str) -> Topology:
    """``"package.module:attribute"`` (or ``"path/to/file.py:attribute"``) -> the topology it names
    (calling it if it is a function). Raises ``ValueError`` (a
    :class:`~dagster_kstreams.topology.reference.TopologyReferenceError`) when it names none.
    """
    topology, _module = load_topology_and_module(reference)
    return topology


def translation_template_vars(props: KStreamsAssetProps) -> dict[str, Any]:
    """What a ``translation`` template sees, besides ``spec``: ``props`` and ``kind``."""
    return {"props": props, "kind": props.kind.value}


class _ComponentTranslator(DagsterKStreamsTranslator):
    """Asks the component for every spec, so that a component subclass's ``get_asset_spec`` applies."""

    def __init__(self, component: "KStreamsComponent"):
        self._component = component

    def get_asset_spec(self, props: KStreamsAssetProps) -> dg.AssetSpec:
        return self._component.get_asset_spec(props)


class KStreamsScaffoldParams(BaseModel):
    """What ``dg scaffold defs ... KStreamsComponent`` asks for (all optional: placeholders otherwise)."""

    topology: Optional[str] = Field(default=None, description="'package.module:attribute' naming the topology")
    app_id: Optional[str] = Field(default=None, description="Kafka Streams application.id")
    partitions: int = Field(default=1, description="Partition count written for each input topic (edit to match)")


class KStreamsComponentScaffolder(Scaffolder[KStreamsScaffoldParams]):
    """Writes a ``defs.yaml``. Given ``--topology``, it loads as it is: the topology (checked to load),
    the app id (``--app-id``, else the topology's module name), and each of the topology's input topics
    at ``--partitions`` partitions. Without, it holds placeholders to fill in."""

    @classmethod
    def get_scaffold_params(cls) -> type[KStreamsScaffoldParams]:
        return KStreamsScaffoldParams

    def scaffold(self, request: ScaffoldRequest[KStreamsScaffoldParams]) -> None:
        params = request.params
        if params.topology is None:
            scaffold_component(request, {"topology": "package.module:build_topology",
                                         "app_id": params.app_id or "my-app", "topic_partitions": {"input-topic": 1}})
            return
        app_id = params.app_id or params.topology.split(":")[0].rsplit(".", 1)[-1].replace("_", "-")
        application = ApplicationTopology(load_topology(params.topology), app_id)
        inputs = list(dict.fromkeys([*application.external_source_topics, *application.global_topics]))
        scaffold_component(request, {"topology": params.topology, "app_id": app_id,
                                     "topic_partitions": {topic: params.partitions for topic in inputs}})


@scaffold_with(KStreamsComponentScaffolder)
class KStreamsComponent(dg.Component, dg.Resolvable, dg.Model):
    """A Kafka Streams application as partitioned assets (sub-topologies, repartition and sink topics, stores)."""

    model_config = {"arbitrary_types_allowed": True}

    topology: str = Field(description="'package.module:attribute' naming a Topology, StreamsBuilder or a function")
    app_id: str = Field(description="Kafka Streams application.id: consumer group and internal topic prefix")
    topic_partitions: dict[str, int] = Field(description="Partitions of each source topic (and optionally sinks)")
    lag_bound: int = Field(default=DEFAULT_LAG_BOUND, description="Lag above which the lag check fails")
    freshness_seconds: int = Field(
        default=DEFAULT_FRESHNESS_SECONDS,
        description="How long a task with input waiting may go without reporting before the freshness check fails")
    topics_declared_elsewhere: list[str] = Field(
        default_factory=list,
        description="Input topics another application writes and declares: depended on by asset key only")
    state_location: Optional[str] = Field(default=None, description="Root of the tasks' checkpoints and state")
    create_sink_topics: bool = Field(default=False, description="Create missing output topics on first run")
    task_timeout_s: float = Field(
        default=DEFAULT_TASK_TIMEOUT_S,
        description="How long a running task waits for an unavailable broker (a restart) before it fails, in seconds")
    statestore_cache_max_bytes: int = Field(
        default=DEFAULT_CACHE_MAX_BYTES,
        description="Kafka Streams' statestore.cache.max.bytes: 0 turns every store's record cache off (every update "
                    "forwarded); any other size leaves it to each store's Materialized")
    repartition_purge_interval_s: float = Field(
        default=PURGE_INTERVAL_S,
        description="Kafka Streams' repartition.purge.interval.ms, in seconds: how often a task deletes what it "
                    "consumed of its repartition topics")
    translation: Annotated[
        Optional[TranslationFn[KStreamsAssetProps]],
        TranslationFnResolver(template_vars_for_translation_fn=translation_template_vars),
    ] = Field(default=None, description="Asset attributes (templates over props, kind and spec) applied to each part")

    def get_asset_spec(self, props: KStreamsAssetProps) -> dg.AssetSpec:
        """The default translator's spec with ``translation`` applied; override in a subclass for more."""
        spec = DagsterKStreamsTranslator().get_asset_spec(props)
        return spec if self.translation is None else self.translation(spec, props)

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        return build_kstreams_definitions(
            topology=load_topology(self.topology),
            app_id=self.app_id,
            topic_partitions=self.topic_partitions,
            translator=_ComponentTranslator(self),
            lag_bound=self.lag_bound,
            freshness_seconds=self.freshness_seconds,
            topics_declared_elsewhere=self.topics_declared_elsewhere,
            state_location=self.state_location,
            create_sink_topics=self.create_sink_topics,
            task_timeout_s=self.task_timeout_s,
            statestore_cache_max_bytes=self.statestore_cache_max_bytes,
            repartition_purge_interval_s=self.repartition_purge_interval_s,
        )
