"""A user processor on a time-windowed aggregation's store, without Spark: the view's reads
(``ValueAndTimestamp``, ranges in the RocksDB store's order, retention by the store's observed time),
the count going on from what the processor wrote, batches with the task state pickled in between (as
a checkpoint), a cached store forwarding a processor's write at the flush, and what stays refused.
The broker-backed comparison with Kafka Streams is test_equivalence_dsl_window_store_processor.py."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dsl_window_store_processor_topology import dsl_window_store_processor_examples  # noqa: E402

from dagster_kstreams.spark.compile import compile_topology  # noqa: E402
from dagster_kstreams.topology import (EmitStrategy, Materialized, Stores, StreamsBuilder, TimeWindows,  # noqa: E402
                                       ValueAndTimestamp)
from dagster_kstreams.topology.processor_api import Processor, Record  # noqa: E402
from dagster_kstreams.topology.serdes import Serdes  # noqa: E402

SECOND = timedelta(seconds=1)


def _frames(rows, batches):
    """Pandas batches of rows ``(key, value, timestamp[, topic])``, each with the task's stream time after it
    (the largest timestamp of a record with a key so far, across batches)."""
    stream, stream_times = -1, []
    for key, _, timestamp, *_ in rows:
        if key is not None:
            stream = max(stream, timestamp)
        stream_times.append(stream)
    size = -(-len(rows) // batches)
    for first in range(0, len(rows), size):
        part, offsets = rows[first:first + size], list(range(first, min(first + size, len(rows))))
        yield pd.DataFrame({
            "key": [None if row[0] is None else row[0].encode() for row in part],
            "value": [None if row[1] is None else row[1].encode() for row in part],
            "topic": [row[3] if len(row) > 3 else "in" for row in part], "partition": [0] * len(part), "offset": offsets,
            "timestamp": [None] * len(part), "event_time": [row[2] for row in part],
            "merge_time": [row[2] for row in part], "stream_time": stream_times[first:first + size], "seq": offsets,
        })


def _program(builder):
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _run(program, rows, batches=1):
    outputs, stored = [], None
    for frame in _frames(rows, batches):
        out, stored = program.process_task_batch(frame, stored)
        if out is not None:
            out = out.sort_values("emit_order", kind="stable")
            outputs += [(k.decode(), v.decode()) for k, v in zip(out["key"], out["value"]) if k is not None]
    return outputs, stored


class _OwnNames(dict):
    """Every output topic named as the topology names it (the input: ``in``)."""

    def __missing__(self, name: str) -> str:
        return name


TOPICS = _OwnNames(events="in")
# hopping 10 s windows advancing by 5 s, grace 4 s (retention 14 s): a record is in 2 windows
ROWS = [("a1", "x", 1_000), ("a1", "x", 2_000), ("a2", "x", 3_000), ("a1", "x", 6_000), ("a1", None, 7_000),
        ("a1", "x", 8_000), ("a1", "x", 500), (None, "x", 9_000), ("a1", "x", 9_500), ("a1", "x", 9_600),
        ("a1", "x", 9_700), ("a1", "x", 9_800), ("a2", "x", 21_000), ("a1", "x", 9_900), ("a1", "x", 16_000)]


def test_the_window_counts_on_from_what_the_processor_wrote_and_reads_the_store_as_kafka_streams():
    """Window 0 of a1: 3 becomes 10 stamped 6_007, and the next record counts 11; a count of 13 deletes
    the window, and the next record starts it at 1 again. Kafka Streams puts and forwards one window
    after the other: while window 0 of a record is forwarded, the store still holds the record's
    window 5_000 as it was (or not at all). A record stamped 500 after stream time 8_000 is stamped
    8_000 in its window (the larger); the null key is skipped. The store is in memory: every key's
    windows within 5 s come by start, then key (a1@0, a2@0, a1@5000; RocksDB's: a1@0, a1@5000, a2@0)."""
    outputs, _ = _run(_program(dsl_window_store_processor_examples(TOPICS)), ROWS)
    values = [(key, value.split("|")[2:]) for key, value in outputs if value.split("|")[1] == "count"]
    assert values[:10] == [
        ("a1@0", ["1", "t1000", "1@1000", "0=1@1000", "a1@0=1@1000"]),
        ("a1@0", ["2", "t2000", "2@2000", "0=2@2000", "a1@0=2@2000"]),
        ("a2@0", ["1", "t3000", "1@3000", "0=1@3000", "a1@0=2@2000,a2@0=1@3000"]),
        ("a1@0", ["3", "t6000", "3@6000", "0=3@6000", "a1@0=3@6000,a2@0=1@3000"]),
        ("a1@5000", ["1", "t6000", "1@6000", "0=10@6007,5000=1@6000", "a1@0=10@6007,a2@0=1@3000,a1@5000=1@6000"]),
        ("a1@0", ["11", "t7000", "11@7000", "0=11@7000,5000=1@6000", "a1@0=11@7000,a2@0=1@3000,a1@5000=1@6000"]),
        ("a1@5000", ["2", "t7000", "2@7000", "0=11@7000,5000=2@7000", "a1@0=11@7000,a2@0=1@3000,a1@5000=2@7000"]),
        ("a1@0", ["12", "t8000", "12@8000", "0=12@8000,5000=2@7000", "a1@0=12@8000,a2@0=1@3000,a1@5000=2@7000"]),
        ("a1@5000", ["3", "t8000", "3@8000", "0=12@8000,5000=3@8000", "a1@0=12@8000,a2@0=1@3000,a1@5000=3@8000"]),
        ("a1@0", ["13", "t8000", "13@8000", "0=13@8000,5000=10@8007",
                    "a1@0=13@8000,a2@0=1@3000,a1@5000=10@8007"]),
    ]
    by_window: dict[str, list] = {}
    for key, parts in values:
        by_window.setdefault(key, []).append(parts[0])
    assert by_window["a1@0"] == ["1", "2", "3", "11", "12", "13", "1", "2", "3", "11"]
    assert by_window["a1@5000"] == ["1", "2", "3", "11", "12", "13", "1"]
    # stream time 21_000 closed a1's windows 0 and 5_000: its record at 9_900 is dropped from both
    assert [key for key, _ in values[-4:]] == ["a2@15000", "a2@20000", "a1@10000", "a1@15000"]


@pytest.mark.parametrize("batches", [2, 5, 15])
def test_batches_with_the_task_state_in_between_give_the_one_batch_result(batches):
    examples = dsl_window_store_processor_examples(TOPICS)
    assert _run(_program(examples), ROWS, batches)[0] == _run(_program(examples), ROWS, 1)[0]


class _Probe(Processor):
    """On a sum above 100, puts a window far ahead; forwards what the store then returns: every window
    in order (checking the reverse) and the record's window."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("w")

    def process(self, record: Record) -> None:
        key, start = record.key.key, record.key.window.start
        if record.value > 100:
            self.store.put(key, ValueAndTimestamp.make(7, 1), 60_000)  # moves the observed time to 60 s
        listed = [f"{entry.key.key}@{entry.key.window.start}={entry.value.value()}" for entry in self.store.all()]
        backward = [f"{entry.key.key}@{entry.key.window.start}" for entry in self.store.backward_all()]
        assert backward == [entry.split("=")[0] for entry in listed][::-1]
        fetched = self.store.fetch(key, start)
        self.context.forward(Record(f"{key}@{start}", f"{record.value}|{fetched}|{' '.join(listed)}", 0))


def _probe_program(cached=False, retention=None):
    builder = StreamsBuilder()
    materialized = Materialized.as_("w").with_value_serde(Serdes.Long())
    if retention is not None:
        materialized = materialized.with_retention(retention)
    if not cached:
        materialized = materialized.with_caching_disabled()
    builder.stream("in").map_values(lambda v: v).group_by_key().windowed_by(
        TimeWindows.of_size_and_grace(10 * SECOND, 5 * SECOND)).aggregate(
        lambda: 0, lambda k, v, total: total + int(v), materialized).to_stream().process(_Probe, "w").to("out")
    return _program(builder)


def test_ranges_follow_the_rocksdb_store_order_segment_then_key_bytes():
    """Retention 200 s: segments of 100 s. In a segment, the store key's bytes (key, then start): "a"
    before "aa" before "b" whatever the starts; a later segment after every earlier one."""
    rows = [("b", "1", 1_000), ("aa", "1", 12_000), ("a", "1", 25_000), ("b", "1", 110_000), ("a", "1", 128_000)]
    outputs, _ = _run(_probe_program(retention=timedelta(seconds=200)), rows)
    assert outputs[-1] == ("a@120000", "1|<1,128000>|a@20000=1 aa@10000=1 b@0=1 a@120000=1 b@110000=1")


def test_a_processor_write_ahead_moves_the_stores_time_and_hides_what_retention_drops():
    """Kafka Streams' store takes the largest window start put as its time, whoever put it: once the
    processor put window 60 s (retention 15 s), windows starting at 45 s or before are gone, for the
    processor and for the aggregation, whose next record of window 0 counts from scratch."""
    rows = [("k", "1", 1_000), ("k", "100", 2_000), ("k", "1", 3_000), ("k", "5", 52_000), ("k", "5", 53_000)]
    outputs, _ = _run(_probe_program(), rows, 2)
    assert [value for _, value in outputs] == [
        "1|<1,1000>|k@0=1",
        "101|None|k@60000=7",
        "1|None|k@60000=7",  # stored, but below the store's time minus its retention: no read returns it
        "5|<5,52000>|k@50000=5 k@60000=7",
        "10|<10,53000>|k@50000=10 k@60000=7",
    ]


class _Fixer(Processor):
    """Puts the window ``start:count`` of its record's value (``start:del`` deletes it), stamped 1 ms
    after the record."""

    def init(self, context) -> None:
        self.store = context.get_state_store("w")

    def process(self, record: Record) -> None:
        start, count = record.value.split(":")
        value = None if count == "del" else int(count)
        self.store.put(record.key, ValueAndTimestamp.make(value, record.timestamp + 1), int(start))


def test_a_cached_store_forwards_a_processor_write_at_the_flush_as_the_aggregations_update():
    """Kafka Streams' cache flush listener forwards whatever wrote the cached store, with the written
    timestamp; a window created and deleted between two flushes forwards nothing."""
    builder = StreamsBuilder()
    counts = builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10 * SECOND)).count(
        Materialized.as_("w"))
    counts.to_stream().map(lambda k, v: (f"{k.key}@{k.window.start}", f"{v}")).process(_Stamp).to("out")
    builder.stream("fix").process(_Fixer, "w")
    program = _program(builder)
    rows = [("k", "x", 1_000), ("k", "0:20", 1_500, "fix"), ("k", "x", 2_000), ("j", "x", 3_000),
            ("j", "0:del", 3_500, "fix"), ("k", "0:5", 4_000, "fix")]
    assert _run(program, rows, 2)[0] == [("k@0", "21|t2000"), ("k@0", "5|t4001")]


class _Lister(Processor):
    """Beside the aggregation: forwards every window the store returns (``all()``), in its order."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("w")

    def process(self, record: Record) -> None:
        listed = " ".join(f"{entry.key.key}@{entry.key.window.start}" for entry in self.store.all())
        self.context.forward(Record("listed", listed, record.timestamp))


def _closing_beside_program(materialized):
    builder = StreamsBuilder()
    events = builder.stream("in")
    events.group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10 * SECOND)).emit_strategy(
        EmitStrategy.on_window_close()).count(materialized.with_caching_disabled()).to_stream().map(
        lambda window, count: (f"{window.key}@{window.window.start}", str(count))).to("out")
    events.process(_Lister, "w").to("listed")
    return _program(builder)


