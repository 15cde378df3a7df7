"""Records a program hands back to its engine part way, instead of running the processors after them.

The mirror of :mod:`.hand_offs`: an engine may run the last processors of a sub-topology itself
(Spark: PySpark Column expressions after the sub-topology's state, on the way to its sinks, as
DataFrame operations on the program's output rows: :mod:`dagster_kstreams.spark.column_hand_back`).
The program then puts a :class:`HandBack` where the first of them stands: it writes each record that
reaches it into the pass's output as a sink would, on a topic of its own (:func:`hand_back_topic`,
never written to Kafka), its key and value in the serdes the engine reads them back with, with the
record's headers and its timestamp (in ``timestamp_ms``, which the engine turns into what the sink
after it writes). The record keeps its place in the output: the engine's processors run on it where
it stands, so the output keeps Kafka Streams' order.
"""

from __future__ import annotations

from typing import Any

from dagster_kstreams.processors.base import Processor
from dagster_kstreams.processors.errors import ProcessingError

__all__ = ["HandBack", "HAND_BACK_TOPIC_PREFIX", "hand_back_topic"]

# The pseudo-topic of hand-back ``i``'s records in a pass's output (the engine replaces every one).
HAND_BACK_TOPIC_PREFIX = "__dagster_kstreams.hand-back:"


def hand_back_topic(position: int) -> str:
    return f"{HAND_BACK_TOPIC_PREFIX}{position}"


class HandBack(Processor):
    """Where the engine's processors start: each record written with ``key_serde`` and
    ``value_serde`` to :func:`hand_back_topic` of ``position`` (``name``: the processor it stands for)."""

    kind = "hand_back"

    def __init__(self, name: str, position: int, key_serde: Any, value_serde: Any):
        super().__init__(name)
        self.topic = hand_back_topic(position)
        self.key_serde, self.value_serde = key_serde, value_serde

    def process(self, key, value, context, out, state) -> None:
        try:
            key_bytes = self.key_serde.serialize(key)
            value_bytes = self.value_serde.serialize(value)
        except Exception as cause:  # noqa: BLE001 - re-raised naming the processor and the record
            raise ProcessingError(
                f"processor {self.name} cannot hand the record at {context.describe()} to the JVM with key serde "
                f"{self.key_serde!r} and value serde {self.value_serde!r}: {type(cause).__name__}: {cause}"
            ) from cause
        out.append(self.topic, key_bytes, value_bytes, context.headers, context.timestamp)
