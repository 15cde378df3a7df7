"""A user processor on a DSL operation's key-value store, without Spark: ``ValueAndTimestamp``, the
count going on from what the processor wrote (and its timestamps: Kafka Streams' larger of the
record's and the stored one), batches with the task state pickled in between (as a checkpoint),
a cached table forwarding a processor's write at the flush, a table filter's store after an
aggregation or a suppression stamped as Kafka Streams stamps it, table-table joins' stores and a join's filter's stamped
with both rows' times, and what is refused. The broker-backed
comparison with Kafka Streams is test_equivalence_dsl_store_processor.py."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dsl_store_processor_topology import dsl_store_processor_examples  # noqa: E402
from task_frames import task_frame  # noqa: E402

from dagster_kstreams.processors.task_state import TaskState  # noqa: E402
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology  # noqa: E402
from dagster_kstreams.topology import (  # noqa: E402
    BufferConfig, Materialized, StreamsBuilder, Suppressed, ValueAndTimestamp,
)
from dagster_kstreams.topology.processor_api import Processor, Record, Stores  # noqa: E402
from dagster_kstreams.topology.serdes import Serdes  # noqa: E402


def test_value_and_timestamp_is_kafka_streams_one():
    assert ValueAndTimestamp.make(None, 5) is None
    stored = ValueAndTimestamp.make("v", 5)
    assert (stored.value(), stored.timestamp()) == ("v", 5) and repr(stored) == "<v,5>"
    assert stored == ValueAndTimestamp.make("v", 5) and hash(stored) == hash(ValueAndTimestamp.make("v", 5))
    assert stored != ValueAndTimestamp.make("v", 6) and stored != ValueAndTimestamp.make("w", 5) and stored != "v"
    assert ValueAndTimestamp.get_value_or_null(stored) == "v" and ValueAndTimestamp.get_value_or_null(None) is None
    assert ValueAndTimestamp(None, 1).value() is None  # Kafka Streams' makeAllowNullable: a put of it deletes


def _program(builder, subtopology=0):
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(subtopology)


def _run(program, rows, batches):
    outputs, stored, size = [], None, -(-len(rows) // batches)
    for first in range(0, len(rows), size):
        out, stored = program.process_task_batch(task_frame(rows[first:first + size], first), stored)
        if out is not None:
            out = out.sort_values("emit_order", kind="stable")
            outputs += [(k.decode(), v.decode()) for k, v in zip(out["key"], out["value"])]
    return outputs, stored


TOPICS = {"events": "in", "prices": "prices", "orders": "orders", "out": "out", "out-prices": "out-prices",
          **{name: name for name in ("items", "accounts", "clicks", "views", "lefts", "rights", "wins", "slides",
                                     "sessions", "out-tables", "owners", "pets")}}
COUNTS = 11  # the count's sub-topology (the owners', windowed, session, table step, join and re-grouping stores' first)
K = "000000000000|a"  # bucket 0
ROWS = [(K, "x", 100), (K, "x", 50), (K, "x", 300), (K, None, 310), (K, "x", 20), (K, "x", 400), (K, "x", 500),
        (K, "x", 600), (None, "x", 650), ("000000000001|a", "x", 10_000), (K, "x", 10_001)]


def test_the_count_goes_on_from_what_the_processor_wrote_with_kafka_streams_timestamps():
    """3 becomes 10 stamped 307; a record stamped 20 counts 11 at 307 (the larger); 13 is deleted and
    the next record starts at 1 with its own timestamp; stream time 10000 closes bucket 0."""
    outputs, _ = _run(_program(dsl_store_processor_examples(TOPICS), COUNTS), ROWS, 1)
    assert [value for _, value in outputs] == [
        "p0|count|1|t100|1@100", "p0|count|2|t100|2@100", "p0|count|3|t300|3@300", "p0|count|11|t307|11@307",
        "p0|count|12|t400|12@400", "p0|count|13|t500|13@500", "p0|deleted|13@500", "p0|count|1|t600|1@600",
        "p0|count|1|t10000|1@10000", "p0|closed|1@600", "p0|count|1|t10001|1@10001",
    ]


@pytest.mark.parametrize("batches", [2, 4, 11])
def test_batches_with_the_task_state_in_between_give_the_one_batch_result(batches):
    program = _program(dsl_store_processor_examples(TOPICS), COUNTS)
    one, stored_once = _run(program, ROWS, 1)
    many, stored = _run(program, ROWS, batches)
    assert many == one
    # the same counts and timestamps left in the task's state
    assert TaskState.store_content(stored, 0) == TaskState.store_content(stored_once, 0) == {
        b"000000000000|a": 1, b"000000000001|a": 1}
    assert TaskState.load(stored, 1).values["dsl.timestamps.counts"] == {
        b"000000000000|a": 10_001, b"000000000001|a": 10_000}


class _Trimmer(Processor):
    """Keeps the last two values of an aggregate's list; changes the list it read, which must not
    reach the store (a read is a copy, as Kafka Streams deserializes one)."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("seen")

    def process(self, record: Record) -> None:
        stored = self.store.get(record.key)
        stored.value().append("not stored")
        if len(record.value) > 2:
            self.store.put(record.key, ValueAndTimestamp.make(record.value[-2:], stored.timestamp()))
        self.context.forward(record.with_value(f"{record.value}@{record.timestamp}"))


