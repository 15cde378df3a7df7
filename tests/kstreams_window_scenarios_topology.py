"""Kafka Streams' own scenarios for windows, aggregations and suppression (its unit tests
``KStreamSlidingWindowAggregateTest``, ``KStreamWindowAggregateTest``,
``KStreamSessionWindowAggregateProcessorTest``, ``KTableAggregateTest`` and ``SuppressScenarioTest``),
rewritten as one topology: the Python twin of kstreams.oracle.WindowScenarioExamples (Java); keep the
two in step.

The scenarios share inputs (each in a time range and with keys of its own, see
tests/test_equivalence_kstreams_window_scenarios.py), so every windowed processor also sees the
others' records: what the suite's time allows (one Kafka Streams process, a few sub-topologies).
Every store is uncached (Kafka Streams runs with ``statestore.cache.max.bytes`` 0), so each output is
fixed by the input; every update is stamped with its timestamp (``StampValues``).

Its lambdas are self-contained (no module-level helpers): Spark's Python workers cannot import
modules of tests/, and the test module ships this one by value.
"""

from __future__ import annotations

from datetime import timedelta

from equivalence_io import StampValues
from dagster_kstreams.topology import BufferConfig, Grouped, Stores, StreamsBuilder, StreamsConfig, Suppressed
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.emit_strategy import EmitStrategy
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows, TimeWindows

INPUTS = ("events", "tables", "left", "right")
# Each output and how its keys are read: a time window of that size (ms), a session, or a plain string.
OUTPUT_KEYS = {
    "out-sliding": 10, "out-sliding-reduce": 10, "out-sliding-closed": 10,
    "out-early-50": 50, "out-early-5": 5, "out-early-hopping": 10,
    "out-expired-hopping": 10, "out-expired-sliding": 10,
    "out-session-counts": "session", "out-session-final": "session", "out-session-agg": "session",
    "out-final": 2, "out-final-jump": 2, "out-final-sliding": 5,
    "out-regroup-counts": None, "out-regroup-zero": None, "out-regroup-limit": None, "out-regroup-records": None,
    "out-moves": None, "out-hopping-closed": 10, "out-session-closed": "session", "out-windowed-keys": None,
    "out-regroup-bytes": None, "out-held-counts": None, "out-join-right-held": None, "out-join-left-held": None,
    "out-stream-held": None, "out-kept-held": None, "out-join-held-joined": None, "out-join-held-sums": None,
    "out-held-filtered-sums": None, "out-join-held-twice": None, "out-stream-held-twice": None,
    "out-hopping-closed-memory": 10, "out-sliding-closed-memory": 10, "out-hopping-closed-memory-20": 10,
    "out-session-closed-memory": "session", "out-session-closed-memory-default": "session",
    "out-hopping-closed-rocksdb": 10_000, "out-sliding-closed-rocksdb": 10_000,
    "out-short-kept-memory": 10, "out-short-kept-rocksdb": 10, "out-other-size": None, "out-short-kept-filtered": 10,
    "out-duplicates": 10, "out-plain-rocksdb": 10, "out-plain-rocksdb-sliding": 10,
    "out-short-sliding-memory": 10, "out-short-sliding-rocksdb": 10,
    "out-short-session-memory": "session", "out-short-session-rocksdb": "session",
}
OUTPUTS = tuple(OUTPUT_KEYS)
# A time limit that never comes (SuppressScenarioTest's Long.MAX_VALUE is beyond a timedelta).
NEVER = timedelta(days=100 * 365)


def _ms(milliseconds: int) -> timedelta:
    return timedelta(milliseconds=milliseconds)


def _stamped(table, topic: str, key_serde) -> None:
    """Every update of ``table``, stamped with its timestamp, to ``topic``."""
    table.to_stream().process_values(StampValues).to(topic, Produced.with_(key_serde, Serdes.String()))


def _uncached(store) -> Materialized:
    return Materialized.as_(store).with_caching_disabled()


