"""A topology becomes Dagster assets: :func:`kstreams_assets` and :func:`build_kstreams_definitions`.

The graph (keys and everything else but deps and partitions come from the translator):

* every topic the topology reads but does not write is an external asset (a source);
* every sub-topology is an asset partitioned by its tasks ``"0".."n-1"``, computed by one
  ``@multi_asset`` together with the queryable state stores it holds (one shard per task);
* every repartition topic and every sink topic is an asset partitioned by its Kafka partitions,
  downstream of the sub-topologies that write it. The task that writes records into it reports a
  materialization for each partition it wrote to, so these assets have no compute of their own.

Partition mappings say what Kafka does: task ``p`` reads partition ``p`` of each of its input
topics (identity), and any task may write any partition of an output or repartition topic (all).

Partition counts are declared (``topic_partitions``), so definitions load and validate with no
broker; each run compares them with the broker and fails with both counts if they differ.
"""


from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import dagster as dg
from dagster import AssetCheckExecutionContext, AssetExecutionContext

from dagster_kstreams.orchestration.translator import (
    DagsterKStreamsTranslator,
    KStreamsAssetKind,
    KStreamsAssetProps,
    sanitize_name,
)
from dagster_kstreams.topology.view import Topology, internal_topic_name

__all__ = [
    "KStreamsApp",
    "build_kstreams_definitions",
    "kstreams_asset_checks",
    "kstreams_assets",
    "LAG_CHECK_NAME",
]

LAG_CHECK_NAME = "lag_within_bound"
DEFAULT_LAG_BOUND = 10_000


def task_partitions(count: int) -> dg.StaticPartitionsDefinition:
    """Kafka partitions (or tasks) ``"0".."count-1"``."""
    return dg.StaticPartitionsDefinition([str(partition) for partition in range(count)])


def check_runnable(topology: Topology, app_id: str) -> None:
    """Compile every sub-topology for the Spark runner now, at definition load, so that an
    operation it cannot run with Kafka Streams' semantics fails here, naming the processor,
    rather than in a run (``UnsupportedTopologyError``)."""
    from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology

    try:
        compile_topology(topology, app_id).check()
    except UnsupportedTopologyError as error:
        raise UnsupportedTopologyError(f"application {app_id!r} cannot run on Spark: {error}") from error


