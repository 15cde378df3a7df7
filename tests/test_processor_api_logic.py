"""The Processor API without Spark: punctuation schedules against a model of Kafka Streams'
``PunctuationSchedule.next``, the key-value store, programs run batch by batch (the task state
pickled in between, as a checkpoint would), and what the DSL and the runner refuse. The
broker-backed comparison with Kafka Streams is test_equivalence_processor_api.py."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from processor_api_topology import processor_api_examples  # noqa: E402
from task_frames import task_frame  # noqa: E402

from dagster_kstreams.processors.punctuation import PunctuationSchedule  # noqa: E402
from dagster_kstreams.processors.user_processors import user_store_content  # noqa: E402
from dagster_kstreams.processors.user_stores import KeyValueStore  # noqa: E402
from dagster_kstreams.spark.compile import compile_topology  # noqa: E402
from dagster_kstreams.topology import StreamsBuilder, Topology, TopologyException  # noqa: E402
from dagster_kstreams.topology.processor_api import (  # noqa: E402
    FixedKeyProcessor, Processor, PunctuationType, Record, Stores,
)
from dagster_kstreams.topology.serdes import Serdes, Window, Windowed  # noqa: E402


@settings(max_examples=200)
@given(st.integers(1, 50), st.lists(st.integers(0, 400), max_size=40))
def test_stream_time_schedule_fires_at_each_crossed_multiple_once_as_kafka_streams(interval, times):
    """Model: aligned to 0, a punctuation fires when stream time reaches its due time, and the next
    is due at the first multiple of the interval after the time it fired at."""
    schedule, fired, stream_time = PunctuationSchedule(0, interval, PunctuationType.STREAM_TIME, None), [], -1
    for timestamp in times:
        stream_time = max(stream_time, timestamp)
        if stream_time >= 0 and schedule.due <= stream_time:
            fired.append(stream_time)
            schedule.advance(stream_time)
    expected, due, stream_time = [], 0, -1
    for timestamp in times:
        stream_time = max(stream_time, timestamp)
        if stream_time >= due:
            expected.append(stream_time)
            due = (stream_time // interval + 1) * interval
    assert fired == expected


def test_key_value_store_orders_by_serialized_key_and_put_none_deletes():
    content = {}
    store = KeyValueStore("s", Serdes.String(), Serdes.Long(), content)
    for key, value in (("b", 2), ("a", 1), ("c", 3), ("ab", 4)):
        store.put(key, value)
    assert [entry.key for entry in store.all()] == ["a", "ab", "b", "c"]
    assert list(store.range("ab", "b")) == [("ab", 4), ("b", 2)]
    assert store.put_if_absent("a", 9) == 1 and store.get("a") == 1
    store.put("a", None)
    assert store.get("a") is None and store.delete("b") == 2 and store.approximate_num_entries() == 2
    with pytest.raises(ValueError, match="store s: the key cannot be null"):
        store.put(None, 1)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text("ab:é", max_size=4), st.integers(0, 9), max_size=12), st.text("ab:é", max_size=3))
def test_prefix_scan_gives_the_keys_whose_bytes_start_with_the_prefixs_in_byte_order(entries, prefix):
    # Kafka Streams' prefixScan: the serialized prefix against the serialized keys (RocksDB's order).
    store = KeyValueStore("s", Serdes.String(), Serdes.Long(), {})
    for key, value in entries.items():
        store.put(key, value)
    expected = sorted(((key, value) for key, value in entries.items() if key.encode().startswith(prefix.encode())),
                      key=lambda entry: entry[0].encode())
    assert [tuple(entry) for entry in store.prefix_scan(prefix, Serdes.String())] == expected


def test_prefix_scan_serializes_the_prefix_with_the_serializer_given():
    store = KeyValueStore("s", Serdes.String(), Serdes.Long(), {})
    for key, value in (("a1:x", 1), ("a1:y", 2), ("a10", 3), ("b1:x", 4)):
        store.put(key, value)
    assert list(store.prefix_scan("a1", Serdes.String())) == [("a10", 3), ("a1:x", 1), ("a1:y", 2)]  # "0" < ":"
    assert list(store.prefix_scan("a1:", Serdes.String())) == [("a1:x", 1), ("a1:y", 2)]
    assert list(store.prefix_scan(b"b", Serdes.ByteArray())) == [("b1:x", 4)]


EXAMPLE_TOPICS = {"events": "in", "out": "out", "processed": "processed", "punctuated": "punctuated"}


def _run(rows, batches, topic: str = "out"):
    """What the examples write to ``topic``."""
    program = compile_topology(processor_api_examples(EXAMPLE_TOPICS), "app",
                               default_key_serde=Serdes.String(), default_value_serde=Serdes.String()).program(0)
    outputs, stored, size = [], None, -(-len(rows) // batches)
    for first in range(0, len(rows), size):
        out, stored = program.process_task_batch(task_frame(rows[first:first + size], first), stored)
        if out is not None:
            out = out.sort_values("emit_order", kind="stable")
            outputs += [(k, v.decode()) for k, v, written in zip(out["key"], out["value"], out["topic"])
                        if written == topic]
    return outputs


def _counter_outputs(outputs):
    """What BucketCounter and StampValues forward (the store logs left out)."""
    return [(key, value) for key, value in outputs if value.split("|")[1] not in ("win", "ses", "dup", "ver", "tab", "near")]


ROWS = [("a1", "x", 1000), ("a1", "x", 2000), ("a2", "y", 12000), (None, "z", 3000), ("a1", None, 500),
        ("a1", "w", 4000), ("a3", "q", 21000), ("a1", "x", 25000), ("a2", "y", 26000), ("a3", "q", 41000)]


def test_processor_counts_dedups_and_punctuates_on_stream_time():
    """Bucket 0 closes at stream time 12000 (a punctuation: its 2 records; the record stamped 4000
    after it is late), bucket 1 at 21000, bucket 2 at 41000 (its keys in store order)."""
    assert [(None if key is None else key.decode(), value) for key, value in _counter_outputs(_run(ROWS, 1))] == [
        ("a1", "p0|new|x|o0|t1000"), ("a1", "p0|repeat|x|o1|t2000"), ("a2", "p0|new|y|o2|t12000"),
        ("a1", "p0|count|0|2|null/-1/-1|null/-1/-1|t9999"), (None, "p0|null|null|z|t3000"), ("a1", "p0|null|a1|null|t500"),
        ("a1", "p0|new|w|o5|t4000"), ("a1", "p0|late|w|t4000"), ("a3", "p0|new|q|o6|t21000"),
        ("a2", "p0|count|1|1|null/-1/-1|null/-1/-1|t19999"), ("a1", "p0|new|x|o7|t25000"), ("a2", "p0|repeat|y|o8|t26000"),
        ("a3", "p0|repeat|q|o9|t41000"), ("a1", "p0|count|2|1|null/-1/-1|null/-1/-1|t29999"), ("a2", "p0|count|2|1|null/-1/-1|null/-1/-1|t29999"),
        ("a3", "p0|count|2|1|null/-1/-1|null/-1/-1|t29999"),
    ]


@pytest.mark.parametrize("batches", [1, 3])
def test_a_topic_picked_by_the_record_context_tells_a_punctuators_forwards_from_the_records(batches):
    """PunctuatedOrNot behind StampValues: what the punctuator forwarded has no topic, partition or
    offset in its context (as Kafka Streams' punctuation context), what records forwarded has theirs."""
    counter = _counter_outputs(_run(ROWS, batches))
    assert _run(ROWS, batches, "punctuated") == [(key, value) for key, value in counter if "|count|" in value]
    assert _run(ROWS, batches, "processed") == [(key, value) for key, value in counter if "|count|" not in value]


@pytest.mark.parametrize("batches", [2, 3, 10])
def test_batches_with_the_task_state_in_between_give_the_one_batch_result(batches):
    assert _run(ROWS, batches) == _run(ROWS, 1)


class _ChangesKey(FixedKeyProcessor):
    def process(self, record: Record) -> None:
        self.context.forward(record.with_key("other"))


def test_a_fixed_key_processor_that_changes_the_key_fails_naming_it():
    builder = StreamsBuilder()
    builder.stream("in").process_values(_ChangesKey).to("out")
    program = compile_topology(builder, "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    with pytest.raises(Exception, match="cannot change keys"):
        program.process_task_batch(task_frame([("a", "v", 1)]), None)


class _Nothing(Processor):
    def process(self, record: Record) -> None:
        pass


def test_refused_at_definition_time():
    singleton = _Nothing()
    with pytest.raises(TopologyException, match="same Processor instance twice"):
        StreamsBuilder().stream("in").process(lambda: singleton)
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("s")))
    builder.stream("in").process(_Nothing, "missing")
    with pytest.raises(TopologyException, match="StateStore missing is not added yet"):
        builder.build()


