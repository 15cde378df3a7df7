"""What happens to a record whose key or value cannot be deserialized.

Kafka Streams decides this with ``default.deserialization.exception.handler``: ``fail`` stops the
task with an error naming the record (``LogAndFailExceptionHandler``), ``log_and_continue`` logs
it and skips it (``LogAndContinueExceptionHandler``). With a dead-letter topic configured
(``errors.dead.letter.queue.topic.name``, KIP-1034), a skipped record is also written there,
raw (its original key and value bytes), with headers that say where it came from and why.
The header names are Kafka Streams' own, so tools written for its dead-letter queue read ours.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional

__all__ = [
    "DeserializationHandler",
    "DeserializationError",
    "DeadLetterPolicy",
    "HEADER_EXCEPTION",
    "HEADER_EXCEPTION_MESSAGE",
    "HEADER_TOPIC",
    "HEADER_PARTITION",
    "HEADER_OFFSET",
    "dead_letter_headers",
]

# Kafka Streams' names (org.apache.kafka.streams.errors.internals.ExceptionHandlerUtils).
HEADER_EXCEPTION = "__streams.errors.exception"
HEADER_EXCEPTION_MESSAGE = "__streams.errors.message"
HEADER_TOPIC = "__streams.errors.topic"
HEADER_PARTITION = "__streams.errors.partition"
HEADER_OFFSET = "__streams.errors.offset"


class DeserializationHandler(enum.Enum):
    """Kafka Streams' ``default.deserialization.exception.handler``, by its behaviour."""

    FAIL = "fail"
    LOG_AND_CONTINUE = "log_and_continue"

    @classmethod
    def parse(cls, value: "str | DeserializationHandler") -> "DeserializationHandler":
        if isinstance(value, cls):
            return value
        normalized = str(value).strip().lower().replace("-", "_")
        # Accept Kafka Streams' class names too, as they would appear in a Java config.
        aliases = {
            "logandfailexceptionhandler": cls.FAIL,
            "logandcontinueexceptionhandler": cls.LOG_AND_CONTINUE,
            "log_and_fail": cls.FAIL,
        }
        short = normalized.rsplit(".", 1)[-1]
        if short in aliases:
            return aliases[short]
        for member in cls:
            if member.value == normalized:
                return member
        raise ValueError(
            f"default.deserialization.exception.handler must be 'fail' or 'log_and_continue', got {value!r}"
        )


@dataclass(frozen=True)
class DeadLetterPolicy:
    """How a task treats records it cannot deserialize."""

    handler: DeserializationHandler = DeserializationHandler.FAIL
    dead_letter_topic: Optional[str] = None

    def __post_init__(self):
        object.__setattr__(self, "handler", DeserializationHandler.parse(self.handler))
        if self.dead_letter_topic is not None and not self.dead_letter_topic:
            raise ValueError("dead_letter_topic must be a topic name or None, not ''")


class DeserializationError(RuntimeError):
    """A record's key or value could not be deserialized (the ``fail`` handler)."""

    def __init__(self, topic: str, partition: int, offset: int, part: str, serde: str, cause: BaseException):
        self.topic, self.partition, self.offset, self.part = topic, partition, offset, part
        super().__init__(
            f"cannot deserialize the {part} of the record at topic {topic!r} partition {partition} "
            f"offset {offset} with {serde}: {type(cause).__name__}: {cause}"
        )


def dead_letter_headers(topic: str, partition: int, offset: int, error: BaseException) -> list[tuple[str, bytes]]:
    """Headers of a dead-letter record: where it came from and why it failed."""
    return [
        (HEADER_EXCEPTION, type(error).__name__.encode()),
        (HEADER_EXCEPTION_MESSAGE, str(error).encode("utf-8", "replace")),
        (HEADER_TOPIC, topic.encode()),
        (HEADER_PARTITION, str(partition).encode()),
        (HEADER_OFFSET, str(offset).encode()),
    ]
