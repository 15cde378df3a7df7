"""From a topology's parts to Dagster asset specs, in the style of dagster-dbt's and dagster-sling's translators.

The factory (:class:`~dagster_kstreams.orchestration.app.KStreamsApp`) walks a topology and asks
:meth:`DagsterKStreamsTranslator.get_asset_spec` for one :class:`dagster.AssetSpec` per part: each
external source topic, each sub-topology, each repartition topic, each sink topic and each
queryable state store. ``get_asset_spec`` is assembled from small hooks, and overriding any one of
them is enough::

    class MyTranslator(DagsterKStreamsTranslator):
        def get_asset_key(self, props):          # kafka/<topic> -> streams/<topic>, ...
            return super().get_asset_key(props).with_prefix("streams")

        def get_group_name(self, props):         # one group for every application
            return "streaming"

        def get_owners(self, props):
            return ["team:streams"]

        def get_tags(self, props):               # keeps the default tags, adds one
            return {**super().get_tags(props), "tier": "gold"}

        def get_automation_condition(self, props):
            return None                         # workers and the lag sensor drive the tasks

Hooks: ``get_asset_key``, ``get_group_name``, ``get_description``, ``get_owners``, ``get_tags``,
``get_metadata``, ``get_kinds``, ``get_automation_condition``. Each receives a
:class:`KStreamsAssetProps` (``props.kind`` says which part it is). Overriding ``get_asset_spec``
itself also works, for changes no hook covers.

The factory then sets what must stay true to the topology itself: ``deps`` (with their partition
mappings: task ``p`` reads partition ``p``) and ``partitions_def`` (the Kafka partitions). Deps a
translator adds are kept beside the topology's; deps it drops come back; a partitions definition it
sets is an error, since an asset's partitions are its topic's or its tasks'.

A topic's key is what joins applications into one graph: an application that reads a topic another
one writes depends on the writer's asset through that key (see
:func:`~dagster_kstreams.orchestration.definitions.kstreams_definitions`), so translators of
applications that share topics must give those topics the same key (the default ``kafka/<topic>``
does).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from collections.abc import Mapping, Sequence
from typing import Optional

import dagster as dg

from dagster_kstreams.topology.node_specs import StoreSpec
from dagster_kstreams.topology.view import Subtopology, Topology

__all__ = ["DagsterKStreamsTranslator", "KStreamsAssetKind", "KStreamsAssetProps", "sanitize_name"]

# Metadata keys every spec carries, so tools (and the scaling layer) can find the Kafka object behind an asset.
METADATA_APP_ID = "dagster_kstreams/app_id"
METADATA_TOPIC = "dagster_kstreams/topic"
METADATA_SUBTOPOLOGY = "dagster_kstreams/subtopology"
METADATA_STORE = "dagster_kstreams/store"
METADATA_PARTITIONS = "dagster_kstreams/partitions"
TAG_APP_ID = "dagster_kstreams/app_id"


class KStreamsAssetKind(enum.Enum):
    SOURCE_TOPIC = "source_topic"
    SUBTOPOLOGY = "subtopology"
    REPARTITION_TOPIC = "repartition_topic"
    SINK_TOPIC = "sink_topic"
    STORE = "store"


@dataclass(frozen=True)
class KStreamsAssetProps:
    """One part of a topology that becomes an asset.

    ``topic`` is the real Kafka topic name (repartition topics carry the ``<app_id>-`` prefix);
    ``name`` is the topology's own name for the part (the unprefixed repartition name, the store
    name, or ``subtopology_<id>``). ``partitions`` is the number of Kafka partitions (tasks for
    a sub-topology).
    """

    kind: KStreamsAssetKind
    app_id: str
    name: str
    partitions: int
    topology: Topology
    topic: Optional[str] = None
    subtopology: Optional[Subtopology] = None
    store: Optional[StoreSpec] = None


def sanitize_name(name: str) -> str:
    """An asset key part or group name Dagster accepts (letters, digits, underscores)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