def window_scenario_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of WindowScenarioExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    _stream_windows(builder, topics)
    _table_aggregations(builder, topics)
    _suppressed_joins(builder, topics)
    return builder


def _stream_windows(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    def windowed(size):
        return WindowedSerde(Serdes.String(), size)

    events = builder.stream(topics["events"])
    # The suppression buffers serialize the windowed keys: the groupings name the key serde.
    grouped = events.group_by_key(Grouped.with_(Serdes.String(), Serdes.String()))
    # KStreamSlidingWindowAggregateTest: testAggregateSmallInput, testReduceSmallInput (and emitting final).
    sliding = SlidingWindows.of_time_difference_and_grace(_ms(10), _ms(5))
    # Three stores from suppliers kept in memory (the first and the last keep the windows' default retention;
    # the expired windows' 100 ms is now the supplier's), which the runner keeps as every store.
    _stamped(grouped.windowed_by(sliding)
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                        _uncached(Stores.in_memory_window_store("sliding-agg", _ms(25), _ms(10), False))),
             topics["out-sliding"], windowed(10))
    _stamped(grouped.windowed_by(sliding)
             .reduce(lambda agg, value: agg + "+" + value, _uncached("sliding-reduce")),
             topics["out-sliding-reduce"], windowed(10))
    _stamped(grouped.windowed_by(sliding).emit_strategy(EmitStrategy.on_window_close())
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + value, _uncached("sliding-closed")),
             topics["out-sliding-closed"], windowed(10))
    # testEarlyRecordsSmallInput, testEarlyRecordsRepeatedInput: windows that would start before 0; and
    # KStreamWindowAggregateTest.testAggBasic's hopping windows on the same early records.
    _stamped(grouped.windowed_by(SlidingWindows.of_time_difference_and_grace(_ms(50), _ms(0)))
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + value, _uncached("early-50")),
             topics["out-early-50"], windowed(50))
    _stamped(grouped.windowed_by(SlidingWindows.of_time_difference_and_grace(_ms(5), _ms(0)))
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + value, _uncached("early-5")),
             topics["out-early-5"], windowed(5))
    _stamped(grouped.windowed_by(TimeWindows.of_size_and_grace(_ms(10), _ms(100)).advance_by(_ms(5)))
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                        _uncached("early-hopping")), topics["out-early-hopping"], windowed(10))
    # KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindow (a store kept 100 ms) and
    # KStreamSlidingWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindowByGrace.
    _stamped(grouped.windowed_by(TimeWindows.of_size_and_grace(_ms(10), _ms(90)).advance_by(_ms(5)))
             .aggregate(lambda: "", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                        _uncached(Stores.in_memory_window_store("expired-hopping", _ms(100), _ms(10), False))),
             topics["out-expired-hopping"], windowed(10))
    _stamped(grouped.windowed_by(SlidingWindows.of_time_difference_and_grace(_ms(10), _ms(90)))
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + value, _uncached("expired-sliding")),
             topics["out-expired-sliding"], windowed(10))
    # SuppressScenarioTest.shouldSupportFinalResultsForSessionWindows (every update, and final results);
    # KStreamSessionWindowAggregateProcessorTest's merges and its late record with a grace of 1 ms.
    sessions = SessionWindows.of_inactivity_gap_with_no_grace(_ms(5))
    session_counts = grouped.windowed_by(sessions).count(_uncached("session-counts"))
    session_serde = WindowedSerde(Serdes.String(), session=True)
    _stamped(session_counts, topics["out-session-counts"], session_serde)
    _stamped(session_counts.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())),
             topics["out-session-final"], session_serde)
    _stamped(grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(_ms(10), _ms(1)))
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                        lambda key, one, two: one + "|" + two,
                        _uncached(Stores.in_memory_session_store("session-agg", _ms(11)))),
             topics["out-session-agg"], session_serde)
    # KStreamWindowAggregateTest's and KStreamSessionWindowAggregateProcessorTest's emit-final variants.
    _stamped(grouped.windowed_by(TimeWindows.of_size_and_grace(_ms(10), _ms(5)).advance_by(_ms(5)))
             .emit_strategy(EmitStrategy.on_window_close())
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                        _uncached("hopping-closed")), topics["out-hopping-closed"], windowed(10))
    _stamped(grouped.windowed_by(sessions).emit_strategy(EmitStrategy.on_window_close())
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                        lambda key, one, two: one + "|" + two, _uncached("session-closed")),
             topics["out-session-closed"], session_serde)
    # KStreamAggregationIntegrationTest.shouldGroupByKey: windows of 500 ms, their keys made strings.
    grouped.windowed_by(TimeWindows.of_size_with_no_grace(_ms(500))).count(_uncached("windowed-500")) \
        .to_stream(lambda window, count: f"{window.key}@{window.window.start}") \
        .process_values(StampValues).to(topics["out-windowed-keys"], Produced.with_(Serdes.String(), Serdes.String()))
    # Emitting on window close from stores kept in memory: Kafka Streams' in-memory DSL suppliers ignore the
    # emit strategy, so these emit from a plain InMemoryWindowStore, which returns no window starting at its
    # time (the largest start put) minus the retention, where the time-ordered store does. Kept exactly size +
    # grace (15 ms), a window is gone when it closes (its start + 15 is a start put by then): nothing is
    # emitted; kept 20 ms, a window is gone when stream time jumps 20 ms or more past its start.
    for output, retention in (("out-hopping-closed-memory", 15), ("out-hopping-closed-memory-20", 20)):
        _stamped(grouped.windowed_by(TimeWindows.of_size_and_grace(_ms(10), _ms(5)).advance_by(_ms(5)))
                 .emit_strategy(EmitStrategy.on_window_close())
                 .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                            _uncached(Stores.in_memory_window_store(output[4:], _ms(retention), _ms(10), False))),
                 topics[output], windowed(10))
    _stamped(grouped.windowed_by(sliding).emit_strategy(EmitStrategy.on_window_close())
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + value,
                        _uncached("sliding-closed-memory").with_store_type(StreamsConfig.IN_MEMORY)),
             topics["out-sliding-closed-memory"], windowed(10))
    # Sessions emitting on window close from stores kept in memory: a plain InMemorySessionStore, which returns
    # the closed sessions by end, then key, then start descending (the time-ordered store: by end, then start,
    # then key), none ending below its time (the largest end put) minus the retention plus 1. Kept 20 ms, a
    # session that stream time jumped 20 ms or more past is gone; kept the default gap + grace (5 ms), every
    # session is gone before it closes: nothing is emitted.
    _stamped(grouped.windowed_by(sessions).emit_strategy(EmitStrategy.on_window_close())
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                        lambda key, one, two: one + "|" + two,
                        _uncached(Stores.in_memory_session_store("session-closed-memory", _ms(20)))),
             topics["out-session-closed-memory"], session_serde)
    _stamped(grouped.windowed_by(sessions).emit_strategy(EmitStrategy.on_window_close())
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                        lambda key, one, two: one + "|" + two,
                        _uncached("session-closed-memory-default").with_store_type(StreamsConfig.IN_MEMORY)),
             topics["out-session-closed-memory-default"], session_serde)
    # Emitting on window close from timestamped RocksDB suppliers' stores (kept 60 s: segments of 60 s): Kafka
    # Streams emits from the supplier's segmented store, segment by segment, then by key, then start (a plain
    # one's aggregates read back with no timestamp: Kafka Streams fails to forward them, the runner refuses it).
    _stamped(grouped.windowed_by(TimeWindows.of_size_and_grace(_ms(10_000), _ms(5_000)).advance_by(_ms(5_000)))
             .emit_strategy(EmitStrategy.on_window_close())
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                        _uncached(Stores.persistent_timestamped_window_store("hopping-closed-rocksdb", _ms(60_000),
                                                                             _ms(10_000), False))),
             topics["out-hopping-closed-rocksdb"], windowed(10_000))
    _stamped(grouped.windowed_by(SlidingWindows.of_time_difference_and_grace(_ms(10_000), _ms(5_000)))
             .emit_strategy(EmitStrategy.on_window_close())
             .aggregate(lambda: "0", lambda key, value, agg: agg + "+" + value,
                        _uncached(Stores.persistent_timestamped_window_store("sliding-closed-rocksdb", _ms(60_000),
                                                                             _ms(10_000), False))),
             topics["out-sliding-closed-rocksdb"], windowed(10_000))
    # SuppressScenarioTest's final results for time windows (also with a large jump) and sliding windows,
    # behind a group-by of the same key (a repartition topic).
    regrouped = events.group_by(lambda key, value: key, Grouped.with_("final-by-key", Serdes.String(), Serdes.String()))
    for output, windows, store in (
        ("out-final", TimeWindows.of_size_and_grace(_ms(2), _ms(1)), "final-counts"),
        ("out-final-jump", TimeWindows.of_size_and_grace(_ms(2), _ms(2)), "final-jump-counts"),
        ("out-final-sliding", SlidingWindows.of_time_difference_and_grace(_ms(5), _ms(15)), "final-sliding-counts"),
    ):
        _stamped(regrouped.windowed_by(windows).count(_uncached(store))
                 .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()).with_name(store + "-final")),
                 topics[output], windowed(OUTPUT_KEYS[output]))
    # Stores from suppliers kept 32 ms, less than the windows stay open (size 10 + grace 90 ms), in memory and
    # in RocksDB: a record late within the grace whose window starts at or before the store's time (the largest
    # start put into it) minus 32 ms aggregates from nothing, and its put is not read again.
    for output, supplier in (("out-short-kept-memory", Stores.in_memory_window_store),
                             ("out-short-kept-rocksdb", Stores.persistent_timestamped_window_store)):
        _stamped(grouped.windowed_by(TimeWindows.of_size_and_grace(_ms(10), _ms(90)).advance_by(_ms(5)))
                 .aggregate(lambda: "", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                            _uncached(supplier(output[4:], _ms(32), _ms(10), False))), topics[output], windowed(10))
    # A store from a supplier of windows of 20 ms for windows of 10 ms: the updates forwarded end at start + 10.
    grouped.windowed_by(TimeWindows.of_size_and_grace(_ms(10), _ms(90)).advance_by(_ms(5))) \
        .count(_uncached(Stores.in_memory_window_store("other-size", _ms(100), _ms(20), False))) \
        .to_stream(lambda window, count: f"{window.key}@{window.window.start}-{window.window.end}") \
        .process_values(StampValues).to(topics["out-other-size"], Produced.with_(Serdes.String(), Serdes.String()))
    # Kept 32 ms behind a filter: the aggregation keeps its own clocks, and the store's time (own_stream_time.py).
    _stamped(events.filter(lambda key, value: value != "dropped")
             .group_by_key(Grouped.with_(Serdes.String(), Serdes.String()))
             .windowed_by(TimeWindows.of_size_and_grace(_ms(10), _ms(90)).advance_by(_ms(5)))
             .aggregate(lambda: "", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                        _uncached(Stores.in_memory_window_store("short-kept-filtered", _ms(32), _ms(10), False))),
             topics["out-short-kept-filtered"], windowed(10))
    # An in-memory store retaining duplicates: it returns no window to the aggregation (each update from nothing).
    _stamped(grouped.windowed_by(TimeWindows.of_size_and_grace(_ms(10), _ms(90)).advance_by(_ms(5)))
             .aggregate(lambda: "", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                        _uncached(Stores.in_memory_window_store("duplicates", _ms(100), _ms(10), True))),
             topics["out-duplicates"], windowed(10))
    # Plain RocksDB suppliers' stores (no timestamps: read back stamped -1): an update is stamped with its record's
    # timestamp, not the window's largest (a record out of order within a window shows it).
    _stamped(grouped.windowed_by(TimeWindows.of_size_and_grace(_ms(10), _ms(90)).advance_by(_ms(5)))
             .aggregate(lambda: "", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                        _uncached(Stores.persistent_window_store("plain-rocksdb", _ms(100), _ms(10), False))),
             topics["out-plain-rocksdb"], windowed(10))
    _stamped(grouped.windowed_by(SlidingWindows.of_time_difference_and_grace(_ms(10), _ms(90)))
             .aggregate(lambda: "", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                        _uncached(Stores.persistent_window_store("plain-rocksdb-sliding", _ms(110), _ms(10), False))),
             topics["out-plain-rocksdb-sliding"], windowed(10))
    # Sliding windows (difference 10, grace 90 ms) from stores kept 45 ms in memory and 50 ms in RocksDB, less than
    # they stay open (110 ms): a late record's reads are cut by the store's time (the largest window start put, not
    # the stream time), so some of its earlier windows are gone, others still there where stream time would cut them.
    for output, supplier, retention in (("out-short-sliding-memory", Stores.in_memory_window_store, 45),
                                        ("out-short-sliding-rocksdb", Stores.persistent_timestamped_window_store, 50)):
        _stamped(grouped.windowed_by(SlidingWindows.of_time_difference_and_grace(_ms(10), _ms(90)))
                 .aggregate(lambda: "", lambda key, value, agg: agg + "+" + value,
                            _uncached(supplier(output[4:], _ms(retention), _ms(10), False))),
                 topics[output], windowed(10))
    # Sessions (gap 5, grace 90 ms) from stores kept 45 ms in memory and 50 ms in RocksDB, less than they stay open
    # (95 ms): a late record finds no session ending at or before the store's time (the largest end put) minus that.
    for output, supplier, retention in (("out-short-session-memory", Stores.in_memory_session_store, 45),
                                        ("out-short-session-rocksdb", Stores.persistent_session_store, 50)):
        _stamped(grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(_ms(5), _ms(90)))
                 .aggregate(lambda: "", lambda key, value, agg: agg + "+" + ("null" if value is None else value),
                            lambda key, one, two: one + "|" + two, _uncached(supplier(output[4:], _ms(retention)))),
                 topics[output], session_serde)


