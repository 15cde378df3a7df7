"""The timestamp of an aggregation's update where a suppression or a user processor reads it (pure
logic, through the compiled program; compared with Kafka Streams itself in
tests/test_equivalence_kstreams_window_scenarios.py, its KTableAggregateTest and SuppressScenarioTest
scenarios).

Kafka Streams (``KStreamAggregate``, ``KTableAggregate``) stamps an aggregate's update with the larger of
the record's timestamp and the aggregate's previous one. A user processor sees that stamp as the record's
timestamp, and a suppression buffers the update at it and emits it with it, so an aggregation whose updates
reach either in its sub-topology keeps its timestamps (both run task-grouped, whose task state holds them).
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings, strategies as st

from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import BufferConfig, StreamsBuilder, Suppressed
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.processor_api import FixedKeyProcessor, Record
from dagster_kstreams.topology.serdes import Serdes

# (key, value, timestamp) in processing order: null keys and values, timestamps out of order
RECORDS = st.lists(st.tuples(st.sampled_from([None, "a", "b"]), st.one_of(st.none(), st.sampled_from(["x", "y"])),
                             st.integers(1, 50)), max_size=25)


class _Stamp(FixedKeyProcessor):
    """The count and the timestamp the processor sees."""

    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(f"{record.value}|t{record.timestamp}"))


def _program(read_through: str):
    builder = StreamsBuilder()
    counts = builder.stream("in").group_by_key().count(Materialized.as_("counts").with_caching_disabled())
    if read_through == "suppression":  # a time limit of zero: each update out at once, with its stamp
        counts = counts.suppress(Suppressed.until_time_limit(timedelta(0), BufferConfig.unbounded()))
    counts.to_stream().process_values(_Stamp).to("out")
    return compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _run(read_through: str, records: list, batches: int) -> list[tuple]:
    """What reaches the sink, each micro-batch of the task run as the engine runs it."""
    program, stored, written = _program(read_through), None, []
    size = max(1, -(-len(records) // batches))
    for first in range(0, len(records), size):
        batch = []
        for offset, (key, value, timestamp) in enumerate(records[first:first + size], start=first):
            raw_key = None if key is None else key.encode()
            batch.append((RecordContext("in", 0, offset, timestamp, raw_key=raw_key, position=offset), raw_key,
                          None if value is None else value.encode()))
        out, stored = program.run_task_batch(batch, stored)
        written += [(key.decode(), value.decode()) for topic, key, value in zip(out.topic, out.key, out.value)
                    if topic == "out"]
    return written


def _kafka_streams(records: list) -> list[tuple]:
    """KStreamAggregate: records with a null key or value skipped; each update stamped with the larger
    of its record's timestamp and the key's previous update's."""
    counts, stamps, written = {}, {}, []
    for key, value, timestamp in records:
        if key is None or value is None:
            continue
        counts[key] = counts.get(key, 0) + 1
        stamps[key] = max(timestamp, stamps.get(key, timestamp))
        written.append((key, f"{counts[key]}|t{stamps[key]}"))
    return written


def test_an_earlier_record_keeps_the_aggregates_later_stamp():
    records = [("a", "x", 30), ("a", "y", 10), ("b", "x", 5)]
    expected = [("a", "1|t30"), ("a", "2|t30"), ("b", "1|t5")]
    assert _run("processor", records, 1) == _run("suppression", records, 1) == expected


@settings(max_examples=100, deadline=None)
@given(RECORDS, st.integers(1, 3), st.sampled_from(["processor", "suppression"]))
def test_a_processor_or_suppression_sees_kafka_streams_stamps(records, batches, read_through):
    assert _run(read_through, records, batches) == _kafka_streams(records)
