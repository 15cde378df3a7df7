"""Table-table joins without the record cache: what each update forwards, one key's updates at a
time through the compiled program (pure logic; the same rule is compared with Kafka Streams itself
in tests/test_equivalence_joins.py). Kafka Streams 4.3.1's ``KTableKTable{Inner,Left,Right,
Outer}Join``: an inner join forwards nothing while the other side has no row; left and outer joins
forward nothing for a tombstone of a key the updated table never held."""

from __future__ import annotations

import pytest

from dagster_kstreams.processors.records import Output, RecordContext
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes

# (side, value): one key's updates in order; None is a tombstone.
UPDATES = [("L", None), ("L", "l1"), ("L", None), ("R", "r1"), ("R", None), ("R", None), ("L", "l2"), ("R", "r2"),
           ("L", None), ("R", None), ("R", "r3"), ("L", "l3"), ("L", "l4")]
EXPECTED = {
    # the other side has no row: nothing; else joined, or a tombstone for a delete
    "join": ["l2+r2", None, "l3+r3", "l4+r3"],
    # left updates: nothing only for a tombstone of a key never held; right updates: nothing
    # while the left has no row, else joiner(left, right or null)
    "left_join": ["l1+null", None, "l2+null", "l2+r2", None, "l3+r3", "l4+r3"],
    "outer_join": ["l1+null", None, "null+r1", None, "l2+null", "l2+r2", "null+r2", None, "null+r3", "l3+r3",
                   "l4+r3"],
}


def _java(value) -> str:
    return "null" if value is None else value


def _forwarded(join: str, updates, batches: int) -> list:
    builder = StreamsBuilder()
    left = builder.table("left", Materialized.as_("left-store").with_caching_disabled())
    right = builder.table("right", Materialized.as_("right-store").with_caching_disabled())
    getattr(left, join)(right, lambda a, b: f"{_java(a)}+{_java(b)}",
                        Materialized.as_("joined").with_caching_disabled()).to_stream().to("out")
    program = compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    records = [(RecordContext({"L": "left", "R": "right"}[side], 0, offset, timestamp=offset, position=offset),
                b"k", None if value is None else value.encode()) for offset, (side, value) in enumerate(updates)]
    forwarded, stored, size = [], None, -(-len(records) // batches)
    for first in range(0, len(records), size):
        out, stored = program.run_key_group(records[first:first + size], stored)
        forwarded += [None if value is None else value.decode()
                      for topic, value in zip(out.topic, out.value) if topic == "out"]
    return forwarded


@pytest.mark.parametrize("join", sorted(EXPECTED))
def test_uncached_table_table_join_forwards_what_kafka_streams_forwards(join):
    assert _forwarded(join, UPDATES, 1) == EXPECTED[join]
    assert _forwarded(join, UPDATES, 4) == EXPECTED[join]  # the tables' state carried between batches


@pytest.mark.parametrize("make_table", [lambda b: b.table("t"), lambda b: b.stream("t").to_table()])
def test_a_table_without_a_store_drops_null_keys_as_kafka_streams_table_source_does(make_table):
    # KTableSource checks the key before anything else, materialized or not: a null key never
    # reaches the table's to_stream.
    builder = StreamsBuilder()
    make_table(builder).to_stream().to("out")
    program = compile_topology(builder.build(), "app").program(0)
    out = Output()
    program.process_columns([None, b"k"], [b"v", b"w"], ["t", "t"], [0, 0], [0, 1], [1, 2], [None, None], out)
    assert (out.key, out.value) == ([b"k"], [b"w"])
