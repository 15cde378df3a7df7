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
from dagster_kstreams.topology.graph import NodeKind
from dagster_kstreams.topology.serdes import Serdes
from dagster_kstreams.topology.view import ProcessorNode, Topology, internal_topic_name

__all__ = ["CompiledTopology", "compile_topology", "parse_task_id", "UnsupportedTopologyError"]


class UnsupportedTopologyError(ValueError):
    """The topology uses an operation the Spark runner cannot execute yet (named in the message)."""


def parse_task_id(task_id: str) -> tuple[int, int]:
    """``"1_3"`` -> ``(1, 3)`` (Kafka Streams' ``TaskId`` string form)."""
    parts = str(task_id).split("_")
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        raise ValueError(f"task id {task_id!r} must look like '<subtopology>_<partition>', e.g. '1_3'")
    return int(parts[0]), int(parts[1])


def _view(topology: Any) -> Topology:
    """The read-only view of a built topology (a ``StreamsBuilder`` is built first)."""
    if isinstance(topology, Topology):
        return topology
    build = getattr(topology, "build", None)
    if callable(build):
        built = build()
        if isinstance(built, Topology):
            return built
    raise TypeError(f"expected a Topology from StreamsBuilder.build() (or the StreamsBuilder), got {type(topology).__name__}")


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
        topology: Topology,
        application_id: str,
        dead_letters: DeadLetterPolicy,
        default_key_serde=None,
        default_value_serde=None,
    ):
        self.topology = topology
        self.application_id = application_id
        self.dead_letters = dead_letters
        # Kafka Streams' default.key.serde / default.value.serde; strings unless configured.
        self.default_key_serde = default_key_serde or Serdes.String()
        self.default_value_serde = default_value_serde or Serdes.String()
        self.repartition_partitions: dict[str, Optional[int]] = {
            self.topic_name(name): count for name, count in topology.repartition_topics.items()
        }
        self.subtopologies: dict[int, _Subtopology] = {}
        for sub in topology.subtopologies:
            if sub.source_pattern is not None:
                raise UnsupportedTopologyError(
                    f"sub-topology {sub.id} subscribes to the pattern {sub.source_pattern!r}; the Spark runner "
                    "needs topic names (tasks are assigned partitions of known topics)"
                )
            self.subtopologies[sub.id] = _Subtopology(
                sub.id,
                [node.name for node in sub.nodes],
                [self.topic_name(topic) for topic in sub.source_topic_names],
                [self.topic_name(topic) for topic in (*sub.sink_topics, *sub.repartition_sink_topics)],
            )
        self._programs: dict[int, SubtopologyProgram] = {}

    # -- topics ------------------------------------------------------------------------
    def topic_name(self, topic: str) -> str:
        """The Kafka topic behind a topic name of the graph (internal ones get the app id prefix)."""
        if topic in self.topology.repartition_topics:
            return internal_topic_name(self.application_id, topic)
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
        for sub in self.topology.subtopologies:
            for node in sub.nodes:
                if node.kind is NodeKind.SOURCE and topic in {self.topic_name(t) for t in node.topics}:
                    return node.serdes.get("offset_reset") or "earliest"
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
        """Every source and repartition topic's partition count (Kafka Streams' rules, from the
        topology's view), given the external topics' counts; keys are real topic names."""
        counts = self.topology.partition_counts(dict(external))
        return {self.topic_name(topic): count for topic, count in counts.items()}

    def task_ids(self, counts: dict[str, int]) -> list[str]:
        tasks = []
        for sub_id in self.execution_order():
            task_count = max(counts[topic] for topic in self.subtopologies[sub_id].source_topics)
            tasks.extend(f"{sub_id}_{partition}" for partition in range(task_count))
        return tasks

    def subtopology_of_store(self, store_name: str) -> int:
        try:
            return self.topology.subtopology_of_store(store_name).id
        except KeyError:
            raise KeyError(
                f"the topology has no state store {store_name!r} (it has {sorted(self.topology.state_stores)})"
            ) from None

    def store_key_serde(self, subtopology: int):
        """Stores are keyed by the source record key: the serde of the sub-topology's source."""
        program = self.program(subtopology)
        return next(node.key_serde for node in program.nodes if node.kind == "source")

    # -- programs ----------------------------------------------------------------------
    def check(self) -> "CompiledTopology":
        """Build every sub-topology's program now: an operation the runner cannot run with
        Kafka Streams' semantics raises :class:`UnsupportedTopologyError` here, naming it."""
        for subtopology in self.subtopology_ids:
            self.program(subtopology)
        return self

    def program(self, subtopology: int) -> SubtopologyProgram:
        if subtopology not in self._programs:
            self._programs[subtopology] = self._build_program(subtopology)
        return self._programs[subtopology]

    def _build_program(self, subtopology: int) -> SubtopologyProgram:
        view_nodes = self.topology.subtopology(subtopology).nodes
        position = {node.name: index for index, node in enumerate(view_nodes)}
        nodes = [self._exec_node(node) for node in view_nodes]
        for index, view_node in enumerate(view_nodes):
            if view_node.kind is NodeKind.BRANCH:
                # A branch's children follow its branches' order, each with its predicate (None: default).
                predicates = view_node.params["predicates"]
                children, tests = [], []
                for child_name in view_node.params["children"]:
                    branch_index = view_nodes[position[child_name]].params["index"]
                    children.append(position[child_name])
                    tests.append(None if branch_index == 0 else predicates[branch_index - 1].as_key_value())
                nodes[index].children = children
                nodes[index].predicates = tuple(tests)
            else:
                nodes[index].children = [position[child] for child in view_node.children]
        slot = 0
        for node in nodes:
            if node.stateful:
                node.state_slot = slot
                slot += 1
        program = SubtopologyProgram(subtopology, nodes, self.dead_letters)
        from dagster_kstreams.spark import expressions

        # Column expressions: the whole sub-topology as DataFrame operations (None without any).
        program.column_plan = expressions.plan(program, UnsupportedTopologyError)
        return program

    def _cached(self, store_name: str) -> bool:
        """``Materialized.with_caching_disabled()``: forward every update instead of once per batch."""
        return self.topology.state_stores[store_name].caching

    def _function(self, factory: ProcessorNode, user_function):
        if user_function is None:
            return None
        if user_function.is_column:
            from dagster_kstreams.spark import expressions

            return expressions.column_function(factory, user_function, UnsupportedTopologyError)
        return user_function

    def _exec_node(self, factory: ProcessorNode) -> ExecNode:
        if factory.kind is NodeKind.SOURCE:
            if factory.serdes.get("timestamp_extractor") is not None:
                # Timestamps reach windows, joins and repartition topics: none may be computed differently.
                raise UnsupportedTopologyError(
                    f"source {factory.name} (topics {list(factory.topics)}) has a custom timestamp extractor; the "
                    "Spark runner reads record timestamps from Kafka only (Kafka Streams' default extractor)")
            return ExecNode(
                factory.name, "source",
                topics=tuple(self.topic_name(topic) for topic in factory.topics),
                key_serde=factory.serdes.get("key_serde") or self.default_key_serde,
                value_serde=factory.serdes.get("value_serde") or self.default_value_serde,
            )
        if factory.kind is NodeKind.SINK:
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
                # Spark's sink cannot set record timestamps: a repartition topic carries them in a header.
                options={"carry_timestamp": factory.topic in self.topology.repartition_topics},
            )
        kind = factory.kind
        params = factory.params
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
            if params.get("drop_null_keys", True):
                return ExecNode(factory.name, "repartition_filter")
            return ExecNode(factory.name, "merge")  # keeps null keys: passes everything through
        if kind in (NodeKind.TO_TABLE, NodeKind.TABLE_SOURCE):
            if params["store_name"] not in factory.stores:
                # Not materialized: Kafka Streams forwards every update as it comes, with no store.
                return ExecNode(factory.name, "merge")
            return ExecNode(factory.name, kind.value, store=params["store_name"], cached=self._cached(params["store_name"]))
        if kind is NodeKind.AGGREGATE:
            operation = params["operation"]
            node = ExecNode(factory.name, "aggregate", aggregation=operation, store=params["store_name"],
                            cached=self._cached(params["store_name"]))
            return with_aggregation_functions(node, params)
        from dagster_kstreams.spark import joins, sessions, stream_joins, windows

        if sessions.handles(factory):
            return sessions.exec_node(self, factory)
        if kind in joins.COMPILED_KINDS:
            return joins.exec_node(self, factory)
        if kind in stream_joins.COMPILED_KINDS:
            return stream_joins.exec_node(self, factory)
        if kind in windows.COMPILED_KINDS:  # (session windows: sessions.handles above)
            return windows.exec_node(self, factory)
        raise UnsupportedTopologyError(
            f"processor {factory.name} ({kind.value}) is not supported by the Spark runner yet; it runs "
            "stateless operations, to/to_table, group_by/group_by_key with count/reduce/aggregate, "
            "KTable filter/map_values/to_stream, stream-table joins, table-table joins, time/sliding/session "
            "windowed aggregations and stream-stream joins"
        )


def with_aggregation_functions(node: ExecNode, params: dict) -> ExecNode:
    """``node`` with the user functions of its ``count``/``reduce``/``aggregate`` (plain and windowed)."""
    if node.aggregation == "reduce":
        node.reducer = params["reducer"].fn
    elif node.aggregation == "aggregate":
        node.initializer = params["initializer"].fn
        node.aggregator = params["aggregator"].fn
    return node


def compile_topology(
    topology: Any,
    application_id: str,
    dead_letters: DeadLetterPolicy = DeadLetterPolicy(),
    default_key_serde=None,
    default_value_serde=None,
) -> CompiledTopology:
    return CompiledTopology(_view(topology), application_id, dead_letters,
                            default_key_serde, default_value_serde)
