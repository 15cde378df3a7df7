"""The Dagster entry point (loaded through workspace.yaml).

Kafka is where ``DAGSTER_KSTREAMS_BOOTSTRAP_SERVERS`` says, as for the ``dagster-kstreams``
command (default: the broker that ``dagster-kstreams local up`` starts; the older
``KSTREAMS_BOOTSTRAP_SERVERS`` is still read, with a deprecation warning). The example
topologies in ``assets/`` add their definitions by exposing ``defs``.
"""

from __future__ import annotations

import dagster as dg

import assets
from dagster_kstreams.base.environment import bootstrap_servers
from dagster_kstreams.orchestration.resources import KafkaResource


def build_definitions() -> dg.Definitions:
    platform = dg.Definitions(
        resources={"kafka": KafkaResource(bootstrap_servers=bootstrap_servers())},
    )
    examples = getattr(assets, "defs", None)
    return dg.Definitions.merge(platform, examples) if examples is not None else platform


defs = build_definitions()
