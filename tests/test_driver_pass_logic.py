"""The stateless pass run on the driver over a collected batch (strategies.StatelessOnDriver): the
same records, in the same order, as the pass Spark's Python workers run batch by batch and the
exactly-once writer sends once collected; its records counted per topic; and which strategy runs
where. No Spark, no broker."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.kafka.table_producer import RecordColumns
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.spark.strategies import StatelessOnDriver, strategy_for
from dagster_kstreams.spark.transactional_writer import topic_counts
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes


def _program(builder):
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _word_split():
    builder = StreamsBuilder()
    words = builder.stream("lines").flat_map_values(lambda line: line.split())
    words.filter(lambda key, word: len(word) > 3).to("long-words")
    words.map(lambda key, word: (word, key)).to("words-by-user")
    return _program(builder)


def _source(lines: list[tuple[str, str]], first_offset: int = 0) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({
        "key": pa.array([key.encode() for key, _ in lines], pa.binary()),
        "value": pa.array([line.encode() for _, line in lines], pa.binary()),
        "topic": pa.array(["lines"] * len(lines), pa.string()),
        "partition": pa.array([0] * len(lines), pa.int32()),
        "offset": pa.array(range(first_offset, first_offset + len(lines)), pa.int64()),
        "event_time": pa.array([1_000 + i for i in range(len(lines))], pa.int64()),
    })


_LINES = st.lists(st.tuples(st.sampled_from(["u1", "u2", "u3"]),
                            st.lists(st.sampled_from(["a", "tree", "house", "of", "words"]), max_size=6).map(" ".join)),
                  max_size=40)


@settings(max_examples=60, deadline=None)
@given(_LINES, st.lists(st.integers(min_value=1, max_value=15), max_size=6))
def test_the_driver_pass_over_a_collected_batch_gives_the_workers_records_in_order(lines, cuts):
    program = _word_split()
    batches, start = [], 0
    for size in cuts:  # Spark hands the batch over in Arrow batches of any size
        if start < len(lines):
            batches.append(_source(lines[start:start + size], start))
            start += size
    if start < len(lines) or not batches:
        batches.append(_source(lines[start:], start))
    collected = pa.Table.from_batches(batches)

    on_driver = program.process_collected(collected)
    by_workers = RecordColumns.of_table(
        pa.Table.from_batches([program.process_arrow_batch(batch) for batch in batches]))
    assert on_driver == by_workers
    expected = {"long-words": sum(len(w) > 3 for _, line in lines for w in line.split()),
                "words-by-user": sum(len(line.split()) for _, line in lines)}
    assert on_driver.topic_counts() == {topic: count for topic, count in expected.items() if count}
    assert len(on_driver) == sum(expected.values())


def test_an_empty_collected_batch_gives_no_records():
    program = _word_split()
    empty = pa.Table.from_batches([], schema=_source([]).schema)
    out = program.process_collected(empty)
    assert len(out) == 0 and out.topic_counts() == {}


def test_only_a_stateless_python_pass_moves_to_the_driver_and_only_when_asked():
    assert isinstance(strategy_for(_word_split(), stateless_on_driver=True), StatelessOnDriver)
    assert not isinstance(strategy_for(_word_split()), StatelessOnDriver)
    counting = StreamsBuilder()
    counting.stream("words").group_by_key().count().to_stream().to("counts")
    stateful = _program(counting)
    assert strategy_for(stateful, stateless_on_driver=True) is strategy_for(stateful)
    assert strategy_for(stateful).on_driver(stateful) is None


@given(st.lists(st.sampled_from(["out", "repartition", "__dropped_late__", "dead"]), max_size=60))
def test_a_collected_batch_is_counted_per_topic(topics):
    table = pa.table({"topic": pa.array(topics, pa.string()), "value": pa.array([b"v"] * len(topics))})
    assert topic_counts(table) == dict(Counter(topics))