@dataclass
class KStreamsApp:
    """One application (topology + app id) laid out as assets: keys, partition counts, specs.

    Built once at definition load; the sub-topology assets, the asset checks and the worker
    (scaling) use it to find the asset of a topic, task or store.
    """

    topology: Topology
    app_id: str
    topic_partitions: Mapping[str, int]
    translator: DagsterKStreamsTranslator = field(default_factory=DagsterKStreamsTranslator)
    lag_bound: int = DEFAULT_LAG_BOUND
    state_location: Optional[str] = None
    max_records_per_batch: Optional[int] = 200_000
    create_sink_topics: bool = False
    kafka_resource_key: str = "kafka"
    spark_resource_key: str = "pyspark"

    def __post_init__(self) -> None:
        if hasattr(self.topology, "build") and not isinstance(self.topology, Topology):
            self.topology = self.topology.build()  # a StreamsBuilder
        if not isinstance(self.topology, Topology):
            raise TypeError(f"topology must be a Topology or a StreamsBuilder, got {type(self.topology).__name__}")
        if self.lag_bound < 0:
            raise ValueError(f"lag_bound must be >= 0, got {self.lag_bound}")
        # Kafka Streams' rules (repartition counts, co-partitioning) on the declared counts: a
        # missing source count or a co-partitioning mismatch is an error here, at load.
        self.partition_counts: dict[str, int] = self.topology.partition_counts(self.topic_partitions)
        check_runnable(self.topology, self.app_id)
        self.task_counts: dict[int, int] = self.topology.task_counts(self.topic_partitions)
        self.writers: dict[str, list[int]] = {}  # view topic name -> sub-topologies writing it
        self.readers: dict[str, list[int]] = {}
        for sub in self.topology.subtopologies:
            for topic in (*sub.sink_topics, *sub.repartition_sink_topics):
                self.writers.setdefault(topic, []).append(sub.id)
            for topic in sub.source_topic_names:
                self.readers.setdefault(topic, []).append(sub.id)
        for topic, writers in self.writers.items():
            if topic not in self.partition_counts:
                # An output topic nobody declared: as many partitions as its writers have tasks.
                self.partition_counts[topic] = self.topic_partitions.get(
                    topic, max(self.task_counts[sub] for sub in writers))
        self._specs = self._build_specs()

    # -- names ---------------------------------------------------------------------------
    def kafka_topic(self, topic: str) -> str:
        """The real topic behind a topology topic name (repartition topics get the app id prefix)."""
        return internal_topic_name(self.app_id, topic) if topic in self.topology.repartition_topics else topic

    def subtopology_key(self, subtopology_id: int) -> dg.AssetKey:
        return self._specs[("subtopology", subtopology_id)].key

    def topic_key(self, topic: str) -> dg.AssetKey:
        """Key of a topic, by its topology name or its real Kafka name."""
        for name in self.partition_counts:
            if topic in (name, self.kafka_topic(name)):
                return self._specs[("topic", name)].key
        raise KeyError(f"application {self.app_id!r} has no topic {topic!r}")

    def store_key(self, store_name: str) -> dg.AssetKey:
        return self._specs[("store", store_name)].key

    def queryable_stores(self, subtopology_id: int) -> list[str]:
        return [store.name for store in self.topology.subtopology(subtopology_id).state_stores if store.queryable]

    def upstream_first(self) -> list[int]:
        """Sub-topology ids, each after every sub-topology that writes a topic it reads (Kafka
        Streams' numbering does not promise that), so one pass over them moves records end to end."""
        ordered: list[int] = []
        remaining = [sub.id for sub in self.topology.subtopologies]
        while remaining:
            ready = [sub_id for sub_id in remaining
                     if all(writer in ordered or writer == sub_id
                            for topic in self.topology.subtopology(sub_id).source_topic_names
                            for writer in self.writers.get(topic, []))]
            if not ready:  # a cycle through topics: keep Kafka Streams' order for the rest
                ready = remaining[:1]
            ordered.append(ready[0])
            remaining.remove(ready[0])
        return ordered

    def external_source_topics(self) -> list[str]:
        return [topic for topic in self.readers if topic not in self.writers]

    def declared_topics(self) -> dict[str, int]:
        """Real Kafka topics whose partition count the user declared (sources and given sinks)."""
        return {topic: count for topic, count in self.topic_partitions.items() if topic in self.partition_counts}

    # -- specs -----------------------------------------------------------------------------
    def _props(self, kind: KStreamsAssetKind, name: str, partitions: int, **extra: Any) -> KStreamsAssetProps:
        return KStreamsAssetProps(kind=kind, app_id=self.app_id, name=name, partitions=partitions,
                                  topology=self.topology, **extra)

    def _build_specs(self) -> dict[tuple[str, Any], dg.AssetSpec]:
        specs: dict[tuple[str, Any], dg.AssetSpec] = {}
        for topic, count in self.partition_counts.items():
            if topic in self.topology.repartition_topics:
                kind = KStreamsAssetKind.REPARTITION_TOPIC
            elif topic in self.writers:
                kind = KStreamsAssetKind.SINK_TOPIC
            else:
                kind = KStreamsAssetKind.SOURCE_TOPIC
            specs[("topic", topic)] = self.translator.get_asset_spec(
                self._props(kind, topic, count, topic=self.kafka_topic(topic)))
        for sub in self.topology.subtopologies:
            count = self.task_counts[sub.id]
            specs[("subtopology", sub.id)] = self.translator.get_asset_spec(
                self._props(KStreamsAssetKind.SUBTOPOLOGY, f"subtopology_{sub.id}", count, subtopology=sub))
            for store in sub.state_stores:
                if store.queryable:
                    specs[("store", store.name)] = self.translator.get_asset_spec(
                        self._props(KStreamsAssetKind.STORE, store.name, count, subtopology=sub, store=store))
        # What the topology dictates, whatever the translator returned.
        for (what, name), spec in list(specs.items()):
            if what == "topic":
                deps = [dg.AssetDep(specs[("subtopology", writer)].key, partition_mapping=dg.AllPartitionMapping())
                        for writer in self.writers.get(name, [])]
                partitions = task_partitions(self.partition_counts[name])
            elif what == "subtopology":
                deps = [dg.AssetDep(specs[("topic", topic)].key, partition_mapping=dg.IdentityPartitionMapping())
                        for topic in dict.fromkeys(self.topology.subtopology(name).source_topic_names)]
                partitions = task_partitions(self.task_counts[name])
            else:  # a store: computed with its sub-topology, shard p by task p, from the same inputs
                sub = self.topology.subtopology_of_store(name)
                deps = [dg.AssetDep(specs[("topic", topic)].key, partition_mapping=dg.IdentityPartitionMapping())
                        for topic in dict.fromkeys(sub.source_topic_names)]
                partitions = task_partitions(self.task_counts[sub.id])
            specs[(what, name)] = spec.replace_attributes(deps=deps, partitions_def=partitions)
        keys = [spec.key for spec in specs.values()]
        duplicates = sorted({key.to_user_string() for key in keys if keys.count(key) > 1})
        if duplicates:
            raise ValueError(f"the translator gave several parts of {self.app_id!r} the same asset key: {duplicates}")
        return specs

    def topic_specs(self) -> list[dg.AssetSpec]:
        return [spec for (what, _), spec in self._specs.items() if what == "topic"]

    def subtopology_specs(self, subtopology_id: int) -> list[dg.AssetSpec]:
        """The sub-topology's own spec first, then its queryable stores'."""
        return [self._specs[("subtopology", subtopology_id)],
                *(self._specs[("store", store)] for store in self.queryable_stores(subtopology_id))]


