"""Store suppliers of DSL operations and the DSL's default store kind, when defined: the supplier
kind each operation takes, the windowed stores' retention checks (a property test against Kafka
Streams' rule), ``TopologyConfig``'s settings, and what the Spark runner still refuses, by name.
describe() of each is compared with Kafka Streams in tests/test_describe_oracle.py
(tests/topology_catalog_store_suppliers.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dagster_kstreams.orchestration.app import check_runnable
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.join_buffers import stored_when_put
from dagster_kstreams.processors.session_close import ClosedSessions
from dagster_kstreams.processors.window_close import ClosedWindows
from dagster_kstreams.topology import (
    EmitStrategy, JoinWindows, Materialized, SessionWindows, SlidingWindows, Stores, StreamJoined, StreamsBuilder,
    StreamsConfig, TimeWindows, TopologyConfig, TopologyException,
)
from dagster_kstreams.topology.processor_api import Processor
from dagster_kstreams.topology.window_store_settings import windowed_store_retention, windows_minimum_retention

MS = timedelta(milliseconds=1)
IN_MEMORY = TopologyConfig({StreamsConfig.DEFAULT_DSL_STORE_CONFIG: StreamsConfig.IN_MEMORY})


class _Reader(Processor):
    def init(self, context) -> None:
        self.store = context.get_state_store("counts")

    def process(self, record) -> None:
        pass


def _windowed_count(materialized, config=None, emit_on_close=False, read_by_processor=False):
    builder = StreamsBuilder(config)
    windowed = builder.stream("clicks").group_by_key().windowed_by(TimeWindows.of_size_and_grace(10 * MS, 5 * MS))
    if emit_on_close:
        windowed = windowed.emit_strategy(EmitStrategy.on_window_close())
    counts = windowed.count(materialized).to_stream()
    if read_by_processor:
        counts.process(_Reader, "counts")
    counts.to("out")
    return builder.build()


def _runnable(topology) -> None:
    check_runnable(topology, "suppliers", {"clicks": 2, "orders": 2, "payments": 2})


# ---- the DSL -------------------------------------------------------------------------------

def test_a_supplier_names_the_store_and_a_window_store_keeps_its_retention():
    topology = _windowed_count(Materialized.as_(Stores.in_memory_window_store("counts", 60 * MS, 10 * MS, False)))
    store = topology.state_stores["counts"]
    assert (store.retention_ms, store.persistent) == (60, False)


@pytest.mark.parametrize("supplier", [Stores.in_memory_key_value_store("counts"),
                                      Stores.persistent_session_store("counts", 60 * MS)])
def test_a_windowed_aggregation_refuses_a_supplier_of_another_kind(supplier):
    with pytest.raises(TopologyException, match="store counts is given a .*WindowBytesStoreSupplier's store"):
        _windowed_count(Materialized.as_(supplier))


def test_a_table_refuses_a_window_store_supplier():
    with pytest.raises(TopologyException, match="KGroupedStream.count: store w is given a WindowBytesStoreSupplier"):
        StreamsBuilder().stream("s").group_by_key().count(
            Materialized.as_(Stores.in_memory_window_store("w", 10 * MS, 10 * MS, False)))


def test_a_session_aggregation_refuses_a_window_store_supplier():
    with pytest.raises(TopologyException, match="SessionBytesStoreSupplier's store"):
        StreamsBuilder().stream("s").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(MS)) \
            .count(Materialized.as_(Stores.in_memory_window_store("w", 10 * MS, 10 * MS, False)))


windows_strategy = st.one_of(
    st.builds(lambda size, grace: TimeWindows.of_size_and_grace(size * MS, grace * MS),
              st.integers(1, 1000), st.integers(0, 1000)),
    st.builds(lambda difference, grace: SlidingWindows.of_time_difference_and_grace(difference * MS, grace * MS),
              st.integers(1, 1000), st.integers(0, 1000)),
    st.builds(lambda gap, grace: SessionWindows.of_inactivity_gap_and_grace(gap * MS, grace * MS),
              st.integers(1, 1000), st.integers(0, 1000)),
)


@given(windows_strategy, st.integers(0, 3000), st.integers(0, 3000))
def test_the_materialized_retention_is_checked_and_the_supplier_one_kept(windows, retention, supplier_retention):
    """Kafka Streams' materializers: the Materialized retention (else the windows' own) must cover the
    windows; the store then keeps its supplier's retention, which nobody checks."""
    session = isinstance(windows, SessionWindows)
    supplier = (Stores.in_memory_session_store("s", supplier_retention * MS) if session
                else Stores.in_memory_window_store("s", max(supplier_retention, 1) * MS, MS, False))
    materialized = Materialized.as_(supplier).with_retention(retention * MS)
    if retention < windows_minimum_retention(windows):
        with pytest.raises(TopologyException, match="The retention period of the .* store s must be no smaller"):
            windowed_store_retention(windows, materialized, "s", "aggregate")
    else:
        assert windowed_store_retention(windows, materialized, "s", "aggregate") == supplier.retention_ms
        assert windowed_store_retention(windows, Materialized.as_("s").with_retention(retention * MS), "s",
                                        "aggregate") == retention


