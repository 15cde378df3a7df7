"""Joins and re-groupings of windowed tables, compiled without Spark: what the runner admits (their
results are compared with Kafka Streams 4.3.1 in tests/test_equivalence_windowed_table_joins.py) and
what it refuses when the topology is defined, naming the processor.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Optional

import pytest

from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows, TimeWindows


def _joiner(op: str):
    return lambda this, other: f"({'null' if this is None else this}{op}{'null' if other is None else other})"


def test_a_join_of_a_windowed_table_is_still_refused():
    builder = StreamsBuilder()
    counts = builder.stream("s").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=1))).count()
    builder.stream("t").join(counts, _joiner("|")).to("out")
    with pytest.raises(UnsupportedTopologyError):
        compile_topology(builder.build(), "app").program(0)



def _windowed(builder, topic: str, size_ms: int = 1000, grace_ms: int = 0, store: Optional[str] = None):
    windows = TimeWindows.of_size_and_grace(timedelta(milliseconds=size_ms), timedelta(milliseconds=grace_ms))
    grouped = builder.stream(topic).group_by_key().windowed_by(windows)
    return grouped.count() if store is None else grouped.count(Materialized.as_(store).with_retention(
        timedelta(milliseconds=size_ms + grace_ms)))


def _sessions(builder, topic: str) -> None:
    """A session count of ``topic`` written to a topic, in the sub-topology of the stream read first."""
    builder.stream(topic).group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(
        timedelta(seconds=1))).count().to_stream().to("sessions")


def test_a_join_of_two_windowed_tables_compiles_and_its_limits_are_refused():
    """Joins of windowed tables run (tests/test_equivalence_windowed_table_joins.py); refused: a
    windowed table joined with a plain one, a store that may have expired a window the other side's
    updates reach, and a join that keeps a store for the windowed keys."""
    builder = StreamsBuilder()
    _windowed(builder, "s").join(_windowed(builder, "s", 500, 500), _joiner("|")).to_stream().to("out")
    compile_topology(builder.build(), "app").check()  # each retention (size plus grace) covers the other's

    builder = StreamsBuilder()
    _windowed(builder, "s").join(builder.table("t"), _joiner("|")).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="only one of its tables is windowed"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()
    _windowed(builder, "s", store="short").join(_windowed(builder, "s", 2000, 500), _joiner("|")) \
        .to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="retention is below"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # its store keyed by windowed keys: one group per window, task-grouped
    _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"), Materialized.as_("joined")) \
        .to_stream().to("out")
    assert compile_topology(builder.build(), "app").program(0).task_grouped

    builder = StreamsBuilder()  # through a filter and a map_values with its own store (a left join reads it)
    counts = _windowed(builder, "s").filter(lambda windowed, n: n > 1)
    mapped = _windowed(builder, "s").map_values(lambda n: n * 2, Materialized.as_("doubled"))
    counts.join(mapped, _joiner("|")).to_stream().to("out")
    mapped.left_join(counts, _joiner("|"), Materialized.as_("left")) \
        .group_by(lambda windowed, value: (windowed.key, value)).count()
    assert compile_topology(builder.build(), "app").program(0).task_grouped

    builder = StreamsBuilder()  # a windowed join's result without a store: read through both tables
    _windowed(builder, "s").join(_windowed(builder, "s", 500, 500), _joiner("|")) \
        .group_by(lambda windowed, value: (windowed.key, value)).count()
    assert not compile_topology(builder.build(), "app").program(0).task_grouped

    builder = StreamsBuilder()  # Kafka Streams keys its store by start: a window of each size shares it, here too
    _windowed(builder, "s").join(_windowed(builder, "s", 500, 500), _joiner("|"), Materialized.as_("joined")) \
        .to_stream().to("out")
    program = compile_topology(builder.build(), "app").program(0)
    assert program.task_grouped and program.window_keys.by_start

    builder = StreamsBuilder()  # ... but beside session windows, whose groups keep the window's end too
    _windowed(builder, "s").join(_windowed(builder, "s", 500, 500), _joiner("|"), Materialized.as_("joined")) \
        .to_stream().to("out")
    _sessions(builder, "s")
    with pytest.raises(UnsupportedTopologyError, match="KTABLE-JOINTHIS-.* materialized and its tables' windows "
                                                       "differ in size beside session windows"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # a materialized join of a join without a store: refused for what it is
    joined = _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"))
    joined.join(_windowed(builder, "s"), _joiner("|"), Materialized.as_("joined")).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="KTABLE-JOINTHIS-.* is materialized and one of its tables is "
                                                       "itself a windowed join's") as refusal:
        compile_topology(builder.build(), "app").check()
    assert "differ in size" not in str(refusal.value)  # one size, and no session windows

    builder = StreamsBuilder()  # a join of a materialized windowed join's result: read from its store
    joined = _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"), Materialized.as_("joined"))
    joined.join(_windowed(builder, "s"), _joiner("|")).to_stream().to("out")
    compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # without a store: read through both tables and the joiner, a filter too
    joined = _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"))
    joined.filter(lambda windowed, value: True).join(_windowed(builder, "s"), _joiner("|")).to_stream().to("out")
    compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # ... but not through a step with a store of its own (its old values are its store's)
    joined = _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"))
    joined.map_values(lambda value: value, Materialized.as_("kept")) \
        .group_by(lambda windowed, value: (windowed.key, value)).count()
    with pytest.raises(UnsupportedTopologyError, match="KTABLE-SELECT-.* reads the windowed join KTABLE-MERGE-.* "
                                                       "through KTABLE-MAPVALUES-.* with a store of its own"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # ... whose reach (either table's) the other store's retention must cover
    joined = _windowed(builder, "s").join(_windowed(builder, "s", 1000, 500), _joiner("|"))
    joined.join(_windowed(builder, "s", store="short"), _joiner("|")).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="KTABLE-JOINTHIS-.* joins windowed tables, but a store's "
                                                       "retention is below"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # through a filter of the joined table: its store is not modelled there
    joined = _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"), Materialized.as_("joined"))
    joined.filter(lambda windowed, value: True, Materialized.as_("kept")) \
        .group_by(lambda windowed, value: (windowed.key, value)).count()
    with pytest.raises(UnsupportedTopologyError, match="reads the windowed join KTABLE-MERGE-.* through filter"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # the other store's retention below the joined table's reach
    joined = _windowed(builder, "s").join(_windowed(builder, "s", 1000, 500), _joiner("|"), Materialized.as_("j"))
    joined.join(_windowed(builder, "s", store="short"), _joiner("|")).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="retention is below"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # state by window after a join of windows of one size, in its sub-topology
    _windowed(builder, "s").join(_windowed(builder, "s"), _joiner("|"), Materialized.as_("joined")).to_stream() \
        .group_by_key().reduce(lambda left, right: right).to_stream().to("out")
    assert compile_topology(builder.build(), "app").program(0).task_grouped

    builder = StreamsBuilder()  # ... of different sizes: Kafka Streams keys it by the window's start alone, as here
    _windowed(builder, "s").join(_windowed(builder, "s", 500, 500), _joiner("|")).to_stream() \
        .group_by_key().reduce(lambda left, right: right).to_stream().to("out")
    assert compile_topology(builder.build(), "app").program(0).window_keys.by_start

    builder = StreamsBuilder()  # ... but beside session windows, whose groups keep the window's end too
    _windowed(builder, "s").join(_windowed(builder, "s", 500, 500), _joiner("|")).to_stream() \
        .group_by_key().reduce(lambda left, right: right).to_stream().to("out")
    _sessions(builder, "s")
    with pytest.raises(UnsupportedTopologyError, match="KSTREAM-REDUCE-.* after it keeps state by window, reached "
                                                       "by windows of 2 sizes.*Add .repartition\\(\\) after"):
        compile_topology(builder.build(), "app").check()


def _sliding(builder, grouped=None, difference_ms: int = 1000, grace_ms: int = 500, retention_ms=None):
    """A sliding-window count of stream ``s`` grouped by key (or of ``grouped``)."""
    windows = SlidingWindows.of_time_difference_and_grace(timedelta(milliseconds=difference_ms),
                                                          timedelta(milliseconds=grace_ms))
    grouped = builder.stream("s").group_by_key() if grouped is None else grouped
    materialized = None if retention_ms is None else Materialized.as_(f"slides-{difference_ms}").with_retention(
        timedelta(milliseconds=retention_ms))
    return grouped.windowed_by(windows).count(materialized)


def test_joins_and_regroupings_of_sliding_window_tables_compile_and_their_limits_are_refused():
    """Sliding tables are read as Kafka Streams reads them, one window by its start
    (tests/test_equivalence_windowed_table_joins.py); a retention below the other side's reach, and a
    sliding table beside time windows (its aggregation then keeps its own stream time), are refused."""
    builder = StreamsBuilder()  # key-grouped: the key's own windows answer
    grouped = builder.stream("s").group_by_key()
    slides = _sliding(builder, grouped)
    slides.join(_sliding(builder, grouped, 500, 500, retention_ms=1502), _joiner("|")).to_stream().to("out")
    slides.group_by(lambda windowed, n: (windowed.key, n)).count()
    assert not compile_topology(builder.build(), "app").program(0).task_grouped

    builder = StreamsBuilder()  # the least retention: time difference plus grace plus 2 (a right window's start)
    grouped = builder.stream("s").group_by_key()
    _sliding(builder, grouped).join(_sliding(builder, grouped, 500, 500, retention_ms=1501), _joiner("|")) \
        .to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="KTABLE-JOINTHIS-.* joins windowed tables, but a store's "
                                                       "retention is below"):
        compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()  # materialized: a store keyed by windowed keys, task-grouped
    grouped = builder.stream("s").group_by_key()
    _sliding(builder, grouped).outer_join(_sliding(builder, grouped), _joiner("~"), Materialized.as_("j")) \
        .to_stream().to("out")
    assert compile_topology(builder.build(), "app").program(0).task_grouped

    builder = StreamsBuilder()  # beside time windows a sliding aggregation keeps its own stream time
    tumbling = builder.stream("s").group_by_key().windowed_by(TimeWindows.of_size_and_grace(
        timedelta(seconds=1), timedelta(milliseconds=500))).count(Materialized.as_("t").with_retention(
            timedelta(seconds=3)))
    _sliding(builder).join(tumbling, _joiner("|")).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="KSTREAM-AGGREGATE-.* is joined, but the aggregation keeps "
                                                       "its own stream time"):
        compile_topology(builder.build(), "app").check()


def test_a_join_of_session_tables_joins_again_with_session_tables_only_naming_the_join():
    """Kafka Streams reads a session table by the session's start and end (fetchSession): a join of two
    session tables reads them so (tests/test_session_table_joins_logic.py), and so does a join of such a
    join's result with a third session table, through both of its tables (tests/test_session_join_chains_logic.py);
    with a time-windowed table it is refused, naming the join."""
    def sessions(builder, store):
        return builder.stream("s").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(
            timedelta(seconds=1), timedelta(milliseconds=500))).count(Materialized.as_(store).with_caching_disabled())

    builder = StreamsBuilder()
    sessions(builder, "a").left_join(sessions(builder, "b"), _joiner("|")) \
        .join(sessions(builder, "c"), _joiner("#")).to_stream().to("out")
    compile_topology(builder.build(), "app").check()

    builder = StreamsBuilder()
    tumbling = builder.stream("s").group_by_key().windowed_by(TimeWindows.of_size_and_grace(
        timedelta(seconds=1), timedelta(milliseconds=500))).count(Materialized.as_("t").with_caching_disabled())
    sessions(builder, "a").left_join(sessions(builder, "b"), _joiner("|")).join(tumbling, _joiner("#")) \
        .to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match="processor KTABLE-JOINTHIS-.* joins session tables, but only "
                                                       "one of its tables is a session aggregation's"):
        compile_topology(builder.build(), "app").check()
