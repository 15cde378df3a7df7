"""The app model: one Kafka Streams application laid out as Dagster asset specs.

:class:`KStreamsApp` binds a topology, an application id and the declared partition counts into
an :class:`~dagster_kstreams.topology.application.ApplicationTopology`, which owns the
application's facts (real topic names, writers and readers, task counts, execution order, tasks);
this module adds only what Dagster needs on top: one asset spec per part, from the translator,
with the deps and partitions the topology dictates.

Partition mappings say what Kafka does: task ``p`` reads partition ``p`` of each of its input
topics (identity), and any task may write any partition of an output or repartition topic (all).
They hold across applications: a topic one application writes and another reads is one asset,
whose partition ``p`` feeds task ``p`` of the reader's sub-topology.

Topics belong to the graph, not to one application. An application declares (as an asset spec) the
topics it writes, and the topics it reads that nobody writes; a topic it reads that another
application writes is declared by the writer. Within one ``Definitions``,
:func:`~dagster_kstreams.orchestration.definitions.kstreams_definitions` sorts that out for several
apps; across code locations (or for a plain ``Definitions.merge``), ``topics_declared_elsewhere``
names the topics this app only refers to by asset key: it depends on them and declares nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import dagster as dg

from dagster_kstreams.orchestration.translator import (
    DagsterKStreamsTranslator,
    KStreamsAssetKind,
    KStreamsAssetProps,
)
from dagster_kstreams.processors.record_cache import DEFAULT_CACHE_MAX_BYTES, check_cache_max_bytes
from dagster_kstreams.spark.client_timeouts import DEFAULT_TASK_TIMEOUT_S
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.spark.internal_topics import PURGE_INTERVAL_S
from dagster_kstreams.spark.strategies import DEFAULT_STATELESS_PASS, check_stateless_pass
from dagster_kstreams.spark.transactional_writer import DEFAULT_PROCESSING_GUARANTEE, check_processing_guarantee
from dagster_kstreams.topology.application import ApplicationTopology
from dagster_kstreams.topology.view import Topology

__all__ = ["DEFAULT_FRESHNESS_SECONDS", "DEFAULT_LAG_BOUND", "KStreamsApp", "check_runnable", "task_partitions"]

DEFAULT_LAG_BOUND = 10_000
DEFAULT_FRESHNESS_SECONDS = 300


def task_partitions(count: int) -> dg.StaticPartitionsDefinition:
    """Kafka partitions (or tasks) ``"0".."count-1"``."""
    return dg.StaticPartitionsDefinition([str(partition) for partition in range(count)])


def check_runnable(topology: Topology, app_id: str, topic_partitions: Optional[Mapping[str, int]] = None,
                   statestore_cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES) -> None:
    """Compile every sub-topology for the Spark runner now, at definition load, so that an
    operation it cannot run with Kafka Streams' semantics fails here, naming the processor,
    rather than in a run (``UnsupportedTopologyError``). ``topic_partitions``: the declared counts
    (a pattern source is compiled over the topics it matches among them); ``statestore_cache_max_bytes``:
    the application's (a store's cache decides some refusals)."""
    try:
        compile_topology(topology, app_id, source_partitions=topic_partitions,
                         statestore_cache_max_bytes=statestore_cache_max_bytes).check()
    except UnsupportedTopologyError as error:
        raise UnsupportedTopologyError(f"application {app_id!r} cannot run on Spark: {error}") from error


@dataclass
class KStreamsApp:
    """One application (topology + app id) laid out as assets: keys, partition counts, specs.

    Built once at definition load; the sub-topology assets, the asset checks, the worker runs and
    the lag sensor use it to find the asset of a topic, task or store, and ask its
    :attr:`application` (an :class:`ApplicationTopology`) every fact about the topology itself.
    ``topology`` may be given as a ``StreamsBuilder``; it is the built :class:`Topology` afterwards.

    ``lag_bound`` and ``freshness_seconds`` set the health checks (:mod:`.checks`): the lag a
    sub-topology may have, and how long a task with input waiting may go without reporting.
    ``topics_declared_elsewhere``: input topics (by name) that another application writes and
    declares, in these definitions or in another code location; this app depends on their asset
    keys (as its translator names them) and declares no spec for them.
    ``processing_guarantee``: ``"at_least_once"`` or ``"exactly_once_v2"``, as Kafka Streams' setting
    (:class:`~dagster_kstreams.spark.task_runner.TaskRunner`).
    ``task_timeout_s``: how long a running task (a worker run's, a materialization's) waits for an
    unavailable broker (a restart, a coordinator moving) before it fails; a worker's reports wait
    as long. 120 s by default, as ``TaskRunner`` and ``dagster-kstreams run --task-timeout``.
    ``stateless_pass``: ``"driver"`` or ``"executors"``, where a stateless sub-topology's Python
    pass runs under exactly-once (:class:`~dagster_kstreams.spark.task_runner.TaskRunner`).
    ``statestore_cache_max_bytes``: Kafka Streams' setting (10 MiB by default); 0 turns every store's
    record cache off, so that each forwards every update (:mod:`~dagster_kstreams.processors.record_cache`).
    ``repartition_purge_interval_s``: Kafka Streams' ``repartition.purge.interval.ms``, in seconds (30 by
    default): how often a task deletes what it consumed of its repartition topics.
    """

    topology: Topology
    app_id: str
    topic_partitions: Mapping[str, int]
    translator: DagsterKStreamsTranslator = field(default_factory=DagsterKStreamsTranslator)
    lag_bound: int = DEFAULT_LAG_BOUND
    freshness_seconds: int = DEFAULT_FRESHNESS_SECONDS
    topics_declared_elsewhere: Collection[str] = ()
    state_location: Optional[str] = None
    max_records_per_batch: Optional[int] = 200_000
    processing_guarantee: str = DEFAULT_PROCESSING_GUARANTEE
    task_timeout_s: float = DEFAULT_TASK_TIMEOUT_S
    stateless_pass: str = DEFAULT_STATELESS_PASS
    statestore_cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES
    repartition_purge_interval_s: float = PURGE_INTERVAL_S
    create_sink_topics: bool = False
    kafka_resource_key: str = "kafka"
    spark_resource_key: str = "pyspark"

    def __post_init__(self) -> None:
        if self.lag_bound < 0:
            raise ValueError(f"lag_bound must be >= 0, got {self.lag_bound}")
        if self.freshness_seconds <= 0:
            raise ValueError(f"freshness_seconds must be > 0, got {self.freshness_seconds}")
        if self.task_timeout_s <= 0:
            raise ValueError(f"task_timeout_s of {self.app_id!r} must be > 0, got {self.task_timeout_s}")
        if not self.repartition_purge_interval_s >= 0:
            raise ValueError(f"repartition_purge_interval_s of {self.app_id!r} must be >= 0, "
                             f"got {self.repartition_purge_interval_s}")
        check_processing_guarantee(self.processing_guarantee, fencing=True)
        check_stateless_pass(self.stateless_pass)
        self.statestore_cache_max_bytes = check_cache_max_bytes(self.statestore_cache_max_bytes)
        # Kafka Streams' rules (repartition counts, co-partitioning) on the declared counts: a
        # missing source count or a co-partitioning mismatch is an error here, at load.
        self.application = ApplicationTopology(self.topology, self.app_id, self.topic_partitions)
        self.topology = self.application.topology
        check_runnable(self.topology, self.app_id, self.topic_partitions, self.statestore_cache_max_bytes)
        self._declared_elsewhere = self._topics_read_not_written(self.topics_declared_elsewhere)
        self._specs = self._build_specs()

    # -- questions about the topology, answered by the application ----------------------------
    def upstream_first(self) -> list[int]:
        """Sub-topology ids, upstream first (:meth:`ApplicationTopology.execution_order`)."""
        return self.application.execution_order()

    def declared_topics(self) -> dict[str, int]:
        """Real Kafka topics whose partition count the user declared (sources and given sinks)."""
        counts = self.application.partition_counts
        return {topic: count for topic, count in self.topic_partitions.items() if topic in counts}

    def missing_input_topics(self, existing) -> list[str]:
        """The declared topics this app reads and does not write itself (its input topics) that
        are not among ``existing`` (the broker's topics), sorted."""
        return sorted(topic for topic in self.declared_topics() if topic not in existing and not self.writes(topic))

    def writes(self, topic: str) -> bool:
        """Whether a task of this app writes ``topic`` (a sink or repartition topic, by real name)."""
        return bool(self.application.writers(topic))

    def queryable_stores(self, subtopology_id: int) -> list[str]:
        return [store.name for store in self.topology.subtopology(subtopology_id).state_stores if store.queryable]

    # -- asset keys -------------------------------------------------------------------------
    def subtopology_key(self, subtopology_id: int) -> dg.AssetKey:
        return self._specs[("subtopology", subtopology_id)].key

    def topic_key(self, topic: str) -> dg.AssetKey:
        """Key of a topic, by its real Kafka name or its topology name."""
        for name in (topic, self.application.topic_name(topic)):
            if ("topic", name) in self._specs:
                return self._specs[("topic", name)].key
        raise KeyError(f"application {self.app_id!r} has no topic {topic!r}")

    def store_key(self, store_name: str) -> dg.AssetKey:
        return self._specs[("store", store_name)].key

    # -- specs ------------------------------------------------------------------------------
    def topic_specs(self) -> dict[str, dg.AssetSpec]:
        """The specs of the topics this app declares, by real topic name (not those declared elsewhere)."""
        return {topic: spec for (what, topic), spec in self._specs.items()
                if what == "topic" and topic not in self._declared_elsewhere}

    def subtopology_specs(self, subtopology_id: int) -> list[dg.AssetSpec]:
        """The sub-topology's own spec first, then its queryable stores'."""
        return [self._specs[("subtopology", subtopology_id)],
                *(self._specs[("store", store)] for store in self.queryable_stores(subtopology_id))]

    def _topics_read_not_written(self, topics: Collection[str]) -> frozenset[str]:
        """Real names of ``topics``, each an input this app reads and does not write."""
        application = self.application
        real = set()
        for topic in ([topics] if isinstance(topics, str) else topics):
            name = application.topic_name(topic)
            if name not in application.external_source_topics and name not in application.global_topics:
                raise ValueError(f"topics_declared_elsewhere of {self.app_id!r} names {topic!r}, which is not an "
                                 f"input topic it reads and does not write "
                                 f"(its inputs: {sorted(application.external_source_topics)})")
            real.add(name)
        return frozenset(real)

    def _props(self, kind: KStreamsAssetKind, name: str, partitions: int, **extra: Any) -> KStreamsAssetProps:
        return KStreamsAssetProps(kind=kind, app_id=self.app_id, name=name, partitions=partitions,
                                  topology=self.topology, **extra)

    def _topic_kind(self, topic: str) -> KStreamsAssetKind:
        if self.application.is_repartition_topic(topic):
            return KStreamsAssetKind.REPARTITION_TOPIC
        if self.application.writers(topic):
            return KStreamsAssetKind.SINK_TOPIC
        return KStreamsAssetKind.SOURCE_TOPIC

    def _build_specs(self) -> dict[tuple[str, Any], dg.AssetSpec]:
        """Specs keyed by ``("topic", real topic name)``, ``("subtopology", id)``, ``("store", name)``."""
        application = self.application
        partition_counts = application.partition_counts
        specs: dict[tuple[str, Any], dg.AssetSpec] = {}
        for topic, count in partition_counts.items():
            specs[("topic", topic)] = self.translator.get_asset_spec(
                self._props(self._topic_kind(topic), application.graph_topic_name(topic), count, topic=topic))
        for sub in self.topology.subtopologies:
            count = application.task_count(sub.id)
            specs[("subtopology", sub.id)] = self.translator.get_asset_spec(
                self._props(KStreamsAssetKind.SUBTOPOLOGY, f"subtopology_{sub.id}", count, subtopology=sub))
            for store in sub.state_stores:
                if store.queryable:
                    specs[("store", store.name)] = self.translator.get_asset_spec(
                        self._props(KStreamsAssetKind.STORE, store.name, count, subtopology=sub, store=store))

        def reads(subtopology_id: int) -> list[dg.AssetDep]:
            # Task p reads partition p of its source topics, and every partition of a global table's
            # topic. A topic written back by a later sub-topology (a foreign-key join's answers) is not
            # a dep: Dagster's asset graph has no cycles. Its asset still hangs off its writer.
            written_back = application.written_back(subtopology_id)
            return [*(dg.AssetDep(specs[("topic", topic)].key, partition_mapping=dg.IdentityPartitionMapping())
                      for topic in dict.fromkeys(application.source_topics(subtopology_id)) if topic not in written_back),
                    *(dg.AssetDep(specs[("topic", topic)].key, partition_mapping=dg.AllPartitionMapping())
                      for topic in application.global_topics_of(subtopology_id))]

        # What the topology dictates, whatever the translator returned.
        for (what, name), spec in list(specs.items()):
            if what == "topic":
                deps = [dg.AssetDep(specs[("subtopology", writer)].key, partition_mapping=dg.AllPartitionMapping())
                        for writer in application.writers(name)]
                partitions = task_partitions(partition_counts[name])
            elif what == "subtopology":
                deps, partitions = reads(name), task_partitions(application.task_count(name))
            else:  # a store: computed with its sub-topology, shard p by task p, from the same inputs
                sub_id = application.subtopology_of_store(name)
                deps, partitions = reads(sub_id), task_partitions(application.task_count(sub_id))
            specs[(what, name)] = self._bind(spec, deps, partitions)
        keys = [spec.key for spec in specs.values()]
        duplicates = sorted({key.to_user_string() for key in keys if keys.count(key) > 1})
        if duplicates:
            raise ValueError(f"the translator gave several parts of {self.app_id!r} the same asset key: {duplicates}")
        return specs

    def _bind(self, spec: dg.AssetSpec, deps: list[dg.AssetDep], partitions: dg.PartitionsDefinition) -> dg.AssetSpec:
        """The translator's spec with the topology's deps (plus any other deps it added) and partitions."""
        if spec.partitions_def is not None and spec.partitions_def != partitions:
            raise ValueError(f"the translator gave {spec.key.to_user_string()} of {self.app_id!r} partitions of its "
                             f"own; they are the Kafka partitions (or tasks) {partitions.get_partition_keys()}")
        topology_keys = {dep.asset_key for dep in deps}
        added = [dep for dep in spec.deps if dep.asset_key not in topology_keys]
        return spec.replace_attributes(deps=[*deps, *added], partitions_def=partitions)