def test_topology_config_reads_default_dsl_store_and_the_suppliers_class_wins():
    assert TopologyConfig().persistent and not IN_MEMORY.persistent
    both = TopologyConfig({StreamsConfig.DEFAULT_DSL_STORE_CONFIG: StreamsConfig.IN_MEMORY,
                           StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG:
                           "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$RocksDBDslStoreSuppliers"})
    assert both.persistent
    with pytest.raises(TopologyException, match="default.dsl.store must be rocksDB or in_memory, got 'memory'"):
        TopologyConfig({StreamsConfig.DEFAULT_DSL_STORE_CONFIG: "memory"})
    with pytest.raises(TopologyException, match="dsl.store.suppliers.class must name one of"):
        TopologyConfig({StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG: "my.Suppliers"})
    with pytest.raises(TopologyException, match="store type must be one of rocksDB, in_memory"):
        Materialized.as_("x").with_store_type("memory")


def test_default_dsl_store_settles_the_stores_without_a_kind_of_their_own():
    topology = _windowed_count(Materialized.as_(Stores.persistent_window_store("counts", 60 * MS, 10 * MS, False)),
                               IN_MEMORY)
    assert topology.state_stores["counts"].persistent
    topology = _windowed_count(Materialized.as_("counts"), IN_MEMORY)
    assert topology.state_stores["counts"].persistent is False
    topology = _windowed_count(Materialized.as_("counts").with_store_type(StreamsConfig.ROCKS_DB), IN_MEMORY)
    assert topology.state_stores["counts"].persistent


# ---- the Spark runner ----------------------------------------------------------------------

def test_the_runner_takes_suppliers_that_hold_what_the_dsl_stores_would():
    _runnable(_windowed_count(Materialized.as_(Stores.in_memory_window_store("counts", 15 * MS, 10 * MS, False))))
    _runnable(_windowed_count(Materialized.as_("counts"), IN_MEMORY))
    _runnable(_windowed_count(Materialized.as_(Stores.persistent_timestamped_window_store("counts", 60 * MS, 10 * MS,
                                                                                         False)), read_by_processor=True))
    builder = StreamsBuilder(IN_MEMORY)
    builder.stream("orders").outer_join(builder.stream("payments"), lambda a, b: f"{a}+{b}",
                                        JoinWindows.of_time_difference_and_grace(2 * MS, MS),
                                        StreamJoined.with_(Stores.in_memory_window_store("l", 5 * MS, 4 * MS, True),
                                                           Stores.in_memory_window_store("r", 5 * MS, 4 * MS, True))
                                        ).to("out")
    _runnable(builder.build())