@pytest.mark.parametrize("rocksdb_supplier, listed", [
    (True, "a@20000 aa@10000 b@0 a@70000 b@60000"),  # segment (60 s) by segment, then key bytes, then start
    (False, "b@0 aa@10000 a@20000 b@60000 a@70000"),  # RocksDBTimeOrderedWindowStore: by start, then key
])
def test_a_rocksdb_supplier_s_store_emitting_on_close_reads_in_segment_order(rocksdb_supplier, listed):
    """Kafka Streams keeps the timestamped supplier's segmented store (not the time-ordered one of the DSL)."""
    materialized = Materialized.as_(Stores.persistent_timestamped_window_store(
        "w", 120 * SECOND, 10 * SECOND, False)) if rocksdb_supplier else Materialized.as_("w").with_retention(
        120 * SECOND)
    rows = [("b", "x", 1_000), ("aa", "x", 12_000), ("a", "x", 25_000), ("b", "x", 61_000), ("a", "x", 70_000)]
    outputs, _ = _run(_closing_beside_program(materialized), rows)
    assert [value for key, value in outputs if key == "listed"][-1] == listed


@pytest.mark.parametrize("rocksdb_supplier, listed, emitted", [
    (True, "a@70000", []), (False, "aa@10000 a@70000", ["aa@10000"])])
