"""A record's headers, as Kafka's ``Headers`` has them: ordered ``(key, value)`` pairs where a key
may repeat and a value may be None (``org.apache.kafka.common.header.Headers``).

A user processor reads and changes them through ``Record.headers``
(:class:`~dagster_kstreams.topology.processor_api.Record`): ``add``, ``remove``, ``last_header``,
``headers(key)``, ``to_array()``, iteration. The runner carries them from each input record to
what it produces, as Kafka Streams does (README, "Record headers").
"""

from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple, Optional, Union

__all__ = ["Header", "Headers"]


class Header(NamedTuple):
    """One header: ``key`` (a string) and ``value`` (bytes, or None)."""

    key: str
    value: Optional[bytes]


class Headers:
    """Kafka's ``Headers``: mutable, in insertion order, duplicate keys kept.

    Built from ``(key, value)`` pairs or :class:`Header` values (or another ``Headers``, which it
    copies). ``add``/``remove`` return the headers themselves, as Kafka's do, so calls chain."""

    __slots__ = ("_pairs",)

    def __init__(self, headers: Union["Headers", Iterable, None] = None):
        self._pairs: list[Header] = [_header(pair) for pair in headers or ()]

    @classmethod
    def from_column(cls, column: Optional[list]) -> "Headers":
        """The headers of the engine's ``headers`` column (``[{"key", "value"}, ...]`` or None)."""
        headers = cls()
        headers._pairs = [Header(item["key"], item["value"]) for item in column or ()]
        return headers

    def to_column(self) -> Optional[list]:
        """These headers in the ``headers`` column's form (None: there are none)."""
        return [{"key": key, "value": value} for key, value in self._pairs] or None

    def add(self, key: Union[str, Header], value: Optional[bytes] = None) -> "Headers":
        """Append a header (a :class:`Header`, or ``key`` and ``value``); keys may repeat."""
        self._pairs.append(_header(key) if isinstance(key, Header) else _header((key, value)))
        return self

    def remove(self, key: str) -> "Headers":
        """Remove every header named ``key``."""
        self._pairs = [header for header in self._pairs if header.key != key]
        return self

    def last_header(self, key: str) -> Optional[Header]:
        """The last header named ``key``, or None."""
        return next((header for header in reversed(self._pairs) if header.key == key), None)

    def headers(self, key: str) -> Iterator[Header]:
        """Every header named ``key``, in order."""
        return iter([header for header in self._pairs if header.key == key])

    def to_array(self) -> list[Header]:
        return list(self._pairs)

    def __iter__(self) -> Iterator[Header]:
        return iter(list(self._pairs))

    def __len__(self) -> int:
        return len(self._pairs)

    def __eq__(self, other) -> bool:
        if isinstance(other, Headers):
            return self._pairs == other._pairs
        return NotImplemented

    __hash__ = None  # mutable, as Kafka's

    def __repr__(self) -> str:
        return f"Headers({[tuple(header) for header in self._pairs]!r})"


def _header(pair) -> Header:
    key, value = pair
    if not isinstance(key, str):
        raise TypeError(f"a header key must be a string, got {key!r}")
    if value is not None and not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"header {key!r}: a value must be bytes or None, got {type(value).__name__}")
    return Header(key, None if value is None else bytes(value))
