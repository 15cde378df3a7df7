"""``KTable.transform_values`` without Spark: its overloads' arguments, the runner's program batch by
batch (the task state pickled in between, as a checkpoint would), a transformer's store and its
refused forward, and what the runner refuses when the topology is defined. The broker-backed
comparison with Kafka Streams is test_equivalence_kstreams_table_scenarios.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dagster_kstreams.processors.user_processors import user_store_content
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import (
    BufferConfig, Materialized, Named, StreamsBuilder, Suppressed, TimeWindows, TopologyException, ValueTransformerWithKey,
)
from dagster_kstreams.topology.processor_api import Processor, PunctuationType, Stores
from dagster_kstreams.topology.serdes import Serdes
from dagster_kstreams.topology.value_transformer import transform_values_arguments

from task_frames import batched_outputs, decoded, refusal, task_frame


class _Counting(ValueTransformerWithKey):
    """The value (a tombstone's too) and how many updates of its key the store ``seen`` has counted."""

    def init(self, context) -> None:
        self.context, self.seen = context, context.get_state_store("seen")

    def transform(self, read_only_key, value):
        count = (self.seen.get(read_only_key) or 0) + 1
        self.seen.put(read_only_key, count)
        return f"{value}#{count}@{self.context.timestamp()}"


class _Punctuated(ValueTransformerWithKey):
    """The value, and the time and ``context.timestamp()`` its last stream-time punctuation saw."""

    def init(self, context) -> None:
        self.context, self.seen = context, context.get_state_store("seen")
        context.schedule(1000, PunctuationType.STREAM_TIME, self.mark)

    def mark(self, now: int) -> None:
        self.seen.put("now", now)
        self.seen.put("context", self.context.timestamp())

    def transform(self, read_only_key, value):
        return f"{value}@{self.seen.get('now')}={self.seen.get('context')}"


class _Forwarding(ValueTransformerWithKey):
    def transform(self, read_only_key, value):
        self.context.forward(None)


class _Same(ValueTransformerWithKey):
    def transform(self, read_only_key, value):
        return value


class _Reader(Processor):
    def process(self, record) -> None:
        pass


def _builder(transformer=_Counting) -> StreamsBuilder:
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("seen"),
                                                           Serdes.String(), Serdes.Long()))
    builder.table("in").transform_values(transformer, "seen").to_stream().to("out")
    return builder


def _program(builder):
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _run(rows, batches, builder=None):
    program = _program(builder or _builder())
    outputs, _ = batched_outputs(program, rows, batches)
    return decoded(outputs)


# a tombstone of a row present and of one never written; an out-of-order update; a null key (dropped)
ROWS = [("a", "x", 1000), ("b", "y", 2000), ("a", None, 3000), ("c", None, 2500), (None, "z", 4000),
        ("a", "w", 900), ("b", "y", 5000)]


def test_each_update_goes_through_the_transformer_tombstones_too_with_its_stores():
    assert _run(ROWS, 1) == [("a", "x#1@1000"), ("b", "y#1@2000"), ("a", "None#2@3000"), ("c", "None#1@2500"),
                             ("a", "w#3@900"), ("b", "y#2@5000")]


@pytest.mark.parametrize("batches", [2, 3, 7])
def test_batches_with_the_task_state_in_between_give_the_one_batch_result(batches):
    assert _run(ROWS, batches) == _run(ROWS, 1)


def test_a_punctuators_context_timestamp_is_the_punctuations_time():
    """Kafka Streams gives a punctuation a record context with the punctuation's time
    (``StreamTask.punctuate``), so ``context.timestamp()`` in a punctuator is that time."""
    outputs = _run([("a", "x", 1000), ("b", "y", 2500), ("a", "z", 4200)], 1, _builder(_Punctuated))
    assert [key for key, _ in outputs] == ["a", "b", "a"]
    marks = [value.split("@")[1] for _, value in outputs[1:]]
    assert all(now == context != "None" for now, context in (mark.split("=") for mark in marks))


def test_a_transformer_that_forwards_fails_naming_the_processor():
    with pytest.raises(Exception, match="KTABLE-TRANSFORMVALUES-0000000003: ProcessorContext#forward"):
        _run(ROWS, 1, _builder(_Forwarding))


