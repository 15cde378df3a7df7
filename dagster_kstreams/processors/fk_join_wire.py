"""What a foreign-key join writes to its two internal topics, byte for byte as Kafka Streams 4.3.1.

* A *subscription* (``SubscriptionWrapperSerde``, version 1), keyed by the foreign key on the
  subscription-registration topic: ``{7-bit version, 1-bit hash-is-null}{instruction}
  {16-byte hash?}{primary key bytes}{4-byte primary partition}``.
* A *response* (``SubscriptionResponseWrapperSerde``, version 0), keyed by the primary key on the
  subscription-response topic: ``{1-bit hash-is-null, 7-bit version}{16-byte hash?}{foreign value
  bytes, none for a null value}``.

The hash is Kafka Streams' ``Murmur3.hash128`` (MurmurHash3 x64 128, seed 104729) of the left
value's serialized bytes: an answer whose hash is not that of the left row's current value was
asked for by an older version of the row and is dropped.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Optional

__all__ = ["Instruction", "Subscription", "Response", "murmur3_hash128", "encode_subscription",
           "decode_subscription", "encode_response", "decode_response"]

_MASK = (1 << 64) - 1
_C1, _C2 = 0x87C37B91114253D5, 0x4CF5AD432745937F
_SEED = 104729
SUBSCRIPTION_VERSION = 1
RESPONSE_VERSION = 0


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _fmix(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK
    return h ^ (h >> 33)


def _signed(x: int) -> int:
    return x - (1 << 64) if x >> 63 else x


def murmur3_hash128(data: bytes) -> tuple[int, int]:
    """Kafka Streams' ``Murmur3.hash128(data)``: two signed 64-bit longs, as Java returns them."""
    length = len(data)
    h1 = h2 = _SEED
    nblocks = length >> 4
    for k1, k2 in struct.iter_unpack("<QQ", data[:nblocks << 4]):
        k1 = (_rotl((k1 * _C1) & _MASK, 31) * _C2) & _MASK
        h1 = (((_rotl(h1 ^ k1, 27) + h2) * 5) + 0x52DCE729) & _MASK
        k2 = (_rotl((k2 * _C2) & _MASK, 33) * _C1) & _MASK
        h2 = (((_rotl(h2 ^ k2, 31) + h1) * 5) + 0x38495AB5) & _MASK
    tail = data[nblocks << 4:]
    if len(tail) > 8:
        k2 = int.from_bytes(tail[8:], "little")
        h2 ^= (_rotl((k2 * _C2) & _MASK, 33) * _C1) & _MASK
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        h1 ^= (_rotl((k1 * _C1) & _MASK, 31) * _C2) & _MASK
    h1 ^= length
    h2 ^= length
    h1 = (h1 + h2) & _MASK
    h2 = (h2 + h1) & _MASK
    h1, h2 = _fmix(h1), _fmix(h2)
    h1 = (h1 + h2) & _MASK
    h2 = (h2 + h1) & _MASK
    return _signed(h1), _signed(h2)


class Instruction(enum.IntEnum):
    """What the foreign side does with a subscription (``SubscriptionWrapper.Instruction``)."""

    DELETE_KEY_NO_PROPAGATE = 0  # unsubscribe (the foreign key changed): no answer
    DELETE_KEY_AND_PROPAGATE = 1  # unsubscribe and answer with null (the row is gone)
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2  # answer, with null when the foreign row is missing
    PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3  # answer only when the foreign row exists


@dataclass(frozen=True)
class Subscription:
    hash: Optional[tuple[int, int]]
    instruction: Instruction
    primary_key: bytes  # serialized with the left table's key serde
    primary_partition: int


@dataclass(frozen=True)
class Response:
    hash: Optional[tuple[int, int]]
    foreign_value: Optional[bytes]  # serialized with the right table's value serde


def encode_subscription(subscription: Subscription) -> bytes:
    head = SUBSCRIPTION_VERSION if subscription.hash is not None else SUBSCRIPTION_VERSION | 0x80
    parts = [bytes((head, int(subscription.instruction)))]
    if subscription.hash is not None:
        parts.append(struct.pack(">qq", *subscription.hash))
    parts.append(subscription.primary_key)
    parts.append(struct.pack(">i", subscription.primary_partition))
    return b"".join(parts)


def decode_subscription(data: bytes) -> Subscription:
    head = data[0]
    if head & 0x7F != SUBSCRIPTION_VERSION:
        raise ValueError(f"subscription of version {head & 0x7F}; only version {SUBSCRIPTION_VERSION} is read")
    instruction = Instruction(data[1])
    position = 2
    hash_ = None
    if not head & 0x80:
        hash_ = struct.unpack_from(">qq", data, 2)
        position = 18
    (partition,) = struct.unpack_from(">i", data, len(data) - 4)
    return Subscription(hash_, instruction, bytes(data[position:len(data) - 4]), partition)


def encode_response(response: Response) -> bytes:
    if response.hash is None:
        parts = [bytes((RESPONSE_VERSION | 0x80,))]
    else:
        parts = [bytes((RESPONSE_VERSION,)), struct.pack(">qq", *response.hash)]
    if response.foreign_value is not None:
        parts.append(response.foreign_value)
    return b"".join(parts)


def decode_response(data: bytes) -> Response:
    """As Kafka Streams reads it: no bytes after the hash is a null foreign value."""
    head = data[0]
    if head & 0x7F != RESPONSE_VERSION:
        raise ValueError(f"subscription response of version {head & 0x7F}; only version {RESPONSE_VERSION} is read")
    if head & 0x80:
        return Response(None, bytes(data[1:]) or None)
    return Response(struct.unpack_from(">qq", data, 1), bytes(data[17:]) or None)
