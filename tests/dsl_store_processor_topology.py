"""User processors on DSL operations' stores, the Python twin of kstreams.oracle.DslStoreProcessorExamples
(Java): keep the two in step.

``CountCorrector`` (``process`` on ``count(Materialized.as_("counts"))``'s stream, store ``counts``,
uncached): per count update it forwards the count, its timestamp and what ``counts`` holds for the key
(a ``ValueAndTimestamp``); a count of 3 is corrected to 10 (stamped 7 ms after the record), a count of
13 or more is deleted (forwarding what it held), so the next records of the key count on from what
the processor wrote. A punctuator on stream time every 10 s walks ``counts.all()`` in key order and,
for the keys of the 10 s buckets that ended by then (keys start with their bucket), forwards what
each holds and deletes it.

``PriceReader`` (``process`` on the ``orders`` stream, store ``prices-store`` of a table read from
the ``prices`` topic, in the same sub-topology): forwards each order with the key's price and its
timestamp as the table holds them at that point of the task's processing order.

Every value starts with ``p<partition>|``: the task that produced it. Its classes are
self-contained: Spark's Python workers cannot import modules of tests/, and the test ships this
module by value.
"""

from __future__ import annotations

from dagster_kstreams.topology import Materialized, StreamsBuilder
from dagster_kstreams.topology.processor_api import Processor, PunctuationType, Record, ValueAndTimestamp

BUCKET_MS = 10_000


def stored_text(stored) -> str:
    """A ValueAndTimestamp as both twins write it (``value@timestamp``, or ``null``)."""
    return "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"


class CountCorrector(Processor):
    def init(self, context) -> None:
        self.context = context
        self.counts = context.get_state_store("counts")
        context.schedule(BUCKET_MS, PunctuationType.STREAM_TIME, self.close_buckets)

    def process(self, record: Record) -> None:
        tag = f"p{self.context.record_metadata().partition}|"
        stored = self.counts.get(record.key)
        self.context.forward(record.with_value(f"{tag}count|{record.value}|t{record.timestamp}|{stored_text(stored)}"))
        if record.value == 3:
            self.counts.put(record.key, ValueAndTimestamp.make(10, record.timestamp + 7))
        elif record.value >= 13:
            old = self.counts.delete(record.key)
            self.context.forward(record.with_value(f"{tag}deleted|{stored_text(old)}"))

    def close_buckets(self, now: int) -> None:
        tag = f"p{self.context.task_id().partition}|"
        for entry in self.counts.all():
            end = (int(entry.key[:12]) + 1) * BUCKET_MS
            if end > now:
                break
            self.context.forward(Record(entry.key, f"{tag}closed|{stored_text(entry.value)}", end - 1))
            self.counts.delete(entry.key)


class PriceReader(Processor):
    def init(self, context) -> None:
        self.context = context
        self.prices = context.get_state_store("prices-store")

    def process(self, record: Record) -> None:
        tag = f"p{self.context.record_metadata().partition}|"
        order = "null" if record.value is None else record.value  # as Java writes a null
        if record.key is None:
            self.context.forward(record.with_value(f"{tag}nokey|{order}"))
            return
        price = self.prices.get(record.key)
        self.context.forward(record.with_value(f"{tag}order|{order}|t{record.timestamp}|{stored_text(price)}"))


def dsl_store_processor_examples(topics: dict[str, str]) -> StreamsBuilder:
    builder = StreamsBuilder()
    counts = builder.stream(topics["events"]).group_by_key().count(Materialized.as_("counts").with_caching_disabled())
    counts.to_stream().process(CountCorrector, "counts").to(topics["out"])
    builder.table(topics["prices"], Materialized.as_("prices-store"))
    builder.stream(topics["orders"]).process(PriceReader, "prices-store").to(topics["out-prices"])
    return builder
