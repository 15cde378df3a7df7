"""Topic-name extractors given the record context, without Spark or a broker: which form a sink
calls, what describe() prints, and the context a sink's extractor sees in the Python pass (after a
source, a user processor's forward and a punctuator's), in a fused chain and in the Column plan's
pass. The broker-backed comparison with Kafka Streams is in test_equivalence_headers.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from task_frames import task_frame  # noqa: E402

from dagster_kstreams.processors.records import RecordContext as SourceContext  # noqa: E402
from dagster_kstreams.processors.records import extractor_context, header_column  # noqa: E402
from dagster_kstreams.processors.stateless import Sink  # noqa: E402
from dagster_kstreams.spark.column_placement import PLACEMENT_COLUMNS, place_batch  # noqa: E402
from dagster_kstreams.spark.compile import compile_topology  # noqa: E402
from dagster_kstreams.topology import StreamsBuilder, TopicNameExtractor, Topology  # noqa: E402
from dagster_kstreams.topology.processor_api import Processor, PunctuationType, Record  # noqa: E402
from dagster_kstreams.topology.serdes import Serdes  # noqa: E402
from dagster_kstreams.topology.topic_name_extractor import extractor_description, topic_name_function  # noqa: E402


class Spelled(TopicNameExtractor):
    """Names the topic after everything the context holds."""

    def extract(self, key, value, record_context):
        headers = ",".join(f"{h.key}={h.value}" for h in record_context.headers())
        return (f"{record_context.topic()}/{record_context.partition()}/{record_context.offset()}/"
                f"{record_context.timestamp()}/{headers}")

    def __str__(self) -> str:
        return "Spelled()"


def spelled(key, value, record_context):
    return Spelled().extract(key, value, record_context)


def test_the_form_a_sink_calls_is_chosen_by_the_extractor():
    assert topic_name_function(Spelled(), "to").takes_context
    assert topic_name_function(spelled, "to").takes_context
    assert not topic_name_function(lambda key, value: "t", "to").takes_context
    assert not topic_name_function(lambda *args: "t", "to").takes_context  # unknown: the shorter form
    with pytest.raises(TypeError, match=r"^KStream.to: a topic-name extractor takes \(key, value\) or"):
        StreamsBuilder().stream("in").to(lambda value: "t")
    with pytest.raises(TypeError, match=r"^add_sink\('snk'\) expects a topic name or a topic-name extractor, got 5"):
        Topology().add_source("src", "in").add_sink("snk", 5, "src")


def test_describe_prints_a_functions_name_and_an_objects_str():
    builder = StreamsBuilder()
    stream = builder.stream("in")
    stream.to(Spelled())
    stream.to(spelled)
    stream.to(lambda key, value: "t")
    sinks = [line for line in str(builder.build().describe()).splitlines() if "Sink:" in line]
    assert sinks == ["    Sink: KSTREAM-SINK-0000000001 (extractor class: Spelled())",
                     f"    Sink: KSTREAM-SINK-0000000002 (extractor class: {__name__}.spelled)",
                     f"    Sink: KSTREAM-SINK-0000000003 (extractor class: {__name__}.test_describe_prints_a_functions_name_"
                     "and_an_objects_str.<locals>.<lambda>)"]
    assert extractor_description(Spelled().extract).endswith("Spelled.extract")


@given(st.lists(st.tuples(st.text(max_size=3), st.one_of(st.none(), st.binary(max_size=3))), max_size=4),
       st.integers(0, 5), st.integers(0, 10**6), st.integers(0, 10**12), st.booleans())
def test_the_context_is_the_input_records_place_and_the_written_records_time_and_headers(
        headers, partition, offset, timestamp, punctuated):
    context = SourceContext("in", partition, offset, timestamp=timestamp, headers=header_column(headers),
                            from_punctuator=punctuated)
    seen = extractor_context(context)
    place = (None, -1, -1) if punctuated else ("in", partition, offset)
    assert (seen.topic(), seen.partition(), seen.offset()) == place
    assert seen.timestamp() == timestamp and [tuple(h) for h in seen.headers()] == headers


class _Forwarder(Processor):
    """Forwards each record a second later with a header of its own; every 10 ms of stream time, a
    record from its punctuator."""

    def init(self, context) -> None:
        self.context = context
        context.schedule(10, PunctuationType.STREAM_TIME, self.tick)

    def process(self, record: Record) -> None:
        record.headers.add("seen", b"1")
        self.context.forward(record.with_timestamp(record.timestamp + 1000))

    def tick(self, now: int) -> None:
        self.context.forward(Record("p", "tick", now + 5))


def _topics(builder: StreamsBuilder, rows) -> list[str]:
    program = compile_topology(builder, "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    out, _ = program.process_task_batch(task_frame(rows, first_offset=7), None)
    return list(out.sort_values("emit_order", kind="stable")["topic"])


def test_after_a_source_the_extractor_sees_the_input_records_place_and_time():
    builder = StreamsBuilder()
    builder.stream("in").filter(lambda key, value: True).to(Spelled())
    assert _topics(builder, [("a", "x", 100), ("b", "y", 50)]) == ["in/0/7/100/", "in/0/8/50/"]


def test_after_a_forward_the_input_records_place_and_the_forwarded_time_and_headers_and_none_from_a_punctuator():
    builder = StreamsBuilder()
    builder.stream("in").process(_Forwarder).to(spelled)
    assert _topics(builder, [("a", "x", 3), ("b", "y", 12)]) == [
        "in/0/7/1003/seen=b'1'", "None/-1/-1/8/", "in/0/8/1012/seen=b'1'", "None/-1/-1/17/"]


def test_a_fused_chain_gives_its_sink_the_context_too():
    builder = StreamsBuilder()
    builder.stream("in").map_values(lambda value: value + "!").filter(lambda key, value: True) \
        .to(lambda key, value, record_context: f"{value}@{record_context.offset()}")
    assert _topics(builder, [("a", "x", 1), ("b", "y", 2)]) == ["x!@7", "y!@8"]


def test_the_column_plans_pass_gives_the_extractor_the_source_records_place():
    sink = Sink("snk", None, topic_name_function(spelled, "to"), Serdes.String(), Serdes.String())
    program = type("Program", (), {"nodes": [sink]})()
    rows = {"_placed_sink": [0, None], "_source_topic": ["in", None], "_source_partition": [1, None],
            "_source_offset": [42, None], "_source_time": [99, None], "topic": [None, "static"],
            "key": [b"k", b"k"], "value": [b"v", b"w"], "headers": [[{"key": "h", "value": b"1"}], None]}
    types = {**{name: pa.from_numpy_dtype("int64") if kind == "long" else pa.int32() if kind == "int" else pa.string()
                for name, kind in PLACEMENT_COLUMNS.items()},
             "topic": pa.string(), "key": pa.binary(), "value": pa.binary(),
             "headers": pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))}
    batch = pa.RecordBatch.from_arrays([pa.array(rows[name], type=types[name]) for name in rows], names=list(rows))
    placed = place_batch(batch, program)
    assert placed.column(placed.schema.get_field_index("topic")).to_pylist() == ["in/1/42/99/h=b'1'", "static"]


def test_an_extractor_class_rather_than_an_instance_is_refused_naming_it():
    class Route(TopicNameExtractor):
        def extract(self, key, value, record_context):
            return "out"

    builder = StreamsBuilder()
    with pytest.raises(TypeError, match=r"Route\(\)"):
        builder.stream("in").to(Route)
