"""A table update with its old value (Kafka Streams' ``Change``), and the format it travels in
through the repartition topic of ``KTable.group_by`` (``ChangedSerializer`` /
``ChangedDeserializer``).

The format is Kafka Streams 4.x's own, byte for byte, so the repartition topic of a re-grouped
table holds what a Kafka Streams application with the same id would write and read (one format
to reason about, and a topic any Kafka Streams tooling can decode):

* ``{old value}{0x00}`` — a subtraction only,
* ``{new value}{0x01}`` — an addition only,
* ``{varint length of new}{new value}{old value}{0x02}`` — both, when the old and the new value
  select the same key (Kafka Streams' varint is zigzag-encoded, ``ByteUtils.writeVarint``).

Flags 3 to 5 (the same with an ``isLatest`` byte, written for versioned tables) are read too.
Both values null is refused when writing, as Kafka Streams does; an unknown flag, a truncated
record or a null payload is a deserialization error (the task's dead-letter policy decides).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["Change", "ChangedSerde", "write_varint", "read_varint"]


@dataclass(frozen=True)
class Change:
    """A table update: ``new`` and ``old`` value (None: absent)."""

    new: Any
    old: Any


def write_varint(value: int) -> bytes:
    """Kafka's ``ByteUtils.writeVarint``: a zigzag-encoded, little-endian base-128 varint of an int."""
    if not -(1 << 31) <= value < (1 << 31):
        raise ValueError(f"varint out of the int range: {value}")
    unsigned = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while unsigned & ~0x7F:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)
    return bytes(out)


def read_varint(data: bytes, position: int = 0) -> tuple[int, int]:
    """``(value, position after it)`` of a :func:`write_varint` varint at ``position``."""
    unsigned, shift = 0, 0
    while True:
        if position >= len(data):
            raise ValueError("truncated varint")
        byte = data[position]
        position += 1
        unsigned |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 28:
            raise ValueError("varint longer than 5 bytes")
    return (unsigned >> 1) ^ -(unsigned & 1), position


class ChangedSerde:
    """Serializes a :class:`Change` with ``inner`` for both values, in Kafka Streams' format."""

    def __init__(self, inner):
        self.inner = inner
        self.name = f"Changed({getattr(inner, 'name', type(inner).__name__)})"

    def __repr__(self) -> str:
        return f"ChangedSerde({self.inner!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChangedSerde) and other.inner == self.inner

    def __hash__(self) -> int:
        return hash(("ChangedSerde", self.inner))

    def serialize(self, change: Change) -> bytes:
        new = None if change.new is None else self.inner.serialize(change.new)
        old = None if change.old is None else self.inner.serialize(change.old)
        if new is not None and old is not None:
            return write_varint(len(new)) + new + old + b"\x02"
        if new is not None:
            return new + b"\x01"
        if old is not None:
            return old + b"\x00"
        raise ValueError("a change with neither an old nor a new value cannot be serialized")

    def deserialize(self, data: Optional[bytes]) -> Change:
        if data is None or len(data) == 0:
            raise ValueError("a re-grouped table's repartition record has no payload")
        data = bytes(data)
        flag = data[-1]
        if flag > 5:
            raise ValueError(f"unknown change encoding flag {flag}")
        end = len(data) - 1
        if flag >= 3:  # versioned tables: an isLatest byte before the flag
            end -= 1
            if end < 0 or data[end] not in (0, 1):
                raise ValueError("invalid isLatest byte in a change record")
            flag -= 3
        new_raw: Optional[bytes] = None
        old_raw: Optional[bytes] = None
        if flag == 0:
            old_raw = data[:end]
        elif flag == 1:
            new_raw = data[:end]
        else:
            length, start = read_varint(data)
            if length < 0 or start + length > end:
                raise ValueError("truncated change record")
            new_raw, old_raw = data[start:start + length], data[start + length:end]
        return Change(None if new_raw is None else self.inner.deserialize(new_raw),
                      None if old_raw is None else self.inner.deserialize(old_raw))
