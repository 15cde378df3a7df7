"""Kafka Streams topologies as Dagster assets, executed on Spark.

The DSL (``StreamsBuilder`` and friends) is importable with neither Spark nor Dagster
installed; everything else lives in its own layer (see ``../shared/DESIGN.md``). The Dagster
names below load dagster (and nothing else) only when first used.
"""

import importlib

from .topology import *  # noqa: F401,F403  (the public DSL)
from .topology import __all__ as _topology_all

# name -> module of the Dagster layer that defines it (imported on first use, see __getattr__).
_DAGSTER_EXPORTS = {
    "kstreams_assets": "dagster_kstreams.orchestration.assets",
    "build_kstreams_definitions": "dagster_kstreams.orchestration.definitions",
    "kstreams_definitions": "dagster_kstreams.orchestration.definitions",
    "KStreamsApp": "dagster_kstreams.orchestration.app",
    "DagsterKStreamsTranslator": "dagster_kstreams.orchestration.translator",
    "KStreamsAssetProps": "dagster_kstreams.orchestration.translator",
    "KStreamsAssetKind": "dagster_kstreams.orchestration.translator",
    "KafkaResource": "dagster_kstreams.orchestration.resources",
    "KStreamsSparkResource": "dagster_kstreams.orchestration.resources",
    "KStreamsComponent": "dagster_kstreams.orchestration.component",
}

__all__ = list(_topology_all) + list(_DAGSTER_EXPORTS)


def __getattr__(name: str):
    module_name = _DAGSTER_EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'dagster_kstreams' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
