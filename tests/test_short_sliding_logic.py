"""A sliding-windowed aggregation whose store's supplier keeps less than its windows stay open
(:func:`dagster_kstreams.processors.supplier_shape.keeps_store_clock`): built with its own clocks and the
supplier's retention, its output through a sub-topology program against a model of Kafka Streams' processor
over the supplier's store (the store's observed time, its fetch cut, the puts it drops), on any input of two keys
(hypothesis); and what stays refused, by name. Compared with Kafka Streams in
tests/test_equivalence_kstreams_window_scenarios.py (out-short-sliding-*)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dagster_kstreams.orchestration.app import check_runnable
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.own_stream_time import OwnSlidingWindowAggregate
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.processors.window_store import dsl_segment_interval, process_sliding_windows
from dagster_kstreams.processors.windows import SlidingWindowAggregate
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import EmitStrategy, Materialized, Stores, StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.processor_api import Processor
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import SlidingWindows
from supplier_topologies import STILL_REFUSED_SHORT
from test_own_stream_time_logic import run_batches

MS = timedelta(milliseconds=1)


def _supplier(in_memory: bool, retention: int, difference: int):
    make = Stores.in_memory_window_store if in_memory else Stores.persistent_timestamped_window_store
    return make("sums", retention * MS, difference * MS, False)


class _Reader(Processor):
    def init(self, context) -> None:
        self.store = context.get_state_store("sums")

    def process(self, record) -> None:
        pass


def _sliding_sums(windows: SlidingWindows, supplier, cached=False, emit_on_close=False,
                  read_by_processor=False) -> StreamsBuilder:
    builder = StreamsBuilder()
    windowed = builder.stream("in").group_by_key().windowed_by(windows)
    if emit_on_close:
        windowed = windowed.emit_strategy(EmitStrategy.on_window_close())
    materialized = Materialized.as_(supplier)
    sums = windowed.aggregate(lambda: "", lambda key, value, aggregate: f"{aggregate}+{value}",
                              materialized if cached else materialized.with_caching_disabled()).to_stream()
    if read_by_processor:
        sums.process(_Reader, "sums")
    sums.to("out", Produced.with_(WindowedSerde(Serdes.String(), windows.time_difference_ms), Serdes.String()))
    return builder


def _program(builder: StreamsBuilder):
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


class _SuppliersStore:
    """The supplier's window store as ``KStreamSlidingWindowAggregate`` uses it (all keys of one task): its
    observed time is the largest window start put (a dropped put's too); ``fetch`` returns the key's windows
    starting after it minus the retention; in memory a put at or below that cut is dropped, in RocksDB one into
    a segment before the cut's (the DSL's segments of ``max(retention / 2, 60 s)``)."""

    def __init__(self, retention: int, in_memory: bool):
        self.retention, self.in_memory, self.observed = retention, in_memory, -1
        self.windows: dict = {}  # (key, start) -> (aggregate, timestamp)
        self.dropped = 0

    def fetch(self, key, low: int, high: int) -> dict:
        first = max(low, self.observed - self.retention + 1)
        return {start: window for (owner, start), window in self.windows.items()
                if owner == key and first <= start <= high}

    def put(self, key, start: int, aggregate, timestamp: int) -> None:
        self.observed = max(self.observed, start)
        cut = self.observed - self.retention
        interval = dsl_segment_interval(self.retention)
        if start <= cut if self.in_memory else start // interval < max(cut, 0) // interval:
            self.dropped += 1
        elif aggregate is None:
            self.windows.pop((key, start), None)
        else:
            self.windows[key, start] = (aggregate, timestamp)


def _kafka_streams(windows: SlidingWindows, store: _SuppliersStore, rows) -> tuple[list, int]:
    """What Kafka Streams' processor forwards (key, start, aggregate) and drops (late windows and puts the store
    drops), fed ``rows``: each record's windows read by one fetch from the store, then put back one by one."""
    difference, stream_time, forwarded, late = windows.time_difference_ms, None, [], 0
    for key, value, timestamp in rows:
        stream_time = timestamp if stream_time is None else max(stream_time, timestamp)
        fetched = store.fetch(key, max(0, timestamp - 2 * difference), timestamp + 1)
        updates, dropped = process_sliding_windows(windows, fetched, key, value, timestamp, stream_time,
                                                   lambda: "", lambda k, v, aggregate: f"{aggregate}+{v}")
        late += dropped
        for start, _end, new, new_timestamp, _old in updates:
            store.put(key, start, new, new_timestamp)
            forwarded.append((key, start, new))
    return forwarded, late + store.dropped


