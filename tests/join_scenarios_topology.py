"""Kafka Streams' own join test scenarios, the Python twin of kstreams.oracle.JoinScenarioExamples
(Java): keep the two in step. tests/test_equivalence_kstreams_join_scenarios.py runs them against it.

Each scenario follows one of Kafka Streams' join tests (its topology; its input, in
``join_scenario_inputs``), on topics of its own, so each is a sub-topology of its own:

* ``self``: a stream joined with itself (``StreamStreamJoinIntegrationTest.testSelfJoin``, with its
  ``topology.optimization``: one self-join processor); ``self-asym`` and ``self-left``: a second stream
  (several records per key, out of order, beyond the window and the store's retention) joined with
  itself through an asymmetric window (1 s before, 0.5 s after, 0.2 s grace) and left-joined with
  itself (3 s, 1 s grace), both rewritten into one self-join processor each (the left one joins as the
  inner one: Kafka Streams 4.3.1 rewrites it too);
* ``multi-inner``: a stream joined with a second one, the result joined with that second stream
  again (``testMultiInner``); ``multi-outer`` the same, left-joined then outer-joined (3 s, 1 s grace);
  ``old-outer`` the two outer-joined with the deprecated ``JoinWindows.of`` (no spurious-result fix:
  ``KStreamKStreamOuterJoinTest.testOuterJoinDuplicatesWithFixDisabledOldApi``);
* ``inner3``, ``left3``, ``outer3``: three streams chained inner-inner, left-left, outer-outer
  (``testInner``/``testLeft``/``testOuter`` with a third stream; the left and outer chains with a
  window and grace short enough that records without a partner are emitted late);
* ``edge-*``: one pair of streams joined three ways at the windows' edges (``KStreamKStreamJoinTest``
  ``testWindowing``, ``KStreamKStreamLeftJoinTest.testLeftJoinedRecordsWithZeroAfterAreEmitted``,
  ``KStreamKStreamOuterJoinTest.testEmitAllNonJoinedResultsForAsymmetricWindow``): inner within
  100 ms, left with nothing after, outer with nothing before; ``old-left`` left within 100 ms by the
  deprecated ``JoinWindows.of(...).grace(...)``
  (``KStreamKStreamLeftJoinTest.testLeftJoinWithSpuriousResultFixDisabledOldApi``);
* ``st-inner``, ``st-left``: a stream joined and left-joined with a table
  (``StreamTableJoinIntegrationTest``); ``sg-*`` the same with a versioned table and a grace period
  (``KStreamKTableJoinTest.shouldDelayJoinByGracePeriod``, ``shouldHandleLateJoinsWithGracePeriod``);
* ``tt-*2``: two tables joined, the result joined with the right table again, inner-inner,
  left-left and outer-outer, the second join materialized (``TableTableJoinIntegrationTest``
  ``testInnerInner``, ``testLeftLeft``, ``testOuterOuter``);
* ``v-outer``: two versioned tables outer-joined (``testOuterWithVersionedStores``); ``vl-left``: a
  versioned table left-joined with a plain one (``testLeftWithLeftVersionedOnly``);
* ``gt-inner``, ``gt-left``: a stream joined and left-joined with a global table through a key
  mapper that finds no key in some values (``KStreamGlobalKTableJoinTest``,
  ``KStreamGlobalKTableLeftJoinTest``: null mapped keys, null record keys with a mapped key).

Every store runs without the record cache; every output value ends with ``|t`` and its timestamp. The
topology is built with ``topology.optimization=single.store.self.join`` (only the self-joins change).
"""

from __future__ import annotations

import sys
from datetime import timedelta

from pyspark import cloudpickle

from equivalence_io import StampValues, java_string
from dagster_kstreams.topology import Joined, Materialized, Stores, StreamsBuilder, StreamsConfig
from dagster_kstreams.topology.view import Topology
from dagster_kstreams.topology.windows import JoinWindows

# The joiners run in Spark's Python workers, which cannot import modules of tests/.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

INPUTS = ("alone", "mi-l", "mi-r", "i3-a", "i3-b", "i3-c", "l3-a", "l3-b", "l3-c", "o3-a", "o3-b", "o3-c",
          "edge-l", "edge-r", "st-s", "st-t", "tt-l", "tt-r", "v-l", "v-r", "sg-s", "sg-t", "vo-l", "vo-r", "gt", "gs", "self-in")
OUTPUTS = ("self", "multi-inner", "multi-outer", "inner3", "left3", "outer3", "edge-inner", "edge-left",
           "edge-outer", "st-inner", "st-left", "sg-inner", "sg-left", "tt-inner2", "tt-left2", "tt-outer2", "v-outer",
           "vl-left", "gt-inner", "gt-left", "old-left", "old-outer", "self-asym", "self-left")
HISTORY = timedelta(seconds=10)  # the versioned tables' history
GRACE = timedelta(seconds=2)  # the stream-table joins' grace, on a versioned table
# The integration tests' window: 10 s, a day's grace (their timestamps here are seconds apart).
WIDE = JoinWindows.of_time_difference_and_grace(timedelta(seconds=10), timedelta(hours=24))
# The chains whose unjoined records are emitted: 3 s, 1 s grace.
NARROW = JoinWindows.of_time_difference_and_grace(timedelta(seconds=3), timedelta(seconds=1))
# The asymmetric self-join's: 1 s before, 0.5 s after, 0.2 s grace.
ASYMMETRIC = JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(milliseconds=200)) \
    .after(timedelta(milliseconds=500))
