"""Compiled chains of stateless processors (processors/fused_chains.py) against the processors run
one by one: the same sink rows, emit marks, user calls and errors, on random chains; and the
shapes that keep the per-processor path."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark import cloudpickle

from dagster_kstreams.kafka.dead_letter import DeadLetterPolicy
from dagster_kstreams.processors.fused_chains import chain_at, fusable
from dagster_kstreams.processors.program import SubtopologyProgram
from dagster_kstreams.processors.records import Output, RecordContext
from dagster_kstreams.processors.stateless import (
    Branch, FlatMap, FlatMapValues, Filter, Map, MapValues, Merge, Peek, RepartitionFilter, SelectKey, Sink, Source,
)
from dagster_kstreams.processors.table_steps import TableFilter
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import Materialized, StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes
from dagster_kstreams.topology.topic_name_extractor import TopicNameFunction

OPERATIONS = ("filter", "filter_not", "map", "map_values", "flat_map", "flat_map_values", "select_key", "peek",
              "repartition_filter", "merge")


def _digest(key, value) -> int:
    return sum(map(ord, f"{key}|{value}"))


class _Function:
    """A user function of a random chain: deterministic in (key, value), logging each call, raising
    on some records (``raises``), returning something odd on others (``odd``: no pair, an int the
    String serde refuses, None, a generator that fails part way)."""

    def __init__(self, operation: str, variant: int, raises: bool, odd: bool, log: list):
        self.operation, self.variant, self.raises, self.odd, self.log = operation, variant, raises, odd, log

    def __call__(self, key, value):
        self.log.append((self.operation, self.variant, key, value))
        digest = _digest(key, value) + self.variant
        if self.raises and digest % 7 == 0:
            raise ValueError(f"no luck with {value!r}")
        odd = self.odd and digest % 5 == 0
        operation = self.operation
        if operation in ("filter", "filter_not"):
            return digest % 3 != 0
        if operation == "map":
            return "not a pair" if odd else (None if digest % 4 == 0 else f"k{digest % 9}", f"{value}m")
        if operation == "map_values":
            return len(str(value)) if odd else f"{value}v"
        if operation == "select_key":
            return None if odd else f"s{digest % 5}"
        if operation == "flat_map":
            if odd:
                return [("pair",), (key, value)] if digest % 2 else None
            return [(f"{key}{i}", f"{value}{i}") for i in range(digest % 3)]
        if operation == "flat_map_values":
            if odd:
                return _failing_values(value)
            return [f"{value}{i}" for i in range(digest % 3)]
        return None  # peek


def _failing_values(value):
    yield f"{value}a"
    raise KeyError("the generator broke")


def _program(steps, sink_extracts, policy: DeadLetterPolicy, fuse: bool, log: list) -> SubtopologyProgram:
    """source -> steps -> sink, built afresh (processors belong to one program); ``sink_extracts``:
    falsy (a sink with a topic), or the topic-name extractor's form ("key_value" or "context")."""
    nodes = [Source("source", ("in",), Serdes.String(), Serdes.String())]
    for number, (operation, variant, raises, odd) in enumerate(steps):
        fn = _Function(operation, variant, raises, odd, log)
        name = f"step-{number}"
        nodes.append({
            "filter": lambda: Filter(name, fn), "filter_not": lambda: Filter(name, fn, negate=True),
            "map": lambda: Map(name, fn), "map_values": lambda: MapValues(name, fn),
            "flat_map": lambda: FlatMap(name, fn), "flat_map_values": lambda: FlatMapValues(name, fn),
            "select_key": lambda: SelectKey(name, fn), "peek": lambda: Peek(name, fn),
            "repartition_filter": lambda: RepartitionFilter(name), "merge": lambda: Merge(name),
        }[operation]())
    extractor = {"key_value": lambda key, value: f"out-{len(str(value)) % 2}",
                 "context": lambda key, value, context: (f"out-{context.topic()}-{context.partition()}-{context.offset()}"
                                                         f"-{context.timestamp()}-{context.headers().to_array()}")
                 }.get(sink_extracts)
    nodes.append(Sink("sink", None if sink_extracts else "out",
                      None if extractor is None else TopicNameFunction(extractor, sink_extracts == "context"),
                      Serdes.String(), Serdes.String()))
    for index, node in enumerate(nodes[:-1]):
        node.children = [index + 1]
    return SubtopologyProgram(0, nodes, policy, fuse_chains=fuse)


