"""Turn a topology's processor graph into what the Spark runner executes.

For each sub-topology, :class:`CompiledTopology` knows its source and sink topics (internal
ones prefixed with the application id, as Kafka Streams names them:
``<application_id>-<name>-repartition``), computes every topic's partition count (a
repartition topic gets its ``Repartitioned`` count, else the task count of the sub-topology
that writes it), and builds a :class:`~dagster_kstreams.spark.program.SubtopologyProgram`:
the sub-topology's processors resolved for execution (serdes chosen, user functions in the
form they are called in, one state slot per store).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Optional

from dagster_kstreams.kafka.dead_letter import DeadLetterPolicy
from dagster_kstreams.spark.program import ExecNode, SubtopologyProgram
from dagster_kstreams.topology.graph import InternalStreamsBuilder, InternalTopologyBuilder, NodeFactory, NodeKind
from dagster_kstreams.topology.serdes import Serdes

__all__ = ["CompiledTopology", "compile_topology", "parse_task_id", "UnsupportedTopologyError"]


class UnsupportedTopologyError(ValueError):
    """The topology uses an operation the Spark runner cannot execute yet (named in the message)."""


def parse_task_id(task_id: str) -> tuple[int, int]:
    """``"1_3"`` -> ``(1, 3)`` (Kafka Streams' ``TaskId`` string form)."""
    parts = str(task_id).split("_")
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        raise ValueError(f"task id {task_id!r} must look like '<subtopology>_<partition>', e.g. '1_3'")
    return int(parts[0]), int(parts[1])


def _internal_builder(topology: Any) -> InternalTopologyBuilder:
    """The processor graph behind a ``Topology`` (or a ``StreamsBuilder``, built first)."""
    if isinstance(topology, InternalTopologyBuilder):
        return topology
    if isinstance(getattr(topology, "_builder", None), InternalStreamsBuilder):  # a StreamsBuilder
        return topology._builder.build()
    for value in vars(topology).values():
        if isinstance(value, InternalTopologyBuilder):
            return value
    raise TypeError(
        f"expected a Topology from StreamsBuilder.build(), got {type(topology).__name__}"
    )


_PASS_THROUGH = {
    NodeKind.MERGE: "merge",
    NodeKind.BRANCH_CHILD: "branch_child",
    NodeKind.TABLE_TO_STREAM: "table_to_stream",
}
_RECORD_FUNCTIONS = {
    NodeKind.MAP: ("map", "mapper"),
    NodeKind.MAP_VALUES: ("map_values", "mapper"),
    NodeKind.FLAT_MAP: ("flat_map", "mapper"),
    NodeKind.FLAT_MAP_VALUES: ("flat_map_values", "mapper"),
    NodeKind.SELECT_KEY: ("select_key", "mapper"),
    NodeKind.PEEK: ("peek", "action"),
    NodeKind.FOREACH: ("foreach", "action"),
    NodeKind.TABLE_MAP_VALUES: ("table_map_values", "mapper"),
}


class _Printer:
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


@dataclass
class _Subtopology:
    id: int
    node_names: list[str]
    source_topics: list[str]  # full names (internal ones prefixed)
    sink_topics: list[str]


class CompiledTopology:
    """A topology, as the Spark runner sees it, for one application id."""

    def __init__(
        self,
        builder: InternalTopologyBuilder,
        application_id: str,
        dead_letters: DeadLetterPolicy,
        default_key_serde=None,
        default_value_serde=None,
    ):
        self.builder = builder
        self.application_id = application_id
        self.dead_letters = dead_letters
        # Kafka Streams' default.key.serde / default.value.serde; strings unless configured.
        self.default_key_serde = default_key_serde or Serdes.String()
        self.default_value_serde = default_value_serde or Serdes.String()
        self.repartition_partitions: dict[str, Optional[int]] = {
            self.topic_name(name): count for name, count in builder.internal_topics.items()
        }
        self.subtopologies: dict[int, _Subtopology] = {}
        for subtopology_id, names in builder.node_groups().items():
            sources: list[str] = []
            sinks: list[str] = []
            for name in names:
                factory = builder.node_factories[name]
                if factory.role == "source":
                    if factory.pattern is not None:
                        raise UnsupportedTopologyError(
                            f"source {name} subscribes to the pattern {factory.pattern!r}; the Spark runner "
                            "needs topic names (tasks are assigned partitions of known topics)"
                        )
                    sources.extend(self.topic_name(topic) for topic in factory.topics)
                elif factory.role == "sink" and factory.topic is not None:
                    sinks.append(self.topic_name(factory.topic))
            self.subtopologies[subtopology_id] = _Subtopology(subtopology_id, list(names), sources, sinks)
        self._programs: dict[int, SubtopologyProgram] = {}

    # -- topics ------------------------------------------------------------------------
    def topic_name(self, topic: str) -> str:
        """The Kafka topic behind a topic name of the graph (internal ones get the app id prefix)."""
        if topic in self.builder.internal_topics:
            return f"{self.application_id}-{topic}"
        return topic

    @property
    def subtopology_ids(self) -> list[int]:
        return sorted(self.subtopologies)

    @property
    def repartition_topics(self) -> list[str]:
        return list(self.repartition_partitions)

    @property
    def external_source_topics(self) -> list[str]:
        return [
            topic
            for sub in self.subtopologies.values()
            for topic in sub.source_topics
            if topic not in self.repartition_partitions
        ]

    def source_topics(self, subtopology: int) -> list[str]:
        return list(self.subtopologies[subtopology].source_topics)

    def sink_topics(self, subtopology: int) -> list[str]:
        return list(self.subtopologies[subtopology].sink_topics)

    def offset_reset(self, topic: str) -> str:
        """Where a task starts on a partition with no committed offset ("earliest" by default, as Kafka Streams)."""
        for factory in self.builder.node_factories.values():
            if factory.role == "source" and topic in {self.topic_name(t) for t in factory.topics}:
                return factory.serdes.get("offset_reset") or "earliest"
        return "earliest"

    def execution_order(self) -> list[int]:
        """Sub-topologies with writers of a repartition topic before its readers."""
        writers = {
            topic: sub.id for sub in self.subtopologies.values() for topic in sub.sink_topics
            if topic in self.repartition_partitions
        }
        order: list[int] = []
        visiting: set[int] = set()

        def visit(sub_id: int) -> None:
            if sub_id in order or sub_id in visiting:
                return
            visiting.add(sub_id)
            for topic in self.subtopologies[sub_id].source_topics:
                if topic in writers:
                    visit(writers[topic])
            visiting.discard(sub_id)
            order.append(sub_id)

        for sub_id in self.subtopology_ids:
            visit(sub_id)
        return order

    def partition_counts(self, external: dict[str, int]) -> dict[str, int]:
        """Every source and repartition topic's partition count, given the external topics' counts."""
        counts = dict(external)
        for topic, enforced in self.repartition_partitions.items():
            if enforced is not None:
                counts[topic] = enforced
        for sub_id in self.execution_order():
            sub = self.subtopologies[sub_id]
            missing = [topic for topic in sub.source_topics if topic not in counts]
            if missing:
                raise ValueError(f"sub-topology {sub_id}: partition count of {missing} unknown")
            task_count = max(counts[topic] for topic in sub.source_topics)
            for topic in sub.sink_topics:
                if topic in self.repartition_partitions and topic not in counts:
                    counts[topic] = task_count
        return counts

    def task_ids(self, counts: dict[str, int]) -> list[str]:
        tasks = []
        for sub_id in self.execution_order():
            task_count = max(counts[topic] for topic in self.subtopologies[sub_id].source_topics)
            tasks.extend(f"{sub_id}_{partition}" for partition in range(task_count))
        return tasks

    def subtopology_of_store(self, store_name: str) -> int:
        for sub in self.subtopologies.values():
            for name in sub.node_names:
                if store_name in self.builder.node_factories[name].store_names:
                    return sub.id
        raise KeyError(f"the topology has no state store {store_name!r} (it has {sorted(self.builder.state_stores)})")

    def store_key_serde(self, subtopology: int):
        """Stores are keyed by the source record key: the serde of the sub-topology's source."""
        program = self.program(subtopology)
        return next(node.key_serde for node in program.nodes if node.kind == "source")

    # -- programs ----------------------------------------------------------------------
    def program(self, subtopology: int) -> SubtopologyProgram:
        if subtopology not in self._programs:
            self._programs[subtopology] = self._build_program(subtopology)
        return self._programs[subtopology]

    def _build_program(self, subtopology: int) -> SubtopologyProgram:
        names = self.subtopologies[subtopology].node_names
        factories = self.builder.node_factories
        position = {name: index for index, name in enumerate(names)}
        nodes = [self._exec_node(factories[name]) for name in names]
        for name in names:
            for predecessor in factories[name].predecessors:
                if predecessor in position and nodes[position[predecessor]].kind != "branch":
                    nodes[position[predecessor]].children.append(position[name])
        # A branch's children follow its branches' order, each with its predicate (None: default).
        for index, name in enumerate(names):
            factory = factories[name]
            if factory.spec is not None and factory.spec.kind is NodeKind.BRANCH:
                predicates = factory.spec.params["predicates"]
                children, tests = [], []
                for child_name in factory.spec.params["children"]:
                    child_index = position[child_name]
                    branch_index = factories[child_name].spec.params["index"]
                    children.append(child_index)
                    tests.append(None if branch_index == 0 else predicates[branch_index - 1].as_key_value())
                nodes[index].children = children
                nodes[index].predicates = tuple(tests)
        slot = 0
        for node in nodes:
            if node.stateful:
                node.state_slot = slot
                slot += 1
        return SubtopologyProgram(subtopology, nodes, self.dead_letters)

    def _function(self, factory: NodeFactory, user_function) :
        if user_function is None:
            return None
        if user_function.is_column:
            raise UnsupportedTopologyError(
                f"processor {factory.name} ({factory.spec.kind.value}) is given a PySpark Column expression; "
                "the Spark runner runs Python functions only so far"
            )
        return user_function

    def _exec_node(self, factory: NodeFactory) -> ExecNode:
        if factory.role == "source":
            return ExecNode(
                factory.name, "source",
                topics=tuple(self.topic_name(topic) for topic in factory.topics),
                key_serde=factory.serdes.get("key_serde") or self.default_key_serde,
                value_serde=factory.serdes.get("value_serde") or self.default_value_serde,
            )
        if factory.role == "sink":
            if factory.serdes.get("partitioner") is not None:
                raise UnsupportedTopologyError(
                    f"sink {factory.name} (topic {factory.topic!r}) has a custom stream partitioner; the Spark "
                    "runner places records with Kafka's default partitioner only"
                )
            return ExecNode(
                factory.name, "sink",
                topic=None if factory.topic is None else self.topic_name(factory.topic),
                topic_extractor=factory.topic_extractor,
                key_serde=factory.serdes.get("key_serde") or self.default_key_serde,
                value_serde=factory.serdes.get("value_serde") or self.default_value_serde,
            )
        spec = factory.spec
        kind = spec.kind
        params = spec.params
        if kind in _PASS_THROUGH:
            return ExecNode(factory.name, _PASS_THROUGH[kind])
        if kind is NodeKind.FILTER or kind is NodeKind.TABLE_FILTER:
            fn = self._function(factory, params["predicate"])
            return ExecNode(factory.name, "filter" if kind is NodeKind.FILTER else "table_filter",
                            fn=fn.as_key_value(), negate=bool(params.get("negate")))
        if kind in _RECORD_FUNCTIONS:
            exec_kind, parameter = _RECORD_FUNCTIONS[kind]
            fn = self._function(factory, params[parameter])
            return ExecNode(factory.name, exec_kind, fn=fn.as_key_value())
        if kind is NodeKind.PRINT:
            mapper = params.get("mapper")
            return ExecNode(factory.name, "print", fn=_Printer(params["label"], params.get("file_path"), mapper))
        if kind is NodeKind.BRANCH:
            for predicate in params["predicates"]:
                self._function(factory, predicate)
            return ExecNode(factory.name, "branch")
        if kind is NodeKind.REPARTITION_FILTER:
            return ExecNode(factory.name, "repartition_filter")
        if kind in (NodeKind.TO_TABLE, NodeKind.TABLE_SOURCE):
            return ExecNode(factory.name, kind.value, store=params["store_name"])
        if kind is NodeKind.AGGREGATE:
            operation = params["operation"]
            node = ExecNode(factory.name, "aggregate", aggregation=operation, store=params["store_name"])
            if operation == "reduce":
                node.reducer = params["reducer"].fn
            elif operation == "aggregate":
                node.initializer = params["initializer"].fn
                node.aggregator = params["aggregator"].fn
            return node
        raise UnsupportedTopologyError(
            f"processor {factory.name} ({kind.value}) is not supported by the Spark runner yet; it runs "
            "stateless operations, to/to_table, group_by/group_by_key with count/reduce/aggregate and "
            "KTable filter/map_values/to_stream"
        )


def compile_topology(
    topology: Any,
    application_id: str,
    dead_letters: DeadLetterPolicy = DeadLetterPolicy(),
    default_key_serde=None,
    default_value_serde=None,
) -> CompiledTopology:
    return CompiledTopology(_internal_builder(topology), application_id, dead_letters,
                            default_key_serde, default_value_serde)
