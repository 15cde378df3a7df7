"""PySpark Column expressions in front of a sub-topology's state: the plan hands its records over.

In a sub-topology with state (a store, a join, a table, a user processor), Column operations may
stand between the sources and the rest: ``filter``/``filter_not``, ``map_values`` and
``flat_map_values``, with ``merge``, a ``split`` whose predicates are all Columns (each record down
its first branch whose Column holds, as ``KStreamBranch`` sends it) and its branches among them,
and ``select_key`` and ``map`` where only sinks follow (a repartition topic, an output topic) or in a
task-grouped sub-topology (in front of a user processor)::

    orders = builder.stream("orders", Consumed.with_(Serdes.String(), Serdes.Long()))
    orders.filter(F.col("value") > 10).map_values(F.col("value") * 2) \\
        .group_by_key(Grouped.with_(Serdes.String(), Serdes.Long())).reduce(lambda a, b: a + b)
    lines = builder.stream("lines")
    lines.flat_map_values(F.split(F.col("value"), " ")).group_by_key().count()

That *prefix* runs as the DataFrame plan it is (:class:`~dagster_kstreams.spark.expressions.ColumnPlan`:
deserialized in the JVM, malformed records judged there, its own sinks written from there), and each
record that leaves it for a processor that is no Column operation is *handed over*
(:meth:`ColumnsBeforeState.hand_over`): one row with the record's key and value as bytes, its
source record's topic, partition, offset, timestamps, headers and processing position (``seq``)
kept, and the number of its :class:`~dagster_kstreams.processors.hand_offs.HandOff` in
:data:`~dagster_kstreams.spark.frames.HAND_OFF_COLUMN`, which says which processors it enters and
which serdes read it back. The stateful strategy groups those rows as it groups a source's
(:mod:`dagster_kstreams.spark.strategies`) and the program runs them from there, as Kafka Streams'
processor forwards a record to its children.

The bytes: a part the prefix left as it was goes as the source record's own bytes, read with the
source's serde; a key or value a Column made goes written by the serde of its Spark type
(``string``: ``String``, ``bigint``: ``Long``, ``int``: ``Integer``, ``binary``: ``ByteArray``,
anything else: ``Json``), so the Python processors see it as a Python function in a segment does (a
``str``, an ``int``, ``bytes``, a struct as a ``dict``; a ``double`` as a ``float``). A source none
of whose children is a Column operation is handed whole, its bytes untouched: the program reads them
with the source's serdes and judges them, as for any source.

Order: a record's rows go to the processors in the order Kafka Streams forwards them, depth first:
each row carries its path from the source (:data:`~dagster_kstreams.spark.frames.HAND_OFF_PATH_COLUMN`,
:func:`~dagster_kstreams.processors.hand_offs.path_step`: the index of each child taken and, at a
``flat_map_values``, the exploded record's index in its array), and the program sorts a position's
rows by it (:mod:`dagster_kstreams.spark.frames`): one line's words each go down every child before
the next word, whatever order Spark's grouping left them in.
The prefix's own output (its sinks, its dead letters) goes out beside the stateful part's, ordered
by the source record's position; a prefix sink may not write a topic the stateful part writes too,
since one record's rows of both would not keep Kafka Streams' order between them.

Refused, naming each processor (:func:`plan_before_state`): a Column after a processor that runs in
Python (state, a Python function, a table operation: the segments of a stateless plan do not reach
into Spark's state operators), unless every path from it leads to sinks only (then it runs on the
state's output rows: :mod:`dagster_kstreams.spark.column_hand_back`, which names what it refuses), a key change by a Column before the state of a sub-topology grouped
by key (grouped by the source record's key; in Kafka Streams a changed key reaches no state in its
sub-topology but a user processor's, which makes it task-grouped: a whole batch one group, so there
a ``select_key`` or ``map`` may stand in front of ``process``), processors that read the task's
stream time (a stream-stream join: a handed record does not carry it; time, sliding and session
windows in a sub-topology with Columns, whether a Column stands before them or not, and a cogroup's
inputs too, keep their own clocks, of the records handed to them, their store its own of every
write, and a suppression after them its own stream time: processors/build.py, own_stream_time.py),
a prefix sink that places its records (a stream partitioner, a topic a function picks), and the
refusals of a stateless plan (serdes only Python parses before a Column or at a prefix sink).
"""

from __future__ import annotations

import copy
from functools import reduce
from typing import Any, Optional

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType

