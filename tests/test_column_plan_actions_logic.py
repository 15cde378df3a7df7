"""A ``peek``/``foreach`` and a ``split`` beside Column expressions (spark/python_segments.py,
spark/expressions.py; compared with Kafka Streams itself in tests/test_equivalence_headers.py).

Without Spark: a segment calls an action once per record and sends a split's record to its first
branch whose predicate holds, as the Python pass (Kafka Streams' ``KStreamPeek``/``KStreamBranch``)
does; how many times the plan reads a segment. With a SparkContext (a Column needs one): what is
planned, and what stays refused, naming its processor.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from dagster_kstreams.kafka.dead_letter import DeadLetterPolicy
from dagster_kstreams.processors.records import Output, RecordContext
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.spark.expressions import is_python_step
from dagster_kstreams.spark.python_segments import (
    EXIT,
    NO_EXIT,
    acting_read,
    cut,
    exit_outputs,
    segment_batch,
    times_read,
)
from dagster_kstreams.spark.strategies import ColumnPlan, strategy_for
from dagster_kstreams.topology import Branched, Consumed, Named, Serdes, StreamsBuilder


def _split_topology(seen: list):
    """A peek, then a split of three branches and a default, each to its own sink: one segment."""
    builder = StreamsBuilder()
    parts = builder.stream("in") \
        .peek(lambda k, v: seen.append(("peek", k, v))) \
        .split(Named.as_("part-")) \
        .branch(lambda k, v: v.startswith("a"), Branched.as_("a")) \
        .branch(lambda k, v: v.endswith("1"), Branched.as_("one")) \
        .branch(lambda k, v: len(v) > 3, Branched.as_("long")) \
        .default_branch(Branched.as_("rest"))
    for name in ("a", "one", "long", "rest"):
        parts[f"part-{name}"].to(f"out-{name}")
    return builder


def _through_segment(builder, keys: list, values: list) -> list[tuple[str, str, str]]:
    """Each record through the program's one segment: ``(topic the exit leads to, key, value)`` in order."""
    program = compile_topology(builder, "app").program(0)
    segments = cut(program.nodes, is_python_step)
    (segment,) = segments.values()
    batch = pa.RecordBatch.from_pydict({
        "key": keys, "value": values, "topic": ["in"] * len(keys), "partition": [0] * len(keys),
        "offset": list(range(len(keys))), "event_time": [7] * len(keys), "_headers": [None] * len(keys)})
    out = segment_batch(batch, program.nodes, segment, [{} for _ in segment.exits]).to_pydict()

    def topic(position: int) -> str:
        node = program.nodes[segment.exits[position][1]]  # a branch's child, then its sink
        while node.kind != "sink":
            node = program.nodes[node.children[0]]
        return node.topic

    return [(topic(position), key, value) for position, key, value in zip(out[EXIT], out["key"], out["value"])]


def _through_python(builder, keys: list, values: list) -> list[tuple[str, str, str]]:
    """The same records through the Python pass (the processors' own Branch and Peek)."""
    program = compile_topology(builder, "app").program(0)
    out = Output()
    for offset, (key, value) in enumerate(zip(keys, values)):
        context = RecordContext(topic="in", partition=0, offset=offset, timestamp=7)
        program.process_record(context, key.encode(), value.encode(), out, None)
    return [(topic, key.decode(), value.decode()) for topic, key, value in zip(out.topic, out.key, out.value)]


def test_a_segment_peeks_each_record_once_and_sends_it_to_its_first_branch():
    seen: list = []
    keys, values = ["k1", "k2", "k3", "k4"], ["ab1", "x1", "long", "no"]
    routed = _through_segment(_split_topology(seen), keys, values)
    assert routed == [("out-a", "k1", "ab1"), ("out-one", "k2", "x1"), ("out-long", "k3", "long"),
                      ("out-rest", "k4", "no")]
    assert seen == [("peek", key, value) for key, value in zip(keys, values)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["k1", "k2"]), st.text(alphabet="a1xy", max_size=5)), max_size=12))
def test_a_segments_split_routes_as_the_python_pass(records):
    keys, values = [key for key, _ in records], [value for _, value in records]
    seen_in_segment: list = []
    seen_in_python: list = []
    assert _through_segment(_split_topology(seen_in_segment), keys, values) \
        == _through_python(_split_topology(seen_in_python), keys, values)
    assert seen_in_segment == seen_in_python


