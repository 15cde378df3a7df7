"""PySpark Column expressions after a sub-topology's state, on the way to its sinks: run in the JVM
on the state's output rows.

The most common Column a user writes after state::

    counts = words.group_by_key().count()
    counts.to_stream().filter(F.col("value") > 1).map_values(F.concat(F.lit("n="), F.col("value"))).to("out")

The state runs in Python, inside Spark's state operator, where no DataFrame plan runs; but its output
rows do come back into the JVM before they are written. So where a Column ``filter``/``filter_not``,
``map_values`` or ``flat_map_values`` follows a processor that runs in Python, and every path from it
leads through Column operations (those, ``select_key``, ``map``) to sinks only, the program puts a
:class:`~dagster_kstreams.processors.hand_backs.HandBack` in its place: the record goes into the
pass's output, where it stands, on a topic of its own, its key and value written with the serdes of
the stream the Column reads (its ``Grouped``/``Materialized``/``Consumed`` serdes, as Kafka Streams
knows them there; the default serdes where the stream has none), with its headers and timestamp.
:meth:`ColumnsAfterState.project` then runs those Columns on the output rows, before the batch
writer sees them: each path from a hand-back to a sink is a *lane*; a record handed back goes down
each of its lanes in turn (an ``explode`` of its lanes, in Kafka Streams' depth-first order), and
every lane is a row-wise projection, a filter or an ``explode`` over the one DataFrame of the state's
output, which keep each partition's row order. So every record keeps its place (its ``emit_order``
and its position among its source record's output), its headers and, on a repartition topic, its
timestamp, exactly as a Python sink at the same place would give them.

The Columns read ``key`` and ``value`` (typed by those serdes), ``timestamp`` and ``event_time`` (the
record's timestamp, as a Python function after state would see it); ``topic``, ``partition`` and
``offset`` read as null there (a record after state has no source coordinates of its own in the
output rows). A record whose key or value Python wrote but the JVM cannot read back with those serdes
(a Json value that does not fit its schema) fails the batch naming the Column, never reaching it as null.

Refused, naming the processors (:func:`plan_after_state`): a Column after state with a Python
function, a stateful processor, a ``merge``, a branch or anything but Column operations and sinks
after it (a repartition on the way passes, dropping null keys where it does); a serde of the stream it reads that the JVM cannot parse; a sink after it that places its
records itself (a stream partitioner, a topic a function picks) or writes with a serde only Python
writes; and a sink after it whose topic another sink of the sub-topology writes too (the records of
two sinks of one topic would not keep Kafka Streams' order between them within one source record's
output: each lane's rows are set apart from the others').
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dagster_kstreams.processors.hand_backs import HandBack, hand_back_topic
from dagster_kstreams.spark.column_functions import is_column
from dagster_kstreams.spark.jvm_serdes import (
    deserialize,
    jvm_deserializable,
    jvm_serializable,
    serialize,
    stop_where,
)

__all__ = ["ColumnsAfterState", "Lane", "plan_after_state", "ENTRY_KINDS", "LANE_KINDS"]

# Column operations a record handed back may enter first (their stream's serdes are known) ...
ENTRY_KINDS = frozenset({"filter", "map_values", "flat_map_values"})
# ... and those that may follow them on the way to a sink.
LANE_KINDS = ENTRY_KINDS | {"select_key", "map"}
_LANE = "_lane"


@dataclass(frozen=True)
class Lane:
    """One path of a handed-back record: ``entry`` (the position of its hand-back), the processors
    from the hand-back's Column to a sink (program indexes), and the serdes it is read back with."""

    entry: int
    path: tuple[int, ...]
    key_serde: Any
    value_serde: Any


def _lanes_from(nodes: list, start: int, parents: dict[int, list[int]], problems: list[str]) -> list[tuple[int, ...]]:
    """Every path from Column ``start`` to a sink, depth first in children's order (Kafka Streams'
    forwarding order); a processor on the way that is no Column operation, no sink and no pass of a
    repartition (its null-key filter, or a merge of this path alone) is a problem."""
    node = nodes[start]
    if node.kind == "sink":
        return [(start,)]
    passes = node.kind == "repartition_filter" or (node.kind == "merge" and len(parents.get(start, ())) == 1)
    if not passes and not (is_column(node) and node.kind in LANE_KINDS):
        problems.append(f"processor {node.name} ({node.kind}) follows a Column after state: Columns after state "
                        "run only on the way to sinks, through Column filter/filter_not, map_values, "
                        "flat_map_values, select_key and map, with nothing stateful or Python after them")
        return []
    return [(start, *rest) for child in node.children for rest in _lanes_from(nodes, child, parents, problems)]