@pytest.mark.parametrize("supplier, reason", [
    (Stores.in_memory_window_store("counts", 14 * MS, 10 * MS, False),
     r"keeps 14 ms, less than the 15 ms its windows stay open \(Kafka Streams' store then returns no window older"
     r".*, with the record cache on"),
    (Stores.in_memory_window_store("counts", 15 * MS, 5 * MS, False),
     "has a window size of 5 ms, not the windows' 10 ms"),
    (Stores.persistent_timestamped_window_store("counts", 15 * MS, 10 * MS, True), "retains duplicates"),
    (Stores.persistent_window_store("counts", 15 * MS, 10 * MS, False), "is a plain RocksDB window store, which keeps no"),
])
def test_the_runner_refuses_an_aggregation_supplier_it_does_not_model(supplier, reason):
    with pytest.raises(UnsupportedTopologyError, match=f"processor KSTREAM-AGGREGATE-0000000001: store counts's "
                                                       f"supplier {reason}"):
        _runnable(_windowed_count(Materialized.as_(supplier)))


def _closing(windows, materialized, config=None, read_by_processor=False):
    builder = StreamsBuilder(config)
    counts = builder.stream("clicks").group_by_key().windowed_by(windows) \
        .emit_strategy(EmitStrategy.on_window_close()).count(materialized).to_stream()
    if read_by_processor:
        counts = counts.process(_Reader, "counts")
    counts.to("out")
    return builder.build()


HOPPING = TimeWindows.of_size_and_grace(10 * MS, 5 * MS).advance_by(5 * MS)
SLIDING = SlidingWindows.of_time_difference_and_grace(10 * MS, 5 * MS)
SESSIONS = SessionWindows.of_inactivity_gap_and_grace(5 * MS, 5 * MS)


@pytest.mark.parametrize("windows, materialized, config", [
    (HOPPING, Materialized.as_(Stores.in_memory_window_store("counts", 15 * MS, 10 * MS, False)), None),
    (HOPPING, Materialized.as_("counts"), IN_MEMORY),
    (SLIDING, Materialized.as_("counts").with_store_type(StreamsConfig.IN_MEMORY), None),
    (SLIDING, Materialized.as_(Stores.in_memory_window_store("counts", 25 * MS, 10 * MS, False)), None),
    (SESSIONS, Materialized.as_("counts"), IN_MEMORY),
    (SESSIONS, Materialized.as_("counts").with_store_type(StreamsConfig.IN_MEMORY), None),
    (SESSIONS, Materialized.as_(Stores.in_memory_session_store("counts", 10 * MS)), None),
    (HOPPING, Materialized.as_(Stores.persistent_timestamped_window_store("counts", 15 * MS, 10 * MS, False)), None),
    (SLIDING, Materialized.as_(Stores.persistent_timestamped_window_store("counts", 25 * MS, 10 * MS, False)), None),
])
def test_the_runner_takes_emit_on_close_from_a_store_kept_in_memory_or_a_timestamped_rocksdb_supplier(
        windows, materialized, config):
    """Kafka Streams emits from a plain InMemoryWindowStore (start, then key), InMemorySessionStore (end,
    then key, then start descending) or the timestamped supplier's segmented RocksDBWindowStore (segment,
    then key, then start): compared with it in tests/test_equivalence_kstreams_window_scenarios.py."""
    _runnable(_closing(windows, materialized, config))


