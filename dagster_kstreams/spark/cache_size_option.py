"""``--statestore-cache-max-bytes`` (and its deprecated name ``--cache-max-bytes-buffering``): Kafka Streams'
record-cache size on the commands that build a :class:`~dagster_kstreams.spark.task_runner.TaskRunner`.

``dagster-kstreams query`` takes it too: with every cache off a sub-topology may run another way (the word
count's JVM count is a cached count's), and the store is read the way the runs kept it.
"""

from __future__ import annotations

import argparse

from dagster_kstreams.processors.record_cache import (
    CACHE_MAX_BYTES_BUFFERING, STATESTORE_CACHE_MAX_BYTES, cache_max_bytes_of,
)

__all__ = ["add_cache_size_options", "cache_size_of"]


def add_cache_size_options(parser: argparse.ArgumentParser) -> None:
    """Both names of the setting, read back with :func:`cache_size_of`."""
    parser.add_argument("--statestore-cache-max-bytes", default=None, metavar="BYTES",
                        help="Kafka Streams' statestore.cache.max.bytes: 0 turns every store's record cache off "
                             "(each forwards every update); any other size leaves it to each store's Materialized "
                             "(the caches flush at each micro-batch's end)")
    parser.add_argument("--cache-max-bytes-buffering", default=None, metavar="BYTES",
                        help="the deprecated name of --statestore-cache-max-bytes (which wins when both are given)")


def cache_size_of(args: argparse.Namespace) -> int:
    """The size given (the new name wins, as in Kafka Streams), else Kafka Streams' default; a nonsense
    value raises ``ValueError`` in one line naming the setting."""
    return cache_max_bytes_of({STATESTORE_CACHE_MAX_BYTES: args.statestore_cache_max_bytes,
                               CACHE_MAX_BYTES_BUFFERING: args.cache_max_bytes_buffering})
