"""Stores that write keys with different serdes in a sub-topology whose sources read keys with
different serdes: the Python twin of kstreams.oracle.KeySerdeExamples (Java); keep the two in step.

Calls (String keys: ``"u7"``, and ``"U7"`` for the same user written otherwise) merged with texts
(the user's number as a Long, read as ``"u<n>"``), grouped by key; a count whose store writes keys
with the String serde (``"U7"`` and ``"u7"`` two keys) and a reduce whose store writes them in lower
case (one key), both without the record cache.

Its lambdas are self-contained (no module-level helpers): Spark's Python workers cannot import
modules of tests/, and the test modules ship their own functions by value.
"""

from __future__ import annotations

import struct

from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Consumed, Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.named import Named
from dagster_kstreams.topology.serdes import Serde, Serdes

INPUTS = ("calls", "texts")
OUTPUTS = ("out-counts", "out-folded")


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


def key_serde_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of KeySerdeExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    texts = builder.stream(topics["texts"], Consumed.with_(UserIdSerde(), Serdes.String()))
    by_user = builder.stream(topics["calls"]).merge(texts).group_by_key()
    by_user.count(Named.as_("exact-count"), Materialized.as_("exact-counts").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-counts"], Produced.with_(Serdes.String(), Serdes.Long()))
    by_user.reduce(lambda left, right: (left + right)[-60:], Named.as_("folded-reduce"),
                   Materialized.as_("folded").with_key_serde(LowerCaseSerde()).with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-folded"], Produced.with_(Serdes.String(), Serdes.String()))
    return builder
