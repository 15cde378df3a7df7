"""A collected batch read into the lists the exactly-once writer sends (``RecordColumns.of_table``):
exactly what Arrow's ``to_pylist`` gives, field by field, however the topics, timestamps and
partitions look (one topic or several, nulls, chunked columns). No broker."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.kafka.table_producer import RecordColumns, python_list

_HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))

rows = st.lists(
    st.tuples(
        st.sampled_from(["out", "app-KSTREAM-REPARTITION-0000000003-repartition", "ünïcode"]),
        st.none() | st.binary(max_size=4),
        st.none() | st.binary(max_size=4),
        st.none() | st.integers(min_value=-1, max_value=2**62),
        st.none() | st.integers(min_value=0, max_value=7),
    ),
    max_size=40,
)


def _table(records: list[tuple], with_partition: bool, chunks: int) -> pa.Table:
    columns = list(zip(*records)) if records else [()] * 5
    table = pa.table({
        "topic": pa.array(columns[0], pa.string()),
        "key": pa.array(columns[1], pa.binary()),
        "value": pa.array(columns[2], pa.binary()),
        "timestamp_ms": pa.array(columns[3], pa.int64()),
        "headers": pa.array([None] * len(records), _HEADERS),
        **({"partition": pa.array(columns[4], pa.int32())} if with_partition else {}),
    })
    cut = max(1, len(records) // chunks)
    return pa.Table.from_batches(table.to_batches(max_chunksize=cut), table.schema) if records else table


@settings(max_examples=200, deadline=None)
@given(rows, st.booleans(), st.integers(min_value=1, max_value=3), st.booleans())
def test_a_batch_reads_as_arrow_lists_it(records, with_partition, chunks, one_topic):
    if one_topic:
        records = [("out", *rest) for _, *rest in records]
    table = _table(records, with_partition, chunks)
    read = RecordColumns.of_table(table)
    assert read.topics == table.column("topic").to_pylist()
    assert read.keys == table.column("key").to_pylist()
    assert read.values == table.column("value").to_pylist()
    assert read.timestamps == table.column("timestamp_ms").to_pylist()
    assert all(type(stamp) is int for stamp in read.timestamps if stamp is not None)
    assert read.headers == [None] * len(records)
    assert read.partitions == (table.column("partition").to_pylist() if with_partition else None)
    assert read.topic_counts() == {topic: read.topics.count(topic) for topic in set(read.topics)}


def test_a_batch_without_timestamps_has_none_for_each_record():
    table = pa.table({"topic": ["t", "t"], "key": pa.array([b"a", b"b"]), "value": pa.array([b"1", None])})
    assert RecordColumns.of_table(table).timestamps == [None, None]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.none() | st.integers(min_value=-2**63, max_value=2**63 - 1), max_size=30),
       st.lists(st.none() | st.sampled_from(["a", "b", ""]), max_size=30), st.integers(min_value=1, max_value=3))
def test_a_column_reads_as_to_pylist_reads_it(integers, strings, chunks):
    for values, kind in ((integers, pa.int64()), (strings, pa.string())):
        array = pa.array(values, kind)
        cut = max(1, len(values) // chunks)
        chunked = pa.chunked_array([array.slice(start, cut) for start in range(0, len(values), cut)], kind)
        assert python_list(array) == array.to_pylist()
        assert python_list(chunked) == chunked.to_pylist()
