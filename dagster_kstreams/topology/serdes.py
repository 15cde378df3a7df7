"""Pure-Python serdes with Kafka's wire formats.

``Serdes.String()``, ``Serdes.Long()``, ``Serdes.Integer()`` ... encode exactly as Kafka's
Java serializers do (UTF-8; big-endian two's complement), so bytes written by this library are
readable by any Kafka client and partition the same way (the partitioner hashes these bytes).
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any, Callable, Optional

__all__ = ["Serde", "Serdes", "WindowedSerde", "Windowed", "Window"]


class Serde:
    """A named pair of ``serialize(value) -> bytes | None`` and ``deserialize(bytes) -> value``.

    ``None`` maps to ``None`` both ways (Kafka's null key / tombstone).
    """

    name = "Serde"

    def serialize(self, value: Any) -> Optional[bytes]:  # pragma: no cover - abstract
        raise NotImplementedError

    def deserialize(self, data: Optional[bytes]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def serializer(self) -> Callable[[Any], Optional[bytes]]:
        """:meth:`serialize` as one callable to bind once for many records (a hot loop): it
        returns the same bytes and raises the same errors, with less work per call where the
        serde has a faster form."""
        return self.serialize

    def __repr__(self) -> str:
        return f"Serdes.{self.name}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), self.name))


class _StringSerde(Serde):
    name = "String"

    def serialize(self, value):
        if value is None:
            return None
        if not isinstance(value, str):
            raise TypeError(f"Serdes.String() cannot serialize {type(value).__name__} {value!r}")
        return value.encode("utf-8")

    def deserialize(self, data):
        return None if data is None else bytes(data).decode("utf-8")

    def serializer(self):
        return serialize_string


def serialize_string(value):
    """``Serdes.String().serialize`` with no method lookup, an exact ``str`` first."""
    if value.__class__ is str:
        return value.encode()  # UTF-8, strict: as serialize
    return _STRING.serialize(value)


_STRING = _StringSerde()


class _IntSerde(Serde):
    _fmt = ">q"
    _bits = 64

    def serialize(self, value):
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"Serdes.{self.name}() cannot serialize {type(value).__name__} {value!r}")
        lo, hi = -(1 << (self._bits - 1)), (1 << (self._bits - 1)) - 1
        if not lo <= value <= hi:
            raise OverflowError(f"Serdes.{self.name}() value {value} is outside [{lo}, {hi}]")
        return struct.pack(self._fmt, value)

    def serializer(self):
        lo, hi = -(1 << (self._bits - 1)), (1 << (self._bits - 1)) - 1
        pack, serialize = struct.Struct(self._fmt).pack, self.serialize

        def serialize_int(value):
            """``serialize`` with an exact ``int`` in range packed at once (the rest: serialize)."""
            if value.__class__ is int and lo <= value <= hi:
                return pack(value)
            return serialize(value)

        return serialize_int

    def deserialize(self, data):
        if data is None:
            return None
        size = self._bits // 8
        if len(data) != size:
            raise ValueError(f"Serdes.{self.name}() expects {size} bytes, got {len(data)}")
        return struct.unpack(self._fmt, bytes(data))[0]


class _LongSerde(_IntSerde):
    name = "Long"
    _fmt, _bits = ">q", 64


class _IntegerSerde(_IntSerde):
    name = "Integer"
    _fmt, _bits = ">i", 32


class _ShortSerde(_IntSerde):
    name = "Short"
    _fmt, _bits = ">h", 16


class _DoubleSerde(Serde):
    name = "Double"

    def serialize(self, value):
        return None if value is None else struct.pack(">d", float(value))

    def deserialize(self, data):
        if data is None:
            return None
        if len(data) != 8:
            raise ValueError(f"Serdes.Double() expects 8 bytes, got {len(data)}")
        return struct.unpack(">d", bytes(data))[0]


class _ByteArraySerde(Serde):
    name = "ByteArray"

    def serialize(self, value):
        if value is None:
            return None
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"Serdes.ByteArray() cannot serialize {type(value).__name__}")
        return bytes(value)

    def deserialize(self, data):
        return None if data is None else bytes(data)


class _JsonSerde(Serde):
    name = "Json"

    def __init__(self, schema: Any = None):
        # Optional Spark schema (a DDL string such as "country string, amount long", or a
        # pyspark StructType), kept opaque here: with it the Spark runner parses and writes the
        # JSON in the JVM (from_json / to_json) and Column expressions see ``value`` as a struct.
        self.schema = schema

    def __repr__(self) -> str:
        return "Serdes.Json()" if self.schema is None else f"Serdes.Json(schema={_schema_text(self.schema)!r})"

    def serialize(self, value):
        if value is None:
            return None
        return json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-8")

    def deserialize(self, data):
        return None if data is None else json.loads(bytes(data).decode("utf-8"))


def _schema_text(schema: Any) -> str:
    simple = getattr(schema, "simpleString", None)
    return simple() if callable(simple) else str(schema)


@dataclass(frozen=True)
class Window:
    """A window's bounds in epoch milliseconds: ``[start, end)`` (Kafka's TimeWindow), or
    ``[start, end]`` for a session window (Kafka's SessionWindow: both ends inclusive). A negative
    start is refused, as Kafka's ``Window`` constructor refuses it: a user processor's window store
    takes a put at one, but a read that would return it as a window fails, in Kafka Streams as here."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.start < 0:
            raise ValueError(f"Window startMs time cannot be negative: {self.start}")


@dataclass(frozen=True)
class Windowed:
    """A windowed key, as Kafka Streams' ``Windowed<K>``."""

    key: Any
    window: Window


class WindowedSerde(Serde):
    """Kafka's time-windowed key format: ``inner key bytes + 8-byte big-endian window start``.

    For session windows (``session=True``) the layout is ``key + end + start`` (Kafka's
    SessionKeySchema). ``window_size_ms`` rebuilds the end of a time window on read.
    """

    def __init__(self, inner: Serde, window_size_ms: Optional[int] = None, session: bool = False):
        self.inner = inner
        self.window_size_ms = window_size_ms
        self.session = session
        self.name = f"{'Session' if session else 'Time'}Windowed[{inner.name}]"

    def __repr__(self) -> str:
        return f"WindowedSerde({self.inner!r}, window_size_ms={self.window_size_ms}, session={self.session})"

    def serialize(self, value):
        if value is None:
            return None
        if not isinstance(value, Windowed):
            raise TypeError(f"{self.name} expects a Windowed key, got {type(value).__name__}")
        key = self.inner.serialize(value.key) or b""
        if self.session:
            return key + struct.pack(">qq", value.window.end, value.window.start)
        return key + struct.pack(">q", value.window.start)

    def deserialize(self, data):
        if data is None:
            return None
        data = bytes(data)
        if self.session:
            end, start = struct.unpack(">qq", data[-16:])
            return Windowed(self.inner.deserialize(data[:-16]), Window(start, end))
        (start,) = struct.unpack(">q", data[-8:])
        end = start + self.window_size_ms if self.window_size_ms is not None else 2**63 - 1
        return Windowed(self.inner.deserialize(data[:-8]), Window(start, end))


class Serdes:
    """Factories named as Kafka's ``Serdes`` class."""

    @staticmethod
    def String() -> Serde:
        return _StringSerde()

    @staticmethod
    def Long() -> Serde:
        return _LongSerde()

    @staticmethod
    def Integer() -> Serde:
        return _IntegerSerde()

    @staticmethod
    def Short() -> Serde:
        return _ShortSerde()

    @staticmethod
    def Double() -> Serde:
        return _DoubleSerde()

    @staticmethod
    def ByteArray() -> Serde:
        return _ByteArraySerde()

    @staticmethod
    def Json(schema: Any = None) -> Serde:
        """UTF-8 JSON (compact, sorted keys) — not a Kafka class, the common choice in Python.

        ``schema`` (optional): a Spark DDL string (``"country string, amount long"``) or a
        ``StructType``. With it, the Spark runner parses values with ``from_json`` and writes
        them with ``to_json`` in the JVM, and PySpark Column expressions address fields as
        ``F.col("value.country")``. Python functions still receive dicts either way.
        """
        return _JsonSerde(schema)

    @staticmethod
    def TimeWindowed(inner: Serde, window_size_ms: Optional[int] = None) -> Serde:
        return WindowedSerde(inner, window_size_ms=window_size_ms)

    @staticmethod
    def SessionWindowed(inner: Serde) -> Serde:
        return WindowedSerde(inner, session=True)
