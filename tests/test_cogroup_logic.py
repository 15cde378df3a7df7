"""``cogroup`` without Spark: what Kafka Streams refuses when the topology is defined, and the
cogrouped processors run as programs batch by batch (their state pickled in between, as a
checkpoint would). The broker-backed comparison with Kafka Streams is test_equivalence_cogroup.py;
describe() is compared in test_describe_oracle.py (the cogroup_* entries of the catalog)."""

from __future__ import annotations

import itertools
import struct
from datetime import timedelta

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.spark.state_keys import STATE_KEY_COLUMN, state_key_column
from dagster_kstreams.topology import StreamsBuilder, TopologyException
from dagster_kstreams.topology.consumed_produced import Consumed, Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serde, Serdes, WindowedSerde
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows, TimeWindows


def test_two_inputs_repartitioned_under_the_stores_name_collide_as_in_kafka_streams():
    # Both repartition topics would be named after the one store (Kafka Streams 4.3.1 says the same).
    builder = StreamsBuilder()
    first = builder.stream("a").group_by(lambda key, value: value)
    second = builder.stream("c").group_by(lambda key, value: value)
    first.cogroup(lambda key, value, agg: agg).cogroup(second, lambda key, value, agg: agg) \
        .aggregate(lambda: "").to_stream().to("out")
    with pytest.raises(TopologyException, match="COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-filter "
                                                "is already added"):
        builder.build()


def test_two_cogroups_on_one_store_name_are_refused_as_in_kafka_streams():
    builder = StreamsBuilder()
    grouped = builder.stream("a").group_by_key()
    grouped.cogroup(lambda key, value, agg: agg).aggregate(lambda: "", Materialized.as_("s"))
    grouped.cogroup(lambda key, value, agg: agg).aggregate(lambda: "", Materialized.as_("s"))
    with pytest.raises(TopologyException, match="A different StateStore has already been added with the name s"):
        builder.build()


# -- programs ---------------------------------------------------------------------------------------
SECONDS = timedelta(seconds=1)
WINDOWED = Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String())


def _program(build, sub=0):
    builder = StreamsBuilder()
    build(builder)
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(sub)


def _frame(rows, first, program):
    """Rows ``(topic, key, value, timestamp)`` in processing order (``seq`` from ``first``); a key
    given as bytes is taken as written. With the state keys the engine adds (spark/state_keys.py)."""
    seq = list(range(first, first + len(rows)))
    keys = [key if key is None or isinstance(key, bytes) else key.encode() for _, key, _, _ in rows]
    topics = [topic for topic, _, _, _ in rows]
    frame = pd.DataFrame({
        "key": keys, "value": [None if value is None else value.encode() for _, _, value, _ in rows],
        "topic": topics, "partition": [0] * len(rows), "offset": seq,
        "timestamp": [None] * len(rows), "event_time": [ts for *_, ts in rows], "merge_time": seq, "seq": seq,
    })
    if program.state_key_serde is not None:
        frame[STATE_KEY_COLUMN] = program.state_keys(keys, topics)
    return frame


