"""A topology becomes Dagster assets: :func:`kstreams_assets`.

The graph (keys and everything else but deps and partitions come from the translator):

* every topic the topology reads but does not write is an external asset (a source);
* every sub-topology is an asset partitioned by its tasks ``"0".."n-1"``, computed by one
  ``@multi_asset`` together with the queryable state stores it holds (one shard per task);
* every repartition topic and every sink topic is an asset partitioned by its Kafka partitions,
  downstream of the sub-topologies that write it. The task that writes records into it reports a
  materialization for each partition it wrote to, so these assets have no compute of their own.

Partition mappings and specs are the app model's (:class:`~dagster_kstreams.orchestration.app.KStreamsApp`);
materializing partition ``p`` of a sub-topology runs task ``s_p``
(:func:`~dagster_kstreams.orchestration.execution.materialize_task_partition`).

Partition counts are declared (``topic_partitions``), so definitions load and validate with no
broker; each run compares them with the broker and fails with both counts if they differ.
"""

from collections.abc import Iterator, Mapping
from typing import Any, Optional, Union

import dagster as dg
from dagster import AssetExecutionContext

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.execution import materialize_task_partition
from dagster_kstreams.orchestration.translator import DagsterKStreamsTranslator, sanitize_name

__all__ = ["assets_of", "kstreams_assets"]


def kstreams_assets(
    *,
    topology: Any,
    app_id: str,
    topic_partitions: Mapping[str, int],
    translator: Optional[DagsterKStreamsTranslator] = None,
    **options: Any,
) -> list[Union[dg.AssetsDefinition, dg.AssetSpec]]:
    """The assets of one Kafka Streams application (see the module docstring).

    ``topology``: a built :class:`Topology` (or its ``StreamsBuilder``). ``app_id``: Kafka Streams'
    ``application.id`` (consumer group, internal topic prefix). ``topic_partitions``: partition
    count of every external source topic, and optionally of sink topics. ``options`` are the
    fields of :class:`KStreamsApp` (``lag_bound``, ``state_location``, ``max_records_per_batch``,
    ``create_sink_topics``, ``kafka_resource_key``, ``spark_resource_key``).
    """
    app = KStreamsApp(topology, app_id, topic_partitions, translator or DagsterKStreamsTranslator(), **options)
    return assets_of(app)


def assets_of(app: KStreamsApp) -> list[Union[dg.AssetsDefinition, dg.AssetSpec]]:
    """The topic specs, then one multi-asset per sub-topology."""
    return [*app.topic_specs(), *(_subtopology_asset(app, sub_id) for sub_id in app.application.subtopology_ids)]


def _subtopology_asset(app: KStreamsApp, subtopology_id: int) -> dg.AssetsDefinition:
    @dg.multi_asset(
        name=f"{sanitize_name(app.app_id)}_subtopology_{subtopology_id}",
        specs=app.subtopology_specs(subtopology_id),
        required_resource_keys={app.kafka_resource_key, app.spark_resource_key},
        can_subset=True,  # a sub-topology can be selected without its stores (the task runs all the same)
        op_tags={"dagster_kstreams/app_id": sanitize_name(app.app_id),
                 "dagster_kstreams/subtopology": str(subtopology_id)},
    )
    def run_subtopology_task(context: AssetExecutionContext) -> Iterator[dg.MaterializeResult]:
        yield from materialize_task_partition(context, app, subtopology_id)

    return run_subtopology_task