from dagster_kstreams.processors.hand_offs import PATH_STEP_FORMAT, HandOff, path_step
from dagster_kstreams.spark.column_hand_back import ColumnsAfterState, plan_after_state
from dagster_kstreams.spark.column_functions import (
    COLUMN_KINDS,
    column_predicates,
    is_column,
    split_conditions,
    uses_column,
)
from dagster_kstreams.spark.expressions import ColumnPlan, decoded_in_python, is_column_split
from dagster_kstreams.spark.frames import HAND_OFF_COLUMN, HAND_OFF_PATH_COLUMN, OUTPUT_COLUMNS
from dagster_kstreams.spark.jvm_serdes import jvm_serializable, serialize
from dagster_kstreams.spark.state_keys import STATE_KEY_COLUMN
from dagster_kstreams.topology.serdes import Serdes

__all__ = ["ColumnsBeforeState", "plan_before_state", "prefix_of", "hand_off_serde"]

# Operations that pass records on unchanged in a Column plan.
_PASS_KINDS = {"merge", "branch_child", "repartition_filter"}
# Column operations that may only lead to sinks in front of state.
_KEY_CHANGES = {"select_key", "map"}
# The parts of a record a Column operation changes (any other: its value).
_CHANGES = {"filter": frozenset(), "select_key": frozenset({"key"}), "map": frozenset({"key", "value"})}
# Columns of the task's source a handed row keeps (the processing order, the state's key).
_CARRIED = ("seq", STATE_KEY_COLUMN)
# A walked row's path from its source record (processors/hand_offs.py), and an exploded one's index.
_PATH = "_path"
_ELEMENT_INDEX, _ELEMENT = "_element_index", "_element"


def prefix_of(nodes: list) -> set[int]:
    """The processors a Column plan runs in front of the state: those reached from a source through
    Column operations (a split on Columns too), ``merge``, a branch's children, the repartition filter
    and sinks only, that are Column operations or have one before or after them on such a path."""
    capable = {index for index, node in enumerate(nodes)
               if (is_column(node) and node.kind in COLUMN_KINDS) or is_column_split(node) or node.kind in _PASS_KINDS
               or node.kind == "sink"}
    reached: set[int] = set()
    stack = [child for node in nodes if node.kind == "source" for child in node.children]
    while stack:
        index = stack.pop()
        if index in capable and index not in reached:
            reached.add(index)
            stack.extend(nodes[index].children)
    # Those with a Column at or after them (within reach), then everything after one of those.
    leads_to_column = {index for index in reached if uses_column(nodes[index])}
    for index in sorted(reached, reverse=True):  # children follow their parents
        if any(child in leads_to_column for child in nodes[index].children):
            leads_to_column.add(index)
    prefix = set(leads_to_column)
    for index in sorted(reached):
        if index in prefix:
            prefix.update(child for child in nodes[index].children if child in reached)
    return prefix


def plan_before_state(program, error_class, default_key_serde, default_value_serde
                      ) -> tuple[Optional["ColumnsBeforeState"], Optional[ColumnsAfterState]]:
    """``(Columns in front of the state, Columns after it)`` of a stateful ``program`` that uses
    Column expressions (None: none there; column_hand_back.py runs those after it). Raises
    ``error_class`` naming every processor that keeps them from running so."""
    nodes = program.nodes
    users = [node.name for node in nodes if uses_column(node)]
    if not users:
        return None, None
    defaults = {"key": default_key_serde, "value": default_value_serde}
    prefix = prefix_of(nodes)
    problems = [f"processor {node.name} (branch) is a split on Columns that is not in front of the state (only "
                "a split whose predicates are all Columns, reached from a source through Column operations, runs there)"
                for index, node in enumerate(nodes) if column_predicates(node) and index not in prefix]
    problems.extend(_stream_time_keepers(nodes))
    # What runs in Python: every processor reached from one outside the prefix.
    in_python: set[int] = set()
    for index, node in enumerate(nodes):
        if node.kind != "source" and index not in prefix:
            in_python.add(index)
    for index in range(len(nodes)):
        if index in in_python:
            in_python.update(nodes[index].children)
    after, after_problems, after_columns = plan_after_state(program, in_python, defaults)
    problems.extend(after_problems)
    for index in sorted(in_python - after_columns):
        if is_column(nodes[index]):
            problems.append(f"processor {nodes[index].name} ({nodes[index].kind}) is a Column after processors that "
                            "run in Python (state, Python functions): Columns run in front of the state, or after "
                            "it on the way to sinks only")
    prefix_topics = set()
    for index, node in enumerate(nodes):
        if node.kind == "source":
            if any(child in prefix for child in node.children) and decoded_in_python(node):
                problems.append(
                    f"source {node.name} reads its records with {node.key_serde!r} and {node.value_serde!r}, one of "
                    "which only Python parses, and a Column operation follows it (use String, Long, Integer, "
                    "ByteArray or Json(schema=...))")
        elif index in prefix and node.kind == "sink":
            prefix_topics.add(node.topic)
            if node.placement is not None or node.topic is None:
                problems.append(f"sink {node.name} after Column operations in front of state places its records "
                                "itself (a stream partitioner or a topic a function picks)")
            for part, serde in (("key", node.key_serde), ("value", node.value_serde)):
                if not jvm_serializable(serde):
                    problems.append(f"sink {node.name} writes its {part} with {serde!r}, which only Python writes")
    shared = sorted(node.topic for index, node in enumerate(nodes)
                    if node.kind == "sink" and index in in_python and node.topic in prefix_topics)
    if shared:
        problems.append(f"topic(s) {', '.join(map(repr, shared))} are written both after the Column operations and "
                        "after the state, whose records of one source record would not keep Kafka Streams' order")
    if not program.task_grouped:  # a task-grouped batch is one group: a changed key regroups nothing
        problems.extend(_changes_before_state(nodes, prefix))
    if problems:
        raise error_class(
            f"sub-topology {program.subtopology_id}: processor(s) {', '.join(users)} are PySpark Column "
            "expressions, which run in a sub-topology with state only as filter/filter_not, map_values and "
            "flat_map_values in front of it (select_key and map before sinks, or before a user processor), or "
            "after it on the way to sinks, with JVM serdes; not here "
            "because: " + "; ".join(problems))
    before = ColumnsBeforeState(program, {}, defaults, prefix) if prefix else None
    return before, after


