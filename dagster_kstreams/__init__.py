"""Kafka Streams topologies as Dagster assets, executed on Spark.

The DSL (``StreamsBuilder`` and friends) is importable with neither Spark nor Dagster
installed; everything else lives in its own layer (see ``../shared/DESIGN.md``).
"""