def _subtopology_asset(app: KStreamsApp, subtopology_id: int) -> dg.AssetsDefinition:
    specs = app.subtopology_specs(subtopology_id)

    @dg.multi_asset(
        name=f"{sanitize_name(app.app_id)}_subtopology_{subtopology_id}",
        specs=specs,
        required_resource_keys={app.kafka_resource_key, app.spark_resource_key},
        can_subset=True,  # a sub-topology can be selected without its stores (the task runs all the same)
        op_tags={"dagster_kstreams/app_id": sanitize_name(app.app_id),
                 "dagster_kstreams/subtopology": str(subtopology_id)},
    )
    def run_subtopology_task(context: AssetExecutionContext) -> Iterator[dg.MaterializeResult]:
        from dagster_kstreams.orchestration.execution import materialize_task_partition

        yield from materialize_task_partition(context, app, subtopology_id)

    return run_subtopology_task


def _lag_check(app: KStreamsApp, subtopology_id: int) -> dg.AssetChecksDefinition:
    sub = app.topology.subtopology(subtopology_id)
    topics = [app.kafka_topic(topic) for topic in sub.source_topic_names]
    repartition_topics = {app.kafka_topic(topic) for topic in sub.repartition_source_topics}

    @dg.asset_check(
        asset=app.subtopology_key(subtopology_id),
        name=LAG_CHECK_NAME,
        description=(f"Records of {', '.join(topics)} not yet processed by the tasks of sub-topology {subtopology_id} "
                     f"(consumer group {app.app_id!r}) stay within {app.lag_bound}."),
        required_resource_keys={app.kafka_resource_key},
    )
    def lag_within_bound(context: AssetCheckExecutionContext) -> dg.AssetCheckResult:
        admin = getattr(context.resources, app.kafka_resource_key).admin()
        existing = admin.list_topics()
        # A repartition topic that does not exist yet holds nothing to process; an input topic must exist.
        missing = [topic for topic in topics if topic not in existing and topic not in repartition_topics]
        topics_present = [topic for topic in topics if topic in existing]
        if missing:
            return dg.AssetCheckResult(
                passed=False, severity=dg.AssetCheckSeverity.WARN,
                description=f"topic(s) {', '.join(missing)} do not exist yet", metadata={"missing_topics": missing})
        lag_by_task: dict[str, int] = {}
        lags = admin.lag(app.app_id, topics_present) if topics_present else {}
        for tp, lag in lags.items():
            task = f"{subtopology_id}_{tp.partition}"
            lag_by_task[task] = lag_by_task.get(task, 0) + lag
        total = sum(lag_by_task.values())
        # The input topics are external assets: observe them (end offset and lag per partition),
        # so the UI plots how fast input arrives next to how fast the tasks take it.
        external = [topic for topic in topics_present if topic in app.external_source_topics()]
        for tp, end_offset in (admin.end_offsets(external) if external else {}).items():
            context.op_execution_context.log_event(dg.AssetObservation(
                app.topic_key(tp.topic), partition=str(tp.partition),
                metadata={"end_offset": dg.MetadataValue.int(end_offset),
                          "lag": dg.MetadataValue.int(lags.get(tp, 0)),
                          "consumer_group": dg.MetadataValue.text(app.app_id)}))
        return dg.AssetCheckResult(
            passed=total <= app.lag_bound,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "total_lag": dg.MetadataValue.int(total),
                "max_task_lag": dg.MetadataValue.int(max(lag_by_task.values(), default=0)),
                "lag_bound": dg.MetadataValue.int(app.lag_bound),
                "lag_by_task": dg.MetadataValue.json(dict(sorted(lag_by_task.items()))),
            },
        )

    return lag_within_bound


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
    return _assets_of(app)


