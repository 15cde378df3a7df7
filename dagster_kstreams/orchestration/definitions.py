"""One application as Dagster ``Definitions``: :func:`build_kstreams_definitions`.

The top of the Dagster layer: it assembles the assets (:mod:`.assets`), the lag checks
(:mod:`.checks`) and, with ``elastic_workers``, the worker job (:mod:`.workers`) and the lag
sensor (:mod:`.sensors`) of one :class:`~dagster_kstreams.orchestration.app.KStreamsApp`.
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

__all__ = ["build_kstreams_definitions", "kstreams_elastic_definitions"]


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
    """Assets and lag checks of one application as ``Definitions`` (arguments as
    :func:`~dagster_kstreams.orchestration.assets.kstreams_assets`).

    ``elastic_workers`` (an :class:`~dagster_kstreams.orchestration.workers.ElasticWorkers`) adds the
    app's worker job and lag sensor.

    The assets need a :class:`KafkaResource` under ``"kafka"`` and a dagster-pyspark resource
    (:class:`KStreamsSparkResource`) under ``"pyspark"``; pass them in ``resources`` or merge these
    definitions with ones that have them.
    """
    app = KStreamsApp(topology, app_id, topic_partitions, translator or DagsterKStreamsTranslator(), **options)
    defs = dg.Definitions(assets=assets_of(app), asset_checks=kstreams_asset_checks(app),
                          resources=dict(resources or {}))
    if elastic_workers is None:
        return defs
    return dg.Definitions.merge(defs, kstreams_elastic_definitions(app, elastic_workers))


def kstreams_elastic_definitions(app: KStreamsApp, elastic: ElasticWorkers) -> dg.Definitions:
    """The app's worker job and its lag sensor."""
    job = kstreams_worker_job(app, elastic)
    return dg.Definitions(jobs=[job], sensors=[kstreams_lag_sensor(app, elastic, job)])
