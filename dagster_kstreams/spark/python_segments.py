"""Python functions inside a Column plan: the sub-topology cut into segments.

A stateless sub-topology may mix Column expressions (run in the JVM:
:mod:`dagster_kstreams.spark.expressions`) with Python functions (``filter``/``filter_not``, ``map``,
``map_values``, ``select_key``, ``flat_map``, ``flat_map_values``, ``peek``/``foreach``/``print``, a
``split`` whose predicates are Python) in any order. The Column plan walks
the processors as DataFrame operations; at a Python function it cuts a *segment* (:func:`cut`): every
processor reachable from there through Python functions only, run as one ``mapInArrow`` over the
records that reach it (:func:`run_segment`), as Spark runs Python: on the executors, a partition's
rows in their order, each record through the segment depth-first as Kafka Streams forwards it (a
``flat_map``'s records in the order it returns them, to a processor's children in the topology's
order) until it leaves by one of the segment's *exits* (an edge to a processor that is no Python
function). Each exit's rows go on as DataFrame operations again.

The functions see a record's key and value as Python objects, read from Spark's values through
Arrow (a string as ``str``, a ``bigint`` as ``int``, a struct as a ``dict``, binary as ``bytes``);
the record's topic, partition, offset, timestamp and headers go through the segment untouched.
A key or value the segment leaves as it was keeps its Spark value. One it changes crosses back as
bytes: written by the sink's serdes when the exit is a sink (as Kafka Streams' sink writes it), else
by the default serdes, which the JVM then reads as it reads a source's (the Column plan's
deserializers), so the next Column sees it typed by the default serde (``String`` unless configured).
Right after a source whose serde only Python parses, the segment reads the records' bytes itself
(:func:`reading`), under the task's deserialization handler.

A segment's rows are one Spark DataFrame read by each of its exits: with several exits, Spark
evaluates the segment once per exit, so its functions run once per exit for each record (the output
is the same; a function's side effects repeat). Within an exit, rows keep the partition's order.
A ``peek``/``foreach``/``print`` exists for its side effect, so a segment with one runs as one
``mapInArrow`` per read instead, and only one of them calls the actions (:func:`acting_read`): the
one of an exit that leads to exactly one output of the plan (each of the others still routes every
record), or, when no exit leads anywhere, a read made for the actions alone. A segment none of whose
exits leads to exactly one output is refused with its actions (:func:`actions_read_twice`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional

import pyarrow as pa
import pyspark.sql.types as T
from pyspark.sql import DataFrame

from dagster_kstreams.kafka.dead_letter import (
    DeadLetterPolicy,
    DeserializationError,
    DeserializationHandler,
    dead_letter_headers,
)
from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.processors.global_joins import DROPPED
from dagster_kstreams.processors.records import RecordContext, header_column
from dagster_kstreams.processors.stateless import pair

__all__ = ["PYTHON_KINDS", "ACTION_KINDS", "LOOKUP_KINDS", "Segment", "cut", "reading", "run_segment", "segment_batch",
           "times_read", "exit_outputs", "acting_read", "has_actions", "actions_read_twice", "lookups_read_twice",
           "EXIT", "ENCODED", "DEAD_LETTER", "NO_EXIT"]

log = logging.getLogger(__name__)

# The operations called for their side effect only: their record goes on unchanged.
ACTION_KINDS = {"peek", "foreach", "print"}
# The operations that look a record up in a table read in this process: a global table, caught up to
# its topic's end once per read of the segment (processors/global_joins.py).
LOOKUP_KINDS = {"stream_global_table_join"}
# The operations a Python function may take in a Column plan (a branch: its predicates), and what each changes.
PYTHON_KINDS = {"filter", "map", "map_values", "select_key", "flat_map", "flat_map_values", "branch", *ACTION_KINDS,
                *LOOKUP_KINDS}
_CHANGES_KEY = {"map", "select_key", "flat_map"}
_CHANGES_VALUE = {"map", "map_values", "flat_map", "flat_map_values", *LOOKUP_KINDS}
EXIT = "_segment_exit"  # the exit a segment's row goes to (its position in Segment.exits)
ENCODED = {"key": "_segment_key_bytes", "value": "_segment_value_bytes"}  # a changed part's bytes
DEAD_LETTER = -1  # the EXIT of a record the segment could not read: raw, to the dead-letter topic
NO_EXIT = -2  # an EXIT no row has: what reads a segment whose records leave it nowhere


@dataclass(frozen=True)
class Segment:
    """Python functions run as one pass: ``steps`` (program indexes, topological order), every
    processor reachable from the first through Python functions only; ``exits``, the edges
    ``(parent, child)`` from a step to a processor that is none; ``changes[i]``, the parts of a record
    (``"key"``, ``"value"``) some step on the way to ``exits[i]`` changes."""

    steps: tuple[int, ...]
    exits: tuple[tuple[int, int], ...]
    changes: tuple[frozenset, ...]
    # (key serde, value serde): the segment reads its records' raw bytes itself (right after a source
    # whose serde only Python parses), judged by the dead-letter policy; None: Spark's values.
    reads: Optional[tuple[Any, Any]] = None


def reading(segment: Segment, key_serde, value_serde) -> Segment:
    """``segment`` reading its records' raw bytes with a source's serdes: both parts of every record
    then cross back as bytes (the JVM never read them)."""
    every = frozenset({"key", "value"})
    return replace(segment, reads=(key_serde, value_serde), changes=tuple(every for _ in segment.exits))


def cut(nodes: list, is_python_step: Callable[[Any], bool]) -> dict[int, Segment]:
    """Every segment of a program's ``nodes`` (topological order), by the index of its first processor."""
    segments: dict[int, Segment] = {}
    inside: set[int] = set()
    for start, node in enumerate(nodes):
        if start in inside or not is_python_step(node):
            continue
        steps, exits, changes = [], [], []

        def visit(index: int, changed: frozenset) -> None:
            steps.append(index)
            kind = nodes[index].kind
            changed = changed | ({"key"} if kind in _CHANGES_KEY else set()) | (
                {"value"} if kind in _CHANGES_VALUE else set())
            for child in nodes[index].children:
                if is_python_step(nodes[child]):
                    visit(child, changed)
                else:
                    exits.append((index, child))
                    changes.append(changed)

        visit(start, frozenset())
        segments[start] = Segment(tuple(sorted(set(steps))), tuple(exits), tuple(changes))
        inside.update(steps)
    return segments


