"""PySpark Column expressions given to DSL operations, run in the JVM as DataFrame operations.

A stateless operation may be given a PySpark ``Column`` instead of a Python function::

    from pyspark.sql import functions as F

    builder.stream("orders", Consumed.with_(Serdes.String(), Serdes.Json(schema="country string, amount long"))) \\
        .filter(F.col("value.amount") > 10) \\
        .select_key(F.col("value.country")) \\
        .map_values(F.col("value.amount") * 2) \\
        .to("big-orders", Produced.with_(Serdes.String(), Serdes.Long()))

Column names users write against (the record as it flows, after deserialization):

* ``key`` and ``value``: the current key and value, typed by the source serdes (``String`` ->
  string, ``Long`` -> bigint, ``Integer`` -> int, ``ByteArray`` -> binary, ``Json(schema=...)``
  -> a struct with the schema's fields, e.g. ``F.col("value.country")``), then by whatever the
  previous Column operations produced.
* ``topic``, ``partition``, ``offset``, ``timestamp``: the source record's coordinates (read only);
  ``event_time``: its timestamp in epoch ms, as Kafka Streams sees it (read only).

Supported operations and their Column:

* ``filter`` / ``filter_not``: a boolean Column (null counts as false, as ``bool(None)``);
* ``map_values``: the new value; ``select_key``: the new key;
* ``map``: a ``(key_column, value_column)`` tuple;
* ``flat_map_values``: an array Column, exploded (a null array emits nothing);
* ``split``'s ``branch``: a boolean Column per branch (null counts as false): a record goes to the
  first branch whose Column is true, else to the default branch, as ``KStreamBranch`` sends it (a
  split's predicates are all Columns, or all Python functions, which run in a segment).

A sub-topology whose processors are all Column operations (plus sources, sinks, ``merge`` and
the repartition filter) and whose serdes are JVM-parsable (``String``, ``Long``, ``Integer``,
``ByteArray``, ``Json(schema=...)``; a sink may also write ``Json()`` without a schema) runs
with no Python pass at all: the task query is Kafka source -> DataFrame operations -> Kafka sink.
A sink with a stream partitioner, or whose topic a Python function picks, adds one Python pass
over the output, which calls them (:mod:`dagster_kstreams.spark.column_placement`). Python functions
of those same operations (and ``flat_map``, ``peek``/``foreach``/``print``, a ``split`` on Python
predicates) may stand anywhere among the Column operations: each chain of them runs as one
``mapInArrow`` segment inside the plan (:mod:`dagster_kstreams.spark.python_segments`); one with a
``peek``, ``foreach`` or ``print`` as one ``mapInArrow`` per read, only one of which, evaluated once,
calls the actions.
In a sub-topology with state, Column operations run in front of it (:mod:`dagster_kstreams.spark.column_hand_off`).
Any other sub-topology that uses a Column expression is rejected with
:class:`~dagster_kstreams.spark.compile.UnsupportedTopologyError` naming the processors that keep
it out of the plan (Python-only serdes, operations with no Column form).

Deserialization errors (:mod:`dagster_kstreams.spark.column_sources`) follow the task's handler
exactly as in the Python pass: ``fail`` stops the task with ``DeserializationError: cannot
deserialize the <key|value> of the record at topic '<t>' partition <p> offset <o> ...``;
``log_and_continue`` skips the record and, with a dead-letter topic, writes it there raw with Kafka
Streams' dead-letter headers. Malformed input is: a ``Long``/``Integer`` whose length is not 8/4
bytes, JSON that ``from_json`` cannot parse
(detected with a corrupt-record column; the JSON literal ``null`` is a null value, as in Python).

Differences from the Python serdes: ``to_json`` writes a struct's fields in schema order
(``Serdes.Json`` in Python sorts keys; both are the same JSON); ``String`` decodes invalid
UTF-8 with replacement characters instead of failing; a ``String`` sink casts a non-string
Column to string.
"""

from __future__ import annotations

from functools import reduce
from typing import Optional

from pyspark.sql import functions as F

