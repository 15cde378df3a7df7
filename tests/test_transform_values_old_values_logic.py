"""A re-grouping of a ``transform_values`` without a store of its own, without Spark: each update's old
value is the transformer's result on the old value of the table behind, called after the new value's
on the same instance (Kafka Streams 4.3.1's ``KTableTransformValuesProcessor`` with ``sendOldValues``),
checked on the repartition records the re-grouping writes, against a model of that processor, batch by
batch (the task state pickled in between, as a checkpoint would). The broker-backed comparison with
Kafka Streams is test_equivalence_kstreams_table_scenarios.py (``out-prices-recounted``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.changes import ChangedSerde
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import (
    BufferConfig, Grouped, Materialized, Named, StreamsBuilder, Suppressed, ValueTransformerWithKey,
)
from dagster_kstreams.topology.serdes import Serdes

from task_frames import batched_outputs, decoded, refusal, task_frame


class _CallCounter(ValueTransformerWithKey):
    """The value (None: "null"), "#" and how many times this instance was called, "@" the context's time."""

    def init(self, context) -> None:
        self.context, self.calls = context, 0

    def transform(self, read_only_key, value):
        self.calls += 1
        return f"{'null' if value is None else value}#{self.calls}@{self.context.timestamp()}"


def _regrouped(filtered: bool = False) -> StreamsBuilder:
    """The table (through a filter without a store when ``filtered``), its call-counting transform_values
    without a store, re-grouped by key and reduced."""
    builder = StreamsBuilder()
    table = builder.table("in")
    if filtered:
        table = table.filter(lambda key, value: value.startswith("k"))
    table.transform_values(_CallCounter, Named.as_("tv")) \
        .group_by(lambda key, value: (key, value), Grouped.as_("rg")) \
        .reduce(lambda total, value: total + "+" + value, lambda total, value: total + "-" + value) \
        .to_stream().to("out")
    return builder


