"""Versioned tables, pure logic: a stream-table join with a grace period through the compiled program,
against a model of Kafka Streams 4.3.1's ``RocksDBTimeOrderedKeyValueBuffer`` over a versioned store,
whatever the micro-batches. Compared with Kafka Streams itself in tests/test_equivalence_versioned.py."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import Joined, Materialized, Stores, StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes

from versioned_model import RETENTION, ModelStore, java_string, run_batches, table_and_stream_records

GRACE = 30


def _grace_program():
    builder = StreamsBuilder()
    table = builder.table("t", Materialized.as_(Stores.persistent_versioned_key_value_store("vs", RETENTION)))
    builder.stream("s").join(table, lambda value, table_value: f"{value}@{java_string(table_value)}",
                             Joined.as_("graced").with_grace_period(timedelta(milliseconds=GRACE))).to("graced")
    return compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _expected_with_grace(records) -> list[tuple]:
    """Kafka Streams' ``RocksDBTimeOrderedKeyValueBuffer``: its time is the largest timestamp put
    into it; a record older than that minus the grace joins at once; any other is buffered, then
    every buffered record at or before that time minus the grace joins, in timestamp order."""
    store, buffer, buffer_time, out = ModelStore(RETENTION), [], -1, []

    def join(key, value, timestamp):
        table_value = store.as_of(key, timestamp)
        if table_value is not None:
            out.append(("graced", key, f"{value}@{table_value}", timestamp))

    for seq, (topic, key, value, timestamp) in enumerate(records):
        if topic == "t":
            if key is not None:
                store.put(key, value, timestamp)
        elif value is not None and key is not None:
            if buffer_time - GRACE > timestamp:
                join(key, value, timestamp)
                continue
            buffer_time = max(buffer_time, timestamp)
            buffer.append((timestamp, key.encode(), seq, key, value))
            buffer.sort()
            while buffer and buffer[0][0] <= buffer_time - GRACE:
                timestamp, _, _, key, value = buffer.pop(0)
                join(key, value, timestamp)
    return out


@settings(max_examples=150, deadline=None)
@given(table_and_stream_records, st.lists(st.integers(0, 40), max_size=3))
def test_a_join_with_a_grace_period_emits_what_kafka_streams_emits_whatever_the_batches(records, cuts):
    records = [(topic, key, None if value is None else f"{value}{i}", timestamp)
               for i, (topic, key, value, timestamp) in enumerate(records)]
    assert _untimed(run_batches(_grace_program(), records, [cut for cut in cuts if cut < len(records)])) == \
        _untimed(_expected_with_grace(records))


def _untimed(rows: list[tuple]) -> list[tuple]:
    """Without timestamps: the program's output does not carry a sink record's (the test reads the
    source record's position, which for a record let out of the buffer is the record that let it out)."""
    return [row[:3] for row in rows]


def test_a_join_with_a_grace_period_sees_table_updates_that_came_within_it():
    records = [("t", "a", "v10", 10), ("s", "a", "o1", 50), ("t", "a", "v40", 40), ("s", "a", "o2", 60),
               ("s", "a", "o3", 85), ("s", "a", "o4", 20)]
    assert _untimed(run_batches(_grace_program(), records, [2])) == [
        ("graced", "a", "o1@v40"),  # buffered until 85 - 30 passed it: v40 (put at 40) arrived meanwhile
        ("graced", "a", "o4@v10"),  # older than 85 - 30: joined at once
    ]  # o2 and o3 are still buffered