@given(materialized=st.booleans(), named=st.booleans(),
       stores=st.lists(st.text(min_size=1, max_size=5), max_size=3))
def test_the_overloads_arguments_are_read_in_kafka_streams_order(materialized, named, stores):
    given_materialized = Materialized.as_("own") if materialized else None
    given_named = Named.as_("step") if named else None
    args = [arg for arg in (given_materialized, given_named) if arg is not None] + stores
    assert transform_values_arguments(args, "op") == (given_materialized, given_named, tuple(stores))


@pytest.mark.parametrize("args", [(Named.as_("n"), Materialized.as_("m")), ("s", Named.as_("n")), ("",), (3,)])
def test_arguments_out_of_kafka_streams_order_arerefusal(args):
    with pytest.raises(TypeError, match="KTable.transform_values"):
        StreamsBuilder().table("in").transform_values(_Same, *args)


def test_a_supplier_returning_one_instance_isrefusal():
    singleton = _Same()
    with pytest.raises(TopologyException, match="same ValueTransformerWithKey instance twice"):
        StreamsBuilder().table("in").transform_values(lambda: singleton)


def _kept_builder(materialized) -> StreamsBuilder:
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("seen"),
                                                           Serdes.String(), Serdes.Long()))
    builder.table("in").transform_values(_Counting, materialized, "seen").to_stream().to("out")
    return builder


def _kept(rows, batches) -> tuple[list, dict]:
    """The outputs of the counting transformer keeping its results in the uncached store ``own``, and
    that store's content after the last batch (as an interactive query reads it)."""
    program = _program(_kept_builder(Materialized.as_("own").with_caching_disabled()))
    outputs, stored = batched_outputs(program, rows, batches)
    return decoded(outputs), user_store_content(program, stored, "own")


@pytest.mark.parametrize("batches", [1, 2, 3, 7])
def test_a_store_of_its_own_holds_each_keys_last_result_and_forwards_as_without_one(batches):
    outputs, content = _kept(ROWS, batches)
    assert outputs == _run(ROWS, 1)
    last = {}
    for key, value in outputs:
        last[key] = value  # a transformer's result is never None here: "None#2@3000" for a's tombstone
    assert content == last


class _Deleting(ValueTransformerWithKey):
    """A tombstone stays one: the store's key is deleted (a put of a null value)."""

    def transform(self, read_only_key, value):
        return None if value is None else value.upper()


def _deleting_builder(materialized) -> StreamsBuilder:
    builder = StreamsBuilder()
    builder.table("in").transform_values(_Deleting, materialized).to_stream().to("out")
    return builder


def test_a_null_result_deletes_the_key_from_its_own_store():
    program = _program(_deleting_builder(Materialized.as_("own").with_caching_disabled()))
    _, stored = program.process_task_batch(task_frame(ROWS[:4], 0), None)  # up to c's tombstone
    assert user_store_content(program, stored, "own") == {"b": "Y"}  # a deleted, c never stored


_UPDATES = st.lists(st.tuples(st.sampled_from("abc"), st.one_of(st.none(), st.sampled_from(["x", "y"])),
                              st.integers(0, 5_000)), max_size=25)


@given(rows=_UPDATES, batches=st.integers(1, 4))
def test_its_own_store_holds_each_keys_last_result_a_none_deleting_it(rows, batches):
    """Whatever the updates and their batches: the output is the one without a store, and the store
    holds each key's last result (a None result deletes the key, as a put of a null value)."""
    program = _program(_deleting_builder(Materialized.as_("own").with_caching_disabled()))
    outputs, stored = batched_outputs(program, rows, batches)
    outputs = decoded(outputs)
    assert outputs == [(key, None if value is None else value.upper()) for key, value, _ in rows]
    last = {}
    for key, value in outputs:
        last[key] = value
    assert user_store_content(program, stored, "own") == {k: v for k, v in last.items() if v is not None}