def run_segment(records: DataFrame, nodes: list, segment: Segment, exit_serdes: list[dict[str, Any]],
                dead_letters: DeadLetterPolicy, acting: bool = True) -> DataFrame:
    """``records`` (the Column plan's: ``key``, ``value``, ``topic``, ``partition``, ``offset``,
    ``event_time``, ``_headers`` ...) after the segment: one row per record reaching each exit, with
    :data:`EXIT` (its position in ``segment.exits``) and, for each part changed on the way there, its
    bytes in :data:`ENCODED` written by ``exit_serdes[exit][part]`` (the part's own column then holds
    the record's part as it entered the segment, for nobody to read). A record the segment cannot read
    (:attr:`Segment.reads`) fails the task or is skipped, as ``dead_letters`` says; with a dead-letter
    topic, it comes out raw with :data:`DEAD_LETTER` and Kafka Streams' dead-letter headers. Not
    ``acting``: its ``peek``/``foreach``/``print`` steps pass records on without calling their actions."""
    schema = T.StructType([*records.schema.fields, T.StructField(EXIT, T.IntegerType(), False),
                           *(T.StructField(column, T.BinaryType(), True) for column in ENCODED.values())])

    def run(batches):
        for batch in batches:
            if batch.num_rows:
                yield segment_batch(batch, nodes, segment, exit_serdes, dead_letters, acting)

    return records.mapInArrow(run, schema)


