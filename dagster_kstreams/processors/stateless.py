"""Stateless processors: sources, sinks, record functions and branches (``KStreamFilter``,
``KStreamMap``, ``KStreamMapValues``, ``KStreamFlatMap``, ``KStreamBranch``, ``KStreamPeek``,
``SinkNode`` ...); the KTable operations that keep no store are in :mod:`.table_steps`.

Each forwards what it produces to its children at once, in order (``Processor.forward``, written
out in each ``process``: this is the hot path, one Python frame less per record and processor).
User functions take ``(key, value)`` (the DSL's one-argument forms are wrapped already); a
failure becomes a :class:`~dagster_kstreams.processors.errors.ProcessingError` naming the
processor and the record.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any, Callable, Optional

from dagster_kstreams.processors.base import Processor, processor_class, register
from dagster_kstreams.processors.changes import ChangedSerde
from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.processors.partitioners import PickedTopicCounts, SinkPlacement, placement_for
from dagster_kstreams.processors.records import extractor_context
from dagster_kstreams.topology.fk_join import TableJoinedPartitioner
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.timestamp_extractors import extract_function
from dagster_kstreams.topology.topic_name_extractor import TopicNameFunction, topic_name_function

__all__ = ["Source", "Sink", "Filter", "Map", "MapValues", "FlatMap", "FlatMapValues", "SelectKey", "Peek",
           "Foreach", "Print", "Printer", "Merge", "BranchChild", "Branch", "RepartitionFilter",
           "FunctionProcessor", "BUILDERS"]


def pair(processor: Processor, result) -> tuple[Any, Any]:
    """A ``map``/``flat_map`` result as ``(key, value)``; anything else names the processor."""
    try:
        key, value = result
    except (TypeError, ValueError) as cause:
        raise not_a_pair(processor, result) from cause
    return key, value


def not_a_pair(processor: Processor, result) -> ProcessingError:
    """The error :func:`pair` raises for a result that is no ``(key, value)`` pair."""
    return ProcessingError(
        f"processor {processor.name} ({processor.kind}) must return a (key, value) pair, got {result!r}")


# -- the edges ---------------------------------------------------------------------------
@register
class Source(Processor):
    """Where records enter: the program deserializes them with these serdes (``SourceNode``)."""

    kind = "source"

    def __init__(self, name: str, topics: tuple[str, ...], key_serde, value_serde, timestamp_extractor=None):
        super().__init__(name)
        self.topics, self.key_serde, self.value_serde = topics, key_serde, value_serde
        # extract(record, partition_time), or None: the record timestamps (processors/timestamps.py)
        self.timestamp_extractor = timestamp_extractor

    def process(self, key, value, context, out, state) -> None:  # pragma: no cover - sources have no parents
        raise ValueError(f"processor {self.name}: a source receives records from its topics only")


@register
class Sink(Processor):
    """Serializes the record to a static topic, or to the one its topic-name extractor names
    (``SinkNode``): ``extractor.call(key, value)``, or, where it ``takes_context``,
    ``extractor.call(key, value, record_context)`` (:mod:`~dagster_kstreams.topology.topic_name_extractor`).
    Every record keeps its timestamp (``SinkNode`` writes ``record.timestamp()``): the engine
    writes it as the Kafka record's (:mod:`dagster_kstreams.kafka.timestamp_header`)."""

    kind = "sink"

    def __init__(self, name: str, topic: Optional[str], extractor: Optional[TopicNameFunction], key_serde,
                 value_serde, placement: Optional[SinkPlacement] = None):
        super().__init__(name)
        self.topic, self.extractor = topic, extractor
        self.key_serde, self.value_serde = key_serde, value_serde
        self.placement = placement  # None: Kafka's default partitioner places every record

    def process(self, key, value, context, out, state) -> None:
        topic = self.topic
        if topic is None:
            topic = self.pick_topic(key, value, context)
        if self.placement is not None:
            self.placement.write(self, topic, key, value, context, out)
            return
        key_bytes, value_bytes = self.serialize(topic, key, value, context)
        # The record's headers and timestamp go with it (Kafka Streams' SinkNode writes both).
        out.append(topic, key_bytes, value_bytes, context.headers, context.timestamp)

    def pick_topic(self, key, value, context) -> Any:
        """What the extractor names for the record (the Python pass, compiled chains and the
        Column plan's pass all ask this); a failure names the sink and the record."""
        if not self.extractor.takes_context:
            return self.call(context, self.extractor.call, key, value)
        return self.call(context, self.extractor.call, key, value, extractor_context(context))

    def serialize(self, topic: str, key, value, context) -> tuple[Optional[bytes], Optional[bytes]]:
        """The record's key and value bytes; a serde's failure names the sink and the record."""
        try:
            key_bytes = self.key_serde.serialize(key)
            value_bytes = self.value_serde.serialize(value)
        except Exception as cause:  # noqa: BLE001
            raise self.serialize_failure(topic, context, cause) from cause
        return key_bytes, value_bytes

    def serialize_failure(self, topic: str, context, cause: Exception) -> ProcessingError:
        """The error :meth:`serialize` raises when a serde fails (compiled chains raise the same)."""
        return ProcessingError(
            f"sink {self.name} cannot serialize the record for topic {topic!r} (from the record at "
            f"{context.describe()}) with key serde {self.key_serde!r} and value serde "
            f"{self.value_serde!r}: {type(cause).__name__}: {cause}")