# -- punctuators across processors, the wall clock, cancel; forwarding to a named child ----------
class _Ticker(Processor):
    """Forwards to the child named after the record's value; every 10 (stream time) says so, the
    first one cancelling itself after two ticks; a wall-clock schedule of 1 ms is due after every record (each takes 3 ms)."""

    def __init__(self, label: str = "t", prefix: str = ""):
        self.label, self.prefix = label, prefix  # children: <prefix>left, <prefix>right

    def init(self, context) -> None:
        self.context, self.ticks = context, 0
        self.once = context.schedule(10, PunctuationType.STREAM_TIME, self.tick)
        context.schedule(10, PunctuationType.STREAM_TIME, lambda now: self.say(f"{self.label}-every@{now}"))
        context.schedule(1, PunctuationType.WALL_CLOCK_TIME, lambda now: self.say(f"{self.label}-wall"))

    def tick(self, now: int) -> None:
        self.ticks += 1
        self.say(f"{self.label}-once@{now}")
        if self.ticks == 2:
            self.once.cancel()

    def say(self, text: str) -> None:
        self.context.forward(Record("k", text, 0), self.prefix + "left")

    def process(self, record: Record) -> None:
        time.sleep(0.003)  # longer than the wall-clock interval: it is due after every record
        self.context.forward(record, self.prefix + record.value)


