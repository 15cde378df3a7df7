"""Record headers without Spark: Kafka's ``Headers`` as a user processor gets it, a record's copy
of them, and programs that carry each input record's headers to what it produces (the Arrow pass
of a stateless sub-topology, the pandas pass of a user processor's). The broker-backed comparison
with Kafka Streams is test_equivalence_headers.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from header_topology import HeaderEditor  # noqa: E402

from dagster_kstreams.processors.suppress import SuppressionBuffer  # noqa: E402
from dagster_kstreams.spark.compile import compile_topology  # noqa: E402
from dagster_kstreams.topology import Header, Headers, Record, StreamsBuilder  # noqa: E402
from dagster_kstreams.topology.serdes import Serdes  # noqa: E402

_pairs = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.one_of(st.none(), st.binary(max_size=3))),
                  max_size=8)


@given(_pairs)
def test_headers_keep_order_duplicates_and_null_values_through_the_column_form(pairs):
    headers = Headers(pairs)
    assert [tuple(header) for header in headers] == pairs
    assert Headers.from_column(headers.to_column()) == headers
    assert headers.to_column() is None if not pairs else headers.to_column()[0] == {"key": pairs[0][0],
                                                                                    "value": pairs[0][1]}


@given(_pairs, st.sampled_from(["a", "b", "c"]))
def test_remove_drops_every_header_of_the_name_and_last_header_is_the_last(pairs, name):
    """Kafka's ``RecordHeaders.remove`` and ``lastHeader``."""
    headers = Headers(pairs)
    named = [value for key, value in pairs if key == name]
    assert [header.value for header in headers.headers(name)] == named
    last = headers.last_header(name)
    assert (last is None) if not named else last == Header(name, named[-1])
    assert headers.remove(name).to_array() == [Header(k, v) for k, v in pairs if k != name]


def test_add_chains_and_refuses_what_kafka_cannot_write():
    headers = Headers().add("a", b"1").add(Header("a", None)).add("b", bytearray(b"2"))
    assert headers.to_array() == [("a", b"1"), ("a", None), ("b", b"2")]
    with pytest.raises(TypeError, match="key must be a string"):
        headers.add(b"a", b"1")
    with pytest.raises(TypeError, match="header 'a': a value must be bytes or None, got str"):
        headers.add("a", "text")


def test_each_record_holds_its_own_copy_of_the_headers():
    """As Kafka's ``Record`` constructor copies them: changing a forwarded copy's headers leaves
    the record it came from alone."""
    record = Record("k", "v", 1, [("a", b"1")])
    copy = record.with_value("w")
    copy.headers.add("b", b"2")
    assert record.headers.to_array() == [("a", b"1")]
    assert copy.headers.to_array() == [("a", b"1"), ("b", b"2")]
    assert Record("k", "v", 1).headers.to_array() == []
    assert record.with_headers([("c", None)]).headers.to_array() == [("c", None)]


def _program(builder):
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _arrow(rows, headers):
    return pa.RecordBatch.from_pydict({
        "key": pa.array([k.encode() for k, _ in rows], pa.binary()),
        "value": pa.array([v.encode() for _, v in rows], pa.binary()),
        "topic": ["in"] * len(rows), "partition": [0] * len(rows), "offset": list(range(len(rows))),
        "event_time": [1] * len(rows),
        "headers": pa.array(headers, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
    })


def test_a_stateless_pass_gives_each_record_its_inputs_headers():
    builder = StreamsBuilder()
    builder.stream("in").flat_map_values(lambda v: [v, v + "!"]).filter(lambda k, v: v != "b!").to("out")
    first = [{"key": "x", "value": b"1"}, {"key": "x", "value": None}]
    out = _program(builder).process_arrow_batch(_arrow([("k", "a"), ("k", "b")], [first, None]))
    assert out.column(out.schema.get_field_index("headers")).to_pylist() == [first, first, None]
    none = _program(builder).process_arrow_batch(_arrow([("k", "a")], [None]))
    assert none.column(none.schema.get_field_index("headers")).to_pylist() == [None, None]


def test_a_user_processor_reads_changes_and_forwards_headers_in_the_pandas_pass():
    builder = StreamsBuilder()
    builder.stream("in").process(HeaderEditor).to("out")
    frame = pd.DataFrame({
        "key": [b"k", b"k"], "value": [b"v2", b"v1"], "topic": ["in", "in"], "partition": [0, 0],
        "offset": [0, 1], "timestamp": [None, None], "event_time": [5, 6], "merge_time": [5, 6], "seq": [0, 1],
        "headers": [[{"key": "src", "value": b"p0"}, {"key": "drop", "value": b"x"},
                     {"key": "dup", "value": None}], None],
    })
    out, _ = _program(builder).process_task_batch(frame, None)
    assert [(value, headers) for value, headers in zip(out["value"], out["headers"])] == [
        (b"proc|3|null|v2", [{"key": "src", "value": b"p0"}, {"key": "dup", "value": None},
                             {"key": "seen", "value": b"3"}]),
        (b"fresh|v2", [{"key": "fresh", "value": None}, {"key": "src", "value": b"p0"}]),
        (b"proc|0|none|v1", [{"key": "seen", "value": b"0"}]),
    ]


def test_a_suppression_emits_a_buffered_update_with_its_own_headers():
    """Kafka Streams' suppression buffer keeps each update's record context: what it emits later
    carries the headers of the update it buffered, not those of the record that evicted it. A
    buffer of an older version (no headers kept) still evicts."""
    buffer = SuppressionBuffer()
    buffer.put(5, b"k", "k", "v", 5, [{"key": "h", "value": b"1"}])
    buffer.put(7, b"j", "j", "w", 7)
    assert [(key, value, timestamp, headers) for key, value, timestamp, headers, *_ in buffer.expired(10)] == \
        [("k", "v", 5, [{"key": "h", "value": b"1"}]), ("j", "w", 7, None)]
    buffer._records[b"old"] = ("o", "x", 1)  # as an older version pickled it
    buffer._order.append((1, b"old"))
    assert list(buffer.expired(10)) == [("o", "x", 1, None, None, None)]
