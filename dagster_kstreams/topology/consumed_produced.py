"""How a topology reads and writes a topic: ``Consumed`` (with ``AutoOffsetReset``) and ``Produced``
(Kafka Streams' ``Consumed.java``, ``Produced.java``). Immutable: ``with_*`` returns a copy."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

from .fluent import WithSerdes, install_static_factories
from .named import validate_name
from .serdes import Serde
from .timestamp_extractors import extract_function

__all__ = ["AutoOffsetReset", "Consumed", "Produced"]


class AutoOffsetReset:
    EARLIEST = "earliest"
    LATEST = "latest"
    NONE = "none"


@dataclass(frozen=True)
class Consumed(WithSerdes):
    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    timestamp_extractor: Optional[Callable] = None
    offset_reset: Optional[str] = None
    processor_name: Optional[str] = None

    def __post_init__(self):
        validate_name(self.processor_name, "Processor name")

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None,
              timestamp_extractor: Optional[Callable] = None, offset_reset: Optional[str] = None) -> "Consumed":
        return Consumed(key_serde, value_serde, timestamp_extractor, offset_reset)

    @staticmethod
    def as_(processor_name: str) -> "Consumed":
        return Consumed(processor_name=processor_name)

    def _with_timestamp_extractor(self, extractor) -> "Consumed":
        """An object with ``extract(record, partition_time)`` or such a callable (see
        :mod:`.timestamp_extractors`); describe() does not show it, as in Kafka Streams. On the
        class, a static factory (Java's ``Consumed.with(TimestampExtractor)``)."""
        extract_function(extractor)  # refuses anything else now
        return replace(self, timestamp_extractor=extractor)

    def with_offset_reset_policy(self, policy: str) -> "Consumed":
        return replace(self, offset_reset=policy)

    def with_name(self, processor_name: str) -> "Consumed":
        return replace(self, processor_name=processor_name)


@dataclass(frozen=True)
class Produced(WithSerdes):
    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    stream_partitioner: Optional[Callable] = None
    processor_name: Optional[str] = None

    def __post_init__(self):
        validate_name(self.processor_name, "Processor name")

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None,
              partitioner: Optional[Callable] = None) -> "Produced":
        return Produced(key_serde, value_serde, partitioner)

    @staticmethod
    def as_(processor_name: str) -> "Produced":
        return Produced(processor_name=processor_name)

    @staticmethod
    def key_serde_(serde: Serde) -> "Produced":
        return Produced(key_serde=serde)

    @staticmethod
    def value_serde_(serde: Serde) -> "Produced":
        return Produced(value_serde=serde)

    @staticmethod
    def stream_partitioner_(partitioner: Callable) -> "Produced":
        """``Produced.streamPartitioner(p)``: a ``StreamPartitioner`` (``partition`` and/or
        ``partitions``) or a callable ``(topic, key, value, num_partitions) -> Optional[int]``."""
        return Produced(stream_partitioner=partitioner)

    def with_stream_partitioner(self, partitioner: Callable) -> "Produced":
        return replace(self, stream_partitioner=partitioner)

    def with_name(self, processor_name: str) -> "Produced":
        return replace(self, processor_name=processor_name)


class _InstanceOrStaticFactory:
    """``Consumed.with_timestamp_extractor(x)`` builds a new Consumed; on an instance, a copy."""

    def __get__(self, instance, owner):
        if instance is None:
            return lambda extractor: Consumed()._with_timestamp_extractor(extractor)
        return instance._with_timestamp_extractor


Consumed.with_timestamp_extractor = _InstanceOrStaticFactory()
install_static_factories(Produced, {"key_serde": Produced.key_serde_, "value_serde": Produced.value_serde_,
                                    "stream_partitioner": Produced.stream_partitioner_})
