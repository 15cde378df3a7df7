"""The suppressed prices' record context, a part of the suppression example (``suppress_examples`` in
tests/suppress_topology.py calls :func:`suppressed_contexts`), the Python twin of
kstreams.oracle.SuppressContextExamples (Java): keep the two in step.

Kafka Streams' suppression buffer keeps each update's whole record context and emits the update in it
(``KTableSuppressProcessor.emit``): what comes after sees the topic, partition and offset of the buffered
record, not of the one whose arrival evicted it. A processor after the suppressed table's ``to_stream``
writes its ``record_metadata()`` into the value, and a topic-name extractor routes by the context's offset.

Its classes are self-contained (no module-level helpers): Spark's Python workers cannot import modules of
tests/, and the test modules ship this one by value.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams.topology import TopicNameExtractor
from dagster_kstreams.topology.processor_api import FixedKeyProcessor
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed

# the outputs: the updates whose context's offset is even, and odd (ContextOffsetRouter)
CONTEXT_OUTPUTS = ("out-held-context", "out-held-context-odd")


class StampRecordMetadata(FixedKeyProcessor):
    """SuppressContextExamples.StampRecordMetadata: ``value|<topic>|p<partition>|o<offset>|t<timestamp>``
    ("null" for a tombstone's value), of the record context it is given."""

    def init(self, context) -> None:
        self.context = context

    def process(self, record) -> None:
        metadata = self.context.record_metadata()
        value = "null" if record.value is None else record.value
        self.context.forward(record.with_value(
            f"{value}|{metadata.topic}|p{metadata.partition}|o{metadata.offset}|t{record.timestamp}"))


class ContextOffsetRouter(TopicNameExtractor):
    """SuppressContextExamples.ContextOffsetRouter: to ``odd`` when the record context's offset is odd,
    else to ``even``."""

    def __init__(self, even: str, odd: str):
        self.even, self.odd = even, odd

    def extract(self, key, value, record_context) -> str:
        return self.odd if record_context.offset() % 2 else self.even

    def __str__(self) -> str:  # what describe() prints; the Java twin's toString() says the same
        return "ContextOffsetRouter"


def suppressed_contexts(prices, topics: dict[str, str]) -> None:
    """On the prices table: a suppression until a time limit of at most 4 keys (emitted early when full,
    else when their time is up), its updates stamped with their record metadata and routed by offset."""
    prices.suppress(Suppressed.until_time_limit(timedelta(seconds=3), BufferConfig.max_records(4).emit_early_when_full())
                    .with_name("held-context")) \
        .to_stream() \
        .process_values(StampRecordMetadata) \
        .to(ContextOffsetRouter(*(topics[name] for name in CONTEXT_OUTPUTS)))