def _run(program: SubtopologyProgram, records, by_columns: bool = False) -> tuple:
    """Every record through the program, one by one (``process_record``, an ordered output) or
    as the columns of a stateless batch (``process_columns``): the output's columns and marks,
    and the error (its type, message and cause) that stopped it, if one did."""
    out = Output(ordered=not by_columns)
    error = None
    try:
        if by_columns:
            keys, values, headers, topics = (list(column) for column in zip(*records)) if records else ([],) * 4
            offsets = list(range(len(records)))
            program.process_columns(keys, values, topics, [0] * len(records), offsets,
                                    [1_000 + offset for offset in offsets], headers, out)
        for position, (key, value, headers, topic) in enumerate(() if by_columns else records):
            context = RecordContext(topic, 0, position, 1_000 + position, position=position, headers=headers)
            program.process_record(context, key, value, out, None)
    except Exception as failure:  # noqa: BLE001 - compared as a value
        cause = failure.__cause__
        error = (type(failure), str(failure), type(cause), str(cause))
    marks = None if by_columns else out.marks
    return (out.topic, out.key, out.value, out.headers, out.timestamp_ms), marks, error


_raw = st.one_of(st.none(), st.sampled_from([b"\xff\xfe", b"a", b"b c", b"hello", b"x,y"]),
                 st.text(max_size=6).map(str.encode))
_records = st.lists(st.tuples(_raw, _raw, st.sampled_from([None, [{"key": "h", "value": b"1"}]]),
                              st.sampled_from(["in", "in", "in", "other"])), max_size=12)
_steps = st.lists(st.tuples(st.sampled_from(OPERATIONS), st.integers(0, 20), st.booleans(), st.booleans()),
                  max_size=6)


@settings(max_examples=200, deadline=None)
@given(_steps, _records, st.sampled_from([None, "key_value", "context"]),
       st.sampled_from([DeadLetterPolicy(), DeadLetterPolicy("log_and_continue"),
                        DeadLetterPolicy("log_and_continue", "dead-letters")]))
def test_a_compiled_chain_does_what_its_processors_do_one_by_one(steps, records, extracts, policy):
    fused_log, general_log = [], []
    fused = _program(steps, extracts, policy, True, fused_log)
    general = _program(steps, extracts, policy, False, general_log)
    assert fused._entries[1] is not fused.nodes[1].process  # the whole chain is compiled ...
    assert chain_at(fused.nodes, 1) == list(range(1, len(fused.nodes)))
    assert general._entries[1] == general.nodes[1].process  # ... and the other runs processor by processor
    expected = _run(general, records)
    assert _run(fused, records) == expected
    assert fused_log == general_log
    fused_log.clear()
    rows, _, error = expected  # a stateless batch, as Spark's Arrow batches come: the same rows and error
    assert _run(fused, records, by_columns=True) == (rows, None, error)
    assert fused_log == general_log


def test_a_compiled_chain_raises_the_processors_errors_chained_to_the_users():
    log: list = []
    program = _program([("map_values", 0, True, False)], False, DeadLetterPolicy(), True, log)
    with pytest.raises(Exception) as raised:
        program.process_record(RecordContext("in", 3, 42), b"k", b"\x07", Output(), None)  # digest % 7 == 0
    assert str(raised.value) == ("processor step-0 (map_values) failed on the record at topic 'in' partition 3 "
                                 "offset 42: ValueError: no luck with '\\x07'")
    assert isinstance(raised.value.__cause__, ValueError)


def _word_count():
    builder = StreamsBuilder()
    (builder.stream("lines").flat_map_values(lambda line: line.split(" ")).group_by(lambda key, word: word)
        .count(Materialized.as_("counts")).to_stream().to("counts"))
    return compile_topology(builder.build(), "app")