def test_a_regrouping_of_it_gets_its_stores_value_before_each_update_as_the_old_value():
    """The repartition records carry each update's new value and, after the first of a key, the
    store's previous one (what the re-grouping subtracts), even where the key's source row was deleted."""
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("seen"),
                                                           Serdes.String(), Serdes.Long()))
    builder.table("in").transform_values(_Counting, Materialized.as_("own").with_caching_disabled(), "seen") \
        .group_by(lambda key, value: (key, value.split("@")[0])) \
        .reduce(lambda total, value: total + "+" + value, lambda total, value: total + "-" + value) \
        .to_stream().to("out")
    out, _ = _program(builder).process_task_batch(task_frame(ROWS, 0), None)
    values = list(out.sort_values("emit_order", kind="stable")["value"])
    news_and_olds = [("x#1", None), ("y#1", None), ("None#2", "x#1"), ("None#1", None), ("w#3", "None#2"),
                     ("y#2", "y#1")]
    assert len(values) == len(news_and_olds)
    for value, (new, old) in zip(values, news_and_olds):
        assert new.encode() in value and (old is None or value.endswith(b"\x02") and old.encode() in value)
        assert old is not None or value.endswith(b"\x01")


def test_a_versioned_store_of_its_own_is_refused_naming_the_processor():
    versioned = Materialized.as_(Stores.persistent_versioned_key_value_store("own", timedelta(seconds=10)))
    message = refusal(lambda b: b.table("in").transform_values(_Same, versioned, Named.as_("tv"))
                       .to_stream().to("out"))
    assert message.startswith("processor tv (transform_values) keeps its results in a versioned store (own)")


def test_a_transformer_asking_for_its_own_store_fails_naming_the_processor():
    class _Peeking(ValueTransformerWithKey):
        def init(self, context) -> None:
            context.get_state_store("own")

    builder = StreamsBuilder()
    builder.table("in").transform_values(_Peeking, Materialized.as_("own").with_caching_disabled()).to_stream().to("out")
    with pytest.raises(Exception, match="KTABLE-TRANSFORMVALUES-0000000003: the transformer asked for own"):
        _program(builder).process_task_batch(task_frame(ROWS, 0), None)


def test_a_processor_naming_its_own_store_is_refused_naming_the_processor():
    def build(b):
        b.table("in").transform_values(_Same, Materialized.as_("own").with_caching_disabled(), Named.as_("tv")) \
            .to_stream().process(_Reader, "own").to("out")
    message = refusal(build)
    assert "store own belongs to tv (table_transform_values)" in message


@pytest.mark.parametrize("reader, kind", [
    (lambda table: table.filter(lambda k, v: True, Materialized.as_("kept")), "table_filter"),
    (lambda table: table.map_values(lambda v: v).join(table, lambda a, b: a), "table_map_values"),
    (lambda table: table.transform_values(_Same), "table_transform_values"),
    (lambda table: table.left_join(table, lambda a, b: a), "table_table_join"),
    (lambda table: table.suppress(Suppressed.until_time_limit(timedelta(seconds=1), BufferConfig.unbounded())), "suppress"),
])
def test_a_reader_other_than_to_stream_is_refused_naming_it(reader, kind):
    def build(b):
        reader(b.table("in").transform_values(_Same, Named.as_("tv")))
    message = refusal(build)
    assert f"({kind}) reads the table of processor tv (transform_values)" in message


def test_a_stream_joined_with_one_with_a_store_of_its_own_is_refused_naming_the_join():
    """Without a store a stream-table join reads it through its value getter (test_transform_values_getter_logic.py)."""
    def build(b):
        table = b.table("in").transform_values(_Same, Materialized.as_("own").with_caching_disabled(), Named.as_("tv"))
        b.stream("clicks").join(table, lambda a, b: a).to("out")
    message = refusal(build)
    assert message.startswith("processor KSTREAM-JOIN-") and "tv (table_transform_values)" in message


def test_a_dsl_operations_store_named_isrefusal():
    message = refusal(lambda b: b.table("in", Materialized.as_("in-store")).transform_values(
        _Same, Named.as_("tv"), "in-store").to_stream().to("out"))
    assert message.startswith("processor tv (transform_values) names the store in-store of a DSL operation")


def test_a_windowed_table_behind_isrefusal():
    def build(b):
        b.stream("in").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=1))).count() \
            .transform_values(_Same, Named.as_("tv")).to_stream().to("out")
    assert refusal(build).startswith("processor tv (transform_values) transforms the updates of")
