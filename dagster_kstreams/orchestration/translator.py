"""From a topology's parts to Dagster asset specs, in the style of dagster-dbt's and dagster-sling's translators.

The factory (:func:`dagster_kstreams.orchestration.assets.kstreams_assets`) walks a topology and
asks :meth:`DagsterKStreamsTranslator.get_asset_spec` for one :class:`dagster.AssetSpec` per part:
each external source topic, each sub-topology, each repartition topic, each sink topic and each
queryable state store. Override that one hook to change keys, groups, owners, tags, kinds,
descriptions or metadata::

    class MyTranslator(DagsterKStreamsTranslator):
        def get_asset_spec(self, props):
            spec = super().get_asset_spec(props)
            return spec.replace_attributes(owners=["team:streams"])

The factory then sets what must stay true to the topology itself (``deps`` with their partition
mappings, and ``partitions_def``), so an override cannot break the graph.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
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
    for an application's own parts; ``kafka/<topic>`` for the external source and sink topics
    (so an application that writes a topic and another that reads it meet in one graph)."""

    def get_asset_spec(self, props: KStreamsAssetProps) -> dg.AssetSpec:
        return dg.AssetSpec(
            key=self.get_asset_key(props),
            group_name=self.get_group_name(props),
            description=self.get_description(props),
            metadata=self.get_metadata(props),
            kinds=self.get_kinds(props),
            tags={"dagster_kstreams/app_id": sanitize_name(props.app_id)[:63]},  # Dagster caps tag values at 63
        )

    # The pieces below are what get_asset_spec is made of; overriding get_asset_spec alone is enough.
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

    def get_kinds(self, props: KStreamsAssetProps) -> set[str]:
        if props.kind is KStreamsAssetKind.SUBTOPOLOGY:
            return {"kafka", "spark"}
        if props.kind is KStreamsAssetKind.STORE:
            return {"spark"}
        return {"kafka"}

    def get_description(self, props: KStreamsAssetProps) -> str:
        if props.kind is KStreamsAssetKind.SUBTOPOLOGY:
            assert props.subtopology is not None
            sources = ", ".join(props.subtopology.source_topic_names)
            # describe() of this sub-topology alone, exactly as Kafka Streams prints it.
            described = str(props.topology.describe().subtopologies[props.subtopology.id]).rstrip()
            return (
                f"Sub-topology {props.subtopology.id} of application `{props.app_id}`: {props.partitions} "
                f"task(s), task `{props.subtopology.id}_p` reads partition p of {sources}. Materializing "
                f"partition p runs that task on Spark.\n\n```\n{described}\n```"
            )
        if props.kind is KStreamsAssetKind.REPARTITION_TOPIC:
            return (f"Repartition topic `{props.topic}`: written by every task of the sub-topology before it "
                    "(keyed by the new key), read partition by partition by the one after it.")
        if props.kind is KStreamsAssetKind.STORE:
            return f"State store `{props.name}`, one shard per task, kept in the tasks' Spark checkpoints."
        if props.kind is KStreamsAssetKind.SOURCE_TOPIC:
            return f"Kafka topic `{props.topic}` (external input of `{props.app_id}`)."
        return f"Kafka topic `{props.topic}` (output of `{props.app_id}`)."

    def get_metadata(self, props: KStreamsAssetProps) -> dict[str, object]:
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