def plan_after_state(program, in_python: set[int], default_serdes: dict) -> tuple[Optional["ColumnsAfterState"],
                                                                                   list[str], set[int]]:
    """``(the plan or None, problems, the Column processors it covers)`` for the Columns among
    ``in_python`` (the processors reached from the state or a Python function) of ``program``."""
    nodes = program.nodes
    parents: dict[int, list[int]] = {}
    for index, node in enumerate(nodes):
        for child in node.children:
            parents.setdefault(child, []).append(index)
    entries = [index for index in sorted(in_python) if is_column(nodes[index])
               and not any(is_column(nodes[parent]) for parent in parents.get(index, ()))]
    problems: list[str] = []
    lanes: list[Lane] = []
    for position, index in enumerate(entries):
        node = nodes[index]
        if node.kind not in ENTRY_KINDS:
            problems.append(f"processor {node.name} ({node.kind}) is a Column after processors that run in Python: "
                            "after state a Column filter/filter_not, map_values or flat_map_values comes first")
            continue
        serdes = [serde or default_serdes[part] for part, serde in zip(("key", "value"), node.fn.stream_serdes)]
        for part, serde in zip(("key", "value"), serdes):
            if not jvm_deserializable(serde):
                problems.append(f"processor {node.name} ({node.kind}) reads after state a {part} written with "
                                f"{serde!r}, which the JVM cannot parse (give the stream a String, Long, Integer, "
                                "ByteArray or Json(schema=...) serde)")
        lanes.extend(Lane(position, path, *serdes) for path in _lanes_from(nodes, index, parents, problems))
    sink_topics = [node.topic for node in nodes if node.kind == "sink"]
    for lane in lanes:
        sink = nodes[lane.path[-1]]
        if sink.placement is not None or sink.topic is None:
            problems.append(f"sink {sink.name} after a Column after state places its records itself (a stream "
                            "partitioner or a topic a function picks)")
        elif sink_topics.count(sink.topic) > 1:
            problems.append(f"sink {sink.name} after a Column after state writes topic {sink.topic!r}, which "
                            "another sink of the sub-topology writes too (their records would not keep Kafka "
                            "Streams' order between them)")
        for part, serde in (("key", sink.key_serde), ("value", sink.value_serde)):
            if not jvm_serializable(serde):
                problems.append(f"sink {sink.name} writes its {part} with {serde!r}, which only Python writes")
    covered = {index for lane in lanes for index in lane.path if is_column(nodes[index])}
    if problems or not lanes:
        return None, list(dict.fromkeys(problems)), covered
    return ColumnsAfterState(program, entries, lanes), [], covered


