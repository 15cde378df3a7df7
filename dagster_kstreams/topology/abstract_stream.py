"""What every DSL class shares: Kafka Streams' name prefixes and naming rules, overload parsing, the
repartition source, and the base class of streams and tables (Kafka Streams' ``AbstractStream``).

The DSL (``StreamsBuilder`` in :mod:`.streams_builder`, ``KStream`` in :mod:`.kstream`, ``KTable``
in :mod:`.ktable`, the grouped and windowed streams in :mod:`.grouped` and :mod:`.windowed`) follows
the Java implementation (``KStreamImpl``, ``KTableImpl``, ``KGroupedStreamImpl``,
``GroupedStreamAggregateBuilder``, ``KStreamImplJoin`` ...) call for call, because the order in
which names are drawn from the shared counter *is* the observable behaviour: node names, store
names and repartition topic names must come out exactly as Kafka Streams'.
"""
from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, Optional, Sequence

from .errors import TopologyException
from .graph import GraphNode, InternalStreamsBuilder, RepartitionNode
from .materialized import Materialized
from .named import Named
from .store_suppliers import KeyValueBytesStoreSupplier

# Kafka Streams' name prefixes
SOURCE_NAME = "KSTREAM-SOURCE-"
SINK_NAME = "KSTREAM-SINK-"
FILTER_NAME = "KSTREAM-FILTER-"
PEEK_NAME = "KSTREAM-PEEK-"
FLATMAP_NAME = "KSTREAM-FLATMAP-"
FLATMAPVALUES_NAME = "KSTREAM-FLATMAPVALUES-"
MAP_NAME = "KSTREAM-MAP-"
MAPVALUES_NAME = "KSTREAM-MAPVALUES-"
PRINTING_NAME = "KSTREAM-PRINTER-"
KEY_SELECT_NAME = "KSTREAM-KEY-SELECT-"
FOREACH_NAME = "KSTREAM-FOREACH-"
TO_KTABLE_NAME = "KSTREAM-TOTABLE-"
REPARTITION_NAME = "KSTREAM-REPARTITION-"
MERGE_NAME = "KSTREAM-MERGE-"
BRANCH_NAME = "KSTREAM-BRANCH-"
JOINTHIS_NAME = "KSTREAM-JOINTHIS-"
JOINOTHER_NAME = "KSTREAM-JOINOTHER-"
JOIN_NAME = "KSTREAM-JOIN-"
LEFTJOIN_NAME = "KSTREAM-LEFTJOIN-"
OUTERTHIS_NAME = "KSTREAM-OUTERTHIS-"
OUTEROTHER_NAME = "KSTREAM-OUTEROTHER-"
OUTERSHARED_NAME = "KSTREAM-OUTERSHARED-"
WINDOWED_NAME = "KSTREAM-WINDOWED-"
REDUCE_NAME = "KSTREAM-REDUCE-"
AGGREGATE_NAME = "KSTREAM-AGGREGATE-"
KTABLE_SOURCE_NAME = "KTABLE-SOURCE-"
KTABLE_FILTER_NAME = "KTABLE-FILTER-"
KTABLE_JOINTHIS_NAME = "KTABLE-JOINTHIS-"
KTABLE_JOINOTHER_NAME = "KTABLE-JOINOTHER-"
KTABLE_MAPVALUES_NAME = "KTABLE-MAPVALUES-"
KTABLE_MERGE_NAME = "KTABLE-MERGE-"
KTABLE_SELECT_NAME = "KTABLE-SELECT-"
KTABLE_SUPPRESS_NAME = "KTABLE-SUPPRESS-"
KTABLE_TOSTREAM_NAME = "KTABLE-TOSTREAM-"
KTABLE_AGGREGATE_NAME = "KTABLE-AGGREGATE-"
KTABLE_REDUCE_NAME = "KTABLE-REDUCE-"
REPARTITION_TOPIC_SUFFIX = "-repartition"
_GENERATED_NAME = re.compile(r"KSTREAM.*-[0-9]{10}")
_MS = timedelta(milliseconds=1)


def _name_of(named: Optional[Named]) -> Optional[str]:
    return None if named is None else named.name


def _or_generate(builder: InternalStreamsBuilder, name: Optional[str], prefix: str) -> str:
    """``NamedInternal.orElseGenerateWithPrefix``: a given name still burns one index."""
    generated = builder.new_processor_name(prefix)
    return name if name is not None else generated