@pytest.mark.parametrize("windows, materialized, config, read, reason", [
    (HOPPING, Materialized.as_(Stores.persistent_timestamped_window_store("counts", 15 * MS, 10 * MS, False)), None,
     True, r"its supplier's RocksDB window store that a user processor it forwards to also reads \(it runs while the "
     "emit's iterator is open, which opens each segment's RocksDB iterator as it reaches it"),
    # Kafka Streams fails at run time: the adapter of a plain RocksDB store reads aggregates back stamped -1
    (HOPPING, Materialized.as_(Stores.persistent_window_store("counts", 15 * MS, 10 * MS, False)), None, False,
     r"its supplier's plain RocksDB window store, which Kafka Streams itself cannot emit from .* no timestamp"),
    (SLIDING, Materialized.as_(Stores.persistent_window_store("counts", 25 * MS, 10 * MS, False)), None, False,
     "its supplier's plain RocksDB window store"),
    (SLIDING, Materialized.as_(Stores.persistent_timestamped_window_store("counts", 25 * MS, 10 * MS, False)), None,
     True, "its supplier's RocksDB window store that a user processor it forwards to also reads"),
    (SESSIONS, Materialized.as_(Stores.persistent_session_store("counts", 10 * MS)), None, False,
     r"its supplier's RocksDB session store, which Kafka Streams itself cannot emit from .*"
     "UnsupportedOperationException"),
    (SESSIONS, Materialized.as_(Stores.in_memory_session_store("counts", 10 * MS)), None, True,
     r"a store kept in memory that a user processor it forwards to also reads \(it runs while the emit's "
     "InMemorySessionStore iterator is open"),
    (SESSIONS, Materialized.as_("counts"), IN_MEMORY, True,
     "a store kept in memory that a user processor it forwards to also reads"),
    (HOPPING, Materialized.as_("counts"), IN_MEMORY, True,
     r"a store kept in memory that a user processor it forwards to also reads \(it runs while the emit's "
     "InMemoryWindowStore iterator is open"),
    (SLIDING, Materialized.as_(Stores.in_memory_window_store("counts", 25 * MS, 10 * MS, False)), None, True,
     "a store kept in memory that a user processor it forwards to also reads"),
])
def test_the_runner_refuses_emit_on_close_it_does_not_model_naming_processor_and_store(
        windows, materialized, config, read, reason):
    with pytest.raises(UnsupportedTopologyError, match="processor KSTREAM-AGGREGATE-0000000001: store counts emits "
                                                       f"on window close from {reason}"):
        _runnable(_closing(windows, materialized, config, read_by_processor=read))


def _closing_beside(windows, materialized, config=None, reader_after_map=False):
    """An aggregation emitting on window close with a processor naming its store on the source stream (it runs
    between the emits), and one on the emitted windows: after a map when ``reader_after_map`` (it runs during the
    emit: refused), else one naming no store."""
    builder = StreamsBuilder(config)
    clicks = builder.stream("clicks")
    counts = clicks.group_by_key().windowed_by(windows).emit_strategy(EmitStrategy.on_window_close()) \
        .count(materialized).to_stream()
    clicks.process(_Reader, "counts").to("reads")
    if reader_after_map:
        counts.map(lambda window, count: (window.key, count)).process(_Reader, "counts").to("out")
    else:
        counts.process(_Stamp).to("out")
    return builder.build()


class _Stamp(Processor):
    def init(self, context) -> None:
        self.context = context

    def process(self, record) -> None:
        self.context.forward(record)


@pytest.mark.parametrize("windows, materialized, config", [
    (HOPPING, Materialized.as_(Stores.in_memory_window_store("counts", 15 * MS, 10 * MS, False)), None),
    (HOPPING, Materialized.as_("counts"), IN_MEMORY),
    (SLIDING, Materialized.as_("counts").with_store_type(StreamsConfig.IN_MEMORY), None),
    (SLIDING, Materialized.as_(Stores.in_memory_window_store("counts", 25 * MS, 10 * MS, False)), None),
    (SESSIONS, Materialized.as_(Stores.in_memory_session_store("counts", 10 * MS)), None),
    (SESSIONS, Materialized.as_("counts").with_store_type(StreamsConfig.IN_MEMORY), None),
    (HOPPING, Materialized.as_(Stores.persistent_timestamped_window_store("counts", 15 * MS, 10 * MS, False)), None),
    (SLIDING, Materialized.as_(Stores.persistent_timestamped_window_store("counts", 25 * MS, 10 * MS, False)), None),
])
def test_the_runner_takes_emit_on_close_from_an_in_memory_or_rocksdb_store_a_processor_beside_it_reads(
        windows, materialized, config):
    """The processor runs between the emits (the emit's iterator is closed): compared with Kafka Streams in
    tests/test_equivalence_dsl_window_store_processor.py."""
    _runnable(_closing_beside(windows, materialized, config))


@pytest.mark.parametrize("windows, materialized, config, store", [
    *((windows, Materialized.as_("counts"), IN_MEMORY, "a store kept in memory") for windows in (HOPPING, SLIDING,
                                                                                                   SESSIONS)),
    *((windows, Materialized.as_(Stores.persistent_timestamped_window_store("counts", retention * MS, 10 * MS, False)),
       None, "its supplier's RocksDB window store") for windows, retention in ((HOPPING, 15), (SLIDING, 25))),
])
def test_the_runner_refuses_a_processor_of_the_store_after_the_emit_however_far(windows, materialized, config, store):
    with pytest.raises(UnsupportedTopologyError, match="processor KSTREAM-AGGREGATE-0000000001: store counts emits "
                                                       f"on window close from {store} that a user processor it "
                                                       "forwards to also reads"):
        _runnable(_closing_beside(windows, materialized, config, reader_after_map=True))


