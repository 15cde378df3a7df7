"""A versioned store's history of one key, and the store's observed stream time: pure functions,
as Kafka Streams' ``RocksDBVersionedStore`` (4.3.1) answers them.

A key's history is a list of ``[timestamp, value]`` versions in timestamp order (``value`` None: a
tombstone, which a lookup reads as "no value"); a version is valid from its timestamp up to the
next version's. The store's observed stream time is the largest timestamp ever put into it (all
keys). With history retention ``R`` and observed time ``T``:

* a put older than ``T - R`` is not taken (Kafka Streams uses the history retention as the store's
  grace period); any other replaces the version with the same timestamp or is inserted at its place,
  and is the *latest* when no version is newer (only then does the key's current value change);
* a lookup as of ``t`` returns the value valid at ``t``; when ``t < T - R`` it returns the latest
  version only if that is valid at ``t``, else nothing, even if older versions are still kept;
* versions whose validity ended at or before ``T - R`` are never read again: :func:`prune` drops
  them (Kafka Streams drops whole segments of them; what a lookup returns is the same).
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Any, Optional

__all__ = ["NO_TIME", "expired", "put", "valid_to", "version_as_of", "as_of", "prune"]

NO_TIME = -1  # the observed stream time of a store nothing was put into (Kafka's NO_TIMESTAMP)


def expired(timestamp: int, store_time: int, retention_ms: int) -> bool:
    """Whether a put at ``timestamp`` is refused, or a lookup as of it is past the history."""
    return timestamp < store_time - retention_ms


def put(versions: list, timestamp: int, value: Any) -> bool:
    """Add (or replace) the version at ``timestamp`` in ``versions`` (in place); whether it is now
    the key's latest. The caller has checked :func:`expired` and advances the store's time."""
    index = bisect_right([version[0] for version in versions], timestamp)
    if index and versions[index - 1][0] == timestamp:
        versions[index - 1][1] = value
    else:
        versions.insert(index, [timestamp, value])
    return versions[-1][0] == timestamp


def valid_to(versions: list, timestamp: int) -> Optional[int]:
    """Until when the version at ``timestamp`` is valid (exclusive): the next version's timestamp
    (None: it is the latest), what Kafka Streams' ``put`` returns for it."""
    index = bisect_right([version[0] for version in versions], timestamp)
    return versions[index][0] if index < len(versions) else None


def version_as_of(versions: Optional[list], timestamp: int, store_time: int, retention_ms: int) -> Optional[list]:
    """The version ``[timestamp, value]`` valid at ``timestamp`` (its value None: a tombstone; None:
    none, or past the history and the latest version is newer)."""
    if not versions:
        return None
    if expired(timestamp, store_time, retention_ms):
        return versions[-1] if versions[-1][0] <= timestamp else None
    index = bisect_right([version[0] for version in versions], timestamp)
    return versions[index - 1] if index else None


def as_of(versions: Optional[list], timestamp: int, store_time: int, retention_ms: int) -> Any:
    """The value valid at ``timestamp`` (None: none, a tombstone, or past the history)."""
    version = version_as_of(versions, timestamp, store_time, retention_ms)
    return None if version is None else version[1]


def prune(versions: list, store_time: int, retention_ms: int) -> None:
    """Drop (in place) the versions no lookup or put can reach any more: those whose validity ended
    at or before ``store_time - retention_ms``. The latest version always stays."""
    horizon = store_time - retention_ms
    keep_from = 0
    while keep_from + 1 < len(versions) and versions[keep_from + 1][0] <= horizon:
        keep_from += 1
    if keep_from:
        del versions[:keep_from]