def _run(program, rows, batches=1):
    """The records written to "out" (``[(key, value)]``), the task run in ``batches`` micro-batches
    with its state pickled in between; key-grouped programs run key group by key group. A program
    that reads the task's stream time gets it as the engine computes it (the largest timestamp so
    far; the rows have keys and values)."""
    outputs, stored = [], None
    size = -(-len(rows) // batches)
    keyed: dict = {}
    stream_times = list(itertools.accumulate((timestamp for *_, timestamp in rows), max))
    for first in range(0, len(rows), size):
        frame = _frame(rows[first:first + size], first, program)
        if program.uses_stream_time:
            frame["stream_time"] = stream_times[first:first + size]
            frame["stream_time_before"] = ([-1] + stream_times)[first:first + len(frame)]
        if program.task_grouped:
            outs = [program.process_task_batch(frame, stored)]
            stored = outs[0][1]
        else:
            outs = []
            for key, group in frame.groupby(frame[state_key_column(program)].map(repr), sort=False):
                out, keyed[key] = program.process_key_group(group, keyed.get(key))
                outs.append((out, None))
        frames = [out for out, _ in outs if out is not None]
        if frames:
            out = pd.concat(frames).sort_values("emit_order", kind="stable")
            outputs += [(k, v) for t, k, v in zip(out["topic"], out["key"], out["value"]) if t == "out"]
    return outputs


def _plain(builder):
    first = builder.stream("a").group_by_key()
    second = builder.stream("b").group_by_key()
    first.cogroup(lambda key, value, agg: agg + "a" + value) \
        .cogroup(second, lambda key, value, agg: agg + "b" + value) \
        .aggregate(lambda: "", Materialized.as_("s").with_caching_disabled()).to_stream().to("out")


def test_plain_cogroup_updates_one_aggregate_per_key_from_every_input_in_processing_order():
    program = _program(_plain)
    assert not program.task_grouped and program.store_names == ["s"]
    rows = [("a", "k", "1", 1), ("b", "k", "2", 2), ("b", "j", "3", 3), ("a", None, "x", 4), ("b", "k", None, 5),
            ("a", "k", "4", 6)]
    expected = [(b"k", b"a1"), (b"k", b"a1b2"), (b"j", b"b3"), (b"k", b"a1b2a4")]  # null key, null value: skipped
    assert _run(program, rows) == expected
    assert _run(program, rows, batches=len(rows)) == expected


def test_a_cached_cogroup_forwards_each_keys_aggregate_once_per_batch():
    def build(builder):
        first = builder.stream("a").group_by_key()
        second = builder.stream("b").group_by_key()
        first.cogroup(lambda key, value, agg: agg + "a" + value) \
            .cogroup(second, lambda key, value, agg: agg + "b" + value) \
            .aggregate(lambda: "").to_stream().to("out")
    program = _program(build)
    rows = [("a", "k", "1", 1), ("b", "j", "2", 2), ("b", "k", "3", 3), ("a", "j", "4", 4)]
    assert sorted(_run(program, rows)) == [(b"j", b"b2a4"), (b"k", b"a1b3")]
    assert _run(program, rows, batches=2) == [(b"k", b"a1"), (b"j", b"b2"), (b"k", b"a1b3"), (b"j", b"b2a4")]


def _windowed(builder):
    first = builder.stream("a").group_by_key()
    second = builder.stream("b").group_by_key()
    first.cogroup(lambda key, value, agg: agg + "a" + str(value)) \
        .cogroup(second, lambda key, value, agg: agg + "b" + str(value)) \
        .windowed_by(TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS)) \
        .aggregate(lambda: "", Materialized.as_("w").with_caching_disabled()).to_stream().to("out", WINDOWED)


def _window(key, start):
    return key.encode() + struct.pack(">q", start)


def test_each_input_of_a_windowed_cogroup_closes_windows_by_its_own_stream_time():
    program = _program(_windowed)
    assert program.task_grouped
    # b's records at 5 s come after a's at 15 s: Kafka Streams' processor of b has not seen 15 s, so
    # [0, 10 s) is still open for b (it is closed for a: a's record at 6 s is dropped).
    rows = [("a", "k", "1", 1_000), ("a", "k", "2", 15_000), ("b", "k", "3", 5_000), ("a", "k", "4", 6_000),
            ("b", "k", None, 7_000)]
    expected = [(_window("k", 0), b"a1"), (_window("k", 10_000), b"a2"), (_window("k", 0), b"a1b3"),
                (_window("k", 0), b"a1b3bNone")]
    assert _run(program, rows) == expected
    assert _run(program, rows, batches=len(rows)) == expected  # both clocks survive every checkpoint