def _changes(builder, rows, batches: int) -> list[tuple]:
    """``(key, new, old)`` of each repartition record, the rows cut into ``batches`` micro-batches."""
    program = compile_topology(builder, "app", default_key_serde=Serdes.String(), default_value_serde=Serdes.String(),
                               statestore_cache_max_bytes=0).program(0)  # each update forwarded as it comes
    serde = ChangedSerde(Serdes.String())
    changes, stored, size = [], None, max(1, -(-len(rows) // batches))
    for first in range(0, len(rows), size):
        out, stored = program.process_task_batch(task_frame(rows[first:first + size], first), stored)
        if out is not None:
            out = out.sort_values("emit_order", kind="stable")
            for key, value in zip(out["key"], out["value"]):
                change = serde.deserialize(value)
                changes.append((key.decode(), change.new, change.old))
    return changes


def _kafka_streams_changes(rows, batches: int, passes=None) -> list[tuple]:
    """What Kafka Streams' re-grouping map sends for ``rows``: per update, the transformer's new value then
    its old value (the table's previous row, None too), then the subtraction from the old group and the
    addition to the new one (one change when both are the key's own group); an instance per batch here.
    ``passes``: the predicate of a filter before the transform_values, or None."""
    table, changes, size = {}, [], max(1, -(-len(rows) // batches))
    for first in range(0, len(rows), size):
        calls = 0
        for key, value, timestamp in rows[first:first + size]:
            if key is None:
                continue  # a table source drops it
            if passes is not None and value is not None and not passes(value):
                value = None
            old = table.get(key)
            if passes is not None and value is None and old is None:
                continue  # a filter sending old values drops what neither value passes
            new_text = f"{'null' if value is None else value}#{calls + 1}@{timestamp}"
            old_text = f"{'null' if old is None else old}#{calls + 2}@{timestamp}"
            calls += 2
            table[key] = value
            changes.append((key, new_text, old_text))  # one group: the key's, new and old in one record
    return changes


# a tombstone of a row present and of one never written; an out-of-order update; a null key (dropped)
ROWS = [("a", "x", 1000), ("b", "y", 2000), ("a", None, 3000), ("c", None, 2500), (None, "z", 4000),
        ("a", "w", 900), ("b", "y", 5000)]


def test_each_update_sends_the_transformed_old_value_called_after_the_new_one():
    assert _changes(_regrouped(), ROWS, 1) == [
        ("a", "x#1@1000", "null#2@1000"), ("b", "y#3@2000", "null#4@2000"), ("a", "null#5@3000", "x#6@3000"),
        ("c", "null#7@2500", "null#8@2500"), ("a", "w#9@900", "null#10@900"), ("b", "y#11@5000", "y#12@5000")]


_UPDATES = st.lists(st.tuples(st.one_of(st.none(), st.sampled_from("abc")),
                              st.one_of(st.none(), st.sampled_from(["k1", "k2", "r1"])),
                              st.integers(0, 10_000)), max_size=25)


@settings(max_examples=40, deadline=None)
@given(rows=_UPDATES, batches=st.integers(1, 4))
def test_the_changes_are_kafka_streams_batch_by_batch(rows, batches):
    assert _changes(_regrouped(), rows, batches) == _kafka_streams_changes(rows, batches)


@settings(max_examples=40, deadline=None)
@given(rows=_UPDATES, batches=st.integers(1, 4))
def test_behind_a_filter_the_old_value_is_the_filtered_one(rows, batches):
    """A filter without a store sends its parent's old value filtered, and drops an update neither of whose
    values passes (``KTableFilter`` with old values sent): the transformer is not called for it."""
    expected = _kafka_streams_changes(rows, batches, passes=lambda value: value.startswith("k"))
    assert _changes(_regrouped(filtered=True), rows, batches) == expected


def _filtered_after(builder_rows, batches: int) -> list[tuple]:
    """``(key, value)`` out of a filter of the call-counting transform_values of a materialized table."""
    builder = StreamsBuilder()
    builder.table("in", Materialized.as_("in-store")).transform_values(_CallCounter, Named.as_("tv")) \
        .filter(lambda key, value: not value.startswith("x")).to_stream().to("out")
    program = compile_topology(builder, "app", default_key_serde=Serdes.String(), default_value_serde=Serdes.String(),
                               statestore_cache_max_bytes=0).program(0)
    return decoded(batched_outputs(program, builder_rows, batches)[0])


def _kafka_streams_filtered_after(rows, batches: int) -> list[tuple]:
    """``KTableFilter`` with old values sent, after the transform_values: the transformed new value if it
    passes, else a tombstone if the transformed old value passes, else nothing; two calls per update."""
    table, outputs, size = {}, [], max(1, -(-len(rows) // batches))
    for first in range(0, len(rows), size):
        calls = 0
        for key, value, timestamp in rows[first:first + size]:
            if key is None:
                continue
            new = f"{'null' if value is None else value}#{calls + 1}@{timestamp}"
            old = f"{'null' if table.get(key) is None else table[key]}#{calls + 2}@{timestamp}"
            calls += 2
            table[key] = value
            if not new.startswith("x"):
                outputs.append((key, new))
            elif not old.startswith("x"):
                outputs.append((key, None))
    return outputs


_XS = st.lists(st.tuples(st.one_of(st.none(), st.sampled_from("ab")),
                         st.one_of(st.none(), st.sampled_from(["x1", "y1"])), st.integers(0, 10_000)), max_size=25)


@settings(max_examples=40, deadline=None)
@given(rows=_XS, batches=st.integers(1, 4))
def test_a_filter_of_it_drops_what_neither_transformed_value_passes(rows, batches):
    """The filter's constructor asks the transform_values for old values (the table behind is materialized):
    its transformer is called on each old value too, and an update neither of whose results passes goes
    nowhere."""
    assert _filtered_after(rows, batches) == _kafka_streams_filtered_after(rows, batches)


def _mapped_then_regrouped() -> StreamsBuilder:
    builder = StreamsBuilder()
    builder.table("in").transform_values(_CallCounter, Named.as_("tv")).map_values(lambda value: value.upper()) \
        .group_by(lambda key, value: (key, value), Grouped.as_("rg")) \
        .reduce(lambda total, value: total + "+" + value, lambda total, value: total + "-" + value) \
        .to_stream().to("out")
    return builder


@settings(max_examples=40, deadline=None)
@given(rows=_UPDATES, batches=st.integers(1, 4))
def test_a_regrouping_after_a_map_values_of_it_subtracts_the_mapped_transformed_old_value(rows, batches):
    expected = [(key, new.upper(), old.upper()) for key, new, old in _kafka_streams_changes(rows, batches)]
    assert _changes(_mapped_then_regrouped(), rows, batches) == expected


@pytest.mark.parametrize("reader, kind", [
    (lambda table: table.filter(lambda k, v: True, Materialized.as_("kept")), "table_filter"),
    (lambda table: table.map_values(lambda v: v).join(table, lambda a, b: a), "table_map_values"),
    (lambda table: table.map_values(lambda v: v).filter(lambda k, v: True).suppress(
        Suppressed.until_time_limit(timedelta(seconds=1), BufferConfig.unbounded())), "table_map_values"),
    (lambda table: table.left_join(table, lambda a, b: a), "table_table_join"),
    (lambda table: table.suppress(Suppressed.until_time_limit(timedelta(seconds=1), BufferConfig.unbounded())),
     "suppress"),
])
def test_readers_of_its_old_values_but_a_regrouping_stay_refused_naming_them(reader, kind):
    message = refusal(lambda b: reader(b.table("in").transform_values(_CallCounter, Named.as_("tv"))))
    assert f"({kind}) reads the table of processor tv (transform_values)" in message


def test_a_regrouping_of_one_behind_a_table_table_join_is_refused_naming_it():
    """Its old value would be the join's, which the runner reads through the join for joins only."""
    def build(b):
        joined = b.table("in").join(b.table("other"), lambda a, c: a + c)
        joined.transform_values(_CallCounter, Named.as_("tv")).group_by(lambda k, v: (k, v)).count()
    assert "tv (table_transform_values)" in refusal(build)


def test_a_cached_store_of_its_own_regrouped_staysrefusal():
    def build(b):
        b.table("in").transform_values(_CallCounter, Materialized.as_("own"), Named.as_("tv")) \
            .group_by(lambda k, v: (k, v), Grouped.as_("rg")).count()
    assert "re-groups the table of processor tv (transform_values), which keeps its results in a cached store" \
        in refusal(build)