from dagster_kstreams.spark.column_functions import (
    COLUMN_KINDS,
    ColumnExpression,
    column_predicates,
    split_conditions,
    uses_column,
)
from dagster_kstreams.spark.column_placement import passes_over_output, placement_columns, with_placed_partitions
from dagster_kstreams.spark.column_sources import HEADERS_TYPE, read_sources
from dagster_kstreams.spark.jvm_serdes import (
    deserialize,
    jvm_deserializable,
    jvm_serializable,
    serialize,
    stop_where,
)
from dagster_kstreams.spark.python_segments import (
    DEAD_LETTER,
    ENCODED,
    EXIT,
    NO_EXIT,
    PYTHON_KINDS,
    acting_read,
    actions_read_twice,
    cut,
    has_actions,
    lookups_read_twice,
    reading,
    run_segment,
)

__all__ = ["ColumnPlan", "plan", "is_python_step", "decoded_in_python"]

_PASS_KINDS = {"merge", "branch_child", "repartition_filter"}


# -- the plan ----------------------------------------------------------------------------
def is_python_step(node) -> bool:
    """Whether ``node`` is a Python function a Column plan runs in a segment (python_segments.py): a
    split's when none of its predicates is a Column."""
    return node.kind in PYTHON_KINDS and not uses_column(node)


def is_column_split(node) -> bool:
    """Whether ``node`` is a split whose predicates are all Columns, run as DataFrame filters."""
    return node.kind == "branch" and len(column_predicates(node)) == sum(p is not None for p in node.predicates)


def decoded_in_python(source) -> bool:
    """Whether a source's records are read by the Python functions after it, not in the JVM."""
    return not (jvm_deserializable(source.key_serde) and jvm_deserializable(source.value_serde))


def plan(program, error_class, default_key_serde, default_value_serde) -> Optional["ColumnPlan"]:
    """A :class:`ColumnPlan` when the program uses Column expressions (None when it has none).

    Raises ``error_class`` naming every processor that keeps the sub-topology out of the plan.
    """
    users = [node.name for node in program.nodes if uses_column(node)]
    if not users:
        return None
    defaults = {"key": default_key_serde, "value": default_value_serde}
    segments = cut(program.nodes, is_python_step)
    for node in program.nodes:
        if node.kind == "source" and decoded_in_python(node):
            # Its Python functions read its records' bytes themselves (python_segments.py).
            for child in node.children:
                if child in segments:
                    segments[child] = reading(segments[child], node.key_serde, node.value_serde)
    # The parts of a record a segment writes itself into each of its exits (python_segments.py).
    written: dict[int, frozenset] = {}
    for segment in segments.values():
        for (_, child), changes in zip(segment.exits, segment.changes):
            written[child] = written.get(child, frozenset()) | changes
    problems = []
    for index, node in enumerate(program.nodes):
        if node.kind == "source":
            if decoded_in_python(node):
                for child in node.children:
                    if child not in segments:
                        problems.append(
                            f"source {node.name} reads its records with {node.key_serde!r} and {node.value_serde!r}, "
                            f"one of which only Python parses, and its child {program.nodes[child].name} is no Python "
                            "function (use String, Long, Integer, ByteArray or Json(schema=...), or a Python "
                            "function first)")
        elif node.kind == "sink":
            for part, serde in (("key", node.key_serde), ("value", node.value_serde)):
                if part not in written.get(index, ()) and not jvm_serializable(serde):
                    problems.append(f"sink {node.name} writes its {part} with {serde!r}, which only Python writes")
        elif node.kind == "branch" and not is_python_step(node) and not is_column_split(node):
            problems.append(f"processor {node.name} (branch) is a split whose predicates mix Columns and Python "
                            "functions (make them all Columns, or all Python functions)")
        elif is_python_step(node) or is_column_split(node) or node.kind in COLUMN_KINDS or node.kind in _PASS_KINDS:
            for part in written.get(index, ()):
                if not jvm_deserializable(defaults[part]):
                    problems.append(f"processor {node.name} ({node.kind}) reads in the JVM a {part} a Python "
                                    f"function made, through the default {part} serde {defaults[part]!r}, which "
                                    "only Python parses")
        else:
            problems.append(f"processor {node.name} ({node.kind}) has no Column form and runs no Python function "
                            "in a Column plan")
    problems.extend(actions_read_twice(program.nodes, segments, program.dead_letters.dead_letter_topic))
    problems.extend(lookups_read_twice(program.nodes, segments, program.dead_letters.dead_letter_topic))
    if problems:
        raise error_class(
            f"sub-topology {program.subtopology_id}: processor(s) {', '.join(users)} are PySpark Column "
            "expressions, which run only in a stateless sub-topology of Column operations and Python functions "
            f"({', '.join(sorted(PYTHON_KINDS))}) with JVM serdes; not here because: " + "; ".join(problems)
        )
    return ColumnPlan(program, segments, defaults)