class ColumnsAfterState:
    """The Columns after a sub-topology's state: the hand-backs the program puts in their place
    (:meth:`hand_backs`) and the projection of the state's output rows (:meth:`project`)."""

    def __init__(self, program, entries: list[int], lanes: list[Lane]):
        self.nodes = tuple(program.nodes)  # as built: the program's own will hold hand-backs in place of entries
        self.entries = tuple(entries)  # program index of each hand-back's Column, by its position
        self.lanes = tuple(lanes)

    def hand_backs(self) -> dict[int, HandBack]:
        """``{program index: HandBack}``: what stands in the program where each entry Column does."""
        backs = {}
        for lane in self.lanes:
            node = self.nodes[self.entries[lane.entry]]
            backs[self.entries[lane.entry]] = HandBack(node.name, lane.entry, lane.key_serde, lane.value_serde)
        return backs

    def project(self, output: DataFrame) -> DataFrame:
        """The state's ``output`` rows with every handed-back record run down its lanes to its sinks:
        the same columns, the others untouched, each partition's rows in their order."""
        placed = "partition" in output.columns
        lanes_of = F.array(F.lit(-1))  # a row handed back by no one: one pass, untouched
        for position in reversed(range(len(self.entries))):
            mine = [F.lit(number) for number, lane in enumerate(self.lanes) if lane.entry == position]
            lanes_of = F.when(F.col("topic") == hand_back_topic(position), F.array(*mine)).otherwise(lanes_of)
        rows = output.select(
            F.col("topic").alias("_out_topic"), F.col("key").alias("_out_key"), F.col("value").alias("_out_value"),
            F.col("timestamp_ms").alias("_out_time"), "headers", "emit_order",
            *([F.col("partition").alias("_out_partition")] if placed else []),
            F.col("key").alias("_in_key"), F.col("value").alias("_in_value"), F.col("timestamp_ms").alias("_in_time"),
            F.explode(lanes_of).alias(_LANE),
        ).withColumns({
            "timestamp": F.timestamp_millis(F.col("_in_time")), "event_time": F.col("_in_time"),
            "topic": F.lit(None).cast("string"), "partition": F.lit(None).cast("int"),
            "offset": F.lit(None).cast("long"),
        })
        for number, lane in enumerate(self.lanes):
            rows = self._lane(rows, number, lane)
        return rows.select(
            F.col("_out_topic").alias("topic"), F.col("_out_key").alias("key"), F.col("_out_value").alias("value"),
            "headers", F.col("_out_time").alias("timestamp_ms"), "emit_order",
            *([F.col("_out_partition").alias("partition")] if placed else []))

    def _lane(self, rows: DataFrame, number: int, lane: Lane) -> DataFrame:
        """``rows`` with lane ``number``'s records read, run through its Columns and written by its sink;
        every other row passes through as it is (each step a projection, a filter or an explode)."""
        nodes = self.nodes
        mine = F.col(_LANE) == number
        key, key_bad, key_reason = deserialize(F.col("_in_key"), lane.key_serde)
        value, value_bad, value_reason = deserialize(F.col("_in_value"), lane.value_serde)
        # A value Python wrote that the JVM cannot read (a Json schema it does not fit) would reach the
        # Columns as null where a Python function sees the value: the batch fails instead, naming the
        # Column, as a Python processor's ProcessingError does.
        entry = nodes[self.entries[lane.entry]].name
        why = F.when(key_bad, F.lit(f"its key with {lane.key_serde!r}: {key_reason}")) \
            .otherwise(F.lit(f"its value with {lane.value_serde!r}: {value_reason}"))
        unread = F.concat(F.lit(f"ProcessingError: processor {entry} cannot read the record handed back to the JVM "
                                "after state: "), why)
        rows = stop_where(rows, mine & (key_bad | value_bad), unread)
        rows = rows.withColumns({"key": F.when(mine, key), "value": F.when(mine, value)})
        for index in lane.path[:-1]:
            node = nodes[index]
            if node.kind == "repartition_filter":  # a repartition drops null keys (Kafka Streams' too)
                rows = rows.where(~mine | F.col("key").isNotNull())
                continue
            if node.kind == "merge":  # a repartition that keeps them
                continue
            column = node.fn.column
            if node.kind == "filter":
                keep = F.coalesce(column, F.lit(False))
                rows = rows.where(~mine | (~keep if node.negate else keep))
            elif node.kind == "map_values":
                rows = rows.withColumn("value", F.when(mine, column))
            elif node.kind == "select_key":
                rows = rows.withColumn("key", F.when(mine, column))
            elif node.kind == "map":
                rows = rows.withColumns({"key": F.when(mine, column[0]), "value": F.when(mine, column[1])})
            else:  # flat_map_values: a lane's record gives its array's elements in order (a null array none)
                rows = rows.withColumn("value", F.explode(F.when(mine, column).otherwise(F.array(F.lit(None)))))
        sink = nodes[lane.path[-1]]
        types = {field.name: field.dataType for field in rows.schema.fields}
        # The record keeps its timestamp, as the Python sink's timestamp_ms does.
        time = F.col("_in_time")
        return rows.withColumns({
            "_out_topic": F.when(mine, F.lit(sink.topic)).otherwise(F.col("_out_topic")),
            "_out_key": F.when(mine, serialize(F.col("key"), types["key"], sink.key_serde)).otherwise(F.col("_out_key")),
            "_out_value": F.when(mine, serialize(F.col("value"), types["value"], sink.value_serde))
                           .otherwise(F.col("_out_value")),
            "_out_time": F.when(mine, time).otherwise(F.col("_out_time")),
        })
