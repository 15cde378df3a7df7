"""A table's ``filter`` without Spark, against a small model of Kafka Streams 4.3.1's ``KTableFilter``
(issue 14; the same rules are compared with Kafka Streams itself in
tests/test_equivalence_chained_joins.py).

``KTableFilterProcessor.process``: ``newValue`` is the new value if it passes, else null;
``oldValue`` the old value if it passes, else null, and only when the filter sends old values;
``if (sendOldValues && oldValue == null && newValue == null) return;`` (unless the table is
versioned), else ``Change(newValue, oldValue)`` is forwarded. The filter's ``sendOldValues`` is
``parent.enableSendingOldValues(false)`` when it is made (on when the table it filters has a store
by then), and turns on when a reader asks (a left join on its side, an outer join, a group_by, a
suppression: ``enableSendingOldValues(true)``, which also gives the table a store).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_chained_table_joins_logic import Change, Join, _join_processor, _joiner
from test_suppress_logic import COUNTS, SECONDS, _long, _run
from test_suppress_logic import _program as _suppress_program
from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.topology import StreamsBuilder, Stores
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.windows import TimeWindows

JOINS = (None, "join", "left_join", "outer_join")


def _kept(key, value) -> bool:
    return int(value[1:]) % 3 != 0


# -- the model ----------------------------------------------------------------------------------
def _filtered(value, negate: bool) -> Optional[str]:
    return value if value is not None and _kept(None, value) != negate else None


def _sends_old_values(source_has_store: bool, join: Optional[str], filter_on_right: bool) -> bool:
    """KTableFilter's flag: asked without forcing when made, then by the join reading it."""
    asked = join == "outer_join" or (join == "left_join" and not filter_on_right)
    return source_has_store or asked


def model_outputs(updates, negate: bool, source_has_store: bool, join: Optional[str], filter_on_right: bool):
    """``(filter's to_stream, join's to_stream)`` new values for one key's ``(table, value)`` updates."""
    send_old = _sends_old_values(source_has_store, join, filter_on_right)
    tree = Join(join, "c", "f", "*") if filter_on_right else Join(join, "f", "c", "*")
    tables: dict = {}
    filtered_out, joined_out = [], []
    for table, value in updates:
        old = tables.get(table)
        tables[table] = value
        if table == "a":
            new_f = _filtered(value, negate)
            old_f = _filtered(old, negate) if send_old else None
            if send_old and new_f is None and old_f is None:
                continue  # KTableFilter forwards nothing
            filtered_out.append(new_f)
            change, from_this, other = Change(new_f, old_f), not filter_on_right, tables.get("c")
        else:
            change, from_this, other = Change(value, old), filter_on_right, _filtered(tables.get("a"), negate)
        if join is not None:
            forwarded = _join_processor(tree, from_this, change, other)
            if forwarded is not None:
                joined_out.append(forwarded.new)
    return filtered_out, joined_out


