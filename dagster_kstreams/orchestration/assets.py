"""Topologies become Dagster assets: :func:`kstreams_assets` (one application), :func:`assets_of` (several).

The graph (keys and everything else but deps and partitions come from the translator):

* every topic the topology reads but does not write is an external asset (a source), unless
  another application of the same definitions writes it (then it is that application's sink) or
  the app was told it is declared elsewhere (``topics_declared_elsewhere``: then it is only a key);
* every sub-topology is an asset partitioned by its tasks ``"0".."n-1"``, computed by one
  ``@multi_asset`` together with the queryable state stores it holds (one shard per task);
* every repartition topic and every sink topic is an asset partitioned by its Kafka partitions,
  downstream of the sub-topologies that write it. The task that writes records into it reports a
  materialization for each partition it wrote to, so these assets have no compute of their own.

Partition mappings and specs are the app model's (:class:`~dagster_kstreams.orchestration.app.KStreamsApp`);
materializing partition ``p`` of a sub-topology runs task ``s_p``
(:func:`~dagster_kstreams.orchestration.execution.materialize_task_partition`).

Several applications make one graph: each topic is declared once, by the application that writes
it (a topic several write depends on all their writers), and a reader's sub-topology depends on it
with the same identity mapping as on its own topics. Apps sharing a topic must agree on its
partition count and on its asset key; :func:`assets_of` raises an error naming the topic, both
apps and both values otherwise.

Partition counts are declared (``topic_partitions``), so definitions load and validate with no
broker; each run compares them with the broker and fails with both counts if they differ.
"""

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional, Union

import dagster as dg
from dagster import AssetExecutionContext

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.execution import materialize_task_partition
from dagster_kstreams.orchestration.translator import DagsterKStreamsTranslator, sanitize_name

__all__ = ["assets_of", "kstreams_assets", "topic_specs_of"]


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
    fields of :class:`KStreamsApp` (``lag_bound``, ``state_location``, ``max_records_per_batch``, ``processing_guarantee``,
    ``statestore_cache_max_bytes``, ``repartition_purge_interval_s``, ``create_sink_topics``, ``kafka_resource_key``,
    ``spark_resource_key``).
    """
    app = KStreamsApp(topology, app_id, topic_partitions, translator or DagsterKStreamsTranslator(), **options)
    return assets_of(app)


def assets_of(*apps: KStreamsApp) -> list[Union[dg.AssetsDefinition, dg.AssetSpec]]:
    """Every topic of the apps once (:func:`topic_specs_of`), then one multi-asset per sub-topology."""
    return [*topic_specs_of(apps),
            *(_subtopology_asset(app, sub_id) for app in apps for sub_id in app.application.subtopology_ids)]


def topic_specs_of(apps: Sequence[KStreamsApp]) -> list[dg.AssetSpec]:
    """One spec per topic the apps declare: a writer's (with the deps of every writer), or else
    the first reader's. Raises ``ValueError`` if two apps share an app id, or disagree on a shared
    topic's asset key or partition count."""
    app_ids = [app.app_id for app in apps]
    repeated = sorted({app_id for app_id in app_ids if app_ids.count(app_id) > 1})
    if repeated:
        raise ValueError(f"several applications have the app id {repeated[0]!r}: each needs its own")
    declared: dict[str, list[tuple[KStreamsApp, dg.AssetSpec]]] = {}
    for app in apps:
        for topic, spec in app.topic_specs().items():
            declared.setdefault(topic, []).append((app, spec))
    for topic in sorted({topic for app in apps for topic in app.application.partition_counts}):
        _check_apps_agree_on(topic, [app for app in apps if topic in app.application.partition_counts])
    specs = []
    for topic, declarations in declared.items():
        writers = [spec for app, spec in declarations if app.writes(topic)]
        if not writers:
            specs.append(declarations[0][1])
            continue
        deps = {dep.asset_key: dep for spec in writers for dep in spec.deps}
        specs.append(writers[0].replace_attributes(deps=list(deps.values())))
    return specs


def _check_apps_agree_on(topic: str, apps: list[KStreamsApp]) -> None:
    first = apps[0]
    for other in apps[1:]:
        counts = first.application.partition_counts[topic], other.application.partition_counts[topic]
        if counts[0] != counts[1]:
            raise ValueError(f"topic {topic!r} has {counts[0]} partitions in {first.app_id!r} but {counts[1]} in "
                             f"{other.app_id!r}: declare the same count in both topic_partitions")
        keys = first.topic_key(topic), other.topic_key(topic)
        if keys[0] != keys[1]:
            raise ValueError(f"topic {topic!r} is asset {keys[0].to_user_string()} in {first.app_id!r} but "
                             f"{keys[1].to_user_string()} in {other.app_id!r}: applications that share a topic need "
                             "translators that give it the same key")


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
