"""The deprecated ``JoinWindows.of`` and ``grace`` (still in Kafka Streams 4.3.1): a day's grace less
the window, and no spurious-result fix, so a left/outer join has no outer-join store and joins a
record without partner with null at once. Against a brute-force model of Kafka Streams' join without
the fix; the broker-backed comparison is tests/test_equivalence_kstreams_join_scenarios.py
(``old-left``, ``old-outer``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.windows import JoinWindows
from stream_join_model import KsJoin, run_task

DAY_MS = 24 * 60 * 60 * 1000


def test_of_takes_a_day_s_grace_less_the_window_and_turns_the_fix_off():
    windows = JoinWindows.of(timedelta(seconds=10))
    assert (windows.before_ms, windows.after_ms, windows.grace_ms) == (10_000, 10_000, DAY_MS - 20_000)
    assert not windows.spurious_result_fix
    assert JoinWindows.of(timedelta(hours=13)).grace_ms == 0
    later = windows.grace(timedelta(seconds=2)).before(timedelta(seconds=1)).after(timedelta(0))
    assert (later.before_ms, later.after_ms, later.grace_ms, later.spurious_result_fix) == (1_000, 0, 2_000, False)


def test_grace_after_the_new_factories_is_refused_as_kafka_streams_refuses_it():
    for windows in (JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=1)),
                    JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=1))):
        assert windows.spurious_result_fix
        with pytest.raises(ValueError, match="Cannot call grace"):
            windows.grace(timedelta(seconds=1))


@pytest.mark.parametrize("join", ["join", "left_join", "outer_join"])
def test_only_a_left_or_outer_join_with_the_fix_has_an_outer_join_store(join):
    def described(windows):
        builder = StreamsBuilder()
        getattr(builder.stream("l"), join)(builder.stream("r"), lambda x, y: x, windows).to("out")
        return str(builder.build().describe())

    assert "OUTERSHARED" not in described(JoinWindows.of(timedelta(seconds=1)))
    assert ("OUTERSHARED" in described(JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=1)))) == \
        (join != "join")


_records = st.lists(
    st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from(["l", "r"]), st.one_of(st.none(), st.just("v")),
              st.one_of(st.integers(100_000, 130_000), st.integers(100, 130).map(lambda t: t * 1000))),
    max_size=30,
).map(lambda rows: [(k, topic, None if v is None else f"{topic}{i}", t) for i, (k, topic, v, t) in enumerate(rows)])


@settings(max_examples=100, deadline=None)
@given(_records, st.integers(0, 6_000), st.integers(0, 6_000), st.integers(0, 4_000),
       st.sampled_from(["left_join", "outer_join"]), st.integers(1, 3))
def test_old_api_left_and_outer_joins_emit_like_kafka_streams_without_the_fix(records, before, after, grace, join,
                                                                              batches):
    windows = JoinWindows.of(timedelta(milliseconds=before)).grace(timedelta(milliseconds=grace)) \
        .after(timedelta(milliseconds=after))
    builder = StreamsBuilder()
    getattr(builder.stream("l"), join)(builder.stream("r"), lambda x, y: f"{x}+{y}", windows).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    model = KsJoin(before, after, grace, join.replace("_join", ""), spurious_result_fix=False)
    expected = []
    for key, topic, value, ts in records:
        expected += model.process(key, "left" if topic == "l" else "right", value, ts)
    # in 1 to 3 micro-batches: the join's buffers and stream time carried in the task's state
    ours, _ = run_task(program, records, batches)
    assert [(topic, None if k is None else k.decode(), v.decode()) for topic, k, v in ours
            if topic != DROPPED_LATE_TOPIC] == [("out", key, value) for key, value, _ in expected]