def test_a_window_the_shared_store_expired_is_read_as_empty_though_open_for_the_lagging_input():
    program = _program(_windowed)
    # a writes the window at 20 s: the store's stream time hides starts <= 20 s - 12 s (retention
    # size + grace). b, whose own time is 1 s, still adds to [0, 10 s): it reads nothing there, and
    # what it writes is never read again.
    rows = [("a", "k", "1", 1_000), ("a", "k", "2", 25_000), ("b", "k", "3", 1_000), ("b", "k", "4", 2_000)]
    expected = [(_window("k", 0), b"a1"), (_window("k", 20_000), b"a2"), (_window("k", 0), b"b3"),
                (_window("k", 0), b"b4")]
    assert _run(program, rows) == expected
    assert _run(program, rows, batches=2) == expected


def test_a_sliding_cogroup_skips_null_values_without_shaping_the_tasks_stream_time():
    def build(builder):
        first = builder.stream("a").group_by_key()
        second = builder.stream("b").group_by_key()
        first.cogroup(lambda key, value, agg: agg + "a" + value) \
            .cogroup(second, lambda key, value, agg: agg + "b" + value) \
            .windowed_by(SlidingWindows.of_time_difference_with_no_grace(5 * SECONDS)) \
            .aggregate(lambda: "", Materialized.as_("w").with_caching_disabled()) \
            .to_stream().to("out", Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.String()))
    program = _program(build)
    assert program.task_grouped and not program.uses_stream_time and not program.stream_time_skips_null_values
    # b's null value at 20 s is skipped: it does not close [0 s, 5 s] for b's record at 4 s.
    rows = [("a", "k", "1", 1_000), ("b", "k", None, 20_000), ("b", "k", "2", 4_000)]
    windowed = WindowedSerde(Serdes.String(), 5_000)
    decoded = [(windowed.deserialize(key), value) for key, value in _run(program, rows)]
    assert [((w.key, w.window.start), value) for w, value in decoded] == [  # KStreamSlidingWindowAggregate's order
        (("k", 0), b"a1"), (("k", 1_001), b"b2"), (("k", 0), b"a1b2")]


def test_a_session_cogroup_merges_sessions_across_inputs():
    def build(builder):
        first = builder.stream("a").group_by_key()
        second = builder.stream("b").group_by_key()
        first.cogroup(lambda key, value, agg: agg + "a" + value) \
            .cogroup(second, lambda key, value, agg: agg + "b" + value) \
            .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(2 * SECONDS)) \
            .aggregate(lambda: "", lambda key, left, right: left + "|" + right,
                       Materialized.as_("s").with_caching_disabled()) \
            .to_stream().to("out", Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.String()))
    program = _program(build)
    rows = [("a", "k", "1", 1_000), ("b", "k", "2", 2_500), ("a", "k", "3", 9_000)]
    session = WindowedSerde(Serdes.String(), session=True)
    decoded = [(session.deserialize(key), value) for key, value in _run(program, rows, batches=3)]
    assert [((w.key, w.window.start, w.window.end), value) for w, value in decoded] == [
        (("k", 1_000, 1_000), b"a1"), (("k", 1_000, 1_000), None), (("k", 1_000, 2_500), b"|a1b2"),
        (("k", 9_000, 9_000), b"a3")]


class _UserIdSerde(Serde):
    """User ``u<n>`` written as the Long ``n`` (the key of another topic's records)."""

    name = "UserId"

    def serialize(self, value):
        return None if value is None else struct.pack(">q", int(value[1:]))

    def deserialize(self, data):
        return None if data is None else f"u{struct.unpack('>q', data)[0]}"


def _user_id(n):
    return struct.pack(">q", n)


def _keys_read_differently(windowed):
    def build(builder):
        first = builder.stream("a").group_by_key()
        second = builder.stream("b", Consumed.with_(_UserIdSerde(), Serdes.String())).group_by_key()
        cogrouped = first.cogroup(lambda key, value, agg: agg + "a" + value) \
            .cogroup(second, lambda key, value, agg: agg + "b" + value)
        if windowed:
            cogrouped.windowed_by(TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS)) \
                .aggregate(lambda: "", Materialized.as_("w").with_caching_disabled()).to_stream().to("out", WINDOWED)
        else:
            cogrouped.aggregate(lambda: "", Materialized.as_("s").with_caching_disabled()).to_stream().to("out")
    return build


