"""The application's record-cache size: Kafka Streams' ``statestore.cache.max.bytes``.

Kafka Streams shares that many bytes among the record caches of an instance's stores (the deprecated
``cache.max.bytes.buffering`` is the same setting; the new name wins when both are given). A cached store
forwards a key's last update when its cache flushes (at a commit, or when the cache is full) instead of
every update; 0 turns every store's cache off, as ``Materialized...with_caching_disabled()`` turns off
one store's. Kafka Streams' own tests, and applications that want every update, run with 0.

The runner's caches flush at each micro-batch's end, the commit here, and hold one entry per key updated
in the batch in the task's state rather than in a budget of bytes: so any positive size means the same
thing here (each store's own setting decides), and 0 means no store is cached, whatever its
``Materialized`` says. :meth:`~dagster_kstreams.processors.build.BuildContext.cached` asks
:func:`store_cached`, the one place that decides.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

__all__ = ["CACHE_MAX_BYTES_BUFFERING", "DEFAULT_CACHE_MAX_BYTES", "STATESTORE_CACHE_MAX_BYTES",
           "cache_max_bytes_of", "check_cache_max_bytes", "store_cached"]

STATESTORE_CACHE_MAX_BYTES = "statestore.cache.max.bytes"
CACHE_MAX_BYTES_BUFFERING = "cache.max.bytes.buffering"  # deprecated since Kafka Streams 3.4
DEFAULT_CACHE_MAX_BYTES = 10 * 1024 * 1024  # Kafka Streams' default
_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")


def check_cache_max_bytes(value: Any, setting: str = STATESTORE_CACHE_MAX_BYTES) -> int:
    """``value`` as a number of bytes (an int, or its digits as text, as in a properties file), at least 0
    as Kafka Streams' config requires; anything else raises ``ValueError`` in one line naming ``setting``."""
    # bool is an int in Python, but True is no size.
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str) and _INTEGER.fullmatch(value):
        size = int(value)
    else:
        raise ValueError(f"{setting} must be a number of bytes (0 turns every store's record cache off), "
                         f"got {value!r}")
    if size < 0:
        raise ValueError(f"{setting} must be >= 0 (0 turns every store's record cache off), got {size}")
    return size


def cache_max_bytes_of(properties: Mapping[str, Any]) -> int:
    """The size Kafka Streams takes from its properties: ``statestore.cache.max.bytes`` if given, else the
    deprecated ``cache.max.bytes.buffering``, else the default (``StreamsConfig.totalCacheSize``)."""
    for setting in (STATESTORE_CACHE_MAX_BYTES, CACHE_MAX_BYTES_BUFFERING):
        if properties.get(setting) is not None:
            return check_cache_max_bytes(properties[setting], setting)
    return DEFAULT_CACHE_MAX_BYTES


def store_cached(store_caching: bool, cache_max_bytes: int) -> bool:
    """Whether a store keeps its record cache: its own setting (``Materialized``'s, on unless
    ``with_caching_disabled()``) and a cache size above 0 for the application."""
    return store_caching and cache_max_bytes > 0