def test_a_rocksdb_supplier_s_store_emitting_on_close_cuts_one_start_later(rocksdb_supplier, listed, emitted):
    """Its ``getActualFrom`` returns from the store's time minus the retention plus 1, to the processor and the
    emit alike; the time-ordered store still returns the window starting at the store's time minus the retention
    (70 s - 60 s)."""
    materialized = Materialized.as_(Stores.persistent_timestamped_window_store(
        "w", 60 * SECOND, 10 * SECOND, False)) if rocksdb_supplier else Materialized.as_("w").with_retention(
        60 * SECOND)
    outputs, _ = _run(_closing_beside_program(materialized), [("aa", "x", 12_000), ("a", "x", 70_000)])
    assert [value for key, value in outputs if key == "listed"][-1] == listed
    assert [key for key, _ in outputs if key != "listed"] == emitted


class _Stamp(Processor):
    def init(self, context) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(f"{record.value}|t{record.timestamp}"))


class _BadPut(Processor):
    def init(self, context) -> None:
        self.store = context.get_state_store("w")

    def process(self, record: Record) -> None:
        self.store.put(record.key.key, 5, record.key.window.start)


def test_a_put_of_a_plain_value_fails_naming_the_store():
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(SECOND)).count(
        Materialized.as_("w")).to_stream().process(_BadPut, "w")
    with pytest.raises(Exception, match="window store w: put.. takes a ValueAndTimestamp"):
        _run(_program(builder), [("k", "x", 1)])
