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