_STATE_KEYED = _program(_keys_read_differently(windowed=False))


def test_inputs_whose_sources_read_one_key_from_different_bytes_update_one_aggregate():
    # Kafka Streams' one store keys both by the key as its serde (default.key.serde) writes it.
    program = _program(_keys_read_differently(windowed=False))
    assert program.state_key_serde == Serdes.String() and not program.task_grouped
    assert program.state_keys([b"u7", _user_id(7), None, b"\x01"], ["a", "b", "b", "b"]) == [b"u7", b"u7", None,
                                                                                             b"\x01"]  # unreadable
    rows = [("a", "u7", "1", 1), ("b", _user_id(7), "2", 2), ("b", _user_id(8), "3", 3), ("a", "u7", "4", 4)]
    expected = [(b"u7", b"a1"), (b"u7", b"a1b2"), (b"u8", b"b3"), (b"u7", b"a1b2a4")]
    assert _run(program, rows) == expected
    assert _run(program, rows, batches=len(rows)) == expected
    # Inputs that read keys alike keep grouping by the key's bytes (no extra pass).
    assert _program(_plain).state_key_serde is None


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(min_value=-2**63, max_value=2**63 - 1)), max_size=20))
def test_one_user_gets_one_state_key_whichever_input_wrote_it(users):
    program = _STATE_KEYED
    as_strings = [None if n is None else f"u{n}".encode() for n in users]
    as_longs = [None if n is None else _user_id(n) for n in users]
    expected = [None if n is None else f"u{n}".encode() for n in users]  # the store's String serde
    assert program.state_keys(as_strings, ["a"] * len(users)) == expected
    assert program.state_keys(as_longs, ["b"] * len(users)) == expected


def test_a_windowed_cogroup_of_keys_read_differently_shares_each_keys_windows():
    program = _program(_keys_read_differently(windowed=True))
    assert program.task_grouped and program.state_key_serde == Serdes.String()
    rows = [("a", "u7", "1", 1_000), ("b", _user_id(7), "2", 2_000), ("a", "u7", "3", 12_000),
            ("b", _user_id(7), "4", 13_000)]
    expected = [(_window("u7", 0), b"a1"), (_window("u7", 0), b"a1b2"), (_window("u7", 10_000), b"a3"),
                (_window("u7", 10_000), b"a3b4")]
    assert _run(program, rows) == expected
    assert _run(program, rows, batches=2) == expected


def test_cogroups_of_one_sub_topology_whose_stores_write_keys_differently_keep_each_store_by_its_serde():
    # "U7" and "u7" are two keys to Serdes.String() and one (the Long 7) to the UserId serde.
    def build(builder):
        first = builder.stream("a").group_by_key()
        second = builder.stream("b", Consumed.with_(_UserIdSerde(), Serdes.String())).group_by_key()
        for store, key_serde in (("s", Serdes.String()), ("t", _UserIdSerde())):
            first.cogroup(lambda key, value, agg: agg + "a" + value) \
                .cogroup(second, lambda key, value, agg: agg + "b" + value) \
                .aggregate(lambda: "", Materialized.as_(store).with_key_serde(key_serde).with_caching_disabled()) \
                .to_stream().to("out")
    program = _program(build)
    assert program.task_grouped and program.state_key_serde is None
    rows = [("a", "U7", "1", 1), ("b", _user_id(7), "2", 2), ("a", "u7", "3", 3)]
    # each table's stream writes its keys with its store's serde
    expected = [(b"U7", b"a1"), (_user_id(7), b"a1"), (b"u7", b"b2"), (_user_id(7), b"a1b2"),
                (b"u7", b"b2a3"), (_user_id(7), b"a1b2a3")]
    assert _run(program, rows) == expected
    assert _run(program, rows, batches=len(rows)) == expected