# -- record functions ----------------------------------------------------------------------
class FunctionProcessor(Processor):
    """A processor that calls one user function (``fn``) per record."""

    def __init__(self, name: str, fn: Optional[Callable]):
        super().__init__(name)
        self.fn = fn


@register
class Filter(FunctionProcessor):
    """Keeps the records for which ``fn`` is true (``negate``: false, ``filterNot``)."""

    kind = "filter"

    def __init__(self, name: str, fn: Callable, negate: bool = False):
        super().__init__(name, fn)
        self.negate = negate

    def process(self, key, value, context, out, state) -> None:
        if bool(self.call(context, self.fn, key, value)) != self.negate:
            program = self.program
            for child in self.children:
                program._forward(child, key, value, context, out, state)


@register
class MapValues(FunctionProcessor):
    kind = "map_values"

    def process(self, key, value, context, out, state) -> None:
        new_value = self.call(context, self.fn, key, value)
        program = self.program
        for child in self.children:
            program._forward(child, key, new_value, context, out, state)


@register
class Map(FunctionProcessor):
    kind = "map"

    def process(self, key, value, context, out, state) -> None:
        new_key, new_value = pair(self, self.call(context, self.fn, key, value))
        program = self.program
        for child in self.children:
            program._forward(child, new_key, new_value, context, out, state)


@register
class SelectKey(FunctionProcessor):
    kind = "select_key"

    def process(self, key, value, context, out, state) -> None:
        new_key = self.call(context, self.fn, key, value)
        program = self.program
        for child in self.children:
            program._forward(child, new_key, value, context, out, state)


@register
class FlatMap(FunctionProcessor):
    """Forwards each ``(key, value)`` pair ``fn`` returns (None: nothing)."""

    kind = "flat_map"

    def process(self, key, value, context, out, state) -> None:
        program = self.program
        for result in self.call(context, self.fn, key, value) or ():
            new_key, new_value = pair(self, result)
            for child in self.children:
                program._forward(child, new_key, new_value, context, out, state)


@register
class FlatMapValues(FunctionProcessor):
    kind = "flat_map_values"

    def process(self, key, value, context, out, state) -> None:
        program = self.program
        for new_value in self.call(context, self.fn, key, value) or ():
            for child in self.children:
                program._forward(child, key, new_value, context, out, state)


@register
class Peek(FunctionProcessor):
    """Calls ``fn`` (if any) and forwards the record unchanged."""

    kind = "peek"

    def process(self, key, value, context, out, state) -> None:
        if self.fn is not None:
            self.call(context, self.fn, key, value)
        program = self.program
        for child in self.children:
            program._forward(child, key, value, context, out, state)


@register
class Foreach(Peek):
    kind = "foreach"


@register
class Print(Peek):
    kind = "print"


class Printer:
    """``KStream.print``: ``[label]: key, value`` lines, as Kafka Streams' ``PrintForeachAction``."""

    def __init__(self, label: str, file_path: Optional[str], mapper):
        self.label, self.file_path, self.mapper = label, file_path, mapper

    def __call__(self, key, value) -> None:
        text = self.mapper(key, value) if self.mapper is not None else f"{key}, {value}"
        line = f"[{self.label}]: {text}\n"
        if self.file_path:
            with open(self.file_path, "a", encoding="utf-8") as handle:
                handle.write(line)
        else:
            sys.stdout.write(line)
            sys.stdout.flush()


# -- routing -----------------------------------------------------------------------------
@register
class Merge(Processor):
    """Passes every record on (``merge``, and the nodes that only route: an unmaterialized table,
    a repartition filter that keeps null keys)."""

    kind = "merge"

    def process(self, key, value, context, out, state) -> None:
        program = self.program
        for child in self.children:
            program._forward(child, key, value, context, out, state)


@register
class BranchChild(Merge):
    kind = "branch_child"