def segment_batch(batch: pa.RecordBatch, nodes: list, segment: Segment, exit_serdes: list[dict[str, Any]],
                  dead_letters: DeadLetterPolicy = DeadLetterPolicy(), acting: bool = True) -> pa.RecordBatch:
    """One Arrow batch of records through the segment (see :func:`run_segment`), in order: a record's
    output depth-first, as Kafka Streams forwards it."""
    column = {name: batch.column(batch.schema.get_field_index(name)).to_pylist()
              for name in ("key", "value", "topic", "partition", "offset", "event_time", "_headers")}
    steps = set(segment.steps)
    exit_of = {edge: position for position, edge in enumerate(segment.exits)}
    rows: list[int] = []
    exits: list[int] = []
    encoded: dict[str, list] = {part: [] for part in ENCODED}

    def visit(index: int, key, value, row: int, context: RecordContext) -> None:
        node = nodes[index]
        for new_key, new_value in _step(node, key, value, context, acting):
            for child in _children_taking(node, new_key, new_value, context):
                if child in steps:
                    visit(child, new_key, new_value, row, context)
                    continue
                position = exit_of[(index, child)]
                rows.append(row)
                exits.append(position)
                for part, data in (("key", new_key), ("value", new_value)):
                    encoded[part].append(_encode(node, nodes[child], part, exit_serdes[position][part], data, context)
                                         if part in segment.changes[position] else None)

    dead = {}  # the position of a dead-letter row: its headers
    for row in range(batch.num_rows):
        context = RecordContext(topic=column["topic"][row], partition=column["partition"][row],
                                offset=column["offset"][row], timestamp=column["event_time"][row],
                                headers=column["_headers"][row])
        key, value = column["key"][row], column["value"][row]
        if segment.reads is not None:
            try:
                key, value = _read(segment.reads, key, value, context)
            except DeserializationError as error:
                if dead_letters.handler is DeserializationHandler.FAIL:
                    raise
                log.warning("skipping a record: %s", error)
                if dead_letters.dead_letter_topic:
                    dead[len(rows)] = header_column(dead_letter_headers(context.topic, context.partition,
                                                                        context.offset, error))
                    rows.append(row)
                    exits.append(DEAD_LETTER)
                    encoded["key"].append(key)
                    encoded["value"].append(value)
                continue
        visit(segment.steps[0], key, value, row, context)
    # A changed part's old column goes along unread: the exit reads the part from its bytes.
    taken = batch.take(pa.array(rows, type=pa.int64()))
    arrays = list(taken.columns)
    if dead:
        at = batch.schema.get_field_index("_headers")
        headers = [dead.get(position, record) for position, record in enumerate(arrays[at].to_pylist())]
        arrays[at] = pa.array(headers, type=batch.schema.field(at).type)
    arrays.append(pa.array(exits, type=pa.int32()))
    arrays.extend(pa.array(encoded[part], type=pa.binary()) for part in ENCODED)
    return pa.RecordBatch.from_arrays(arrays, names=[*batch.schema.names, EXIT, *ENCODED.values()])


def _read(serdes: tuple[Any, Any], raw_key, raw_value, context) -> tuple[Any, Any]:
    """The record's key and value read from its bytes, or :class:`DeserializationError` naming it."""
    for part, serde in zip(("key", "value"), serdes):
        try:
            if part == "key":
                key = serde.deserialize(raw_key)
            else:
                value = serde.deserialize(raw_value)
        except Exception as cause:  # noqa: BLE001 - any serde failure is the handler's to judge
            raise DeserializationError(context.topic, context.partition, context.offset, part, repr(serde),
                                       cause) from cause
    return key, value


def times_read(nodes: list, segments: dict[int, "Segment"], start: int, dead_letter_topic: Optional[str]) -> int:
    """How many times the Column plan reads the rows of the segment that starts at ``start``: its
    :func:`exit_outputs`, and once when there are none (the plan reads it all the same, for its actions)."""
    return max(exit_outputs(nodes, segments, start, dead_letter_topic), 1)


def exit_outputs(nodes: list, segments: dict[int, "Segment"], start: int, dead_letter_topic: Optional[str]) -> int:
    """The outputs of the Column plan the rows of the segment that starts at ``start`` go to: one per
    sink its exits lead to and per read of a segment further on (each is one branch of the plan's
    union, and Spark evaluates a DataFrame once per branch that reads it), one for its dead letters."""

    segment = segments[start]
    count = sum(_outputs_after(nodes, segments, child, dead_letter_topic) for _, child in segment.exits)
    if segment.reads is not None and dead_letter_topic:
        count += 1
    return count


def _outputs_after(nodes: list, segments: dict[int, "Segment"], index: int, dead_letter_topic: Optional[str]) -> int:
    """The outputs of the plan the rows reaching processor ``index`` go to (see :func:`exit_outputs`)."""
    if index in segments:
        return times_read(nodes, segments, index, dead_letter_topic)
    if nodes[index].kind == "sink":
        return 1
    return sum(_outputs_after(nodes, segments, child, dead_letter_topic) for child in nodes[index].children)


def has_actions(nodes: list, segment: Segment) -> bool:
    """Whether a step of ``segment`` is a ``peek``, ``foreach`` or ``print``."""
    return any(nodes[index].kind in ACTION_KINDS for index in segment.steps)