SELF_JOIN = {StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: StreamsConfig.SINGLE_STORE_SELF_JOIN}


def joined(x, y) -> str:
    """The tests' joiner, as Java's string concatenation writes it."""
    return f"{java_string(x)}-{java_string(y)}"


def foreign_key(key, value):
    """The global-table tests' key mapper: the value's second comma-separated part (None: no match)."""
    parts = [] if value is None else value.split(",")
    return parts[1] if len(parts) > 1 else None


def uncached(store: str) -> Materialized:
    return Materialized.as_(store).with_caching_disabled()


def join_scenario_examples(topics: dict[str, str]) -> Topology:
    """The topology of JoinScenarioExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic),
    built with the single-store self-join as Kafka Streams' ``testSelfJoin`` builds it."""
    builder = StreamsBuilder()

    def out(stream, name):
        stream.process_values(StampValues).to(topics[name])

    alone = builder.stream(topics["alone"])
    out(alone.join(alone, joined, WIDE), "self")
    left, right = builder.stream(topics["mi-l"]), builder.stream(topics["mi-r"])
    out(left.join(right, joined, WIDE).join(right, joined, WIDE), "multi-inner")
    out(left.left_join(right, joined, NARROW).outer_join(right, joined, NARROW), "multi-outer")
    # the deprecated JoinWindows.of: no spurious-result fix, a day's grace less the window
    out(left.outer_join(right, joined, JoinWindows.of(timedelta(seconds=3))), "old-outer")
    a, b, c = (builder.stream(topics[f"i3-{side}"]) for side in "abc")
    out(a.join(b, joined, WIDE).join(c, joined, WIDE), "inner3")
    a, b, c = (builder.stream(topics[f"l3-{side}"]) for side in "abc")
    out(a.left_join(b, joined, NARROW).left_join(c, joined, NARROW), "left3")
    a, b, c = (builder.stream(topics[f"o3-{side}"]) for side in "abc")
    out(a.outer_join(b, joined, NARROW).outer_join(c, joined, NARROW), "outer3")
    left, right = builder.stream(topics["edge-l"]), builder.stream(topics["edge-r"])
    out(left.join(right, joined, JoinWindows.of_time_difference_with_no_grace(timedelta(milliseconds=100))),
        "edge-inner")
    out(left.left_join(right, joined, JoinWindows.of_time_difference_with_no_grace(timedelta(milliseconds=100))
                       .after(timedelta(0))), "edge-left")
    out(left.outer_join(right, joined, JoinWindows.of_time_difference_and_grace(timedelta(milliseconds=100),
                                                                              timedelta(milliseconds=50))
                        .before(timedelta(0))), "edge-outer")
    out(left.left_join(right, joined, JoinWindows.of(timedelta(milliseconds=100)).grace(timedelta(milliseconds=50))),
        "old-left")
    stream = builder.stream(topics["st-s"])
    table = builder.table(topics["st-t"], uncached("st-t-store"))
    out(stream.join(table, joined), "st-inner")
    out(stream.left_join(table, joined), "st-left")
    stream = builder.stream(topics["sg-s"])
    table = builder.table(topics["sg-t"], versioned("sg-t-store"))
    out(stream.join(table, joined, Joined.with_().with_grace_period(GRACE)), "sg-inner")
    out(stream.left_join(table, joined, Joined.with_().with_grace_period(GRACE)), "sg-left")
    left_table = builder.table(topics["tt-l"], uncached("tt-l-store"))
    right_table = builder.table(topics["tt-r"], uncached("tt-r-store"))
    out(left_table.join(right_table, joined).join(right_table, joined, uncached("tt-inner2-store")).to_stream(),
        "tt-inner2")
    out(left_table.left_join(right_table, joined).left_join(right_table, joined, uncached("tt-left2-store"))
        .to_stream(), "tt-left2")
    out(left_table.outer_join(right_table, joined).outer_join(right_table, joined, uncached("tt-outer2-store"))
        .to_stream(), "tt-outer2")
    versioned_left = builder.table(topics["v-l"], versioned("v-l-store"))
    versioned_right = builder.table(topics["v-r"], versioned("v-r-store"))
    out(versioned_left.outer_join(versioned_right, joined, uncached("v-outer-store")).to_stream(), "v-outer")
    versioned_left = builder.table(topics["vo-l"], versioned("vo-l-store"))
    plain_right = builder.table(topics["vo-r"], uncached("vo-r-store"))
    out(versioned_left.left_join(plain_right, joined, uncached("vl-left-store")).to_stream(), "vl-left")
    global_table = builder.global_table(topics["gt"])
    stream = builder.stream(topics["gs"])
    out(stream.join(global_table, foreign_key, joined), "gt-inner")
    out(stream.left_join(global_table, foreign_key, joined), "gt-left")
    _self_joins(builder, topics)
    return builder.build(SELF_JOIN)


def self_join_scenarios(topics: dict[str, str]) -> Topology:
    """``self-asym`` and ``self-left`` alone (other node names, the same records): the killed run's,
    whose tasks are then only theirs."""
    builder = StreamsBuilder()
    _self_joins(builder, topics)
    return builder.build(SELF_JOIN)


def _self_joins(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    mine = builder.stream(topics["self-in"])
    mine.join(mine, joined, ASYMMETRIC).process_values(StampValues).to(topics["self-asym"])
    mine.left_join(mine, joined, NARROW).process_values(StampValues).to(topics["self-left"])


def versioned(store: str) -> Materialized:
    return Materialized.as_(Stores.persistent_versioned_key_value_store(store, HISTORY))