@given(st.lists(st.tuples(st.integers(0, 60), st.sampled_from([b"a", b"b", b"ab"])), max_size=12),
       st.integers(0, 80), st.integers(15, 30))
def test_an_in_memory_store_emits_the_time_ordered_ones_windows_but_the_one_at_its_retention(puts, close, retention):
    """InMemoryWindowStore.fetchAll starts one later than the time-ordered store: the same windows in the
    same order, but for those starting exactly at the store's time minus the retention."""
    results = {}
    for in_memory in (False, True):
        closed = ClosedWindows(in_memory)
        for start, key in puts:
            closed.put(start, key, key, key.decode(), deleted=False)
        results[in_memory] = closed.due(HOPPING, close, retention)
    edge = max((start for start, _ in puts), default=-1) - retention
    assert results[True] == [window for window in results[False] if window[0] != edge]


@given(st.lists(st.tuples(st.integers(0, 400_000), st.sampled_from([b"a", b"b", b"ab", b"b\x00"])), max_size=12),
       st.integers(0, 500_000), st.integers(15, 300_000))
def test_a_rocksdb_supplier_emits_the_in_memory_ones_windows_by_segment_then_key_then_start(puts, close, retention):
    """The segmented store's fetchAll returns what InMemoryWindowStore's does (both start one after the
    time-ordered store), ordered by segment, then by its key bytes (serialized key, then big-endian start)."""
    interval = max(retention // 2, 60_000)
    in_memory, segmented = ClosedWindows(in_memory=True), ClosedWindows(segment_interval=interval)
    for start, key in puts:
        for closed in (in_memory, segmented):
            closed.put(start, key, key, key.decode(), deleted=False)
    expected = in_memory.due(HOPPING, close, retention)
    emitted = segmented.due(HOPPING, close, retention)
    assert sorted(emitted) == sorted(expected)
    order = [(start // interval, key + start.to_bytes(8, "big")) for start, key, _ in emitted]
    assert order == sorted(order)


def test_a_rocksdb_supplier_emits_a_segment_by_key_before_the_next_segment():
    """Two keys whose byte order is not their windows' start order, windows in two segments of 60 s."""
    closed = ClosedWindows(segment_interval=60_000)
    for start, key in ((45_000, b"b"), (50_000, b"b"), (50_000, b"a"), (55_000, b"a"), (60_000, b"b"),
                       (65_000, b"a"), (60_000, b"a")):
        closed.put(start, key, key, key.decode(), deleted=False)
    windows = TimeWindows.of_size_and_grace(10_000 * MS, 5_000 * MS).advance_by(5_000 * MS)
    emitted = [(key, start) for start, key, _ in closed.due(windows, 85_000, 60_000)]
    assert emitted == [(b"a", 50_000), (b"a", 55_000), (b"b", 45_000), (b"b", 50_000),
                       (b"a", 60_000), (b"a", 65_000), (b"b", 60_000)]


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 6), st.sampled_from([b"a", b"b", b"ab"])), max_size=12),
       st.integers(0, 30), st.integers(10, 20))
def test_an_in_memory_store_emits_the_time_ordered_ones_sessions_in_its_own_order_but_those_past_retention(
        puts, close, retention):
    """InMemorySessionStore.findSessions(earliest_end, latest_end) returns the time-ordered store's sessions
    (whose segments outlive these times) by end, then key, then start descending, but for those ending
    before the store's time (the largest end put) minus the retention plus 1."""
    results = {}
    for in_memory in (False, True):
        closed = ClosedSessions(in_memory)
        for end, length, key in puts:
            closed.put(max(0, end - length), end, key, key.decode(), f"{key.decode()}@{end}")
        results[in_memory] = closed.due(close, retention)
    kept_from = max((end for end, _, _ in puts), default=-1) - retention + 1
    assert results[True] == sorted((session for session in results[False] if session[1] >= kept_from),
                                   key=lambda session: (session[1], session[2], -session[0]))


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 6), st.sampled_from([b"a", b"b"])), max_size=10),
       st.lists(st.tuples(st.integers(0, 60), st.sampled_from([b"a", b"b", b"c"])), max_size=6),
       st.integers(0, 30), st.integers(10, 20))
