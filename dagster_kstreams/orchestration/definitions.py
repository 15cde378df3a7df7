"""Applications as Dagster ``Definitions``: :func:`kstreams_definitions` (several apps, one graph)
and :func:`build_kstreams_definitions` (one app, from its arguments).

The top of the Dagster layer: it assembles the assets (:mod:`.assets`), the health checks
(:mod:`.checks`) and, with ``elastic_workers``, the worker job (:mod:`.workers`) and the lag
sensor (:mod:`.sensors`) of each :class:`~dagster_kstreams.orchestration.app.KStreamsApp`.

Pipelines of several streams applications are the normal case; three ways to load them:

* **together**: ``kstreams_definitions(word_count, top_words)``: each topic is declared once (by
  the app that writes it), and an app that reads it depends on that asset: one lineage graph,
  ``word_count/subtopology_1 -> kafka/word_counts -> top_words/subtopology_0``;
* **merged**: ``dg.Definitions.merge`` of apps built separately works when each shared topic is
  declared by one of them: build the readers with ``topics_declared_elsewhere=["word-counts"]``;
* **separate code locations**: the same ``topics_declared_elsewhere``: the reader depends on the
  topic's asset key (``kafka/word_counts``) without declaring it, and Dagster joins the locations'
  graphs by key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import dagster as dg

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.assets import assets_of
from dagster_kstreams.orchestration.checks import kstreams_asset_checks
from dagster_kstreams.orchestration.sensors import kstreams_lag_sensor
from dagster_kstreams.orchestration.translator import DagsterKStreamsTranslator
from dagster_kstreams.orchestration.workers import ElasticWorkers, kstreams_worker_job

__all__ = ["build_kstreams_definitions", "kstreams_definitions", "kstreams_elastic_definitions"]


def kstreams_definitions(
    *apps: KStreamsApp,
    resources: Optional[Mapping[str, Any]] = None,
    elastic_workers: Optional[ElasticWorkers] = None,
) -> dg.Definitions:
    """The assets and health checks of several applications as one graph (see the module docstring).

    ``elastic_workers`` (an :class:`~dagster_kstreams.orchestration.workers.ElasticWorkers`) adds each
    app's worker job and lag sensor. The assets need a :class:`KafkaResource` under ``"kafka"`` and a
    dagster-pyspark resource (:class:`KStreamsSparkResource`) under ``"pyspark"`` (or the keys the
    apps name); pass them in ``resources`` or merge these definitions with ones that have them.
    """
    if not apps:
        raise ValueError("kstreams_definitions needs at least one KStreamsApp")
    defs = dg.Definitions(assets=assets_of(*apps),
                          asset_checks=[check for app in apps for check in kstreams_asset_checks(app)],
                          resources=dict(resources or {}))
    if elastic_workers is None:
        return defs
    return dg.Definitions.merge(defs, *(kstreams_elastic_definitions(app, elastic_workers) for app in apps))


def build_kstreams_definitions(
    *,
    topology: Any,
    app_id: str,
    topic_partitions: Mapping[str, int],
    translator: Optional[DagsterKStreamsTranslator] = None,
    resources: Optional[Mapping[str, Any]] = None,
    elastic_workers: Optional[ElasticWorkers] = None,
    **options: Any,
) -> dg.Definitions:
    """One application's definitions: ``kstreams_definitions(KStreamsApp(topology, app_id,
    topic_partitions, translator, **options))``. ``options`` are the other fields of
    :class:`KStreamsApp` (``lag_bound``, ``freshness_seconds``, ``topics_declared_elsewhere``,
    ``state_location``, ``max_records_per_batch``, ``processing_guarantee``, ``task_timeout_s``,
    ``statestore_cache_max_bytes``, ``repartition_purge_interval_s``, ``create_sink_topics``, the resource keys).
    """
    app = KStreamsApp(topology, app_id, topic_partitions, translator or DagsterKStreamsTranslator(), **options)
    return kstreams_definitions(app, resources=resources, elastic_workers=elastic_workers)


def kstreams_elastic_definitions(app: KStreamsApp, elastic: ElasticWorkers) -> dg.Definitions:
    """The app's worker job and its lag sensor."""
    job = kstreams_worker_job(app, elastic)
    return dg.Definitions(jobs=[job], sensors=[kstreams_lag_sensor(app, elastic, job)])