def _suffix_or_generate(builder: InternalStreamsBuilder, name: Optional[str], suffix: str, prefix: str) -> str:
    generated = builder.new_processor_name(prefix)
    return name + suffix if name is not None else generated


def _parse(args: Sequence[Any], *types: type, operation: str) -> list:
    """Java overloads by type: return one slot per type, filled from ``args`` by isinstance."""
    slots: list = [None] * len(types)
    for arg in args:
        if arg is None:
            continue
        for position, kind in enumerate(types):
            if isinstance(arg, kind) and slots[position] is None:
                slots[position] = arg
                break
        else:
            expected = ", ".join(kind.__name__ for kind in types)
            raise TypeError(f"{operation}: unexpected argument {arg!r}; expected any of {expected}")
        if isinstance(arg, Materialized) and arg.versioned and operation not in _VERSIONED_OPERATIONS:
            raise TopologyException(
                f"{operation}: a versioned store (Stores.persistent_versioned_key_value_store) materializes only a "
                "table read from a topic (StreamsBuilder.table) or made by KStream.to_table, a table's filter, "
                "filter_not and map_values, a table-table join (not on a foreign key), and the count, reduce and "
                "aggregate of a grouped stream, a re-grouped table and a cogroup here")
        if isinstance(arg, Materialized) and operation not in _WINDOWED_OPERATIONS:
            arg.check_supplier(KeyValueBytesStoreSupplier, operation)
    return slots


# The windowed aggregations, which take a window or session store's supplier (window_store_settings.py)
_WINDOWED_OPERATIONS = ("count", "reduce", "aggregate", "TimeWindowedCogroupedKStream.aggregate",
                        "SessionWindowedCogroupedKStream.aggregate")


# The operations whose table a versioned store may materialize, as in Kafka Streams (a foreign-key
# join's, also KTable.join/left_join, is defined; the Spark runner refuses to run it: fk_joins).
_VERSIONED_OPERATIONS = ("table()", "KStream.to_table", "KTable.filter", "KTable.filter_not", "KTable.map_values",
                         "KTable.join", "KTable.left_join", "KTable.outer_join",
                         "KGroupedStream.count", "KGroupedStream.reduce", "KGroupedStream.aggregate",
                         "KGroupedTable.count", "KGroupedTable.reduce", "KGroupedTable.aggregate",
                         "CogroupedKStream.aggregate")


def _materialized(materialized: Optional[Materialized], builder: InternalStreamsBuilder, prefix: str):
    """``MaterializedInternal(materialized, builder, prefix)``: (materialized, store name, queryable)."""
    materialized = materialized or Materialized()
    queryable = materialized.store_name is not None
    store_name = materialized.store_name or builder.new_store_name(prefix)
    return materialized, store_name, queryable


def _create_repartitioned_source(builder: InternalStreamsBuilder, key_serde, value_serde, prefix: str,
                                 partitioner=None, partitions: Optional[int] = None,
                                 optimizable: bool = True) -> RepartitionNode:
    """``KStreamImpl.createRepartitionedSource``: always burns three indexes (sink, filter, source)."""
    topic = prefix if prefix.endswith(REPARTITION_TOPIC_SUFFIX) else prefix + REPARTITION_TOPIC_SUFFIX
    generated_sink = builder.new_processor_name(SINK_NAME)
    generated_filter = builder.new_processor_name(FILTER_NAME)
    generated_source = builder.new_processor_name(SOURCE_NAME)
    if _GENERATED_NAME.fullmatch(prefix):
        sink, source, null_filter = generated_sink, generated_source, generated_filter
    else:
        sink, source, null_filter = topic + "-sink", topic + "-source", topic + "-filter"
    return RepartitionNode(source, sink, null_filter, topic, key_serde, value_serde, partitions, partitioner,
                           optimizable)


class _AbstractStream:
    def __init__(self, name: str, key_serde, value_serde, source_nodes: set, node: GraphNode,
                 builder: InternalStreamsBuilder):
        self.name = name
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._source_nodes = set(source_nodes)
        self._node = node
        self._builder = builder

    def _ensure_copartition_with(self, others: Sequence["_AbstractStream"]) -> set:
        all_sources = set(self._source_nodes)
        for other in others:
            if other._builder is not self._builder:
                raise TopologyException("cannot join streams/tables from different StreamsBuilders")
            all_sources |= other._source_nodes
        self._builder.topology_builder.copartition_sources(all_sources)
        return all_sources

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"
