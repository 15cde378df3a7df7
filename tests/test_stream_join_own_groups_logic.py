"""Stream-stream joins fed by processors that forward records under other keys (a user processor's
punctuator, a suppression, a windowed table): the join buffers each forwarded record under its
own key, as Kafka Streams' join stores do (processors/own_groups.py). Compared with the brute-force
join model (stream_join_model.KsJoin) without Spark; tests/test_equivalence_own_groups.py compares
them with Kafka Streams itself."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.join_buffers import LEFT, outer_store_order
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import Materialized, StreamsBuilder
from dagster_kstreams.topology.joined import StreamJoined
from dagster_kstreams.topology.processor_api import FixedKeyProcessor, PunctuationType, Record, Stores
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows
from stream_join_model import KsJoin, run_task

_JOINS = st.sampled_from(["join", "left_join", "outer_join"])
_events_and_clicks = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", None]), st.sampled_from(["e", "c"]), st.one_of(st.none(), st.just("v")),
              st.integers(100_000, 112_000)),
    max_size=40,
).map(lambda rows: [(k, topic, None if v is None else f"{topic}{i}", t) for i, (k, topic, v, t) in enumerate(rows)])


class HoldUntilStreamTimeMoves(FixedKeyProcessor):
    """Holds each keyed record with a value; a stream-time punctuator (every millisecond) forwards all
    held records, of every key, in store order (key, timestamp, value), each with its own timestamp."""

    def init(self, context) -> None:
        self.context = context
        self.held = context.get_state_store("held")
        context.schedule(1, PunctuationType.STREAM_TIME, self.release)

    def process(self, record) -> None:
        if record.key is not None and record.value is not None:
            self.held.put(f"{record.key}|{record.timestamp:013d}|{record.value}", record.value)

    def release(self, now: int) -> None:
        for entry in list(self.held.all()):
            key, timestamp, _ = entry.key.split("|")
            self.context.forward(Record(key, entry.value, int(timestamp)))
            self.held.delete(entry.key)


def _millis(seconds):
    return st.one_of(st.integers(0, seconds * 1000), st.integers(0, seconds).map(lambda s: s * 1000))


def _outputs(program, records, batches):
    ours, _ = run_task(program, records, batches)
    return [(None if k is None else k.decode(), v.decode()) for topic, k, v in ours if topic != DROPPED_LATE_TOPIC]


@settings(max_examples=100, deadline=None)
@given(_events_and_clicks, _millis(4), _millis(4), _millis(3), _JOINS, st.integers(1, 3))
def test_a_punctuators_records_of_other_keys_are_joined_with_their_own_keys_records(records, before, after, grace,
                                                                                  join, batches):
    # e's records are held and released by a punctuator after any record (of any key, or of c) that
    # moves the stream time: each released record joins c's records of its own key, not those of the
    # key whose record is being processed; pending ones (left/outer) are emitted under their own key.
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("held"),
                                                           Serdes.String(), Serdes.String()))
    held = builder.stream("e").process_values(HoldUntilStreamTimeMoves, "held")
    getattr(held, join)(builder.stream("c"), lambda l, r: f"{l}+{r}", JoinWindows(before, after, grace)).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    assert program.task_grouped
    model = KsJoin(before, after, grace, join.replace("_join", ""))
    expected, pending, stream_time, due = [], [], -1, 0
    for key, topic, value, ts in records:
        if topic == "c":
            expected += model.process(key, "right", value, ts)
        elif key is not None and value is not None:
            pending.append((key, f"{ts:013d}", value))
        stream_time = max(stream_time, ts)
        if stream_time >= due:  # the punctuator, after the record has gone through
            for held_key, held_ts, held_value in sorted(pending):
                expected += model.process(held_key, "left", held_value, int(held_ts))
            pending, due = [], stream_time + 1
    assert _outputs(program, records, batches) == [(key, value) for key, value, _ in expected]


@settings(max_examples=60, deadline=None)
@given(_events_and_clicks, _millis(4), _millis(4), _millis(3), _JOINS, st.integers(1, 3))
def test_a_time_windowed_tables_windows_are_joined_each_with_its_own_windows_updates(records, before, after, grace,
                                                                                      join, batches):
    # Two 2 s windowed counts, their streams joined: an update of a window pairs with the other
    # count's updates of that very window (a key of its own), never with another window of the key.
    builder = StreamsBuilder()
    windows = TimeWindows.of_size_with_no_grace(timedelta(seconds=2))
    counts = {}
    for topic in ("e", "c"):
        counts[topic] = builder.stream(topic).group_by_key().windowed_by(windows) \
            .count(Materialized.as_(f"{topic}-counts").with_caching_disabled()).to_stream()
    getattr(counts["e"], join)(counts["c"], lambda l, r: f"{l}+{r}", JoinWindows(before, after, grace)) \
        .map(lambda key, value: (f"{key.key}@{key.window.start}", value)).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    assert program.task_grouped
    model = KsJoin(before, after, grace, join.replace("_join", ""))
    aggregates, expected, clocks = {}, [], {"e": -1, "c": -1}
    for key, topic, value, ts in records:
        if key is None:
            continue  # a windowed count skips it; it counts a null value
        clocks[topic] = max(clocks[topic], ts)  # each count's own stream time (of the records it counts)
        start = ts // 2000 * 2000
        if start + 2000 <= clocks[topic]:
            continue  # its window closed (no grace)
        count, stamp = aggregates.get((topic, key, start), (0, ts))
        aggregates[(topic, key, start)] = (count + 1, max(stamp, ts))
        side = "left" if topic == "e" else "right"
        expected += model.process(f"{key}@{start}", side, count + 1, max(stamp, ts))
    assert _outputs(program, records, batches) == [(key, f"{value}") for key, value, _ in expected]


def _joined_after(left) -> StreamsBuilder:
    builder = StreamsBuilder()
    left(builder.stream("e")).to_stream().outer_join(builder.stream("c"), lambda l, r: f"{l}+{r}",
                                                     JoinWindows(1000, 1000, 0)).to("out")
    return builder


@pytest.mark.parametrize("windows", [
    SessionWindows.of_inactivity_gap_with_no_grace(timedelta(seconds=1)),
    SlidingWindows.of_time_difference_with_no_grace(timedelta(seconds=1)),
])
def test_a_join_after_session_or_sliding_windows_runs(windows):
    builder = _joined_after(lambda events: events.group_by_key().windowed_by(windows)
                            .count(Materialized.as_("counts").with_caching_disabled()))
    compile_topology(builder.build(), "app").program(0)


def test_a_session_key_serde_on_a_join_after_time_windows_only_is_refused_naming_the_join():
    # The sub-topology keeps a time window by its key and start: the end a session serde writes is not kept.
    builder = StreamsBuilder()
    windows = builder.stream("e").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=1))) \
        .count(Materialized.as_("window-counts").with_caching_disabled()).to_stream()
    windows.outer_join(windows, lambda l, r: f"{l}+{r}", JoinWindows(1000, 1000, 0),
                       StreamJoined.with_(WindowedSerde(Serdes.String(), session=True), Serdes.Long(), Serdes.Long())) \
        .to("out")
    with pytest.raises(UnsupportedTopologyError,
                       match=r"stream-stream join KSTREAM-OUTERTHIS-\d+ writes its keys with a session-windowed serde"):
        compile_topology(builder.build(), "app").program(0)


def test_the_outer_join_store_orders_session_keys_by_key_end_then_start():
    # SessionKeySchema.toBinary: key bytes, end, start; TimeWindowedSerializer: key bytes, start.
    later_start_earlier_end, earlier_start_later_end = (1, LEFT, (b"k", 300, 400)), (1, LEFT, (b"k", 200, 500))
    pending = [earlier_start_later_end, later_start_earlier_end]
    assert sorted(pending, key=lambda entry: outer_store_order(entry, True)) == [
        later_start_earlier_end, earlier_start_later_end]
    assert sorted(pending, key=outer_store_order) == [earlier_start_later_end, later_start_earlier_end]