def _ours(program, difference: int, rows, batches: int) -> tuple[list, int]:
    serde = WindowedSerde(Serdes.String(), difference)
    written = run_batches(program, rows, batches)
    forwarded = [(windowed.key, windowed.window.start, value.decode())
                 for windowed, value in ((serde.deserialize(key), value) for topic, key, value in written
                                         if topic == "out")]
    return forwarded, sum(topic == DROPPED_LATE_TOPIC for topic, _, _ in written)


@settings(max_examples=40, deadline=None)
@given(difference=st.integers(2, 10), grace=st.integers(0, 40), shorter=st.integers(1, 60), in_memory=st.booleans(),
       batches=st.integers(1, 3), rows=st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 90)),
                                                 min_size=1, max_size=30))
@example(difference=10, grace=90, shorter=65, in_memory=True, batches=2,  # the window scenarios' partition 0
         rows=[("a", t) for t in (10, 11, 60, 12, 13, 61, 63, 33, 36, 36)])
def test_a_short_kept_sliding_aggregation_reads_what_the_suppliers_store_returns(difference, grace, shorter, in_memory,
                                                                                batches, rows):
    windows = SlidingWindows.of_time_difference_and_grace(difference * MS, grace * MS)
    retention = max(difference, 2 * difference + grace - shorter)  # from the size (Stores' floor) to below the DSL's
    rows = [(key, str(timestamp), 1_000 + timestamp) for key, timestamp in rows]
    program = _program(_sliding_sums(windows, _supplier(in_memory, retention, difference)))
    assert _ours(program, difference, rows, batches) == _kafka_streams(windows, _SuppliersStore(retention, in_memory),
                                                                      rows)


def test_the_store_time_cuts_what_the_stream_time_would_keep_and_keeps_what_it_would_cut():
    """The window scenarios' partition 0 kept 45 ms: at 2512 the store's time is 2550 (the left window of 2560),
    its cut 2505 keeps the right window at 2511 that stream time's (2515) would not, and drops the window at 2501."""
    windows = SlidingWindows.of_time_difference_and_grace(10 * MS, 90 * MS)
    rows = [("a", str(t), 2_500 + t) for t in (10, 11, 60, 12)]
    forwarded, _ = _kafka_streams(windows, _SuppliersStore(45, True), rows)
    assert forwarded[-2:] == [("a", 2511, "+11+12"), ("a", 2502, "+12")]
    assert _ours(_program(_sliding_sums(windows, _supplier(True, 45, 10))), 10, rows, 2)[0] == forwarded


@pytest.mark.parametrize("in_memory", [True, False])
def test_a_short_kept_sliding_aggregation_keeps_its_own_clocks_and_the_suppliers_retention(in_memory):
    windows = SlidingWindows.of_time_difference_and_grace(10 * MS, 90 * MS)
    program = _program(_sliding_sums(windows, _supplier(in_memory, 45, 10)))
    (aggregation,) = [node for node in program.nodes if node.stateful]
    assert isinstance(aggregation, OwnSlidingWindowAggregate) and aggregation.retention == 45
    assert program.task_grouped
    kept = _program(_sliding_sums(windows, _supplier(in_memory, 110, 10)))  # the DSL's retention: the stream time's
    (aggregation,) = [node for node in kept.nodes if node.stateful]
    assert type(aggregation) is SlidingWindowAggregate and aggregation.retention == 121


# ---- what stays refused, when defined ------------------------------------------------------

SLIDING = SlidingWindows.of_time_difference_and_grace(10 * MS, 80 * MS)
WHERE = "processor KSTREAM-AGGREGATE-0000000001: store sums's supplier keeps 32 ms, less than the 100 ms"


def _runnable(builder: StreamsBuilder) -> None:
    check_runnable(builder.build(), "short-sliding", {"in": 2})


def test_the_runner_takes_a_short_kept_sliding_aggregation_uncached_on_update():
    for in_memory in (True, False):
        _runnable(_sliding_sums(SLIDING, _supplier(in_memory, 32, 10)))


@pytest.mark.parametrize("options, reason", STILL_REFUSED_SHORT)
def test_the_runner_still_refuses_a_short_kept_sliding_store_naming_processor_and_store(options, reason):
    with pytest.raises(UnsupportedTopologyError, match=f"{WHERE} .*, {reason}"):
        _runnable(_sliding_sums(SLIDING, _supplier(True, 32, 10), **options))


def test_the_runner_still_refuses_a_short_kept_sliding_cogroup_store():
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().cogroup(lambda key, value, count: count + 1).windowed_by(SLIDING) \
        .aggregate(lambda: 0, Materialized.as_(_supplier(True, 32, 10)).with_caching_disabled()).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match=r"processor COGROUPKSTREAM-AGGREGATE-\d+: store sums's supplier "
                                                       r"keeps 32 ms, .*, as a cogroup's store"):
        _runnable(builder)