@register
class Branch(Processor):
    """Sends each record to the first branch whose predicate holds (None: the default branch)."""

    kind = "branch"

    def __init__(self, name: str, children: list[int], predicates: tuple):
        super().__init__(name)
        self.children = children
        self.predicates = predicates

    def process(self, key, value, context, out, state) -> None:
        for predicate, child in zip(self.predicates, self.children):
            if predicate is None or self.call(context, predicate, key, value):
                self.program._forward(child, key, value, context, out, state)
                break


@register
class RepartitionFilter(Processor):
    """Drops records with a null key, as Kafka Streams does before a repartition topic and in a
    table's source (``KTableSource``, with or without a store)."""

    kind = "repartition_filter"

    def process(self, key, value, context, out, state) -> None:
        if key is not None:
            program = self.program
            for child in self.children:
                program._forward(child, key, value, context, out, state)


# -- definition time -------------------------------------------------------------------------
def _source(factory, ctx) -> Source:
    return Source(factory.name, tuple(ctx.application.source_node_topics(factory)),
                  ctx.key_serde(factory), _value_serde(factory, ctx),
                  extract_function(factory.serdes.get("timestamp_extractor")))


def _value_serde(factory, ctx):
    """The value serde of a source or sink; the repartition topic of a re-grouped table carries
    table updates with their old values (``changes``: Kafka Streams' ``ChangedSerializer``)."""
    serde = ctx.value_serde(factory)
    return ChangedSerde(serde) if factory.serdes.get("changes") else serde


def _sink(factory, ctx) -> Sink:
    partitioner = factory.serdes.get("partitioner")
    if isinstance(partitioner, TableJoinedPartitioner) and partitioner.answers and partitioner.key_serde is None:
        partitioner = replace(partitioner, key_serde=ctx.default_key_serde)
    key_serde = ctx.key_serde(factory)
    # No partitioner and a windowed key serde: Kafka Streams' WindowedStreamPartitioner (by the inner key).
    # A topic a function picks: its partition count is read from the broker when a record goes to it.
    picked = PickedTopicCounts(ctx.kafka_config) if factory.topic is None else None
    placement = placement_for(factory.name, partitioner, key_serde, picked)
    extractor = (None if factory.topic_extractor is None
                 else topic_name_function(factory.topic_extractor, f"sink {factory.name}"))
    return Sink(factory.name, None if factory.topic is None else ctx.topic_name(factory.topic),
                extractor, key_serde, _value_serde(factory, ctx), placement=placement)


def _pass_through(kind: str):
    return lambda factory, ctx: processor_class(kind)(factory.name)


def _filter(factory, ctx) -> Filter:
    fn = ctx.function(factory, factory.params["predicate"])
    return Filter(factory.name, fn.as_key_value(), negate=bool(factory.params.get("negate")))


def _record_function(cls: type, parameter: str):
    def build(factory, ctx):
        return cls(factory.name, ctx.function(factory, factory.params[parameter]).as_key_value())

    return build


def _print(factory, ctx) -> Print:
    params = factory.params
    return Print(factory.name, Printer(params["label"], params.get("file_path"), params.get("mapper")))


def _branch(factory, ctx) -> Branch:
    # A Column expression: the engine's marker (the Spark layer runs it), or refused by the engine.
    predicates = [ctx.function(factory, predicate).as_key_value() for predicate in factory.params["predicates"]]
    # The children follow the branches' order, each with its predicate (None: the default branch).
    children, tests = [], []
    for child_name in factory.params["children"]:
        branch_index = ctx.subtopology.node(child_name).params["index"]
        children.append(ctx.position(child_name))
        tests.append(None if branch_index == 0 else predicates[branch_index - 1])
    return Branch(factory.name, children, tuple(tests))


def _repartition_filter(factory, ctx) -> Processor:
    if factory.params.get("drop_null_keys", True):
        return RepartitionFilter(factory.name)
    return Merge(factory.name)  # keeps null keys: passes everything through


BUILDERS: dict[NodeKind, Callable] = {
    NodeKind.SOURCE: _source,
    NodeKind.SINK: _sink,
    NodeKind.MERGE: _pass_through("merge"),
    NodeKind.BRANCH_CHILD: _pass_through("branch_child"),
    NodeKind.FILTER: _filter,
    NodeKind.MAP: _record_function(Map, "mapper"),
    NodeKind.MAP_VALUES: _record_function(MapValues, "mapper"),
    NodeKind.FLAT_MAP: _record_function(FlatMap, "mapper"),
    NodeKind.FLAT_MAP_VALUES: _record_function(FlatMapValues, "mapper"),
    NodeKind.SELECT_KEY: _record_function(SelectKey, "mapper"),
    NodeKind.PEEK: _record_function(Peek, "action"),
    NodeKind.FOREACH: _record_function(Foreach, "action"),
    NodeKind.PRINT: _print,
    NodeKind.BRANCH: _branch,
    NodeKind.REPARTITION_FILTER: _repartition_filter,
}
