"""Re-grouping and joining session tables: which session tables a re-grouping or a join reads, and a
join's read of one session of the other table (:class:`SessionReads`).

A re-grouping (``KTableRepartitionMap``, Kafka Streams 4.3.1) reads no store: it asks its table to
send old values (``enableSendingOldValues``) and maps the ``Change`` each update carries, the old
value to a subtraction and the new one to an addition. A session aggregation
(``KStreamSessionWindowAggregate``) then forwards, for a record that merges sessions, a delete of
each merged session with its old value (a subtraction only), and the merged session with no old
value (an addition only); a record whose session is a single instant already stored replaces it
without a delete (``mergedWindow.equals(newSessionWindow)``: an addition only, as there). So the
old value is the one the aggregation sends with the update (:class:`~.windowed_tables.WindowedOldValue`,
the same reader a table filter and a suppression use), and no other session of the store is read.

A join of two session tables (``KTableKTable*Join``) reads the other table's session of the updated
session's start and end (``KTableSessionWindowValueGetter``: ``fetchSession(key, start, end)``, stamped
with the session's end), which the session store returns unless the session ends at or below its
observed time (the largest session end written, by any key) minus its retention. A session aggregation
reading the task's stream time writes a session ending at or after every record it takes, and the
newest record is never late, so that observed time is the task's stream time: after the record being
processed when the aggregation has taken it already, before it otherwise. So a key's row answers
exactly (:class:`SessionReads`), whatever the retentions and gaps.

A join of session tables read in turn (re-grouped, or joined with a third session table) is read as
Kafka Streams reads it: materialized, by its store's entry of the session (``KTableKTableJoinMerger``'s
store, keyed by the key, the session's end and its start, which never expires one: the runner keeps it
in the session's group of the task's state, :mod:`.own_groups`); without a store, through both its
tables and the joiner (``KTableKTable*JoinValueGetter``: each table's ``fetchSession``). Its update's
value is the one the update carries, as for a session table.

Admitted here: a re-grouping of a session-windowed aggregation's table (count, reduce or aggregate,
emitting on every update, cached or not), through ``filter``/``map_values`` without a store of their
own. Refused, naming the re-grouping and the aggregation: a session table emitting on window close,
a session cogroup's, and one behind a suppression or a ``filter``/``map_values`` with a store of its
own (their old values are their own, not compared with Kafka Streams yet). A join of two session
aggregations' tables emitting on every update, or of joins of them, through filters/map_values without a
store of their own, with ``Materialized`` or not, and a re-grouping of such a join; refused, naming the
join: a session table (or a join of them) joined with a table of other windows or a plain one, and the
record cache on a session table or on the join's store (not modelled).
"""

from __future__ import annotations

from typing import Any, Optional

from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.table_behind import (
    FILTERS_AND_MAP_VALUES, TableBehind, materialized_step, table_of, tables_joined,
)
from dagster_kstreams.topology.emit_strategy import ON_WINDOW_UPDATE
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.windows import SessionWindows

__all__ = ["is_session_table", "check_session_regrouping", "is_session_aggregation_on_update", "check_session_join",
           "is_session_join", "SessionReads"]


def is_session_aggregation_on_update(node) -> bool:
    """Whether ``node`` is a session-windowed aggregation forwarding every update."""
    return (node.kind is NodeKind.WINDOWED_AGGREGATE and isinstance(node.params["windows"], SessionWindows)
            and node.params.get("emit_strategy", ON_WINDOW_UPDATE) == ON_WINDOW_UPDATE)


def _session_table(sub, node) -> tuple[Optional[Any], list]:
    """The session aggregation whose table reaches ``node`` through table filters/map_values (``node``
    itself included), or the join of session tables whose result does (:func:`is_session_join`), or None;
    and the filters/map_values with a store of their own on the way."""
    table = table_of(sub, node, FILTERS_AND_MAP_VALUES)
    kept = [step for step in reversed(table.steps) if materialized_step(step)]  # the nearest to ``node`` first
    writer = table.writer
    return (writer if is_session_aggregation_on_update(writer) or is_session_join(sub, writer) else None), kept


