"""Example topologies. A module here that builds Dagster definitions exposes them as ``defs``
from this package, and ``definitions.py`` merges them in."""