def test_an_in_memory_session_stores_remove_leaves_its_time_where_a_null_put_moves_it(puts, removes, close, retention):
    """A processor's ``remove`` of a session the in-memory store does not hold (any end, ahead of its time
    too) changes nothing the emit fetches; a ``put`` of None of the same sessions moves the store's time,
    so the emit no longer returns the sessions ending before it minus the retention plus 1."""
    def emitted(null_puts_observe):
        closed = ClosedSessions(in_memory=True)
        for end, length, key in puts:
            closed.put(max(0, end - length), end, key, key.decode(), f"{key.decode()}@{end}")
        for end, key in removes:
            if key == b"c" or end > 20:  # a session not stored
                closed.put(end, end, key, key.decode(), None, observes=null_puts_observe)
        return closed.due(close, retention), closed.store_time

    untouched = ClosedSessions(in_memory=True)
    for end, length, key in puts:
        untouched.put(max(0, end - length), end, key, key.decode(), f"{key.decode()}@{end}")
    expected = untouched.due(close, retention)
    assert emitted(False) == (expected, untouched.store_time)
    after_null_puts, store_time = emitted(True)
    assert after_null_puts == [session for session in expected if session[1] >= store_time - retention + 1]


def _sliding_or_session_count(windows, materialized, config=None):
    builder = StreamsBuilder(config)
    counts = builder.stream("clicks").group_by_key().windowed_by(windows).count(materialized).to_stream()
    counts.process(_Reader, "counts").to("out")
    return builder.build()


@pytest.mark.parametrize("windows, materialized, config", [
    (SlidingWindows.of_time_difference_and_grace(5 * MS, 5 * MS),
     Materialized.as_(Stores.in_memory_window_store("counts", 15 * MS, 5 * MS, False)), None),
    (SessionWindows.of_inactivity_gap_and_grace(5 * MS, 5 * MS), Materialized.as_("counts"), IN_MEMORY),
    (SessionWindows.of_inactivity_gap_and_grace(5 * MS, 5 * MS),
     Materialized.as_("counts").with_store_type(StreamsConfig.IN_MEMORY), None),
])
def test_the_runner_takes_a_processor_on_an_in_memory_sliding_or_session_store(windows, materialized, config):
    """Their orders (sliding: by start, then key; sessions: by end, then key, then start descending) are
    the views': compared with Kafka Streams in tests/test_equivalence_dsl_window_store_processor.py."""
    _runnable(_sliding_or_session_count(windows, materialized, config))


@pytest.mark.parametrize("materialized, config", [
    (Materialized.as_(Stores.in_memory_window_store("counts", 15 * MS, 10 * MS, False)), None),
    (Materialized.as_("counts"), IN_MEMORY),
])
def test_the_runner_takes_a_processor_on_an_in_memory_time_window_store(materialized, config):
    """Its order (by start, then key) is the view's: compared with Kafka Streams in
    tests/test_equivalence_dsl_window_store_processor.py."""
    _runnable(_windowed_count(materialized, config, read_by_processor=True))


@given(st.integers(-200_000, 200_000), st.integers(0, 200_000), st.integers(1, 200_000))
def test_an_in_memory_join_store_drops_by_retention_what_a_rocksdb_one_may_keep(behind, stream_time, retention):
    """``InMemoryWindowStore.put`` drops a record at or below ``observed time - retention``; the RocksDB
    store only one whose whole segment expired: it keeps all the in-memory store keeps, and more."""
    timestamp = stream_time - behind
    in_memory = stored_when_put(timestamp, stream_time, retention, persistent=False)
    assert in_memory == (timestamp > stream_time - retention)
    if in_memory:
        assert stored_when_put(timestamp, stream_time, retention, persistent=True)