def _assets_of(app: KStreamsApp) -> list[Union[dg.AssetsDefinition, dg.AssetSpec]]:
    return [*app.topic_specs(), *(_subtopology_asset(app, sub.id) for sub in app.topology.subtopologies)]


def kstreams_asset_checks(app: KStreamsApp) -> list[dg.AssetChecksDefinition]:
    """One ``lag_within_bound`` check per sub-topology."""
    return [_lag_check(app, sub.id) for sub in app.topology.subtopologies]


def build_kstreams_definitions(
    *,
    topology: Any,
    app_id: str,
    topic_partitions: Mapping[str, int],
    translator: Optional[DagsterKStreamsTranslator] = None,
    resources: Optional[Mapping[str, Any]] = None,
    elastic_workers: Optional[Any] = None,
    **options: Any,
) -> dg.Definitions:
    """Assets and lag checks of one application as ``Definitions`` (arguments as :func:`kstreams_assets`).

    ``elastic_workers`` (an :class:`~dagster_kstreams.orchestration.workers.ElasticWorkers`) adds the
    app's worker job and lag sensor.

    The assets need a :class:`KafkaResource` under ``"kafka"`` and a dagster-pyspark resource
    (:class:`KStreamsSparkResource`) under ``"pyspark"``; pass them in ``resources`` or merge these
    definitions with ones that have them.
    """
    app = KStreamsApp(topology, app_id, topic_partitions, translator or DagsterKStreamsTranslator(), **options)
    defs = dg.Definitions(assets=_assets_of(app), asset_checks=kstreams_asset_checks(app),
                          resources=dict(resources or {}))
    if elastic_workers is None:
        return defs
    from dagster_kstreams.orchestration.sensors import kstreams_elastic_definitions

    return dg.Definitions.merge(defs, kstreams_elastic_definitions(app, elastic_workers))

