"""From a sub-topology of the topology's view to a runnable :class:`SubtopologyProgram`.

Each view node is turned into a processor by the builder its family registers for its
:class:`~dagster_kstreams.topology.node_specs.NodeKind` (``BUILDERS`` of :mod:`.stateless`,
:mod:`.table_steps`, :mod:`.aggregations`, :mod:`.windows`, :mod:`.sessions`, :mod:`.table_joins`, :mod:`.table_old_values`
(with :mod:`.table_step_stores`), :mod:`.table_regroup`, :mod:`.fk_joins`, :mod:`.stream_joins`, :mod:`.suppress`, :mod:`.user_processors`,
:mod:`.table_transform_values`,
:mod:`.global_joins`, :mod:`.cogroup`); a builder also checks, at
definition time, that the processor can run with Kafka Streams' semantics, and raises
:class:`~dagster_kstreams.processors.errors.UnsupportedTopologyError` naming it otherwise.
Then every store gets its slot in the key's state row, in topological order (the processors of
one store, a cogroup's aggregates, share it), and the program is told which key its state is kept
by (:mod:`.state_key_serde`: the source key's bytes, or the stores' when the sources read keys
with different serdes: one serde's for all of them, or each store's own, task-grouped).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from dagster_kstreams.kafka.dead_letter import DeadLetterPolicy
from dagster_kstreams.processors import (
    aggregations, cogroup, fk_joins, global_joins, grace_joins, own_stream_time, sessions, stateless, stream_joins,
    stream_self_join, suppress, table_joins, table_old_values, table_regroup, table_steps, table_transform_values,
    user_processors, versioned_tables, windows,
)
from dagster_kstreams.processors.base import Processor, column_expressions_in
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.own_groups import window_keys
from dagster_kstreams.processors.program import SubtopologyProgram
from dagster_kstreams.processors.record_cache import DEFAULT_CACHE_MAX_BYTES, store_cached
from dagster_kstreams.processors.state_key_serde import state_keying
from dagster_kstreams.processors.store_suppliers import check_store_suppliers
from dagster_kstreams.processors.supplier_shape import keeps_store_clock
from dagster_kstreams.topology.application import ApplicationTopology
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.view import ProcessorNode, Subtopology

__all__ = ["BuildContext", "build_program", "python_function", "BUILDERS"]


def python_function(factory: ProcessorNode, user_function):
    """The user's function as the processors call it; a PySpark Column expression has no
    Python form (the Spark layer plans those)."""
    if user_function.is_column:
        raise UnsupportedTopologyError(
            f"processor {factory.name} ({factory.kind.value}) is given a PySpark Column expression, which only "
            "the Spark layer runs")
    return user_function


@dataclass
class BuildContext:
    """What a builder knows about the sub-topology it builds a processor for."""

    application: ApplicationTopology
    subtopology: Subtopology
    default_key_serde: Any
    default_value_serde: Any
    # (view node, UserFunction) -> an object with as_key_value()/as_joiner(): the engine's hook
    resolve_function: Callable[[ProcessorNode, Any], Any] = python_function
    # the client settings (bootstrap.servers, ...) a processor that reads Kafka itself needs (global tables)
    kafka_config: Mapping[str, Any] = field(default_factory=dict)
    # the application's statestore.cache.max.bytes: 0 turns every store's record cache off
    cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES

    def __post_init__(self) -> None:
        self._positions = {node.name: index for index, node in enumerate(self.subtopology.nodes)}

    @property
    def topology(self):
        return self.application.topology

    def topic_name(self, topic: str) -> str:
        """The real Kafka topic of a topic of the graph (internal ones get the app id prefix)."""
        return self.application.topic_name(topic)

    def is_repartition_topic(self, topic: Optional[str]) -> bool:
        """Whether a topic of the graph is one of the topology's repartition topics."""
        return topic in self.topology.repartition_topics

    def position(self, name: str) -> int:
        """A node's index in the program (the sub-topology's node order, topological)."""
        return self._positions[name]

    def key_serde(self, factory: ProcessorNode):
        return factory.serdes.get("key_serde") or self.default_key_serde

    def value_serde(self, factory: ProcessorNode):
        return factory.serdes.get("value_serde") or self.default_value_serde

    def function(self, factory: ProcessorNode, user_function):
        return None if user_function is None else self.resolve_function(factory, user_function)

    def cached(self, store_name: str) -> bool:
        """Whether a store forwards once per key and batch (its record cache) rather than every update:
        its ``Materialized`` (``with_caching_disabled()`` turns it off) and the application's
        ``statestore.cache.max.bytes`` (0 turns every store's off) decide (:mod:`.record_cache`)."""
        return store_cached(self.topology.state_stores[store_name].caching, self.cache_max_bytes)