# -- the runner ---------------------------------------------------------------------------------
def _program(negate: bool, source_has_store: bool, join: Optional[str], filter_on_right: bool,
             materialize_filter: bool):
    builder = StreamsBuilder()
    uncached = Materialized.as_("a-store") if source_has_store else Materialized.with_(Serdes.String(), Serdes.String())
    a = builder.table("a", uncached.with_caching_disabled())
    args = (Materialized.as_("f-store").with_caching_disabled(),) if materialize_filter else ()
    f = a.filter_not(_kept, *args) if negate else a.filter(_kept, *args)
    f.to_stream().to("out-f")
    if join is not None:
        c = builder.table("c", Materialized.as_("c-store").with_caching_disabled())
        joined = getattr(c, join)(f, _joiner("*")) if filter_on_right else getattr(f, join)(c, _joiner("*"))
        joined.to_stream().to("out-j")
    return compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def runner_outputs(program, updates, batches: int = 1):
    records = [(RecordContext(table, 0, offset, timestamp=offset, position=offset), b"k",
                None if value is None else value.encode()) for offset, (table, value) in enumerate(updates)]
    out_f, out_j, stored, size = [], [], None, max(1, -(-len(records) // batches))
    for first in range(0, len(records), size):
        out, stored = program.run_key_group(records[first:first + size], stored)
        for topic, value in zip(out.topic, out.value):
            (out_f if topic == "out-f" else out_j).append(None if value is None else value.decode())
    return out_f, out_j


def test_the_example_by_hand():
    """a's store makes the filter send old values: a3 after a tombstone fails with no old value
    that passes, and nothing reaches to_stream or the outer join; a6 after a3 neither."""
    updates = [("c", "c1"), ("a", "a1"), ("a", "a3"), ("a", None), ("a", "a6"), ("a", "a3"), ("a", "a2")]
    expected = (["a1", None, "a2"], ["(null*c1)", "(a1*c1)", "(null*c1)", "(a2*c1)"])
    assert model_outputs(updates, False, True, "outer_join", False) == expected
    assert runner_outputs(_program(False, True, "outer_join", False, False), updates) == expected


def test_without_old_values_every_update_is_forwarded():
    """No store behind the filter and no reader asking: Kafka Streams forwards a tombstone for each
    update that fails, also after a tombstone (the inner join forwards each one while c has a row)."""
    updates = [("c", "c1"), ("a", "a3"), ("a", "a6"), ("a", None), ("a", "a1")]
    expected = ([None, None, None, "a1"], [None, None, None, "(a1*c1)"])
    assert model_outputs(updates, False, False, "join", False) == expected
    assert runner_outputs(_program(False, False, "join", False, False), updates) == expected


@settings(max_examples=150, deadline=None)
@given(st.tuples(st.booleans(), st.booleans(), st.sampled_from(JOINS), st.booleans(), st.booleans()),
       st.lists(st.tuples(st.sampled_from(("a", "a", "c")), st.one_of(st.none(), st.integers(1, 6))), max_size=25),
       st.integers(1, 4))
def test_the_filter_forwards_what_kafka_streams_forwards(shape, updates, batches):
    negate, source_has_store, join, filter_on_right, materialize_filter = shape
    # a join of a materialized filter of a table with no store reads the filter's store in Kafka
    # Streams, which the runner does not keep: refused (test_a_join_of_a_materialized_filter_...)
    source_has_store = source_has_store or (materialize_filter and join is not None)
    updates = [(table, None if value is None else f"{table}{value}") for table, value in updates]
    if join is None:
        updates = [(table, value) for table, value in updates if table == "a"]
    program = _program(negate, source_has_store, join, filter_on_right, materialize_filter)
    expected = model_outputs(updates, negate, source_has_store, join, filter_on_right)
    assert runner_outputs(program, updates, batches) == expected


def _single_topic_outputs(program, topic: str, records) -> list:
    stored, result = None, []
    for offset, (key, value) in enumerate(records):
        context = RecordContext(topic, 0, offset, timestamp=offset * 1000, position=offset)
        out, stored = program.run_key_group([(context, key, value)], stored)
        result += list(zip(out.key, out.value))
    return result


def test_a_filter_of_a_stream_aggregation_drops_updates_whose_old_count_failed_too():
    """An aggregation always sends old values: counts 1, 2, 3, 4 through ``count % 2 == 0`` forward
    nothing for 1 (no old count), 2, a tombstone for 3 (old 2 passed), 4."""
    builder = StreamsBuilder()
    builder.stream("s").group_by_key().count(Materialized.as_("counts").with_caching_disabled()) \
        .filter(lambda key, count: count % 2 == 0).to_stream().to("out", Produced.with_(Serdes.String(), Serdes.Long()))
    program = compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    out = _single_topic_outputs(program, "s", [(b"k", b"x")] * 4)
    assert [None if value is None else Serdes.Long().deserialize(value) for _, value in out] == [2, None, 4]


def test_a_filter_of_a_windowed_count_reads_the_old_count_its_window_aggregation_sends():
    """Counts 1, 2, 3 of one window through ``count >= 2``: nothing for 1 (no old count), then 2, 3."""
    def build(builder):
        builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10 * SECONDS)) \
            .count(Materialized.as_("counts").with_caching_disabled()) \
            .filter(lambda window, count: count >= 2).to_stream().to("out", COUNTS)
    out = _run(_suppress_program(build), [("a", "x", 1_000), ("a", "y", 2_000), ("a", "z", 3_000)])
    assert [value for _, _, value in out] == [_long(2), _long(3)]


