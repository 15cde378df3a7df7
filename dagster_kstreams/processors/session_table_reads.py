"""Re-grouping a session table: which session tables a re-grouping reads (pure topology facts: no
processor is built here).

A re-grouping (``KTableRepartitionMap``, Kafka Streams 4.3.1) reads no store: it asks its table to
send old values (``enableSendingOldValues``) and maps the ``Change`` each update carries, the old
value to a subtraction and the new one to an addition. A session aggregation
(``KStreamSessionWindowAggregate``) then forwards, for a record that merges sessions, a delete of
each merged session with its old value (a subtraction only), and the merged session with no old
value (an addition only); a record whose session is a single instant already stored replaces it
without a delete (``mergedWindow.equals(newSessionWindow)``: an addition only, as there). So the
old value is the one the aggregation sends with the update (:class:`~.windowed_tables.WindowedOldValue`,
the same reader a table filter and a suppression use), and no other session of the store is read:
where a join reads a session table by the session's start and end (``fetchSession``), which the
runner does not yet, a re-grouping needs only the update.

Admitted here: a re-grouping of a session-windowed aggregation's table (count, reduce or aggregate,
emitting on every update, cached or not), through ``filter``/``map_values`` without a store of their
own. Refused, naming the re-grouping and the aggregation: a session table emitting on window close,
a session cogroup's, and one behind a suppression or a ``filter``/``map_values`` with a store of its
own (their old values are their own, not compared with Kafka Streams yet).
"""

from __future__ import annotations

from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.table_behind import TableBehind, materialized_step
from dagster_kstreams.topology.emit_strategy import ON_WINDOW_UPDATE
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.windows import SessionWindows

__all__ = ["is_session_table", "check_session_regrouping"]


def is_session_table(table: TableBehind) -> bool:
    """Whether the table behind a reader is written by session-windowed aggregations."""
    return bool(table.aggregations) and isinstance(table.windows, SessionWindows)


def check_session_regrouping(sub, factory, table: TableBehind) -> None:
    """Refuses the re-grouping ``factory`` of the session table ``table`` (:func:`is_session_table`)
    unless it is a session aggregation's table emitting on every update, through filters/map_values
    without a store of their own: the old value each update carries is then the aggregation's."""
    (aggregation,) = table.aggregations[:1]
    writer = sub.node((table.steps[0] if table.steps else factory).parents[0])
    emits = aggregation.params.get("emit_strategy", ON_WINDOW_UPDATE)
    if writer.kind is NodeKind.COGROUP_MERGE:
        problem = f"a session cogroup's (merged by {writer.name})"
    elif emits != ON_WINDOW_UPDATE:
        problem = f"emitting {emits}"
    elif any(step.kind is NodeKind.SUPPRESS or materialized_step(step) for step in table.steps):
        step = next(step for step in table.steps if step.kind is NodeKind.SUPPRESS or materialized_step(step))
        problem = f"behind {step.name} ({step.kind.value}), which sends old values of its own"
    else:
        return
    raise UnsupportedTopologyError(
        f"processor {factory.name} ({factory.kind.value}) re-groups the session table of {aggregation.name}, "
        f"{problem}; the Spark runner re-groups a session aggregation's table emitting on every update, through "
        "filter/map_values without a store of their own (the old value each update carries is the aggregation's)")