def test_a_suppression_of_a_windowed_cogroup_forwards_each_windows_final_value_once():
    builder = StreamsBuilder()
    first = builder.stream("a").group_by_key()
    second = builder.stream("b").group_by_key()
    first.cogroup(lambda key, value, agg: agg + "a" + value) \
        .cogroup(second, lambda key, value, agg: agg + "b" + value) \
        .windowed_by(TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS)) \
        .aggregate(lambda: "") \
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to("out", WINDOWED)
    program = compile_topology(builder, "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    rows = [("a", "k", "1", 1_000), ("b", "k", "2", 4_000), ("a", "j", "3", 8_000), ("b", "k", "4", 12_500),
            ("a", "k", "5", 25_000)]
    # Windows by end, then key bytes (the suppression buffer's order); [20 s, 30 s) is still open.
    expected = [(_window("j", 0), b"a3"), (_window("k", 0), b"a1b2"), (_window("k", 10_000), b"b4")]
    assert _run(program, rows) == expected
    assert _run(program, rows, batches=len(rows)) == expected


# -- a cogroup's table joined --------------------------------------------------------------------------
def _cogroup_joined(builder):
    first = builder.stream("a").group_by_key()
    second = builder.stream("b").group_by_key()
    cogrouped = first.cogroup(lambda key, value, agg: agg + "a" + value) \
        .cogroup(second, lambda key, value, agg: agg + "b" + value) \
        .aggregate(lambda: "", Materialized.as_("s").with_caching_disabled())
    other = builder.table("t", Materialized.as_("t-store").with_caching_disabled())
    cogrouped.join(other, lambda aggregate, row: aggregate + "&" + row).to_stream().to("out")


def test_a_plain_cogroups_table_joins_through_the_store_its_aggregations_write():
    # Kafka Streams' KTablePassThrough getter reads the cogroup's one store, as the join here does.
    program = _program(_cogroup_joined)
    rows = [("t", "k", "T1", 1), ("a", "k", "1", 2), ("b", "k", "2", 3), ("t", "k", "T2", 4), ("a", "j", "3", 5),
            ("t", "j", "J", 6), ("b", "j", None, 7)]
    expected = [(b"k", b"a1&T1"), (b"k", b"a1b2&T1"), (b"k", b"a1b2&T2"), (b"j", b"a3&J")]
    assert _run(program, rows) == expected
    assert _run(program, rows, batches=len(rows)) == expected


def test_a_windowed_cogroups_table_in_a_join_is_still_refused_naming_the_join():
    def build(builder):
        first = builder.stream("a").group_by_key()
        second = builder.stream("b").group_by_key()
        windows = TimeWindows.of_size_and_grace(10 * SECONDS, 2 * SECONDS)
        cogrouped = first.cogroup(lambda key, value, agg: agg + "a" + value) \
            .cogroup(second, lambda key, value, agg: agg + "b" + value) \
            .windowed_by(windows).aggregate(lambda: "", Materialized.as_("w").with_caching_disabled())
        counts = builder.stream("c").group_by_key().windowed_by(windows) \
            .count(Materialized.as_("c").with_caching_disabled())
        cogrouped.join(counts, lambda aggregate, count: aggregate + str(count)).to_stream().to("out", WINDOWED)
    with pytest.raises(UnsupportedTopologyError, match=r"processor KTABLE-JOINTHIS-\d+ \(table_table_join\) reads the "
                                                       r"table 'COGROUPKSTREAM-MERGE-\d+'"):
        _program(build)


def test_a_stream_joins_a_plain_cogroups_table_through_the_same_store():
    def build(builder):
        cogrouped = builder.stream("a").group_by_key().cogroup(lambda key, value, agg: agg + "a" + value) \
            .aggregate(lambda: "", Materialized.as_("s").with_caching_disabled())
        builder.stream("c").join(cogrouped, lambda click, aggregate: click + "@" + aggregate).to("out")
    program = _program(build)
    rows = [("c", "k", "x", 1), ("a", "k", "1", 2), ("c", "k", "y", 3), ("a", "k", "2", 4), ("c", "k", "z", 5)]
    assert _run(program, rows) == [(b"k", b"y@a1"), (b"k", b"z@a1a2")]