def _windowed_aggregate(factory: ProcessorNode, ctx: BuildContext) -> Processor:
    """A windowed aggregation reads the task's stream time where that is its own (key-grouped), else
    keeps its own clocks (task-grouped: :mod:`.own_stream_time`), as a cogroup's inputs always do.
    In a sub-topology with Column expressions it keeps its own too, whether a Column stands before it
    or not: the engine runs them first and hands over the records that reach the rest without the
    task's stream time (Kafka Streams' processor counts just the records that reach it: not one a
    Column filter drops, nor one skipped there as malformed, nor a null key; so its own clocks, of the
    records handed to it, are exact). A sliding one whose supplier keeps less than its windows stay open keeps
    its store's clock (:func:`~.supplier_shape.keeps_store_clock`)."""
    family = sessions if sessions.handles(factory) else windows
    sub, params = ctx.subtopology, factory.params
    store = ctx.topology.state_stores.get(params["store_name"])
    if (cogroup.handles(factory) or not family.reads_task_stream_time(sub, factory)
            or column_expressions_in(sub) or keeps_store_clock(params["windows"], store, params.get("emit_strategy"))):
        return own_stream_time.build(factory, ctx)
    return family.build(factory, ctx)


BUILDERS: dict[NodeKind, Callable[[ProcessorNode, BuildContext], Processor]] = {
    **stateless.BUILDERS,
    **table_steps.BUILDERS,
    **aggregations.BUILDERS,
    **versioned_tables.BUILDERS,  # a table source or to_table over a versioned store, else aggregations'
    **table_joins.BUILDERS,
    **table_old_values.BUILDERS,  # a filter/map_values, with its own store when it keeps one (table_step_stores)
    **grace_joins.BUILDERS,  # a stream-table join with a grace period, else table_joins'
    **table_regroup.BUILDERS,
    **fk_joins.BUILDERS,
    **stream_joins.BUILDERS,
    **stream_self_join.BUILDERS,  # topology.optimization's single-store self-join
    **suppress.BUILDERS,
    **user_processors.BUILDERS,
    **table_transform_values.BUILDERS,
    **global_joins.BUILDERS,
    **cogroup.BUILDERS,
    NodeKind.WINDOWED_AGGREGATE: _windowed_aggregate,
}


def build_processor(factory: ProcessorNode, ctx: BuildContext) -> Processor:
    builder = BUILDERS.get(factory.kind)
    if builder is None:
        raise UnsupportedTopologyError(
            f"processor {factory.name} ({factory.kind.value}) is not supported by the Spark runner yet; it runs "
            "stateless operations, to/to_table, group_by/group_by_key with count/reduce/aggregate, "
            "KTable filter/map_values/transform_values/to_stream/group_by, stream-table joins, table-table joins (also on a foreign "
            "key), time/sliding/session windowed aggregations, cogroup, suppress, stream-stream joins, "
            "stream-global-table joins and process/process_values"
        )
    check_store_suppliers(factory, ctx.topology.state_stores, ctx.subtopology, ctx.cached)
    return builder(factory, ctx)


def build_program(ctx: BuildContext, dead_letters: DeadLetterPolicy = DeadLetterPolicy(),
                  program_class: type[SubtopologyProgram] = SubtopologyProgram) -> SubtopologyProgram:
    """The program of ``ctx.subtopology`` (``program_class``: the engine's subclass, if any)."""
    view_nodes = ctx.subtopology.nodes
    nodes = [build_processor(factory, ctx) for factory in view_nodes]
    for node, factory in zip(nodes, view_nodes):
        if not node.children:  # a builder may order them itself (a branch: in its branches' order)
            node.children = [ctx.position(child) for child in factory.children]
    slots: dict[str, int] = {}  # store -> slot: the aggregates of a cogroup share their one store's
    for node in nodes:
        if node.stateful:
            node.state_slot = slots.setdefault(node.store, len(slots))
    sources = [ctx.key_serde(factory) for factory in view_nodes if factory.kind is NodeKind.SOURCE]
    # the stores whose state each processor is handed for a record's key (none: it looks each one up)
    handed = [(factory.name, () if node.looks_up_each_store else factory.stores)
              for node, factory in zip(nodes, view_nodes)]
    keying = state_keying(ctx.subtopology.id, sources, ctx.subtopology.state_stores, handed, ctx.default_key_serde)
    return program_class(ctx.subtopology.id, nodes, dead_letters, state_keying=keying,
                         window_keys=window_keys(ctx.subtopology))
