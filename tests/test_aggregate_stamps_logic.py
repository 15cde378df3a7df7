"""The timestamp of an aggregation's update and of a table-table join's (pure logic, through the compiled
program; compared with Kafka Streams itself in tests/test_equivalence_kstreams_window_scenarios.py, its
KTableAggregateTest and SuppressScenarioTest scenarios, and by the output topics' timestamps of every
equivalence test).

Kafka Streams (``KStreamAggregate``, ``KTableAggregate``) stamps an aggregate's update with the larger of
the record's timestamp and the aggregate's previous one, and a table-table join its update with the larger
of both rows'. A user processor sees that stamp as the record's timestamp, a suppression buffers the update
at it and emits it with it, and a sink writes it. The stores keep each key's timestamp: in the task's state
where the sub-topology runs task-grouped, in the key's state row where it runs key-grouped.
"""

from __future__ import annotations

import pickle
from datetime import timedelta

from hypothesis import given, settings, strategies as st

from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.processors.state import slot_value
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


# -- key-grouped: the stamps kept in each key's state row, and what the sink writes ---------------

def _key_grouped(topology, records: list, batches: int) -> dict[str, list[tuple]]:
    """Per output key, ``(value, timestamp the sink writes)`` in order, the records (``(topic, key,
    value, timestamp)``) run key group by key group, each micro-batch with the rows the last left."""
    program = compile_topology(topology, "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    assert not program.task_grouped
    rows: dict = {}
    written: dict[str, list[tuple]] = {}
    size = max(1, -(-len(records) // batches))
    for first in range(0, len(records), size):
        groups: dict = {}
        for offset, (topic, key, value, timestamp) in enumerate(records[first:first + size], start=first):
            raw_key = None if key is None else key.encode()
            groups.setdefault(raw_key, []).append((RecordContext(topic, 0, offset, timestamp, raw_key=raw_key,
                                                                 position=offset), raw_key,
                                                   None if value is None else value.encode()))
        for raw_key, group in groups.items():
            out, rows[raw_key] = program.run_key_group(group, rows.get(raw_key))
            for key, value, timestamp in zip(out.key, out.value, out.timestamp_ms):
                written.setdefault(key.decode(), []).append((None if value is None else value.decode(), timestamp))
    return written


def _count_topology(cached: bool):
    builder = StreamsBuilder()
    counts = Materialized.as_("counts")
    builder.stream("in").group_by_key().count(counts if cached else counts.with_caching_disabled()) \
        .to_stream().map_values(str).to("out")
    return builder.build()


@settings(max_examples=100, deadline=None)
@given(RECORDS, st.integers(1, 3))
def test_a_key_grouped_count_writes_kafka_streams_stamps_from_its_rows(records, batches):
    written = _key_grouped(_count_topology(False), [("in", *record) for record in records], batches)
    expected: dict[str, list[tuple]] = {}
    for key, value in _kafka_streams(records):
        count, stamp = value.split("|t")
        expected.setdefault(key, []).append((count, int(stamp)))
    assert written == expected


def test_a_cached_count_flushes_its_keys_largest_stamp_and_an_old_row_has_none():
    records = [("in", "a", "x", 30), ("in", "a", "y", 10)]
    assert _key_grouped(_count_topology(True), records, 1) == {"a": [("2", 30)]}
    assert _key_grouped(_count_topology(True), records, 2) == {"a": [("1", 30), ("2", 30)]}
    # a row written before the store kept timestamps (its count alone): the record's own stamp
    program = compile_topology(_count_topology(False), "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    old_row = (pickle.dumps(4),)
    out, row = program.run_key_group([(RecordContext("in", 0, 9, 7, raw_key=b"a", position=9), b"a", b"z")], old_row)
    assert (out.value, out.timestamp_ms, slot_value(row[0])) == ([b"5"], [7], (5, 7))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["left", "right"]), st.sampled_from(["a", "b"]),
                          st.sampled_from(["x", "y", None]), st.integers(1, 50)), max_size=20),
       st.integers(1, 3))
def test_a_key_grouped_table_join_stamps_with_both_rows_times(records, batches):
    builder = StreamsBuilder()
    left, right = (builder.table(topic, Materialized.as_(f"{topic}-rows").with_caching_disabled())
                   for topic in ("left", "right"))
    left.join(right, lambda l, r: f"{l}+{r}").to_stream().to("out")
    written = _key_grouped(builder.build(), records, batches)
    rows: dict = {}
    expected: dict[str, list[tuple]] = {}
    for topic, key, value, timestamp in records:  # KTableKTableInnerJoin of uncached tables
        other = rows.get(("right" if topic == "left" else "left", key))
        rows[topic, key] = None if value is None else (value, timestamp)
        if other is not None:
            joined = None if value is None else (f"{value}+{other[0]}" if topic == "left" else f"{other[0]}+{value}")
            expected.setdefault(key, []).append((joined, max(timestamp, other[1])))
    assert written == expected