def _stream_time_keepers(nodes: list) -> list[str]:
    """The processors that read the task's stream time, which a handed record does not carry:
    stream-stream joins. (Windowed aggregations of a sub-topology with Columns, a cogroup's inputs
    too, have their own clocks: each of the records handed to it, its store's of every write.)"""
    keepers = [node.name for node in nodes if node.uses_stream_time]
    if not keepers:
        return []
    return [f"processor(s) {', '.join(keepers)} read the task's stream time (a stream-stream join), which a "
            "record handed over from Columns does not carry"]


def _changes_before_state(nodes: list, prefix: set[int]) -> list[str]:
    """A Column that changes the key, on a path to a processor outside the prefix (the state, a
    Python function), in a sub-topology grouped by key: one problem each. (A changed key reaches no
    state of the DSL in its sub-topology, which Kafka Streams repartitions before, only a user
    processor's, and a user processor makes the sub-topology task-grouped.)"""
    problems: dict[str, str] = {}

    def visit(index: int, changers: tuple) -> None:
        node = nodes[index]
        if is_column(node) and node.kind in _KEY_CHANGES:
            changers = (*changers, node)
        for child in node.children:
            if child in prefix:
                visit(child, changers)
                continue
            for changer in changers:  # a hand-off: the record goes on in Python from here
                problems[changer.name] = (f"processor {changer.name} ({changer.kind}) changes the key in front of "
                                          f"{nodes[child].name} ({nodes[child].kind}), which runs in Python")

    for index, node in enumerate(nodes):
        if node.kind == "source":
            visit(index, ())
    return list(problems.values())


def hand_off_serde(data_type) -> Any:
    """The serde a value a Column made is handed over with, by its Spark type: what a Python
    function would see it as."""
    if isinstance(data_type, StringType):
        return Serdes.String()
    if isinstance(data_type, LongType):
        return Serdes.Long()
    if isinstance(data_type, IntegerType):
        return Serdes.Integer()
    if isinstance(data_type, BinaryType):
        return Serdes.ByteArray()
    return Serdes.Json()