def is_session_join(sub, node) -> bool:
    """Whether ``node`` is the result of a join of session tables (each a session aggregation's table or a
    join of them, through filters/map_values): :func:`check_session_join` admitted it when it was built."""
    if node.kind is not NodeKind.TABLE_TABLE_JOIN_MERGE:
        return False
    return all(_session_table(sub, table)[0] is not None for table in tables_joined(sub, node))


def check_session_join(ctx, factory, this_table: str, that_table: str, merge) -> bool:
    """Whether the join ``factory`` (of the tables of nodes ``this_table`` and ``that_table``, into
    ``merge``) joins a session table: then both must be session aggregations' tables emitting on every
    update, or joins of them, through filters/map_values without a store of their own, and the join's
    own store, if any, without the record cache; else refused, naming the join. A cached session table
    forwards at the micro-batch's end, when the other store's observed time is the batch's: not modelled,
    refused too; so is a cached join's store (its updates would go out once per micro-batch, not compared
    with Kafka Streams)."""
    sub = ctx.subtopology
    (this, this_kept), (that, that_kept) = (_session_table(sub, sub.node(name)) for name in (this_table, that_table))
    if this is None and that is None:
        return False
    own = [merge.params["store_name"]] if merge.params.get("store_name") in merge.stores else []
    stores = own + [table.params.get("store_name") for table in (this, that) if table]
    if this is None or that is None:
        problem = "only one of its tables is a session aggregation's (emitting on every update) or a join of them"
    elif this_kept or that_kept:
        step = (this_kept + that_kept)[0]
        problem = f"{step.name} ({step.kind.value}) on the way keeps a store of its own"
    elif any(store in ctx.topology.state_stores and ctx.cached(store) for store in stores):
        problem = "a session table or the join has the record cache (read at the micro-batch's end, not modelled)"
    else:
        return True
    raise UnsupportedTopologyError(
        f"processor {factory.name} ({factory.kind.value}) joins session tables, but {problem}; the Spark runner "
        "joins session aggregations' tables (emitting on every update, without the record cache, through "
        "filter/map_values without a store of their own) and joins of them, materialized without the record "
        "cache or not")


class SessionReads:
    """A join's read of a session table: ``fetchSession(key, start, end)`` on the aggregation's sessions of
    the key (its state slot, ``((start, end, aggregate), ...)``), nothing for a session ending at or below
    the store's observed time minus its retention (see the module's docstring)."""

    def __init__(self):
        self.aggregation = None  # the session aggregation, once bound

    def bind(self, aggregation) -> None:
        if aggregation.observes_store_time:
            raise UnsupportedTopologyError(
                f"the session table of {aggregation.name} is joined, but a processor names its store; the Spark "
                "runner joins session tables whose stores only their aggregations write")
        self.aggregation = aggregation

    def fetch(self, sessions, windowed, context) -> Any:
        """The aggregate of the session ``windowed`` (a ``Windowed`` key) among ``sessions`` (ABSENT: none)."""
        window = windowed.window
        floor = self.aggregation.store_time_at(context) - self.aggregation.retention
        if sessions is ABSENT or window.end <= floor:
            return ABSENT
        for start, end, aggregate in sessions:
            if (start, end) == (window.start, window.end):
                return aggregate
        return ABSENT


def is_session_table(table: TableBehind) -> bool:
    """Whether the table behind a reader is written by session-windowed aggregations."""
    return bool(table.aggregations) and isinstance(table.windows, SessionWindows)


def check_session_regrouping(sub, factory, table: TableBehind) -> None:
    """Refuses the re-grouping ``factory`` of the session table ``table`` (:func:`is_session_table`)
    unless it is a session aggregation's table emitting on every update, through filters/map_values
    without a store of their own: the old value each update carries is then the aggregation's."""
    (aggregation,) = table.aggregations[:1]
    writer = table.writer
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