def test_a_segment_is_read_once_per_output_it_leads_to():
    # peek -> split: one segment whose four exits lead to four sinks.
    program = compile_topology(_split_topology([]), "app").program(0)
    segments = cut(program.nodes, is_python_step)
    (start,) = segments
    assert times_read(program.nodes, segments, start, None) == 4
    # A foreach on a branch too: a segment of its own, one more read (that branch's sink, and it).
    builder = StreamsBuilder()
    parts = builder.stream("in").peek(lambda k, v: None).split().branch(lambda k, v: v == "a").default_branch()
    for part in parts.values():
        part.to("out")
    list(parts.values())[-1].foreach(lambda k, v: None)
    program = compile_topology(builder, "app").program(0)
    segments = cut(program.nodes, is_python_step)
    assert {program.nodes[start].kind: times_read(program.nodes, segments, start, None) for start in segments} \
        == {"peek": 3, "foreach": 1}
    # A peek alone before one sink: read once; a foreach alone: no output, read once all the same.
    builder = StreamsBuilder()
    stream = builder.stream("in")
    stream.peek(lambda k, v: None).to("out")
    stream.foreach(lambda k, v: None)
    program = compile_topology(builder, "app").program(0)
    segments = cut(program.nodes, is_python_step)
    assert [exit_outputs(program.nodes, segments, start, None) for start in sorted(segments)] == [1, 0]
    assert [times_read(program.nodes, segments, start, None) for start in sorted(segments)] == [1, 1]


def test_the_acting_read_is_one_the_plan_evaluates_once():
    # peek -> split: each branch's exit leads to one sink: the first one acts.
    program = compile_topology(_split_topology([]), "app").program(0)
    segments = cut(program.nodes, is_python_step)
    (start,) = segments
    assert acting_read(program.nodes, segments, start, None) == 0
    # A foreach alone: the read made for its actions; a peek whose one exit forks to two sinks: none.
    builder = StreamsBuilder()
    stream = builder.stream("in")
    stream.foreach(lambda k, v: None)
    forked = stream.peek(lambda k, v: None).filter(lambda k, v: v != "x").split().default_branch()
    (branch,) = forked.values()
    branch.to("a")
    branch.to("b")
    program = compile_topology(builder, "app").program(0)
    segments = cut(program.nodes, is_python_step)
    assert {program.nodes[start].kind: acting_read(program.nodes, segments, start, None) for start in segments} \
        == {"foreach": NO_EXIT, "peek": None}


def test_only_the_acting_read_calls_the_actions():
    seen: list = []
    program = compile_topology(_split_topology(seen), "app").program(0)
    (segment,) = cut(program.nodes, is_python_step).values()
    batch = pa.RecordBatch.from_pydict({"key": ["k"], "value": ["a"], "topic": ["in"], "partition": [0],
                                        "offset": [0], "event_time": [1], "_headers": [None]})
    routed = [segment_batch(batch, program.nodes, segment, [{} for _ in segment.exits], acting=acting).to_pydict()[EXIT]
              for acting in (False, True, False)]
    assert routed == [[0], [0], [0]] and seen == [("peek", "k", "a")]


def test_no_row_leaves_a_segment_by_the_exit_that_reads_it_for_its_actions():
    builder = StreamsBuilder()
    builder.stream("in").foreach(lambda k, v: None)
    program = compile_topology(builder, "app").program(0)
    (segment,) = cut(program.nodes, is_python_step).values()
    batch = pa.RecordBatch.from_pydict({"key": ["k"], "value": ["v"], "topic": ["in"], "partition": [0],
                                        "offset": [0], "event_time": [1], "_headers": [None]})
    out = segment_batch(batch, program.nodes, segment, []).to_pydict()
    assert segment.exits == () and NO_EXIT not in out[EXIT] and out[EXIT] == []