@pytest.mark.parametrize("materialized", [False, True])
def test_the_flag_is_the_filters_when_it_is_made_or_asked(materialized):
    """A filter of a table with no store sends no old values until a join reads it (the flag that
    join turns on is the filter's, so its to_stream, made before the join, drops too)."""
    builder = StreamsBuilder()
    a = builder.table("a", Materialized.with_(Serdes.String(), Serdes.String()).with_caching_disabled())
    args = (Materialized.as_("f-store").with_caching_disabled(),) if materialized else ()
    alone, joined = a.filter_not(_kept, *args), a.filter(_kept, *args)
    assert not alone._node.spec.params["send_old_values"] and not joined._node.spec.params["send_old_values"]
    joined.left_join(builder.table("c", Materialized.as_("c-store")), _joiner("*"))
    assert not alone._node.spec.params["send_old_values"] and joined._node.spec.params["send_old_values"]
    # a has a store now (unless the join reads the filter's own): a filter made after that sends
    # old values from the start
    assert a.filter(_kept)._node.spec.params["send_old_values"] == (not materialized)


def test_a_join_of_a_materialized_filter_of_a_table_without_a_store_is_refused():
    builder = StreamsBuilder()
    a = builder.table("a", Materialized.with_(Serdes.String(), Serdes.String()).with_caching_disabled())
    a.filter(_kept, Materialized.as_("f-store")).left_join(builder.table("c"), _joiner("*")).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="KTABLE-SOURCE"):
        compile_topology(builder.build(), "app").program(0)


def test_a_filter_of_a_versioned_table_forwards_every_update_that_fails():
    """``useVersionedSemantics``: the filter of a versioned table never drops (its flag is on: the
    table has a store), so two updates in a row that fail are two tombstones."""
    builder = StreamsBuilder()
    table = builder.table("a", Materialized.as_(Stores.persistent_versioned_key_value_store("vs", timedelta(seconds=5))))
    table.filter(_kept).to_stream().to("out-f")
    program = compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    updates = [("a", "a1"), ("a", "a3"), ("a", "a6"), ("a", None), ("a", "a2")]
    records = [(RecordContext("a", 0, offset, timestamp=offset, position=offset, raw_key=b"k"), b"k",
                None if value is None else value.encode()) for offset, (_, value) in enumerate(updates)]
    out, _ = program.run_task_batch(records, None)  # a versioned table runs task-grouped
    assert [None if value is None else value.decode() for value in out.value] == ["a1", None, None, None, "a2"]


@pytest.mark.parametrize("batches", [1, 3])
def test_a_filter_after_a_suppression_reads_the_old_value_the_suppression_emits(batches):
    """Kafka Streams' suppression buffer emits each key's latest update with that update's old value;
    the filter after it (old values sent: its parent's are) drops an emitted update whose new and old
    values both fail. Suppressed for 2 s, one key's a1 then a3 go out as a3 (old a1: a tombstone);
    a6 (old a3) goes out and is dropped."""
    def build(builder):
        builder.table("in", Materialized.as_("in-store").with_caching_disabled()) \
            .suppress(Suppressed.until_time_limit(2 * SECONDS, BufferConfig.unbounded())) \
            .filter(_kept).to_stream().to("out")
    rows = [("k", "a1", 0), ("k", "a3", 1_000), ("j", "a2", 2_000), ("k", "a6", 3_000), ("j", "a4", 4_000),
            ("j", "a5", 5_000), ("j", "a7", 8_000)]
    out = _run(_suppress_program(build), rows, batches)
    assert [(key, value) for _, key, value in out] == [(b"k", None), (b"j", b"a4"), (b"j", b"a7")]
