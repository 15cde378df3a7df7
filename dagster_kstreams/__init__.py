"""Kafka Streams topologies as Dagster assets, executed on Spark.

The DSL (``StreamsBuilder`` and friends) is importable with neither Spark nor Dagster
installed; everything else lives in its own layer (see ``../shared/DESIGN.md``).
"""

from .topology import *  # noqa: F401,F403  (the public DSL)
from .topology import __all__ as _topology_all

__all__ = list(_topology_all)