class DagsterKStreamsTranslator:
    """Default names: ``<app>/subtopology_<n>``, ``<app>/<name>_repartition``, ``<app>/store/<name>``
    for an application's own parts; ``kafka/<topic>`` for the source and sink topics (so an
    application that writes a topic and another that reads it meet in one graph). Group: the app id.
    No owners and no automation condition (the lag sensor's workers run the tasks)."""

    def get_asset_spec(self, props: KStreamsAssetProps) -> dg.AssetSpec:
        """The spec of one part, from the hooks below."""
        return dg.AssetSpec(
            key=self.get_asset_key(props),
            group_name=self.get_group_name(props),
            description=self.get_description(props),
            metadata=self.get_metadata(props),
            kinds=self.get_kinds(props),
            owners=self.get_owners(props),
            tags=self.get_tags(props),
            automation_condition=self.get_automation_condition(props),
        )

    def get_asset_key(self, props: KStreamsAssetProps) -> dg.AssetKey:
        app = sanitize_name(props.app_id)
        if props.kind is KStreamsAssetKind.SUBTOPOLOGY:
            return dg.AssetKey([app, props.name])
        if props.kind is KStreamsAssetKind.REPARTITION_TOPIC:
            return dg.AssetKey([app, sanitize_name(props.name)])  # "<name>-repartition" -> "<name>_repartition"
        if props.kind is KStreamsAssetKind.STORE:
            return dg.AssetKey([app, "store", sanitize_name(props.name)])
        return dg.AssetKey(["kafka", sanitize_name(props.topic or props.name)])

    def get_group_name(self, props: KStreamsAssetProps) -> str:
        return sanitize_name(props.app_id)

    def get_owners(self, props: KStreamsAssetProps) -> Sequence[str]:
        """Users (emails) or teams (``team:name``) who own the asset; none by default."""
        return []

    def get_tags(self, props: KStreamsAssetProps) -> Mapping[str, str]:
        """``dagster_kstreams/app_id``: the application (Dagster caps tag values at 63 characters)."""
        return {TAG_APP_ID: sanitize_name(props.app_id)[:63]}

    def get_automation_condition(self, props: KStreamsAssetProps) -> Optional[dg.AutomationCondition]:
        """None: a stream's tasks run continuously in worker runs, launched by the lag sensor."""
        return None

    def get_kinds(self, props: KStreamsAssetProps) -> set[str]:
        if props.kind is KStreamsAssetKind.SUBTOPOLOGY:
            return {"kafka", "spark"}
        if props.kind is KStreamsAssetKind.STORE:
            return {"spark"}
        return {"kafka"}

    def get_description(self, props: KStreamsAssetProps) -> str:
        if props.kind is KStreamsAssetKind.SUBTOPOLOGY:
            assert props.subtopology is not None
            # A pattern source's topics are resolved with the partition counts: named by its pattern here.
            sources = ", ".join([*props.subtopology.source_topic_names,
                                 *(f"each topic matching `{node.pattern}`" for node in props.subtopology.nodes
                                   if node.pattern is not None)])
            # describe() of this sub-topology alone, exactly as Kafka Streams prints it.
            described = next(str(part) for part in props.topology.describe().subtopologies
                             if part.id == props.subtopology.id).rstrip()
            return (
                f"Sub-topology {props.subtopology.id} of application `{props.app_id}`: {props.partitions} "
                f"task(s), task `{props.subtopology.id}_p` reads partition p of {sources}. Materializing "
                f"partition p runs that task on Spark.\n\n```\n{described}\n```"
            )
        fk_topic = props.kind is KStreamsAssetKind.REPARTITION_TOPIC and props.name.endswith("-topic")
        if fk_topic and "SUBSCRIPTION-REGISTRATION" in props.name.upper():
            return (f"Subscription-registration topic `{props.topic}` of a foreign-key join: the left table's "
                    "rows, keyed by foreign key, for the tasks of the right table's sub-topology.")
        if fk_topic and "SUBSCRIPTION-RESPONSE" in props.name.upper():
            return (f"Subscription-response topic `{props.topic}` of a foreign-key join: the right table's "
                    "answers, keyed by the left key, read back by the left table's sub-topology (not drawn as "
                    "a dependency: the asset graph has no cycles).")
        if props.kind is KStreamsAssetKind.REPARTITION_TOPIC:
            return (f"Repartition topic `{props.topic}`: written by every task of the sub-topology before it "
                    "(keyed by the new key), read partition by partition by the one after it.")
        if props.kind is KStreamsAssetKind.STORE:
            return f"State store `{props.name}`, one shard per task, kept in the tasks' Spark checkpoints."
        if props.kind is KStreamsAssetKind.SOURCE_TOPIC:
            return f"Kafka topic `{props.topic}` (external input of `{props.app_id}`)."
        return f"Kafka topic `{props.topic}` (output of `{props.app_id}`)."

    def get_metadata(self, props: KStreamsAssetProps) -> Mapping[str, object]:
        metadata: dict[str, object] = {
            METADATA_APP_ID: props.app_id,
            METADATA_PARTITIONS: props.partitions,
        }
        if props.topic is not None:
            metadata[METADATA_TOPIC] = props.topic
        if props.subtopology is not None:
            metadata[METADATA_SUBTOPOLOGY] = props.subtopology.id
        if props.store is not None:
            metadata[METADATA_STORE] = props.store.name
        return metadata