def acting_read(nodes: list, segments: dict[int, Segment], start: int, dead_letter_topic: Optional[str]) -> Optional[int]:
    """The read of the segment that starts at ``start`` whose ``mapInArrow`` calls its actions, the
    plan evaluating it once: the first exit that leads to exactly one output of the plan (its position),
    :data:`NO_EXIT` when no exit leads to any (the plan then reads the segment for its actions alone),
    None when every exit that leads anywhere leads to several (no read is evaluated once)."""
    after = [_outputs_after(nodes, segments, child, dead_letter_topic) for _, child in segments[start].exits]
    if not any(after):
        return NO_EXIT
    return next((position for position, count in enumerate(after) if count == 1), None)


def actions_read_twice(nodes: list, segments: dict[int, Segment], dead_letter_topic: Optional[str]) -> list[str]:
    """A ``peek``/``foreach``/``print`` in a segment of ``nodes`` with no :func:`acting_read` (each of its
    exits that leads anywhere leads to several outputs of the plan, and Spark evaluates a read once per
    output it reaches, so its action would see a record more than once): one problem each."""
    problems = []
    for start, segment in segments.items():
        if not has_actions(nodes, segment) or acting_read(nodes, segments, start, dead_letter_topic) is not None:
            continue
        reads = times_read(nodes, segments, start, dead_letter_topic)
        for index in segment.steps:
            node = nodes[index]
            if node.kind in ACTION_KINDS:
                problems.append(
                    f"processor {node.name} ({node.kind}) runs in a Python segment whose records go on to {reads} "
                    "outputs of the plan with no exit of the segment leading to exactly one, and Spark evaluates "
                    "a read once per output it reaches: its action would see a record more than once (call it "
                    "after the fork, in each branch)")
    return problems


def lookups_read_twice(nodes: list, segments: dict[int, Segment], dead_letter_topic: Optional[str]) -> list[str]:
    """A global-table join in a segment of ``nodes`` whose joined records go on to several outputs of
    the plan: Spark evaluates the segment once per output, and each evaluation catches the table up to
    its topic's end again, so one record's outputs could join different versions of the table, where
    Kafka Streams looks it up once. One problem each."""
    problems = []
    for segment in segments.values():
        outputs = sum(_outputs_after(nodes, segments, child, dead_letter_topic) for _, child in segment.exits)
        if outputs < 2:
            continue
        for index in segment.steps:
            node = nodes[index]
            if node.kind in LOOKUP_KINDS:
                problems.append(
                    f"processor {node.name} ({node.kind}) runs in a Python segment whose records go on to "
                    f"{outputs} outputs of the plan, and Spark evaluates the segment once per output, each time "
                    "reading the global table anew: one record's outputs could join different versions of it "
                    "(give the part after the join a sub-topology of its own with .repartition(), or write it "
                    "with Python functions)")
    return problems


def _children_taking(node, key, value, context) -> list[int]:
    """The children a record goes to from ``node``: a branch's first whose predicate holds (None:
    the default branch), as Kafka Streams' ``KStreamBranch``; any other's every child."""
    if node.kind != "branch":
        return node.children
    for predicate, child in zip(node.predicates, node.children):
        if predicate is None or node.call(context, predicate, key, value):
            return [child]
    return []


def _step(node, key, value, context, acting: bool) -> list[tuple[Any, Any]]:
    kind = node.kind
    if kind == "branch":  # the record itself, to the branch _children_taking picks
        return [(key, value)]
    if kind in ACTION_KINDS:
        if acting and node.fn is not None:
            node.call(context, node.fn, key, value)
        return [(key, value)]
    if kind in LOOKUP_KINDS:
        joined = node.joined(key, value, context)
        return [] if joined is DROPPED else [(key, joined)]
    result = node.call(context, node.fn, key, value)
    if kind == "filter":
        return [(key, value)] if bool(result) != node.negate else []
    if kind == "map_values":
        return [(key, result)]
    if kind == "select_key":
        return [(result, value)]
    if kind == "map":
        return [pair(node, result)]
    if kind == "flat_map":
        return [pair(node, produced) for produced in result or ()]
    return [(key, produced) for produced in result or ()]  # flat_map_values


def _encode(last, target, part: str, serde, data, context) -> Optional[bytes]:
    try:
        return serde.serialize(data)
    except Exception as cause:  # noqa: BLE001 - named with the processors and the record
        whose = f"sink {target.name}" if target.kind == "sink" else f"the default {part} serde, for {target.name},"
        raise ProcessingError(
            f"processor {last.name} ({last.kind}) gives the record at {context.describe()} a {part} that "
            f"{whose} cannot write with {serde!r} ({type(cause).__name__}: {cause}): {data!r}") from cause
