"""The stream-global-table join (Kafka Streams' ``KStreamGlobalKTableJoin``, run by its
``KStreamKTableJoinProcessor``).

A stream record maps to the table's key with ``key_selector(key, value)`` and looks that key up in
the whole global table (:mod:`dagster_kstreams.kafka.global_topic`: every partition of the topic,
in this process). The table is brought up to the topic's end offsets once per micro-batch of the
task, before the batch's first lookup: every record of a batch sees the global topic as it stood
when the batch began (Kafka Streams bootstraps its global store to the end before it processes,
then a global thread keeps it up to date alongside the tasks).

What is dropped, as Kafka Streams 4.3.1 drops it (checked against it): a record with a null value;
for an inner join, a record whose mapped key is null or not in the table. A null stream key is no
reason to drop (the key selector is called with it); a left join joins a record whose mapped key is
null or missing with None. The key selector is called before the value is checked, with a null
value too, as in Kafka Streams. The output keeps the stream record's key and timestamp.
"""

from __future__ import annotations

from typing import Any, Mapping

from dagster_kstreams.kafka.global_topic import GlobalTopicReplica, replica
from dagster_kstreams.processors.base import Processor, register
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["GlobalTable", "StreamGlobalTableJoin", "DROPPED", "BUILDERS"]

DROPPED = object()  # what StreamGlobalTableJoin.joined gives for a record the join drops


class GlobalTable:
    """The global table as a join reads it: serialize the mapped key, find its bytes, deserialize
    the value. The replica is found again in each process it is unpickled in, and caught up on
    the first lookup after that (once per micro-batch: Spark ships the program with every task)."""

    def __init__(self, kafka_config: Mapping[str, Any], topic: str, key_serde, value_serde):
        self.kafka_config = dict(kafka_config)
        self.topic = topic
        self.key_serde, self.value_serde = key_serde, value_serde
        self._replica: GlobalTopicReplica | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_replica": None}

    def get(self, key):
        if self._replica is None:
            if not self.kafka_config.get("bootstrap.servers"):
                raise ValueError(f"the global table of topic {self.topic!r} needs the Kafka settings "
                                 "(bootstrap.servers) to be read")
            self._replica = replica(self.kafka_config, self.topic)
            self._replica.catch_up()
        raw = self._replica.get(self.key_serde.serialize(key))
        return None if raw is None else self.value_serde.deserialize(raw)


@register
class StreamGlobalTableJoin(Processor):
    kind = "stream_global_table_join"

    def __init__(self, name: str, key_selector, joiner, join_type: str, table: GlobalTable):
        super().__init__(name)
        self.key_selector, self.fn, self.join_type, self.table = key_selector, joiner, join_type, table

    def joined(self, key, value, context):
        """The joined value of a stream record, or :data:`DROPPED` where Kafka Streams drops the record
        (and counts it as skipped). The one join of the program's pass and of a Column plan's Python
        segment (:mod:`dagster_kstreams.spark.python_segments`)."""
        left = self.join_type == "left"
        mapped = self.call(context, self.key_selector, key, value)
        if value is None or (mapped is None and not left):
            return DROPPED
        table_value = None if mapped is None else self.call(context, self.table.get, mapped)
        if table_value is None and not left:
            return DROPPED
        return self.call(context, self.fn, key, value, table_value)

    def process(self, key, value, context, out, state) -> None:
        joined = self.joined(key, value, context)
        if joined is not DROPPED:
            self.forward(key, joined, context, out, state)


def _stream_global_table_join(factory, ctx) -> StreamGlobalTableJoin:
    params = factory.params
    table = GlobalTable(ctx.kafka_config, ctx.topic_name(params["global_topic"]),
                        params.get("global_key_serde") or ctx.default_key_serde,
                        params.get("global_value_serde") or ctx.default_value_serde)
    return StreamGlobalTableJoin(factory.name, ctx.function(factory, params["key_selector"]).as_key_value(),
                                 ctx.function(factory, params["joiner"]).as_joiner(), params["join_type"], table)


BUILDERS = {NodeKind.STREAM_GLOBAL_TABLE_JOIN: _stream_global_table_join}
