"""Which record caches may feed a stream-stream join in its sub-topology: a definition-time check.

A cached store forwards each key's update at the micro-batch's end (``program._flush``), as Kafka
Streams' cache does at a commit and an eviction, and which records a join pairs depends on it. The
runner's flush is compared with Kafka Streams committing once after the input (README, "Stream-stream
joins (inner, left, outer) run task-grouped"; test_equivalence_aggregation_joins.py) for the stores of
:data:`TABLE_STORES` (a windowed cogroup's too) and for a filter's or map_values' own store kept for it
(:func:`~.table_step_stores.keeps_own_store`); the others on the way are refused, naming the processor.
"""

from __future__ import annotations

from dagster_kstreams.processors.base import reachable
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.table_step_stores import cache_not_compared
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["TABLE_STORES", "check_caches_before"]

# A table's, an aggregation's (windowed too), a table-table join's or a foreign-key join's store with its
# record cache on forwards each key's update at the micro-batch's end, Kafka Streams' at a commit and an
# eviction. Each compared with Kafka Streams committing once after the input: each key's last update (a
# re-grouped table's subtraction and addition, a foreign-key join's answers, collapse into it; a windowed
# aggregation's: each window's or session's own, StoreProcessor.flush_entries) in last-update order, with
# its own timestamp (Kafka Streams' stamp) and headers, after every record's own output. A windowed cogroup's
# inputs share one store and one cache: the first input's processor flushes it (the program's one slot),
# Kafka Streams' the last one's to register its flush listener, both into the cogroup's pass-through.
TABLE_STORES = frozenset({NodeKind.TABLE_SOURCE, NodeKind.TO_TABLE, NodeKind.AGGREGATE, NodeKind.TABLE_AGGREGATE,
                          NodeKind.TABLE_TABLE_JOIN_MERGE, NodeKind.FK_JOIN_RESULT, NodeKind.WINDOWED_AGGREGATE})


def check_caches_before(ctx, window_node) -> None:
    """Refuse a cache before the join window ``window_node`` in its sub-topology whose flush is not
    compared with Kafka Streams: a filter's or map_values' own store that a user processor names, or behind a
    windowed table or a suppression (:func:`~.table_step_stores.cache_not_compared`)."""
    sub = ctx.subtopology
    for node in reachable(sub, window_node.parents, lambda node: node.parents):
        if cache_not_compared(ctx, node):
            store = node.params.get("store_name")
            raise UnsupportedTopologyError(
                f"table {node.name} ({store}) comes before the stream-stream join {window_node.name} in its "
                "sub-topology with its record cache on; the Spark runner's cache forwards a key's update at the "
                "micro-batch's end, as Kafka Streams' does at a commit, and is compared with Kafka Streams for a "
                "table from a topic or to_table, an aggregation (of a grouped stream, a cogroup, a re-grouped table; "
                "windowed too), a table-table join's store, a foreign-key join's result and a "
                "filter's or map_values' own store (on a table neither windowed nor suppressed, which no user "
                f"processor names) only, not this {node.kind.value}'s. Materialize it with_caching_disabled() (or "
                "run the application with statestore.cache.max.bytes 0), or add .repartition() before the join")