def test_peek_foreach_and_split_beside_columns_are_planned(spark):  # spark: a Column needs a SparkContext
    builder = StreamsBuilder()
    stream = builder.stream("in").filter(F.col("value").isNotNull())
    stream.peek(lambda k, v: None).map_values(F.upper(F.col("value"))).to("out")
    stream.foreach(lambda k, v: None)
    parts = stream.split(Named.as_("py-")).branch(lambda k, v: v.startswith("a")).default_branch()
    for part in parts.values():
        part.map_values(F.concat(F.col("value"), F.lit("!"))).to("out")
    columns = stream.split(Named.as_("col-")).branch(F.col("value").startswith("b")).default_branch()
    for part in columns.values():
        part.to("out")
    program = compile_topology(builder, "app").program(0)
    assert isinstance(strategy_for(program), ColumnPlan)
    kinds = sorted(program.nodes[start].kind for start in program.column_plan.segments)
    assert kinds == ["branch", "foreach", "peek"]  # the split on Columns runs in the JVM
    # A peek before a split (each branch one output), a peek before two sinks, and one on a source only
    # Python reads, beside its dead-letter topic.
    builder = StreamsBuilder()
    present = builder.stream("in").filter(F.col("value").isNotNull())
    parts = present.peek(lambda k, v: None).split().branch(lambda k, v: v == "a").default_branch()
    for part in parts.values():
        part.to("out")
    peeked = present.peek(lambda k, v: None)
    peeked.to("a")
    peeked.map_values(F.upper(F.col("value"))).to("b")
    builder.stream("json", Consumed.with_(Serdes.String(), Serdes.Json())).peek(lambda k, v: None) \
        .map_values(lambda v: str(v)).map_values(F.upper(F.col("value"))).to("out")
    compiled = compile_topology(builder, "app", dead_letters=DeadLetterPolicy("log_and_continue", "dlq"))
    assert [sorted(compiled.program(sub).nodes[start].kind for start in compiled.program(sub).column_plan.segments)
            for sub in (0, 1)] == [["peek", "peek"], ["peek"]]  # the first peek and the split: one segment


def test_what_stays_refused_beside_columns_names_its_processor(spark):
    # A peek whose segment's one exit goes on to two outputs: Spark would evaluate it, and call it, twice.
    builder = StreamsBuilder()
    upper = builder.stream("in").filter(F.col("value").isNotNull()).peek(lambda k, v: None) \
        .map_values(F.upper(F.col("value")))
    upper.to("a")
    upper.to("b")
    with pytest.raises(UnsupportedTopologyError, match=r"processor KSTREAM-PEEK-\d+ \(peek\) runs in a Python segment "
                                                       r"whose records go on to 2 outputs of the plan with no exit"):
        compile_topology(builder, "app").program(0)
    # A split mixing Column and Python predicates.
    builder = StreamsBuilder()
    builder.stream("in").filter(F.col("value").isNotNull()).split() \
        .branch(F.col("value") == "a").branch(lambda k, v: v == "b").no_default_branch()
    with pytest.raises(UnsupportedTopologyError, match=r"KSTREAM-BRANCH-\d+ \(branch\) is a split whose predicates "
                                                       r"mix Columns and Python functions"):
        compile_topology(builder, "app").program(0)
    # A split on Columns after a sub-topology's state (its records are Python's there).
    builder = StreamsBuilder()
    parts = builder.stream("in").group_by_key().count().to_stream() \
        .split().branch(F.col("value") > 1).default_branch()
    for name, part in parts.items():
        part.to(f"out-{name}")
    with pytest.raises(UnsupportedTopologyError, match=r"KSTREAM-BRANCH-\d+ \(branch\) is a split on Columns that is "
                                                       r"not in front of the state"):
        compile_topology(builder, "app").program(0)
    # A global-table join whose joined records go on to two outputs: each read would look the table up anew.
    builder = StreamsBuilder()
    table = builder.global_table("g")
    joined = builder.stream("in").filter(F.col("value").isNotNull()) \
        .join(table, lambda k, v: k, lambda v, g: f"{v}{g}").map_values(F.upper(F.col("value")))
    joined.to("a")
    joined.to("b")
    with pytest.raises(UnsupportedTopologyError, match=r"KSTREAM-LEFTJOIN-\d+ \(stream_global_table_join\) runs in a "
                                                       r"Python segment whose records go on to 2 outputs"):
        compile_topology(builder, "app").check()


def test_a_global_table_join_between_columns_is_a_python_segment(spark):
    # Column filter -> global-table join (Python) -> Column map_values -> sink: one segment, the join,
    # whose one exit changes the value (the Column after it reads it through the default serde).
    builder = StreamsBuilder()
    table = builder.global_table("g")
    builder.stream("in").filter(F.col("value").isNotNull()) \
        .left_join(table, lambda k, v: k, lambda v, g: f"{v}{g}").map_values(F.upper(F.col("value"))).to("out")
    program = compile_topology(builder, "app").check().program(1)
    assert isinstance(strategy_for(program), ColumnPlan)
    (segment,) = cut(program.nodes, is_python_step).values()
    assert [program.nodes[index].kind for index in segment.steps] == ["stream_global_table_join"]
    assert segment.changes == (frozenset({"value"}),)
