"""Custom stream partitioners: where a sink puts a record when the user chose (Kafka Streams'
``StreamPartitioner``, applied as ``RecordCollectorImpl.send`` applies it).

A user's partitioner is an object with ``partition(topic, key, value, num_partitions) ->
Optional[int]`` and/or ``partitions(topic, key, value, num_partitions) -> Optional[set[int]]``
(KIP-837; ``partitions`` wins when both are there), or a plain callable taking the same four
arguments as ``partition``. It sees the record's key and value as the sink has them (objects,
before serialization) and the sink topic's partition count as the broker has it. Its answer:

* None: Kafka's default partitioner places the record (murmur2 of the serialized key);
* an empty set: the record is dropped (Kafka Streams logs it and counts it as dropped);
* partitions: one copy of the record to each, in ascending order (as Java iterates a small
  ``HashSet<Integer>``); a partition outside ``[0, num_partitions)`` stops the task, as the
  producer's ``send`` stops Kafka Streams.

A sink whose topic a function picks learns that topic's partition count when a record goes to it,
as Kafka Streams' producer does (:class:`PickedTopicCounts`: asked of the broker once per topic and
task batch; a topic that does not exist stops the task with one line naming the sink, the topic and
the record). A sink whose key serde is windowed and that has no partitioner places a record by its
inner key (:class:`WindowedStreamPartitioner`, as Kafka Streams). A foreign-key join's internal sinks use :class:`~dagster_kstreams.topology.fk_join.TableJoinedPartitioner`
(``KTableImpl``: the user's partitioner with a null value, whose answer must be at most one
partition; an answer with none goes back to the partition its subscription came from). A
processor that knows the partition itself forwards a :class:`Placed` value.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

from dagster_kstreams.kafka.admin import KafkaAdminError
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.topic_partitions import partition_count
from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.topology.fk_join import TableJoinedPartitioner
from dagster_kstreams.topology.serdes import WindowedSerde

__all__ = ["Placed", "PickedTopicCounts", "SinkPlacement", "WindowedStreamPartitioner", "placement_for",
           "partitions_of"]


class Placed(NamedTuple):
    """A value forwarded to a sink together with the partition it goes to when no partitioner
    decides (a foreign-key join's answer: the partition of the left record that subscribed)."""

    value: Any
    partition: Optional[int]


def partitions_of(partitioner: Any) -> Callable[[str, Any, Any, int], Any]:
    """The user's partitioner as one function with ``partitions``' answer (None, or partitions)."""
    multicast = getattr(partitioner, "partitions", None)
    if callable(multicast):
        return multicast
    single = getattr(partitioner, "partition", None)
    if not callable(single):
        if not callable(partitioner):
            raise TypeError(f"a stream partitioner is an object with partition() or partitions(), or a callable; "
                            f"got {type(partitioner).__name__}")
        single = partitioner

    def partitions(topic, key, value, num_partitions):
        partition = single(topic, key, value, num_partitions)
        return None if partition is None else (partition,)
    return partitions


class PickedTopicCounts:
    """The partition counts of the topics a sink's function picks, each read from the broker the
    first time a task batch sends to it (Kafka Streams' ``partitionsFor``, answered from its
    producer's metadata). Forgotten when the program is shipped to a Spark task (pickled): every
    batch reads them afresh, so a topic given partitions between batches is seen."""

    def __init__(self, kafka_config: Any):
        self.kafka_config = dict(kafka_config)
        self._counts: dict[str, int] = {}

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_counts": {}}

    def get(self, sink: str, topic: Any, context) -> int:
        count = self._counts.get(topic)
        if count is None:
            if not isinstance(topic, str) or not topic:
                raise ProcessingError(f"sink {sink}: its topic extractor gave {topic!r} for the record at "
                                      f"{context.describe()}, not a topic name")
            try:
                count = partition_count(self.kafka_config, topic)
            except KafkaAdminError as error:  # Kafka Streams: "Could not get partition information ..."
                raise ProcessingError(f"sink {sink}: cannot place the record at {context.describe()} on topic "
                                      f"{topic!r}, which its topic extractor picked: {error}") from None
            self._counts[topic] = count
        return count


class SinkPlacement:
    """How one sink places its records: the user's partitioner (``partitioner``), or a foreign-key
    join's (``table_joined``). :meth:`partitions` gives None (Kafka's default partitioner places
    the record) or the partitions to write a copy to (none: dropped). ``picked``: the partition
    counts of a sink whose topic a function picks (None: a sink with one topic, whose count the
    engine gives the program before the run)."""

    def __init__(self, sink: str, partitioner: Any, picked: Optional[PickedTopicCounts] = None):
        self.sink = sink
        self.picked = picked
        self.table_joined = partitioner if isinstance(partitioner, TableJoinedPartitioner) else None
        self.windowed_default = isinstance(partitioner, WindowedStreamPartitioner)
        user = partitioner.partitioner if self.table_joined is not None else partitioner
        self.user = None if user is None else partitions_of(user)

    def write(self, sink, topic: str, key, value, context, out) -> None:
        """``RecordCollectorImpl.send`` with a partitioner, for ``sink`` (the ``Sink`` processor):
        Kafka's default partitioner (None), nothing (no partition), or a copy to each partition."""
        default = None
        if type(value) is Placed:
            value, default = value
        partitions = self.partitions(sink, topic, key, value, context, default)
        if partitions is not None and not partitions:
            return  # Kafka Streams logs it and counts it in its dropped-records sensor
        key_bytes, value_bytes = sink.serialize(topic, key, value, context)
        timestamp = context.timestamp
        if partitions is None:
            out.append(topic, key_bytes, value_bytes, context.headers, timestamp)
            return
        for partition in partitions:
            out.append_to(partition, topic, key_bytes, value_bytes, context.headers, timestamp)

    def partitions(self, sink, topic: str, key, value, context, default: Optional[int]) -> Optional[tuple[int, ...]]:
        """Where ``sink`` (the processor) writes the record; ``default``: the partition a
        :class:`Placed` value brought (None: it brought none)."""
        if self.user is None:
            return None if default is None else (default,)
        if self.windowed_default and sink.program.sink_partition_counts is None:
            return None  # an engine that gives no partition counts: Kafka's default placement
        num_partitions = (sink.program.partition_count(topic) if self.picked is None
                          else self.picked.get(self.sink, topic, context))
        if self.table_joined is not None:
            if self.table_joined.answers:
                key = self.table_joined.key_serde.deserialize(key)  # the left key reaches it serialized
            value = None  # KTableImpl calls it with a null value
        chosen = sink.call(context, self.user, topic, key, value, num_partitions)
        if chosen is None:
            return None
        chosen = tuple(sorted(set(chosen)))  # a set, as Java's
        if self.table_joined is not None and len(chosen) != 1:
            raise ProcessingError(
                f"sink {self.sink} (topic {topic!r}): the partitioner of a foreign-key join must give one partition "
                f"or None, gave {list(chosen)} (Kafka Streams: IllegalArgumentException) for the record at "
                f"{context.describe()}")
        for partition in chosen:
            if not isinstance(partition, int) or not 0 <= partition < num_partitions:
                raise ProcessingError(
                    f"sink {self.sink}: the stream partitioner chose partition {partition!r} of topic {topic!r}, "
                    f"which has {num_partitions} partitions (record at {context.describe()})")
        return chosen


class WindowedStreamPartitioner:
    """Kafka Streams' default for a sink whose key serde is windowed: the partition Kafka's
    default partitioner gives the inner key's bytes, so that a window of a key lands where the
    key itself would (``StreamSinkNode`` puts it on such a sink when no partitioner is given)."""

    def __init__(self, serde: WindowedSerde):
        self.inner = serde.inner

    def partitions(self, topic, key, value, num_partitions):
        return (default_partition(self.inner.serialize(key.key) or b"", num_partitions),)


def placement_for(sink: str, partitioner: Any, key_serde: Any = None,
                  picked: Optional[PickedTopicCounts] = None) -> Optional[SinkPlacement]:
    """The sink's placement, or None: Kafka's default partitioner places every record (``picked``:
    given for a sink whose topic a function picks)."""
    if partitioner is None and isinstance(key_serde, WindowedSerde):
        partitioner = WindowedStreamPartitioner(key_serde)
    if partitioner is None:
        return None
    if isinstance(partitioner, TableJoinedPartitioner) and partitioner.partitioner is None \
            and not partitioner.answers:
        return None
    return SinkPlacement(sink, partitioner, picked)