def _table_aggregations(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    table = builder.table(topics["tables"], _uncached("tables-store"))
    # SuppressScenarioTest: a table re-grouped by its values, counted, and the counts suppressed (a time
    # limit of zero, of 2 ms, a buffer of one record emitting early).
    counts = table.group_by(lambda key, value: (value, key), Grouped.as_("by-value")) \
        .count(_uncached("value-counts"))
    _stamped(counts, topics["out-regroup-counts"], Serdes.String())
    for output, suppressed in (
        ("out-regroup-zero", Suppressed.until_time_limit(timedelta(0), BufferConfig.unbounded())),
        ("out-regroup-limit", Suppressed.until_time_limit(_ms(2), BufferConfig.unbounded())),
        ("out-regroup-records", Suppressed.until_time_limit(NEVER, BufferConfig.max_records(1).emit_early_when_full())),
        # sized as Kafka Streams sizes a buffered record: its record context's topic (the repartition topic,
        # named after the application id) counts too
        ("out-regroup-bytes", Suppressed.until_time_limit(NEVER, BufferConfig.max_bytes(200).emit_early_when_full())),
    ):
        _stamped(counts.suppress(suppressed.with_name(output[4:])), topics[output], Serdes.String())
    # KTableAggregateTest.testRemoveOldBeforeAddNew: grouped by the key's first character; an update that
    # stays in its group subtracts its old value and adds its new one.
    _stamped(table.group_by(lambda key, value: (key[0], key[1:]), Grouped.as_("by-first"))
             .aggregate(lambda: "", lambda key, value, agg: agg + value,
                        lambda key, value, agg: agg.replace(value, ""), _uncached("moves")),
             topics["out-moves"], Serdes.String())
    # SuppressScenarioTest.shouldWorkBeforeGroupBy: the table suppressed by a time limit, re-grouped by its
    # own key and counted (each update the suppression emits subtracts the old value it sends).
    _stamped(table.suppress(Suppressed.until_time_limit(_ms(10), BufferConfig.unbounded()).with_name("held"))
             .group_by(lambda key, value: (key, value), Grouped.as_("held-by-key")).count(_uncached("held-counts")),
             topics["out-held-counts"], Serdes.String())


def _suppressed_joins(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    """SuppressScenarioTest.shouldWorkBeforeJoinRight / shouldWorkBeforeJoinLeft: two tables outer-joined,
    one of them suppressed by a time limit first (read by the other side's updates through the buffer);
    then the suppressed table's other readers (:func:`_other_suppressed_readers`)."""
    def pair(mine, theirs):
        return "(" + ("null" if mine is None else mine) + "," + ("null" if theirs is None else theirs) + ")"

    left = builder.table(topics["left"], _uncached("left-store"))
    right = builder.table(topics["right"], _uncached("right-store"))
    right_held = right.suppress(Suppressed.until_time_limit(_ms(10), BufferConfig.unbounded()).with_name("right-held"))
    _stamped(left.outer_join(right_held, pair), topics["out-join-right-held"], Serdes.String())
    _stamped(left.suppress(Suppressed.until_time_limit(_ms(10), BufferConfig.unbounded()).with_name("left-held"))
             .outer_join(right, pair), topics["out-join-left-held"], Serdes.String())
    _other_suppressed_readers(left, right, right_held, pair, topics)


def _other_suppressed_readers(left, right, right_held, pair, topics: dict[str, str]) -> None:
    """A suppressed table read by a stream-table join (the left table's updates look their key up through
    the buffer), by a table-table join through a filter with a store of its own (which the join reads),
    and a suppressed join's result joined and re-grouped (each update it emits subtracts the old value
    it sends), the suppressed table re-grouped through a filter with a store of its own (each update
    subtracts what the filter last forwarded), and its suppression joined with a table and a stream."""
    left.to_stream().left_join(right_held, pair).process_values(StampValues) \
        .to(topics["out-stream-held"], Produced.with_(Serdes.String(), Serdes.String()))
    kept = right_held.filter(lambda key, value: value not in ("2", "tick2"), _uncached("right-held-kept"))
    _stamped(kept.join(left, pair), topics["out-kept-held"], Serdes.String())
    join_held = left.join(right, pair).suppress(
        Suppressed.until_time_limit(_ms(10), BufferConfig.unbounded()).with_name("join-held"))
    _stamped(join_held.left_join(right, pair), topics["out-join-held-joined"], Serdes.String())
    _stamped(join_held.group_by(lambda key, value: (key, value), Grouped.as_("join-held-by-key"))
             .aggregate(lambda: "", lambda key, value, agg: agg + "+" + value, lambda key, value, agg: agg + "-" + value,
                        _uncached("join-held-sums")), topics["out-join-held-sums"], Serdes.String())
    # re-grouped through a filter with a store of its own after the suppression: each update the filter
    # forwards subtracts the value its store held (what it last forwarded), not the suppression's old value
    filtered = right_held.filter(lambda key, value: value not in ("1", "tick1"), _uncached("right-held-filtered"))
    _stamped(filtered.group_by(lambda key, value: (key, value), Grouped.as_("right-held-filtered-by-key"))
             .aggregate(lambda: "", lambda key, value, agg: agg + "+" + value, lambda key, value, agg: agg + "-" + value,
                        _uncached("right-held-filtered-sums")), topics["out-held-filtered-sums"], Serdes.String())
    # the suppressed table suppressed again (5 ms), read by a table-table and a stream-table join: through
    # both buffers (a key buffered in the second: its prior value, the old value the first sent with it)
    held_twice = right_held.suppress(Suppressed.until_time_limit(_ms(5), BufferConfig.unbounded())
                                     .with_name("right-held-twice"))
    _stamped(left.join(held_twice, pair), topics["out-join-held-twice"], Serdes.String())
    left.to_stream().left_join(held_twice, pair).process_values(StampValues) \
        .to(topics["out-stream-held-twice"], Produced.with_(Serdes.String(), Serdes.String()))
