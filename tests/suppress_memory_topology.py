"""Emitting on window close from stores kept in memory and from a RocksDB supplier's, a part of the
suppression example (``suppress_examples`` in tests/suppress_topology.py calls :func:`closed_from_memory`
and :func:`closed_from_rocksdb_supplier`): its Java twin is the end of
kstreams.oracle.SuppressExamples.suppressExamples; keep the two in step.

Kafka Streams' in-memory suppliers ignore the emit strategy, so these emit from a plain
``InMemoryWindowStore`` (no window starting at its time minus the retention, where the time-ordered
store still returns it) and a plain ``InMemorySessionStore`` (its sessions by end, then key, then start
descending; none ending before its time minus the retention plus 1, where the time-ordered store keeps
a live segment's: a jump of stream time longer than the retention leaves the sessions before it unemitted).
A timestamped RocksDB supplier's window store is the emit's own (not the time-ordered store): the in-memory
store's windows, segment by segment (60 s here), then by key, then start.

Its lambdas are self-contained (no module-level helpers): Spark's Python workers cannot import
modules of tests/, and the test modules ship this one by value.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams.topology import Stores
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.emit_strategy import EmitStrategy
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import SessionWindows, TimeWindows

MEMORY_OUTPUTS = ("out-closed-memory", "out-closed-memory-sessions")
ROCKSDB_OUTPUTS = ("out-closed-rocksdb",)


def closed_from_memory(grouped, topics: dict[str, str]) -> None:
    """The closed hopping windows (a store kept 15 s) and sessions (10 s) of the ``grouped`` events."""
    grouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))
                        .advance_by(timedelta(seconds=5))).emit_strategy(EmitStrategy.on_window_close()) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "," + ("null" if value is None else value),
                   Materialized.as_(Stores.in_memory_window_store("closed-memory", timedelta(seconds=15),
                                                                    timedelta(seconds=10), False))
                   .with_caching_disabled()) \
        .to_stream().to(topics["out-closed-memory"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String()))
    grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=3), timedelta(seconds=1))) \
        .emit_strategy(EmitStrategy.on_window_close()) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "," + ("null" if value is None else value),
                   lambda key, one, two: one + "|" + two,
                   Materialized.as_(Stores.in_memory_session_store("closed-memory-sessions", timedelta(seconds=10)))
                   .with_caching_disabled()) \
        .to_stream().to(topics["out-closed-memory-sessions"],
                        Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.String()))


def closed_from_rocksdb_supplier(grouped, topics: dict[str, str]) -> None:
    """The closed hopping windows of the ``grouped`` events from a timestamped RocksDB supplier's store kept 60 s."""
    grouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))
                        .advance_by(timedelta(seconds=5))).emit_strategy(EmitStrategy.on_window_close()) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "," + ("null" if value is None else value),
                   Materialized.as_(Stores.persistent_timestamped_window_store(
                       "closed-rocksdb", timedelta(seconds=60), timedelta(seconds=10), False)).with_caching_disabled()) \
        .to_stream().to(topics["out-closed-rocksdb"], Produced.with_(WindowedSerde(Serdes.String(), 10_000),
                                                                    Serdes.String()))
