"""Stores that write keys with different serdes in a sub-topology whose sources read keys with
different serdes: the Python twin of kstreams.oracle.KeySerdeExamples (Java); keep the two in step.

Calls (String keys: ``"u7"``, and ``"U7"`` for the same user written otherwise) merged with texts
(the user's number as a Long, read as ``"u<n>"``), grouped by key; a count whose store writes keys
with the String serde (``"U7"`` and ``"u7"`` two keys) and a reduce whose store writes them in lower
case (one key), both without the record cache; a reduce whose store writes keys as the user's number
(a Long, UserIdSerde: ``"U7"`` and ``"u7"`` one key); and ``StoreAudit``, a processor on the merged
stream connected to the count's store and the Long-keyed one, reading and writing each under the
key as that store's serde writes it.

Its lambdas are self-contained (no module-level helpers): Spark's Python workers cannot import
modules of tests/, and the test modules ship their own functions by value.
"""

from __future__ import annotations

import struct

from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Consumed, Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.named import Named
from dagster_kstreams.topology.processor_api import Processor, Record, ValueAndTimestamp
from dagster_kstreams.topology.serdes import Serde, Serdes

INPUTS = ("calls", "texts")
OUTPUTS = ("out-counts", "out-folded", "out-audit")


class UserIdSerde(Serde):
    """The user ``u<n>`` written as the Long ``n`` (KeySerdeExamples.USER_ID in Java)."""

    name = "UserId"

    def serialize(self, value):
        return None if value is None else struct.pack(">q", int(value[1:]))

    def deserialize(self, data):
        return None if data is None else f"u{struct.unpack('>q', data)[0]}"


class LowerCaseSerde(Serde):
    """Keys written in lower case, read as written (KeySerdeExamples.LOWER_CASE in Java)."""

    name = "LowerCase"

    def serialize(self, value):
        return None if value is None else value.lower().encode()

    def deserialize(self, data):
        return None if data is None else data.decode()


class StoreAudit(Processor):
    """Per record with a key (KeySerdeExamples.StoreAudit in Java): forwards what ``exact-counts``
    (String keys) and ``latest-by-id`` (Long keys) hold for it; a value ending in ``0.`` adds 100 to
    the count and replaces the latest value, a tombstone deletes the key from both stores and lists
    the keys each store has left (``all()``, in its serialized keys' order)."""

    def init(self, context) -> None:
        self.context = context
        self.counts = context.get_state_store("exact-counts")
        self.latest = context.get_state_store("latest-by-id")

    @staticmethod
    def stored_text(stored) -> str:
        """A ValueAndTimestamp as both twins write it (``value@timestamp``, or ``null``)."""
        return "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"

    def process(self, record: Record) -> None:
        if record.key is None:
            return
        text = self.stored_text
        count, latest = self.counts.get(record.key), self.latest.get(record.key)
        seen = f"{'null' if record.value is None else record.value}|{text(count)}|{text(latest)}"
        if record.value is None:
            self.counts.delete(record.key)
            self.latest.delete(record.key)
            left = ",".join(entry.key for entry in self.counts.all()) + "/" + \
                ",".join(entry.key for entry in self.latest.all())
            self.context.forward(record.with_value(f"deleted|{seen}|{left}"))
        elif record.value.endswith("0."):
            self.counts.put(record.key, ValueAndTimestamp.make((0 if count is None else count.value()) + 100,
                                                               record.timestamp))
            self.latest.put(record.key, ValueAndTimestamp.make(f"reset:{record.value}", record.timestamp - 1))
            self.context.forward(record.with_value(f"reset|{seen}"))
        else:
            self.context.forward(record.with_value(f"read|{seen}"))


def key_serde_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of KeySerdeExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    texts = builder.stream(topics["texts"], Consumed.with_(UserIdSerde(), Serdes.String()))
    merged = builder.stream(topics["calls"]).merge(texts)
    by_user = merged.group_by_key()
    by_user.count(Named.as_("exact-count"), Materialized.as_("exact-counts").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-counts"], Produced.with_(Serdes.String(), Serdes.Long()))
    by_user.reduce(lambda left, right: (left + right)[-60:], Named.as_("folded-reduce"),
                   Materialized.as_("folded").with_key_serde(LowerCaseSerde()).with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-folded"], Produced.with_(Serdes.String(), Serdes.String()))
    by_user.reduce(lambda left, right: (left + right)[-40:], Named.as_("latest-reduce"),
                   Materialized.as_("latest-by-id").with_key_serde(UserIdSerde()).with_caching_disabled())
    merged.process(StoreAudit, Named.as_("store-audit"), "exact-counts", "latest-by-id") \
        .to(topics["out-audit"], Produced.with_(Serdes.String(), Serdes.String()))
    return builder
