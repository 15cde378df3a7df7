"""Topic-name extractors: the function a sink asks for the topic of each record (Kafka Streams'
``TopicNameExtractor``, given to ``KStream.to`` or ``Topology.add_sink`` in place of a topic name).

An extractor is one of

* a :class:`TopicNameExtractor` (an object with ``extract(key, value, record_context)``), or a
  callable of three positional parameters ``(key, value, record_context)``: it is given the
  :class:`RecordContext` of the record as the sink has it, as Kafka Streams' ``SinkNode`` gives it;
* a callable of two, ``(key, value)`` (this DSL's shorter form: no context is built for it).

The context is the one Kafka Streams 4.3.1 gives (``SinkNode.process``): the topic, partition and
offset of the input record being processed (after a repartition topic: that topic's, as its
sub-topology read it; from a punctuator: None, -1 and -1), and the timestamp and headers of the
record the sink writes (a processor's forward may have changed both).
"""

from __future__ import annotations

import types
from typing import Any, Callable, NamedTuple, Optional

from .functions import positional_arity
from .headers import Headers

__all__ = ["RecordContext", "TopicNameExtractor", "TopicNameFunction", "topic_name_function",
           "extractor_description"]


class RecordContext:
    """What an extractor learns of the record a sink writes (Kafka Streams' ``RecordContext``).

    Read-only: the accessors are methods, as in Java."""

    __slots__ = ("_topic", "_partition", "_offset", "_timestamp", "_headers")

    def __init__(self, topic: Optional[str], partition: int, offset: int, timestamp: int, headers: Headers):
        self._topic, self._partition, self._offset = topic, partition, offset
        self._timestamp, self._headers = timestamp, headers

    def topic(self) -> Optional[str]:
        """The input record's topic (None: the record was forwarded from a punctuator)."""
        return self._topic

    def partition(self) -> int:
        """The input record's partition (-1 from a punctuator)."""
        return self._partition

    def offset(self) -> int:
        """The input record's offset (-1 from a punctuator)."""
        return self._offset

    def timestamp(self) -> int:
        """The timestamp of the record the sink writes."""
        return self._timestamp

    def headers(self) -> Headers:
        """The headers of the record the sink writes."""
        return self._headers

    def __repr__(self) -> str:
        return (f"RecordContext(topic={self._topic!r}, partition={self._partition}, offset={self._offset}, "
                f"timestamp={self._timestamp}, headers={self._headers!r})")


class TopicNameExtractor:
    """A sink's topic per record: override :meth:`extract`. Its ``str()`` is what ``describe()``
    prints after ``extractor class:`` (Kafka Streams prints the extractor's ``toString()``)."""

    def extract(self, key: Any, value: Any, record_context: RecordContext) -> str:
        raise NotImplementedError


class TopicNameFunction(NamedTuple):
    """How a sink calls its extractor: ``call(key, value)``, or with ``takes_context``
    ``call(key, value, record_context)``."""

    call: Callable
    takes_context: bool


def topic_name_function(extractor: Any, operation: str) -> TopicNameFunction:
    """``extractor`` as the sink calls it; anything that is no extractor names ``operation``."""
    if isinstance(extractor, type):
        raise TypeError(f"{operation} expects a topic-name extractor instance, got the class {extractor.__qualname__} "
                        f"(write {extractor.__qualname__}())")
    extract = getattr(extractor, "extract", None)
    if callable(extract) and not isinstance(extractor, types.FunctionType):
        return TopicNameFunction(extract, True)
    if not callable(extractor):
        raise TypeError(f"{operation} expects a topic name or a topic-name extractor, got {extractor!r}")
    arity = positional_arity(extractor)
    if arity not in (None, 2, 3):
        raise TypeError(f"{operation}: a topic-name extractor takes (key, value) or (key, value, record_context); "
                        f"{getattr(extractor, '__qualname__', extractor)!r} takes {arity} positional parameter(s)")
    return TopicNameFunction(extractor, arity == 3)


def extractor_description(extractor: Any) -> str:
    """What ``describe()`` prints for ``extractor``: a function's (a lambda's too) module and
    qualified name, which stay the same from process to process (its ``str()`` holds its address);
    any other object's ``str()``, as Kafka Streams prints the extractor's ``toString()``."""
    if isinstance(extractor, (types.FunctionType, types.MethodType, types.BuiltinFunctionType)):
        return f"{extractor.__module__}.{extractor.__qualname__}"
    return str(extractor)