class ColumnPlan:
    """A stateless sub-topology made of Column operations, as DataFrame operations, with its chains
    of Python functions as segments (:mod:`dagster_kstreams.spark.python_segments`)."""

    keeps_raw_bytes = False  # whether the walked rows keep their source bytes (column_hand_off.py reads them)
    carried_columns: tuple[str, ...] = ()  # source columns the walked rows keep as they are, where present

    def __init__(self, program, segments: dict, default_serdes: dict):
        self.program = program
        self.segments = segments  # by the index of a segment's first processor
        self.default_serdes = default_serdes  # {"key": serde, "value": serde}

    @property
    def interleaves_branches(self) -> bool:
        """Whether two branches of the plan may write one topic (two sinks, a sink reached twice, a
        topic a function picks beside another sink): the plan's output is a union of branches, so
        their rows must be sorted back into processing order (Kafka Streams forwards a record down
        each branch before the next record)."""
        nodes = self.program.nodes
        reached: list = []

        def walk(index: int) -> None:
            if nodes[index].kind == "sink":
                reached.append(nodes[index].topic)
            for child in nodes[index].children:
                walk(child)

        for index, node in enumerate(nodes):
            if node.kind == "source":
                walk(index)
        return len(reached) != len(set(reached)) or (None in reached and len(reached) > 1)

    def build(self, source, dead_letters):
        """The task's output DataFrame (``topic, key, value, headers``) from its source DataFrame
        (``key, value, topic, partition, offset, timestamp`` as Spark's Kafka source gives them)."""

        outputs: list = []
        self._walk_sources(source, dead_letters, outputs)
        if not outputs:
            outputs.append(source.where(F.lit(False)).select(
                F.col("topic"), F.col("key"), F.col("value"), F.lit(None).cast(HEADERS_TYPE).alias("headers"),
                F.lit(None).cast("long").alias("timestamp_ms"), F.lit(None).cast("long").alias("emit_order"),
                *placement_columns(self.program, None)))
        output = reduce(lambda left, right: left.unionByName(right), outputs)
        if passes_over_output(self.program):  # a partitioner or a topic picker: one Python pass
            output = with_placed_partitions(output, self.program)
        return output

    def reads_in_jvm(self, source_node) -> bool:
        """Whether the plan deserializes a source's records in the JVM (else its Python functions
        read their bytes themselves)."""
        return not decoded_in_python(source_node)

    def _walk_sources(self, source, dead_letters, outputs: list) -> None:
        """Each source's read records (:func:`~dagster_kstreams.spark.column_sources.read_sources`)
        through its children."""
        for index, records in read_sources(self, source, dead_letters, outputs):
            self._walk_source(index, records, outputs)

    def _walk_source(self, index: int, records, outputs: list) -> None:
        """A source's read records through its children."""
        for child in self.program.nodes[index].children:
            self._walk(child, records, outputs)

    def _walk(self, index: int, records, outputs: list, encoded: frozenset = frozenset()) -> None:
        """Processor ``index`` and what follows, on the ``records`` that reach it; ``encoded``: the
        parts a Python segment wrote for it, a sink (in :data:`ENCODED`)."""
        if index in self.segments:
            self._segment(index, records, outputs)
            return
        node = self.program.nodes[index]
        if node.kind == "sink":
            outputs.append(self._sink_rows(index, records, encoded))
            return
        if node.kind == "branch":  # a split on Columns (a Python one is a segment)
            for child, taken in zip(node.children, split_conditions(node)):
                self._walk(child, records.where(taken), outputs)
            return
        records = self._step(node, records)
        for child in node.children:
            self._walk(child, records, outputs)

    @staticmethod
    def _step(node, records):
        """``records`` after processor ``node`` (a Column operation or one that passes records on)."""
        kind = node.kind
        column = node.fn.column if isinstance(node.fn, ColumnExpression) else None
        if kind == "filter":
            keep = F.coalesce(column, F.lit(False))
            return records.where(~keep if node.negate else keep)
        if kind == "map_values":
            return records.withColumn("value", column)
        if kind == "select_key":
            return records.withColumn("key", column)
        if kind == "map":
            new_key, new_value = column
            return records.withColumns({"key": new_key, "value": new_value})
        if kind == "flat_map_values":
            return records.withColumn("value", F.explode(column))
        if kind == "repartition_filter":
            return records.where(F.col("key").isNotNull())
        return records  # merge, a branch's child

    def _sink_rows(self, index: int, records, encoded: frozenset):
        """The output rows of sink ``index`` for the ``records`` that reach it; ``encoded``: the parts
        a Python segment wrote for it (in :data:`ENCODED`)."""
        node = self.program.nodes[index]
        types = {field.name: field.dataType for field in records.schema.fields}
        # The record keeps its timestamp, as the Python sink's timestamp_ms does.
        timestamp = F.col("event_time")
        return records.select(
            F.lit(node.topic).cast("string").alias("topic"),  # None: picked in the pass
            *(F.col(ENCODED[part]).alias(part) if part in encoded
              else serialize(F.col(part), types[part], serde).alias(part)
              for part, serde in (("key", node.key_serde), ("value", node.value_serde))),
            F.col("_headers").alias("headers"),
            timestamp.alias("timestamp_ms"),
            F.col("_emit_order").alias("emit_order"),
            *placement_columns(self.program, index),
        )

    def _segment(self, start: int, records, outputs: list) -> None:
        """A segment of Python functions (python_segments.py) as one ``mapInArrow``, then each exit's
        rows on: a sink takes the bytes the segment wrote with its serdes; any other processor reads a
        changed part as the default serde wrote it, as a Column reads a source's."""
        nodes, segment = self.program.nodes, self.segments[start]
        exit_serdes = [
            {part: (getattr(nodes[child], f"{part}_serde") if nodes[child].kind == "sink" else self.default_serdes[part])
             for part in changes}
            for (_, child), changes in zip(segment.exits, segment.changes)
        ]
        dead_letters = self.program.dead_letters
        shared = run_segment(records, nodes, segment, exit_serdes, dead_letters)
        acting = acting_read(nodes, self.segments, start, dead_letters.dead_letter_topic) \
            if has_actions(nodes, segment) else None

        def passed(read: int):  # with actions, each read its own mapInArrow; only the acting one calls them
            if not has_actions(nodes, segment):
                return shared
            return run_segment(records, nodes, segment, exit_serdes, dead_letters, acting=read == acting)

        columns = list(records.columns)
        # Records it could not read, raw, to the dead-letter topic; with actions and no exit that leads
        # anywhere, a read for the actions alone (no row has NO_EXIT).
        reads = [DEAD_LETTER] if segment.reads is not None and dead_letters.dead_letter_topic else []
        for read in [*reads, *([NO_EXIT] if acting == NO_EXIT else [])]:
            topic = F.lit(dead_letters.dead_letter_topic) if read == DEAD_LETTER else F.col("topic")
            outputs.append(passed(read).where(F.col(EXIT) == read).select(
                topic.alias("topic"), F.col(ENCODED["key"]).alias("key"), F.col(ENCODED["value"]).alias("value"),
                # the record's timestamp, as Kafka Streams' dead-letter record has it
                F.col("_headers").alias("headers"), F.col("event_time").alias("timestamp_ms"),
                F.col("_emit_order").alias("emit_order"), *placement_columns(self.program, None)))
        for position, ((_, child), changes) in enumerate(zip(segment.exits, segment.changes)):
            rows = passed(position).where(F.col(EXIT) == position)
            if nodes[child].kind == "sink":
                self._walk(child, rows, outputs, changes)
                continue
            typed = {}
            for part in changes:
                parsed, bad, reason = deserialize(F.col(ENCODED[part]), self.default_serdes[part])
                typed[part] = parsed
                # A part Python wrote that the JVM cannot read (a Json value that does not fit its schema)
                # would reach the Column as null where a Python function sees it: the batch fails
                # instead, naming the Column, as a Python processor's ProcessingError does.
                rows = stop_where(rows, bad, F.lit(
                    f"ProcessingError: processor {nodes[child].name} cannot read the record a Python function "
                    f"handed to the JVM: its {part} with {self.default_serdes[part]!r}: {reason}"))
            self._walk(child, rows.withColumns(typed).select(*columns), outputs)

