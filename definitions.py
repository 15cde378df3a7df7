"""The Dagster entry point (loaded through workspace.yaml).

Kafka is where ``KSTREAMS_BOOTSTRAP_SERVERS`` says (default: the broker that
``dagster-kstreams local up`` starts). The example topologies in ``assets/`` add their
definitions by exposing ``defs``.
"""

from __future__ import annotations

import os

import dagster as dg

import assets
from dagster_kstreams.orchestration.resources import KafkaResource

BOOTSTRAP_ENV_VAR = "KSTREAMS_BOOTSTRAP_SERVERS"


def build_definitions() -> dg.Definitions:
    platform = dg.Definitions(
        resources={"kafka": KafkaResource(bootstrap_servers=os.environ.get(BOOTSTRAP_ENV_VAR, "127.0.0.1:9092"))},
    )
    examples = getattr(assets, "defs", None)
    return dg.Definitions.merge(platform, examples) if examples is not None else platform


defs = build_definitions()
