"""The order of a source record's rows handed over from Column expressions in front of state, and a
key a Column changed in front of a user processor (spark/column_hand_off.py, processors/hand_offs.py;
compared with Kafka Streams itself in tests/test_equivalence_headers.py).

A ``flat_map_values`` gives several rows of one source record: they reach the state in Kafka Streams'
depth-first order (each exploded record down every child before the next), by the path each row
carries, whatever order Spark's grouping left them in. A ``select_key`` or ``map`` may stand in front
of a user processor (task-grouped): the handed key is the new one.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import functions as F

from header_topology import HeaderEditor
from dagster_kstreams.kafka.dead_letter import DeadLetterPolicy
from dagster_kstreams.processors.hand_offs import path_step
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.spark.strategies import KeyedState, TaskGroupedState, strategy_for
from dagster_kstreams.topology import Consumed, Materialized, Serdes, StreamsBuilder


def _long(number: int) -> bytes:
    return number.to_bytes(8, "big", signed=True)


def _word_program():
    """``lines -> flat_map_values(split) -> [filter(not empty) -> count, reduce(concatenate)]``: each
    word goes to the count through a Column filter and to the reduce straight from the explosion."""
    builder = StreamsBuilder()
    words = builder.stream("lines").flat_map_values(F.split(F.col("value"), " "))
    words.filter(F.col("value") != "").group_by_key() \
        .count(Materialized.as_("word-counts").with_caching_disabled()).to_stream() \
        .map_values(lambda n: f"wc|{n}").to("out")
    words.group_by_key().reduce(lambda seen, word: f"{seen},{word}", Materialized.as_("seen").with_caching_disabled()) \
        .to_stream().map_values(lambda seen: f"ws|{seen}").to("out")
    return compile_topology(builder, "app").program(0)


@pytest.mark.integration
def test_exploded_words_reach_the_state_in_kafka_streams_order_whatever_spark_gave(spark):
    """Kafka Streams forwards each word of a line down both children before the next word; the
    handed rows, shuffled as Spark's grouping may leave them, go into the state in that order, each
    with its line's offset and timestamp."""
    program = _word_program()
    assert isinstance(strategy_for(program), KeyedState)
    rows = spark.createDataFrame(
        [(b"k", b"a b", "lines", 0, 3, None, 30, None), (b"k", None, "lines", 0, 4, None, 10, None),
         (b"k", b"c  d", "lines", 0, 5, None, 20, None)],
        "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, event_time long, "
        "headers array<struct<key: string, value: binary>>")
    handed, output, hand_offs = program.column_plan.hand_over(rows, DeadLetterPolicy("fail"))
    assert output is None
    assert [[program.nodes[index].name for index in hand_off.children] for hand_off in hand_offs] \
        == [["KSTREAM-AGGREGATE-0000000003"], ["KSTREAM-REDUCE-0000000007"]]
    program.hand_offs = hand_offs  # as the stateful strategy sets them
    frame = handed.toPandas().sample(frac=1, random_state=3)  # any order: the program sorts them
    out, _ = program.process_key_group(frame, None)
    assert list(zip(out["value"], out["emit_order"])) == [
        (b"wc|1", 3), (b"ws|a", 3), (b"wc|2", 3), (b"ws|a,b", 3),  # a line's words one after another
        (b"wc|3", 5), (b"ws|a,b,c", 5), (b"ws|a,b,c,", 5), (b"wc|4", 5), (b"ws|a,b,c,,d", 5)]  # "" not counted


@given(st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=5), min_size=2, max_size=8))
def test_paths_sort_as_their_steps(paths):
    """A path's string sorts as its list of steps (a prefix first): Kafka Streams' depth-first order."""
    written = ["".join(map(path_step, path)) for path in paths]
    assert sorted(range(len(paths)), key=written.__getitem__) == sorted(range(len(paths)), key=paths.__getitem__)


def test_a_path_step_is_an_index_of_four_bytes():
    assert path_step(0) == "00000000" and path_step(2**32 - 1) == "ffffffff"
    for wrong in (-1, 2**32):
        with pytest.raises(ValueError, match="a path step is an index"):
            path_step(wrong)


@pytest.mark.integration
def test_a_key_a_column_changed_reaches_a_user_processor_written_by_its_types_serde(spark):
    """``select_key`` then ``map_values`` by Columns in front of a processor (task-grouped): the
    handed key is the new one, written as its Spark type's serde writes it, read back by it."""
    builder = StreamsBuilder()
    amounts = builder.stream("amounts", Consumed.with_(Serdes.String(), Serdes.Long()))
    amounts.select_key(F.concat(F.lit("r"), F.col("value").cast("string"))) \
        .map_values(F.col("value").cast("string")).process(HeaderEditor).to("out")
    program = compile_topology(builder, "app").program(0)
    assert isinstance(strategy_for(program), TaskGroupedState)
    rows = spark.createDataFrame(
        [(b"k", _long(12), "amounts", 0, 3, None, 30, [("src", b"p0")])],
        "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, event_time long, "
        "headers array<struct<key: string, value: binary>>")
    handed, _, hand_offs = program.column_plan.hand_over(rows, DeadLetterPolicy("fail"))
    assert [(hand_off.key_serde.name, hand_off.value_serde.name) for hand_off in hand_offs] == [("String", "String")]
    program.hand_offs = hand_offs
    out, _ = program.process_task_batch(handed.toPandas(), None)
    assert list(zip(out["key"], out["value"])) == [(b"r12", b"proc|1|none|12"), (b"r12", b"fresh|12")]
