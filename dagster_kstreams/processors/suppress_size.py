"""How many bytes Kafka Streams 4.3.1 counts for a record in a suppression buffer: the size that
``BufferConfig.max_bytes(n)`` bounds.

``InMemoryTimeOrderedKeyValueChangeBuffer.computeRecordSize`` counts, per buffered key:

* 8 bytes of buffer time, and the serialized key's bytes (the table's key serde);
* ``BufferValue.residentMemorySizeEstimate``: the serialized prior value (the old value of the
  update that first buffered the key), the serialized old value unless it equals the prior one
  (``BufferValue`` then shares one array), and the serialized new value; a null value counts 0;
* ``ProcessorRecordContext.residentMemorySizeEstimate`` of the latest update's record context:
  8 (timestamp) + 8 (offset) + 4 (partition), the topic's length in Java chars (UTF-16 code
  units), and for each header its name's length in Java chars plus its value's bytes.

The buffer's size is the sum over its buffered keys (a key updated again is counted once, with its
latest update). Pure functions, no engine.
"""

from __future__ import annotations

from typing import Iterable, Optional

__all__ = ["java_char_length", "record_context_size", "buffered_record_size"]

_BUFFER_TIME = 8  # Long.BYTES: the buffer time of BufferKey
_CONTEXT_FIXED = 8 + 8 + 4  # timestamp, offset (Long.BYTES each), partition (Integer.BYTES)


def java_char_length(text: str) -> int:
    """``text.toCharArray().length`` in Java: UTF-16 code units (a character beyond U+FFFF counts 2)."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def _header_name_and_value(header) -> tuple[str, Optional[bytes]]:
    if isinstance(header, dict):
        return header["key"], header.get("value")
    return header[0], header[1]  # a (name, value) pair


def record_context_size(topic: Optional[str], headers: Optional[Iterable]) -> int:
    """``ProcessorRecordContext.residentMemorySizeEstimate`` for a record of ``topic`` with
    ``headers`` (``[{"key", "value"}, ...]`` as the engine holds them, or ``(name, value)`` pairs;
    None: no headers)."""
    size = _CONTEXT_FIXED + (java_char_length(topic) if topic is not None else 0)
    for header in headers or ():
        name, value = _header_name_and_value(header)
        size += java_char_length(name) + (len(value) if value is not None else 0)
    return size


def buffered_record_size(key: bytes, prior: Optional[bytes], old: Optional[bytes], new: Optional[bytes],
                         topic: Optional[str], headers: Optional[Iterable]) -> int:
    """``computeRecordSize`` of one buffered key: serialized ``key``; ``prior``, ``old`` and ``new``
    serialized values (None: null); the latest update's record ``topic`` and ``headers``."""
    old_size = 0 if old is None or old == prior else len(old)  # BufferValue's shared prior/old array
    values = (len(prior) if prior is not None else 0) + old_size + (len(new) if new is not None else 0)
    return _BUFFER_TIME + len(key) + values + record_context_size(topic, headers)