def test_an_aggregate_goes_on_from_the_processor_write_and_reads_are_copies():
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().aggregate(
        list, lambda key, value, values: values + [value],
        Materialized.as_("seen").with_value_serde(Serdes.Json()).with_caching_disabled(),
    ).to_stream().process(_Trimmer, "seen").to("out")
    program = _program(builder)
    outputs, _ = _run(program, [("k", "a", 5), ("k", "b", 3), ("k", "c", 9), ("k", "d", 1)], 1)
    assert outputs == [("k", "['a']@5"), ("k", "['a', 'b']@5"), ("k", "['a', 'b', 'c']@9"), ("k", "['b', 'c', 'd']@9")]


class _Writer(Processor):
    """Puts each record's value into the table's store, stamped 1 ms after it; deletes on "del"."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("t-store")

    def process(self, record: Record) -> None:
        value = None if record.value == "del" else record.value
        self.store.put(record.key, ValueAndTimestamp.make(value, record.timestamp + 1))


class _Stamp(Processor):
    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(f"{record.value}|t{record.timestamp}"))


def test_a_cached_table_forwards_a_processor_write_at_the_flush_as_its_own_update():
    """Kafka Streams' cache flush listener forwards whatever wrote the cached store, with the
    written timestamp (a delete: the record's); a key written and deleted between two flushes
    forwards nothing."""
    builder = StreamsBuilder()
    table = builder.table("t", Materialized.as_("t-store"))
    table.to_stream().process(_Stamp).to("t-out")
    builder.stream("s").process(_Writer, "t-store")
    program = _program(builder)

    def run(rows, first, stored):
        out, stored = program.process_task_batch(task_frame(rows, first), stored)
        out = out.sort_values("emit_order", kind="stable")
        return [(k.decode(), v.decode()) for k, v in zip(out["key"], out["value"])], stored

    flushed, stored = run([("a", "1", 10, "t"), ("a", "2", 20, "s"), ("b", "3", 30, "s"), ("b", "del", 40, "s"),
                           ("c", "4", 50, "t")], 0, None)
    assert flushed == [("a", "2|t21"), ("c", "4|t50")]
    flushed, _ = run([("c", "del", 60, "s"), ("a", "5", 70, "s")], 5, stored)
    assert flushed == [("c", "None|t60"), ("a", "5|t71")]


class _Nothing(Processor):
    def process(self, record: Record) -> None:
        pass


class _WritesInInit(Processor):
    def init(self, context) -> None:
        context.get_state_store("counts").put("k", ValueAndTimestamp.make(1, 1))

    def process(self, record: Record) -> None:
        pass


class _Reader(Processor):
    """Forwards each update with what the store ``kept`` holds for its key."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("kept")

    def process(self, record: Record) -> None:
        stored = self.store.get(record.key)
        stored_text = f"{stored.value()}@{stored.timestamp()}"
        self.context.forward(record.with_value(f"{record.value}|t{record.timestamp}|{stored_text}"))


def test_a_filter_store_after_an_aggregation_keeps_kafka_streams_stamps():
    """The count whose store no processor names keeps its timestamps for the filter whose store a processor reads: its
    update of an out-of-order record is stamped with the larger, stored, time, as the filter's store."""
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().count(Materialized.as_("counted").with_caching_disabled()) \
        .filter(lambda key, count: True, Materialized.as_("kept").with_caching_disabled()) \
        .to_stream().process(_Reader, "kept").to("out")
    outputs, _ = _run(_program(builder), [("k", "a", 100), ("k", "b", 50), ("k", "c", 120)], 1)
    assert [value for _, value in outputs] == ["1|t100|1@100", "2|t100|2@100", "3|t120|3@120"]


def test_a_filter_store_after_a_suppression_stamps_each_evicted_update_with_its_own_time():
    """Kafka Streams' suppression forwards an evicted update with its buffered record's time: "b" at 50,
    after "a" at 100, is evicted by "c" at 250 (buffer time 100, kept by the key's later update) and
    stored at 50; a tombstone overwritten in the buffer is never forwarded; one evicted deletes the
    key, whatever the processor wrote (a filter failing a value forwards its delete too)."""
    builder = StreamsBuilder()
    builder.table("in", Materialized.as_("in-store").with_caching_disabled()) \
        .suppress(Suppressed.until_time_limit(timedelta(milliseconds=100), BufferConfig.unbounded())) \
        .filter(lambda key, value: not value.startswith("x"), Materialized.as_("kept").with_caching_disabled()) \
        .to_stream().process(lambda: _JoinEditor("kept"), "kept").to("out")
    rows = [("k", "a", 100), ("k", "b", 50), ("j", "c", 250), ("k", None, 400), ("k", "x1", 600), ("j", None, 700),
            ("m", "z", 900)]
    outputs, _ = _run(_program(builder), rows, 1)
    assert outputs == [("k", "b|t50|b@50"), ("j", "c|t250|c@250"), ("k", "None|t600|null"), ("j", "None|t700|null")]


class _JoinEditor(Processor):
    """Forwards each update of the join with what ``store`` holds for its key; puts ``edited`` stamped 1 ms
    later on an update at an even time."""

    def __init__(self, store: str) -> None:
        self.store_name = store

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store(self.store_name)

    def process(self, record: Record) -> None:
        stored = self.store.get(record.key)
        stored_text = "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"
        self.context.forward(record.with_value(f"{record.value}|t{record.timestamp}|{stored_text}"))
        if record.timestamp % 2 == 0:
            self.store.put(record.key, ValueAndTimestamp.make("edited", record.timestamp + 1))


def _joins(join: str, step=None):
    builder = StreamsBuilder()
    left = builder.table("l", Materialized.as_("l-store").with_caching_disabled())
    right = builder.table("r", Materialized.as_("r-store").with_caching_disabled())
    joined = getattr(left, join)(right, lambda a, b: f"{a}+{b}", Materialized.as_("joined").with_caching_disabled())
    store = "joined"
    if step is not None:
        joined, store = step(joined), "stepped"
    joined.to_stream().process(lambda: _JoinEditor(store), store).to("out")
    return builder


JOIN_ROWS = [("k", "a", 101, "l"), ("k", "b", 200, "r"), ("k", "c", 151, "l"), ("k", None, 300, "r"),
             ("k", "d", 301, "r"), ("k", None, 303, "l"), ("k", None, 401, "r")]


@pytest.mark.parametrize("join, expected", [
    ("join", ["a+b|t200|a+b@200", "c+b|t200|c+b@200", "None|t300|null", "c+d|t301|c+d@301", "None|t303|null"]),
    ("left_join", ["a+None|t101|a+None@101", "a+b|t200|a+b@200", "c+b|t200|c+b@200", "c+None|t300|c+None@300",
                   "c+d|t301|c+d@301", "None|t303|null"]),
    ("outer_join", ["a+None|t101|a+None@101", "a+b|t200|a+b@200", "c+b|t200|c+b@200", "c+None|t300|c+None@300",
                    "c+d|t301|c+d@301", "None+d|t303|None+d@303", "None|t401|null"]),
])
def test_a_join_store_reads_the_join_stamps_and_its_next_update_overwrites_a_write(join, expected):
    """Kafka Streams stamps a join's update with the larger of both rows' times (c at 151 joins b of 200:
    200), puts it into the store whatever the processor wrote there (the edit at 200 is gone by the next
    update), and deletes on its tombstones."""
    outputs, stored = _run(_program(_joins(join)), JOIN_ROWS, 1)
    assert [value for _, value in outputs] == expected
    many, _ = _run(_program(_joins(join)), JOIN_ROWS, 3)  # the timestamps kept across batches too
    assert many == outputs


def test_an_inner_join_store_keeps_a_write_no_update_of_the_key_overwrites():
    """The processor writes on the join's tombstone (at 300); the left tombstone, while the right table
    has no row, forwards nothing: the write stays."""
    rows = [("k", "a", 100, "l"), ("k", "b", 201, "r"), ("k", None, 300, "r"), ("k", None, 401, "l")]
    program = _program(_joins("join"))
    _, stored = _run(program, rows, 1)
    assert TaskState.store_content(stored, program.store_slots["joined"]) == {b"k": "edited"}


def test_a_filter_of_a_join_stores_the_join_stamps_and_reads_its_own_store():
    """The filter (it sends old values: a join's table does) keeps the join's stamps; after the processor
    put "edited" at 200 (c+b at 200 fails the filter), its store still holds a value, so the update is
    forwarded as a delete, not dropped."""
    def step(joined):
        return joined.filter(lambda key, value: not value.startswith("c"),
                             Materialized.as_("stepped").with_caching_disabled())
    outputs, _ = _run(_program(_joins("left_join", step)), JOIN_ROWS, 1)
    assert [value for _, value in outputs] == [
        "a+None|t101|a+None@101", "a+b|t200|a+b@200", "None|t200|null", "None|t300|null", "None|t301|null",
    ]


def test_a_filter_store_of_a_versioned_table_takes_an_out_of_order_update_as_latest_at_its_time():
    """Kafka Streams' ``KTableFilter`` puts every update of a versioned table into its plain store at the
    update's time, an out-of-order one (forwarded marked not latest) as the key's latest: the processor
    reads "b" at 50 after "a" at 100, while the table's current value stays "a"; then "c" at 120."""
    builder = StreamsBuilder()
    builder.table("in", Materialized.as_(Stores.persistent_versioned_key_value_store("v", timedelta(minutes=1)))) \
        .filter(lambda key, value: not value.startswith("x"), Materialized.as_("kept").with_caching_disabled()) \
        .to_stream().process(_Reader, "kept").to("out")
    outputs, _ = _run(_program(builder), [("k", "a", 100), ("k", "b", 50), ("k", "c", 120)], 1)
    assert [value for _, value in outputs] == ["a|t100|a@100", "b|t50|b@50", "c|t120|c@120"]


def test_a_store_a_join_reads_too_is_its_writer_s():
    """A table-table join and a stream-table join name the filter's store to read it (its value getter):
    the filter writes it, and the processor gets it."""
    builder = StreamsBuilder()
    kept = builder.table("in", Materialized.as_("in-store").with_caching_disabled()) \
        .filter(lambda key, value: True, Materialized.as_("kept").with_caching_disabled())
    builder.table("other").left_join(kept, lambda value, other: f"{value}<{other}").to_stream().to("joined")
    builder.stream("orders").join(kept, lambda order, value: f"{order}@{value}").to("read")
    kept.to_stream().process(_Reader, "kept").to("out")
    outputs, _ = _run(_program(builder), [("k", "a", 100), ("k", "b", 50)], 1)
    assert [value for key, value in outputs if "|" in value] == ["a|t100|a@100", "b|t50|b@50"]


@pytest.mark.parametrize("side", ["left", "foreign"])
def test_a_store_a_foreign_key_join_reads_too_is_its_writer_s(side):
    """A foreign-key join names its tables' stores to read them: the left table's (its response join) and the
    foreign one's (its subscription join, in the foreign table's sub-topology, fed by the subscriptions'
    repartition topic). The table source writes it, and the processor gets it."""
    builder = StreamsBuilder()
    tables = {name: builder.table(topic, Materialized.as_("kept" if name == side else f"{name}-store")
                                  .with_caching_disabled()) for name, topic in (("left", "in"), ("foreign", "f"))}
    tables["left"].join(tables["foreign"], lambda value: value, lambda value, other: f"{value}>{other}") \
        .to_stream().to("joined")
    tables[side].to_stream().process(_Reader, "kept").to("out")
    compiled = compile_topology(builder, "app", default_key_serde=Serdes.String(), default_value_serde=Serdes.String())
    (subtopology,) = [sub for sub in compiled.application.subtopology_ids
                      if any("kept" in node.stores and node.kind.value.startswith("fk_")
                             for node in compiled.topology.subtopology(sub).nodes)]
    program = compiled.program(subtopology)
    topic = "in" if side == "left" else "f"
    out, _ = program.process_task_batch(task_frame([("k", "a", 100, topic), ("k", "b", 50, topic)]), None)
    out = out[out["topic"] == "out"].sort_values("emit_order", kind="stable")  # beside the join's subscriptions
    assert [value.decode() for value in out["value"]] == ["a|t100|a@100", "b|t50|b@50"]


def test_stores_the_runner_keeps_without_timestamps_are_refused_naming_them():
    # (the window stores still refused: test_dsl_window_store_processor_logic.py; the stores keyed by windows:
    # test_dsl_windowed_key_store_logic.py)
    builder = StreamsBuilder()
    builder.table("l").join(builder.table("r"), lambda value: value, lambda value, other: value + other,
                            Materialized.as_("joined")).to_stream().process(_Nothing, "joined")
    with pytest.raises(UnsupportedTopologyError, match="store joined belongs to KTABLE-FK-JOIN-OUTPUT-.*without the timestamps"):
        _program(builder)


def test_a_foreign_key_join_s_subscription_store_is_refused_naming_its_writer():
    """The subscriptions' store (its receiving processor writes it, the foreign table's join reads it) is kept in
    a form of the runner's own: still refused, naming the processor that writes it."""
    builder = StreamsBuilder()
    foreign = builder.table("f", Materialized.as_("foreign-store"))
    builder.table("in").join(foreign, lambda value: value, lambda value, other: value + other).to_stream().to("j")
    subscriptions = "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000009"
    foreign.to_stream().process(_Nothing, subscriptions)
    with pytest.raises(UnsupportedTopologyError, match=f"store {subscriptions} belongs to "
                       "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000010 \\(fk_subscription_receive\\)"):
        compile_topology(builder, "app").check()


def test_a_write_in_init_fails_naming_the_processor():
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().count(Materialized.as_("counts")).to_stream().process(_WritesInInit, "counts")
    with pytest.raises(Exception, match="KSTREAM-PROCESSOR-0000000003: a DSL store was written in init"):
        _program(builder).process_task_batch(task_frame([("a", "v", 1)]), None)
