"""A Dagster component: one Kafka Streams application declared in YAML (``dg`` projects).

``defs/users_per_country/defs.yaml``::

    type: dagster_kstreams.orchestration.component.KStreamsComponent
    attributes:
      topology: assets.users_per_country:build_topology   # a Topology, a StreamsBuilder, or a function returning one
      app_id: users-per-country
      topic_partitions:
        users: 2
        users-per-country: 2
      lag_bound: 10000

The component builds the same definitions as :func:`build_kstreams_definitions`; the resources
(``kafka``, ``pyspark``) come from the project's other definitions.
"""

from typing import Optional

import dagster as dg
from pydantic import Field

from dagster_kstreams.orchestration.app import DEFAULT_LAG_BOUND
from dagster_kstreams.orchestration.definitions import build_kstreams_definitions
from dagster_kstreams.topology.reference import load_topology as load_topology_and_module
from dagster_kstreams.topology.view import Topology

__all__ = ["KStreamsComponent", "load_topology"]


def load_topology(reference: str) -> Topology:
    """``"package.module:attribute"`` (or ``"path/to/file.py:attribute"``) -> the topology it names
    (calling it if it is a function). Raises ``ValueError`` (a
    :class:`~dagster_kstreams.topology.reference.TopologyReferenceError`) when it names none.
    """
    topology, _module = load_topology_and_module(reference)
    return topology


class KStreamsComponent(dg.Component, dg.Resolvable, dg.Model):
    """A Kafka Streams application as partitioned assets (sub-topologies, repartition and sink topics, stores)."""

    topology: str = Field(description="'package.module:attribute' naming a Topology, StreamsBuilder or a function")
    app_id: str = Field(description="Kafka Streams application.id: consumer group and internal topic prefix")
    topic_partitions: dict[str, int] = Field(description="Partitions of each source topic (and optionally sinks)")
    lag_bound: int = Field(default=DEFAULT_LAG_BOUND, description="Lag above which the lag check fails")
    state_location: Optional[str] = Field(default=None, description="Root of the tasks' checkpoints and state")
    create_sink_topics: bool = Field(default=False, description="Create missing output topics on first run")

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        return build_kstreams_definitions(
            topology=load_topology(self.topology),
            app_id=self.app_id,
            topic_partitions=self.topic_partitions,
            lag_bound=self.lag_bound,
            state_location=self.state_location,
            create_sink_topics=self.create_sink_topics,
        )