class ColumnsBeforeState(ColumnPlan):
    """The Column operations in front of a sub-topology's state (its ``prefix``), as DataFrame
    operations whose records leave by :meth:`hand_over`."""

    keeps_raw_bytes = True
    carried_columns = _CARRIED

    def __init__(self, program, segments: dict, default_serdes: dict, prefix: set[int]):
        super().__init__(program, segments, default_serdes)
        self.prefix = frozenset(prefix)
        # What one walk (hand_over, on a copy) collects: the handed rows and their hand-offs, and the
        # source whose records it is walking.
        self._handed: list[DataFrame] = []
        self._hand_offs: list[HandOff] = []
        self._source: Any = None

    def reads_in_jvm(self, source_node) -> bool:
        # A source no Column follows is handed whole: the program reads and judges its bytes.
        return any(child in self.prefix for child in source_node.children)

    def hand_over(self, source: DataFrame, dead_letters) -> tuple[DataFrame, Optional[DataFrame], tuple[HandOff, ...]]:
        """``(handed rows, the prefix's own output rows or None, the hand-offs)`` for the task's
        ``source`` rows (in processing order, with ``seq`` and the state key where the program needs
        them). The handed rows have the source's columns, ``key`` and ``value`` as bytes,
        :data:`HAND_OFF_COLUMN`, the position of their hand-off in the tuple, and
        :data:`HAND_OFF_PATH_COLUMN`, their place among their source record's rows."""
        # A walk of its own (tasks of one sub-topology may start at once, in threads); nothing of it
        # stays on the plan, which goes to Spark's Python workers with the program.
        walk = copy.copy(self)
        walk._handed, walk._hand_offs = [], []
        outputs: list[DataFrame] = []
        walk._walk_sources(source, dead_letters, outputs)
        handed = reduce(lambda left, right: left.unionByName(right), walk._handed)
        hand_offs = tuple(walk._hand_offs)
        output = None
        if outputs:
            schema = [*OUTPUT_COLUMNS, *(["partition"] if self.program.placed_topics else [])]
            output = reduce(lambda left, right: left.unionByName(right), (
                rows.select(*(F.col(name) if name in rows.columns else F.lit(None).cast("int").alias(name)
                              for name in schema))
                for rows in outputs))
        return handed, output, hand_offs

    def _walk_source(self, index: int, records, outputs: list) -> None:
        self._source = source = self.program.nodes[index]
        records = records.withColumn(_PATH, F.lit(""))
        if not self.reads_in_jvm(source):
            self._hand_off(source, source.children, records, frozenset())
            return
        self._children(index, records, outputs, frozenset())

    def _walk(self, index: int, records, outputs: list, encoded: frozenset = frozenset(),
              changed: frozenset = frozenset()) -> None:
        node = self.program.nodes[index]
        if node.kind == "sink":
            outputs.append(self._sink_rows(index, records, encoded))
            return
        if node.kind == "branch":  # a split on Columns: each record down its first branch whose Column holds
            for position, (child, taken) in enumerate(zip(node.children, split_conditions(node))):
                self._walk(child, _stepped(records.where(taken), position), outputs, changed=changed)
            return
        records = self._step(node, records)
        if is_column(node):
            changed = changed | _CHANGES.get(node.kind, frozenset({"value"}))
        self._children(index, records, outputs, changed)

    def _children(self, index: int, records, outputs: list, changed: frozenset) -> None:
        """A prefix processor's children in their order (Kafka Streams forwards a record to them in
        it): those in the prefix walked on, each run of the others handed the records together."""
        node = self.program.nodes[index]
        outside: list[int] = []  # a run of children outside the prefix: one hand-off, its path its first's

        def hand_off_run() -> None:
            first = node.children.index(outside[0])
            self._hand_off(node, tuple(outside), _stepped(records, first), changed)
            outside.clear()

        for position, child in enumerate(node.children):
            if child not in self.prefix:
                outside.append(child)
                continue
            if outside:
                hand_off_run()
            self._walk(child, _stepped(records, position), outputs, changed=changed)
        if outside:
            hand_off_run()

    def _hand_off(self, node, children: tuple, records, changed: frozenset) -> None:
        types = {field.name: field.dataType for field in records.schema.fields}
        serdes, data = {}, {}
        for part in ("key", "value"):
            if part in changed:
                serdes[part] = hand_off_serde(types[part])
                data[part] = serialize(F.col(part), types[part], serdes[part])
            else:  # as the source record has it
                serdes[part] = getattr(self._source, f"{part}_serde")
                data[part] = F.col(f"_raw_{part}")
        position = len(self._hand_offs)
        self._hand_offs.append(HandOff(node.name, serdes["key"], serdes["value"], tuple(children)))
        self._handed.append(records.select(
            data["key"].alias("key"), data["value"].alias("value"),
            "topic", "partition", "offset", "timestamp", "event_time", F.col("_headers").alias("headers"),
            *(name for name in _CARRIED if name in records.columns),
            F.lit(position).cast("int").alias(HAND_OFF_COLUMN), F.col(_PATH).alias(HAND_OFF_PATH_COLUMN),
        ))

    @staticmethod
    def _step(node, records):
        """``records`` after ``node``, as a Column plan has them; a ``flat_map_values`` also adds each
        exploded record's index in its array to its path (Kafka Streams forwards them in that order)."""
        if node.kind != "flat_map_values" or not is_column(node):
            return ColumnPlan._step(node, records)
        exploded = records.select("*", F.posexplode(node.fn.column).alias(_ELEMENT_INDEX, _ELEMENT))
        return exploded.withColumns({
            "value": F.col(_ELEMENT),
            _PATH: F.concat(F.col(_PATH), F.format_string(PATH_STEP_FORMAT, F.col(_ELEMENT_INDEX))),
        }).drop(_ELEMENT_INDEX, _ELEMENT)


def _stepped(records: DataFrame, child_position: int) -> DataFrame:
    """``records`` on their way to a processor's child at ``child_position`` among its children."""
    return records.withColumn(_PATH, F.concat(F.col(_PATH), F.lit(path_step(child_position))))
