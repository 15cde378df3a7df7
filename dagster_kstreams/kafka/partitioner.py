"""Kafka's default key partitioner, in pure Python.

A keyed record goes to ``toPositive(murmur2(key)) % numPartitions`` in every Java client
(``BuiltInPartitioner.partitionForKey``, and Kafka Streams' default ``StreamPartitioner``), so
a topic written with :func:`default_partition` is co-partitioned with one written by any Java
client, by Kafka Streams, or by Spark's Kafka sink. librdkafka (confluent-kafka) does the
same only with ``partitioner=murmur2_random``; its default ``consistent_random`` uses CRC32.

Records with no key are not hashed at all by Kafka (they are spread by the sticky
partitioner), so a missing key is an error here rather than a silent guess.
"""

from __future__ import annotations

import struct

__all__ = ["murmur2", "to_positive", "default_partition"]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24
_MASK32 = 0xFFFFFFFF
_LITTLE_ENDIAN_U32 = struct.Struct("<I")


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """32-bit MurmurHash2 with Kafka's seed, as ``Utils.murmur2``: a signed Java ``int``."""
    data = memoryview(data).cast("B")
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    whole_words = length & ~3
    # Java ints wrap; every product is masked back to 32 bits and shifts are unsigned (>>>).
    for (k,) in _LITTLE_ENDIAN_U32.iter_unpack(data[:whole_words]):
        k = (k * _M) & _MASK32
        k ^= k >> _R
        k = (k * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    tail = length & 3
    if tail:
        if tail == 3:
            h ^= data[whole_words + 2] << 16
        if tail >= 2:
            h ^= data[whole_words + 1] << 8
        h ^= data[whole_words]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit (not ``abs``, which fails on MIN_VALUE)."""
    return number & 0x7FFFFFFF


def default_partition(key_bytes: bytes | bytearray | memoryview, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a serialized key."""
    if key_bytes is None:
        raise ValueError("a record with no key has no key-determined partition in Kafka")
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be at least 1, got {num_partitions}")
    return to_positive(murmur2(key_bytes)) % num_partitions
