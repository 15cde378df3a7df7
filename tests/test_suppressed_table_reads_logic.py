"""Which suppressions keep their buffered keys' prior values, and which filters/map_values after one keep
a store of their own (:func:`~dagster_kstreams.processors.suppressed_table_reads.read_by_join_getter`): a
stream-table or table-table join reads the suppressed table through value getters, through steps without
a store of their own, up to the first step with one (which the join reads instead). The broker-backed
A re-grouping of the suppressed table subtracts the old value sent by the last step on the way that
sends its own: the suppression, or a step with a store of its own after it. The broker-backed
comparisons with Kafka Streams are test_equivalence_kstreams_window_scenarios.py and
test_equivalence_suppress.py."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from dagster_kstreams.processors.suppressed_table_reads import keeps_old_values, read_by_join_getter
from dagster_kstreams.processors.table_behind import table_behind
from dagster_kstreams.processors.table_regroup import suppressed_plain_table
from dagster_kstreams.topology import BufferConfig, Grouped, StreamsBuilder, Suppressed
from dagster_kstreams.topology.materialized import Materialized

READERS = ("table_join", "stream_join", "to_stream")
steps = st.lists(st.tuples(st.sampled_from(("filter", "map_values")), st.booleans()), max_size=4)


def _suppressed_chain(chain, reader):
    """The prices table suppressed (``held``), then ``chain``'s steps, read by ``reader``: its sub-topology."""
    builder = StreamsBuilder()
    _read(builder, _held_then(builder, chain), reader)
    return builder.build().subtopology(0)


def _held_then(builder, chain):
    """The prices table suppressed (``held``), then ``chain``'s steps (``(kind, with a store)``, the i-th
    named ``step-i`` when stored)."""
    table = builder.table("prices").suppress(
        Suppressed.until_time_limit(timedelta(seconds=1), BufferConfig.unbounded()).with_name("held"))
    for index, (kind, stored) in enumerate(chain):
        materialized = Materialized.as_(f"step-{index}") if stored else None
        if kind == "filter":
            table = table.filter(lambda key, value: value != "x", materialized)
        else:
            table = table.map_values(lambda value: value + "!", materialized)
    return table


def _read(builder, table, reader) -> None:
    """``table`` read by ``reader``: a table-table or stream-table join, a re-grouping, or to_stream."""
    if reader == "table_join":
        table.join(builder.table("other"), lambda mine, theirs: mine).to_stream().to("out")
    elif reader == "stream_join":
        builder.stream("orders").join(table, lambda value, held: value).to("out")
    elif reader == "regroup":
        table.group_by(lambda key, value: (key, value), Grouped.as_("by-key")).count().to_stream().to("out")
    else:
        table.to_stream().to("out")


def _stored_steps(sub):
    return [node for node in sub.nodes if node.stores and node.kind.value in ("table_filter", "table_map_values")]


@given(steps, st.sampled_from(READERS))
def test_a_suppression_is_read_through_its_buffer_when_a_join_reaches_it_through_steps_without_a_store(chain, reader):
    sub = _suppressed_chain(chain, reader)
    joined = reader != "to_stream"
    assert read_by_join_getter(sub, sub.node("held")) == (joined and not any(stored for _, stored in chain))


@given(steps, st.sampled_from(READERS))
def test_only_the_last_step_with_a_store_before_a_join_is_read_by_it(chain, reader):
    sub = _suppressed_chain(chain, reader)
    stored = sorted(_stored_steps(sub), key=lambda node: node.name.rsplit("-", 1)[1])  # in chain order
    for index, node in enumerate(stored):
        assert read_by_join_getter(sub, node) == (reader != "to_stream" and index == len(stored) - 1)


def test_the_example_by_hand():
    # held -> filter (stored) -> map_values -> join: the filter's store is read, not the buffer
    sub = _suppressed_chain([("filter", True), ("map_values", False)], "stream_join")
    (kept,) = _stored_steps(sub)
    assert read_by_join_getter(sub, kept) and not read_by_join_getter(sub, sub.node("held"))


@given(steps)
def test_a_regrouping_subtracts_the_old_values_of_the_last_step_with_a_store_else_the_suppressions(chain):
    sub = _suppressed_chain(chain, "regroup")
    (regroup,) = [node for node in sub.nodes if node.kind.value == "table_group_by_map"]
    behind = table_behind(sub, regroup)
    stored = [index for index, (_, with_store) in enumerate(chain) if with_store]
    sender = behind.steps[behind.old_value_sender()]
    assert suppressed_plain_table(behind)
    assert sender.name == (sub.node("held").name if not stored else
                           next(node.name for node in behind.steps if f"step-{stored[-1]}" in node.stores))


@given(steps, st.sampled_from(READERS + ("regroup",)))
def test_a_suppression_keeps_old_values_when_the_suppression_after_it_does(chain, reader):
    """The prices suppressed (``held``), ``chain``, suppressed again (``again``), read by ``reader``: the
    second keeps old values (its buffered keys' priors) when a join or a re-grouping reads it, and so does
    the first (the old values it sends are the second's priors) unless a step with a store of its own is
    between them (that step sends its own); a filter without a store after the first reads them too."""
    builder = StreamsBuilder()
    table = _held_then(builder, chain).suppress(
        Suppressed.until_time_limit(timedelta(seconds=2), BufferConfig.unbounded()).with_name("again"))
    _read(builder, table, reader)
    sub = builder.build().subtopology(0)
    read = reader != "to_stream"
    assert keeps_old_values(sub, sub.node("again")) == read
    # a filter without a store before the first step with one reads them too (KTableFilter sends old values)
    stored = [index for index, (_, with_store) in enumerate(chain) if with_store]
    filtered = any(kind == "filter" for kind, _ in chain[:stored[0] if stored else len(chain)])
    assert keeps_old_values(sub, sub.node("held")) == (filtered or (read and not stored))