def _low_level_program(second_ticker: bool):
    t = Topology().add_source("src", "in").add_processor("ticker", _Ticker, "src")
    if second_ticker:
        t.add_processor("ticker2", lambda: _Ticker("u", "u-"), "src")
        t.add_sink("u-left", "out", "ticker2").add_sink("u-right", "other", "ticker2")
    t.add_sink("left", "out", "ticker").add_sink("right", "other", "ticker")
    return compile_topology(t, "app", default_key_serde=Serdes.String(), default_value_serde=Serdes.String()).program(0)


def test_low_level_forward_to_named_child_stream_and_wall_clock_punctuation_and_cancel():
    program = _low_level_program(second_ticker=False)
    out, _ = program.process_task_batch(task_frame([("a", "left", 5), ("b", "right", 12), ("c", "left", 31)]), None)
    out = out.sort_values("emit_order", kind="stable")
    got = [(topic, value.decode()) for topic, value in zip(out["topic"], out["value"])]
    assert got == [
        ("out", "left"), ("out", "t-once@5"), ("out", "t-every@5"), ("out", "t-wall"),
        ("other", "right"), ("out", "t-once@12"), ("out", "t-every@12"), ("out", "t-wall"),
        ("out", "left"), ("out", "t-every@31"), ("out", "t-wall"),  # once: cancelled after two; 20, 30 skipped
    ]


def test_punctuators_of_several_processors_fire_in_due_order_across_them():
    program = _low_level_program(second_ticker=True)
    out, stored = program.process_task_batch(task_frame([("a", "left", 5)]), None)
    values = [v.decode() for v in out.sort_values("emit_order", kind="stable")["value"] if b"wall" not in v]
    assert values == ["left", "left", "t-once@5", "t-every@5", "u-once@5", "u-every@5"]
    out, _ = program.process_task_batch(task_frame([("b", "right", 27)], 1), stored)
    values = [v.decode() for v in out.sort_values("emit_order", kind="stable")["value"] if b"wall" not in v]
    # due at 10 (saved across the batch): ticker's two, then ticker2's two
    assert values == ["right", "right", "t-once@27", "t-every@27", "u-once@27", "u-every@27"]


def test_a_schedule_cancelled_in_one_batch_stays_cancelled_in_the_next():
    program = _low_level_program(second_ticker=False)
    _, stored = program.process_task_batch(task_frame([("a", "left", 5), ("b", "left", 12)]), None)  # "once" ticks twice
    out, _ = program.process_task_batch(task_frame([("c", "left", 35)], 2), stored)
    values = [v.decode() for v in out.sort_values("emit_order", kind="stable")["value"] if b"wall" not in v]
    assert values == ["left", "t-every@35"]


class _ForwardsInInit(Processor):
    def init(self, context) -> None:
        context.forward(Record("k", "v", 0))

    def process(self, record: Record) -> None:
        pass


def test_forward_outside_process_and_punctuators_fails_naming_the_processor():
    builder = StreamsBuilder()
    builder.stream("in").process(_ForwardsInInit).to("out")
    program = compile_topology(builder, "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    with pytest.raises(Exception, match="KSTREAM-PROCESSOR-0000000001: forward.. was called outside process"):
        program.process_task_batch(task_frame([("a", "v", 1)]), None)


def test_user_store_content_reads_key_value_and_window_stores_from_a_task_state():
    program = compile_topology(processor_api_examples(EXAMPLE_TOPICS), "app",
                               default_key_serde=Serdes.String(), default_value_serde=Serdes.String()).program(0)
    _, stored = program.process_task_batch(task_frame([("a1", "x", 1000), ("a2", "y", 26_000), ("a1", "z", 27_000)]), None)
    assert user_store_content(program, stored, "seen") == {"a1": "z", "a2": "y"}
    # retention 20 s after the largest start (25000): the window at 0 is gone
    assert user_store_content(program, stored, "recent") == {
        Windowed("a2", Window(25_000, 30_000)): "y", Windowed("a1", Window(25_000, 30_000)): "z"}
    assert user_store_content(program, None, "recent-memory") == {}


class _TaskIdInInit(Processor):
    def init(self, context) -> None:
        self.context, self.task = context, context.task_id()

    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(str(self.task)))


def test_the_task_id_is_known_in_init():
    builder = StreamsBuilder()
    builder.stream("in").process(_TaskIdInInit).to("out")
    program = compile_topology(builder, "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    frame = task_frame([("a", "v", 1)]).assign(partition=[3])
    out, _ = program.process_task_batch(frame, None)
    assert list(out["value"]) == [b"0_3"]
