"""Cogrouped aggregations: ``KGroupedStream.cogroup(...).aggregate(...)``, plain and windowed, as
Kafka Streams 4.3.1 runs them (``CogroupedStreamAggregateBuilder``): one aggregate processor per
input stream, each with its own aggregator, all reading and writing one store, then a
pass-through (``KTablePassThrough``) whose output is the table.

Plain
    Each input's processor is the grouped stream's :class:`~.aggregations.Aggregate` (operation
    ``aggregate``: null keys and null values skipped); the program gives processors of one store
    one slot of the key's state row (:func:`~.build.build_program`), so every input updates the
    same aggregate, record by record in the task's processing order.

Windowed
    Kafka Streams' windowed processors (``KStreamWindowAggregate``,
    ``KStreamSlidingWindowAggregate``, ``KStreamSessionWindowAggregate``) each keep their own
    stream time, of the records that reach *that* processor: a window closes for one input
    while another may still add to it. Their one store keeps its own stream time too, of every
    write (the largest window start written; sessions: the largest session end), and no longer
    returns what lies before it minus the retention, whichever input asks. The processors here
    are the grouped stream's windowed processors with those two clocks
    (:mod:`.own_stream_time`): each processor's stream time decides lateness, the store's decides
    expiry. Both are task-level values, so the sub-topology runs task-grouped
    (:mod:`~dagster_kstreams.processors.task_state`): the task's state is read and written once
    per micro-batch, bounded by the store's retention (expired windows and sessions of every key
    are dropped at each batch's end).

Inputs whose sources read keys with different serdes share the aggregate of the key they are read
as, as in Kafka Streams' one store: the state is then grouped by the key as the store's key serde
writes it (the ``Materialized`` key serde, else ``default.key.serde``: a cogrouped stream has none
of its own), as for every keyed stateful operation (:mod:`.state_key_serde`).

Every record reaches its processor in Kafka Streams' order (the task's timestamp merge of its
input partitions), so each processor's stream time is exactly Kafka Streams'.
"""

from __future__ import annotations

from dagster_kstreams.processors.stateless import Merge
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["handles", "BUILDERS"]


# -- definition time -------------------------------------------------------------------------
def handles(factory) -> bool:
    """Whether a windowed aggregation is one input of a cogroup."""
    return bool(factory.params.get("cogroup"))


def _merge(factory, ctx) -> Merge:
    return Merge(factory.name)


BUILDERS = {NodeKind.COGROUP_MERGE: _merge}