def test_shapes_that_are_not_linear_stateless_chains_keep_each_processors_own_process():
    builder = StreamsBuilder()
    stream = builder.stream("in").filter(lambda key, value: True)
    stream.map_values(str.upper).to("a")  # a fork: filter has two children
    stream.to("b")
    builder.table("t").filter(lambda key, value: True).to_stream().to("c")  # a table filter: its own semantics
    low, high = builder.stream("numbers").branch(lambda key, value: value < "5", lambda key, value: True)
    low.to("low")
    high.to("high")
    compiled = compile_topology(builder.build(), "app")
    kinds = set()
    for sub_id in compiled.application.subtopology_ids:
        program = compiled.program(sub_id)
        for index, node in enumerate(program.nodes):
            kinds.add(node.kind)
            if isinstance(node, (TableFilter, Branch)) or node.stateful or node.kind == "source":
                assert not fusable(node)
                assert program._entries[index] == node.process
            if isinstance(node, Filter) and not isinstance(node, TableFilter):
                assert chain_at(program.nodes, index) == [index]  # stops at the fork
                assert "entries[" in program._entries[index].source  # hands each child on, in order
            if node.kind == "branch_child":  # a branch's child starts a chain of its own
                assert chain_at(program.nodes, index) == [index, node.children[0]]
    assert {"table_filter", "branch", "branch_child", "filter"} <= kinds
    counts = _word_count().program(1)  # source -> count -> to_stream -> sink: nothing to fuse but the sink
    assert [counts._entries[i] == node.process for i, node in enumerate(counts.nodes)] == [True, True, True, False]


def test_the_word_count_split_is_one_compiled_chain_that_survives_pickling():
    program = _word_count().program(0)
    assert [node.kind for node in program.nodes[1:]] == ["flat_map_values", "select_key", "repartition_filter",
                                                         "sink"]
    assert chain_at(program.nodes, 1) == [1, 2, 3, 4]
    shipped = pickle.loads(cloudpickle.dumps(program))
    for runner in (program, shipped):
        out = Output()
        runner.process_record(RecordContext("lines", 0, 7, 5, headers=None), b"doc", b"a b a", out, None)
        assert (out.topic, out.key, out.value, out.timestamp_ms) == (
            ["app-counts-repartition"] * 3, [b"a", b"b", b"a"], [b"a", b"b", b"a"], [5, 5, 5])


_values = st.one_of(st.none(), st.booleans(), st.integers(-(1 << 70), 1 << 70), st.floats(allow_nan=False),
                    st.text(max_size=5), st.binary(max_size=3))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([Serdes.String(), Serdes.Long(), Serdes.Integer(), Serdes.Short(), Serdes.Double(),
                        Serdes.ByteArray(), Serdes.Json()]), _values)
def test_a_serdes_fast_serializer_gives_its_serialize_bytes_and_errors(serde, value):
    def outcome(serialize):
        try:
            return serialize(value)
        except Exception as error:  # noqa: BLE001 - compared as a value
            return type(error), str(error)

    assert outcome(serde.serializer()) == outcome(serde.serialize)


def test_a_chain_too_deep_for_one_python_function_is_cut_into_several():
    log: list = []
    steps = [("flat_map_values", 1, False, False), ("filter", 3, False, False), ("map_values", 2, False, False)] * 40
    fused = _program(steps, False, DeadLetterPolicy(), True, log)
    general = _program(steps, False, DeadLetterPolicy(), False, [])
    assert 1 < len(chain_at(fused.nodes, 1)) < len(fused.nodes) - 1
    records = [(b"k", b"ab", None, "in"), (b"k", b"abc", None, "in")]
    assert _run(fused, records) == _run(general, records)


@pytest.mark.parametrize("policy", [DeadLetterPolicy(), DeadLetterPolicy("log_and_continue", "dead-letters")])
def test_a_record_of_a_topic_that_is_no_source_is_one_error_naming_it_by_columns_and_by_record(policy):
    # Not a record to judge by the dead-letter policy: the task was given another sub-topology's input.
    program = _program([("map_values", 0, False, False)], False, policy, True, [])
    message = r"^record at topic 'elsewhere' partition 3 offset 8: topic is not a source of sub-topology 0$"
    out = Output()
    with pytest.raises(ValueError, match=message):
        program.process_columns([b"k", b"k"], [b"v", b"w"], ["in", "elsewhere"], [3, 3], [7, 8], [1, 2],
                                [None, None], out)
    assert out.value == [b"vv"]  # the record before it went through
    with pytest.raises(ValueError, match=message):
        program.process_record(RecordContext("elsewhere", 3, 8, 2), b"k", b"w", Output(ordered=True), None)
