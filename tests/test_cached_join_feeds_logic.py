"""Stream-stream joins fed, in their sub-topology, by a table, an aggregation (a cogroup's too), a
table-table join or a filter/map_values keeping a store of its own after a versioned table, with its
record cache on, against a model of Kafka Streams committing where the micro-batches end (no Spark
needed): the cache forwards each key's last update of the batch, keys in last-update order, with that
update's own timestamp (an aggregation's: the larger of its record's and the aggregate's previous one;
a table-table join's: the larger of both rows'), after the batch's own records, and the join buffers
and pairs those as they come. Kafka Streams' cache does the same at each commit: with one commit after
the input, its result is the runner's with the input in one micro-batch (the broker-backed comparison:
test_equivalence_aggregation_joins.py). Windowed aggregations' caches:
test_cached_window_join_feeds_logic.py. What stays refused, naming the processor, is checked here too."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.records import DROPPED_LATE_TOPIC
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import BufferConfig, Materialized, StreamsBuilder, Suppressed
from dagster_kstreams.topology.processor_api import Processor, Record, Stores
from dagster_kstreams.topology.windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows
from stream_join_model import KsJoin, run_task, table_rows_and_clicks, table_table_update

_FEEDS = ("table", "to_table", "count", "reduce", "cogroup", "kept_filter", "kept_map_values", "step_filter",
          "step_map_values", "step_of_cached_table", "step_of_count")
_AGGREGATIONS = ("count", "reduce", "cogroup")
# A filter's and a map_values' own store after a versioned table (table_step_stores.keeps_own_store): what
# each puts for a value (None deletes the key). The history outlasts the records' span: none expires.
_STEPS = {"kept_filter": lambda value: value if _kept(None, value) else None, "kept_map_values": str.upper}
# A filter's and a map_values' own cached store on a plain table (uncached), kept for the join
# (table_step_stores.keeps_own_store); and a filter's on a cached table and a map_values' on a cached count
# (stamped as Kafka Streams does), two caches in series: at a commit the table's flushes into the step's,
# then the step's (Kafka Streams flushes its stores in the order it registered them), as at the runner's
# batch end. (There the step reading through to the table gives the same: its old value, the table's last
# flushed one through it, is what the step's store held.)
_PLAIN_STEPS = {"step_filter": _STEPS["kept_filter"], "step_map_values": str.upper,
                "step_of_count": lambda count: f"N{count[1:]}"}
# the cached stores in series: the one behind the step's, and the step's
_SERIES = {"step_of_cached_table": ("table", "step_filter"), "step_of_count": ("count", "step_of_count")}
_HISTORY = timedelta(minutes=1)
_JOINS = st.sampled_from(["join", "left_join", "outer_join"])
_millis = st.one_of(st.integers(0, 4000), st.integers(0, 4).map(lambda s: s * 1000))
# e feeds the cached store, c is the other side; tombstones of e are deletes of the table.
_records = st.lists(
    st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from(["e", "c"]), st.integers(0, 5).map(lambda n: n == 0),
              st.one_of(st.integers(100_000, 112_000), st.integers(100, 112).map(lambda t: t * 1000))),
    max_size=30,
).map(lambda rows: [(k, topic, None if null else f"{topic}{i}", t) for i, (k, topic, null, t) in enumerate(rows)])


def _kept(key, value) -> bool:
    return int(value[1:]) % 3 != 0


def _fed(builder: StreamsBuilder, feed: str, other):
    """The stream of the cached store's updates (every store named ``cached``, record cache on); a
    cogroup's store is updated by ``other`` (the join's other side) too."""
    cached = Materialized.as_("cached")
    if feed == "table":
        return builder.table("e", cached).to_stream()
    if feed == "to_table":
        return builder.stream("e").to_table(cached).to_stream()
    if feed == "step_of_count":
        counts = builder.stream("e").group_by_key().count(Materialized.as_("counts"))
        return counts.map_values(lambda count: f"N{count}", cached).to_stream()
    if feed in _PLAIN_STEPS or feed == "step_of_cached_table":
        rows = Materialized.as_("rows") if feed == "step_of_cached_table" else \
            Materialized.as_("rows").with_caching_disabled()
        table = builder.table("e", rows)
        if feed == "step_map_values":
            return table.map_values(str.upper, cached).to_stream()
        return table.filter(_kept, cached).to_stream()
    if feed in _STEPS:
        versions = builder.stream("e").to_table(
            Materialized.as_(Stores.persistent_versioned_key_value_store("versions", _HISTORY)))
        if feed == "kept_filter":
            return versions.filter(_kept, cached).to_stream()
        return versions.map_values(str.upper, cached).to_stream()
    grouped = builder.stream("e").group_by_key()
    if feed == "count":
        return grouped.count(cached).to_stream().map_values(lambda n: f"n{n}")
    if feed == "cogroup":
        return grouped.cogroup(lambda key, value, last: value) \
            .cogroup(other.group_by_key(), lambda key, value, last: value).aggregate(lambda: "", cached).to_stream()
    return grouped.reduce(lambda last, value: value, cached).to_stream()


class _CachedStore:
    """Kafka Streams' cached store of ``feed`` and its flush (``CachingKeyValueStore``): the dirty keys
    in last-update order, each with its last value and timestamp; a key absent now and at the last
    flush forwards nothing. A kept filter/map_values store puts what its step makes of every update of
    the versioned table, out-of-order ones too (``KTableFilter``/``KTableMapValues`` with versioned
    semantics), with the update's own timestamp."""

    def __init__(self, feed: str):
        self.feed = feed
        self.current: dict = {}  # key -> (value, timestamp), what the store holds
        self.flushed: dict = {}  # key -> value at the last flush
        self.dirty: dict = {}  # key -> (value, timestamp), insertion order = last-update order

    def update(self, key, value, timestamp) -> None:
        if key is None or (value is None and self.feed in _AGGREGATIONS):
            return  # skipped (KTableSource, KStreamAggregate/Reduce, a cogroup's KStreamAggregate)
        if self.feed in _AGGREGATIONS:
            previous, stamp = self.current.get(key, (None, timestamp))
            value = (f"n{int(previous[1:]) + 1}" if previous else "n1") if self.feed == "count" else value
            timestamp = max(stamp, timestamp)
        if feed_step := _STEPS.get(self.feed) or _PLAIN_STEPS.get(self.feed):
            value = None if value is None else feed_step(value)
        self.put(key, value, timestamp)

    def put(self, key, value, timestamp) -> None:
        """What the processor writes (a table-table join's merger: every result it is forwarded)."""
        self.current[key] = (value, timestamp)
        self.dirty.pop(key, None)
        self.dirty[key] = (value, timestamp)

    def flush(self) -> list[tuple]:
        forwarded = []
        for key, (value, timestamp) in self.dirty.items():
            if value is None and self.flushed.get(key) is None:
                continue
            self.flushed[key] = value
            forwarded.append((key, value, timestamp))
        self.dirty.clear()
        return forwarded


class _CachesInSeries:
    """A cached table (a count) and a step's cached store on it: the table's flush puts into the step's
    store (a tombstone of a key the table held too), whose own flush follows."""

    def __init__(self, table: str, step: str):
        self.table, self.step = _CachedStore(table), _CachedStore(step)

    def update(self, key, value, timestamp) -> None:
        self.table.update(key, value, timestamp)

    def flush(self) -> list[tuple]:
        for key, value, timestamp in self.table.flush():
            self.step.update(key, value, timestamp)
        return self.step.flush()


@settings(max_examples=150, deadline=None)
@given(_records, _millis, _millis, _millis, _JOINS, st.sampled_from(_FEEDS), st.integers(1, 3))
# a step's cache collapses a key's updates: e1 never reaches the join, so c1 pairs with nothing
@example([("a", "e", "e1", 900), ("a", "c", "c1", 1000), ("a", "e", "e2", 5000)], 500, 500, 0, "join", "step_filter", 1)
def test_a_join_fed_by_a_cached_store_pairs_its_updates_as_kafka_streams_flushes_them(records, before, after, grace,
                                                                                     join, feed, batches):
    builder = StreamsBuilder()
    other = builder.stream("c")
    getattr(_fed(builder, feed, other), join)(other, lambda l, r: f"{l}+{r}", JoinWindows(before, after, grace)).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    assert program.task_grouped
    store = _CachesInSeries(*_SERIES[feed]) if feed in _SERIES else _CachedStore(feed)
    model, expected = KsJoin(before, after, grace, join.replace("_join", "")), []
    size = -(-len(records) // batches) if records else 1  # run_task's micro-batches; Kafka Streams commits there
    for index, (key, topic, value, ts) in enumerate(records):
        if topic == "e" or feed == "cogroup":
            store.update(key, value, ts)
        if topic == "c":
            expected += model.process(key, "right", value, ts)
        if (index + 1) % size == 0 or index + 1 == len(records):
            for flushed_key, flushed, stamp in store.flush():  # a tombstone advances the join's stream time
                expected += model.process(flushed_key, "left", flushed, stamp)
    ours, _ = run_task(program, records, batches)
    assert [(topic, None if k is None else k.decode(), v.decode()) for topic, k, v in ours
            if topic != DROPPED_LATE_TOPIC] == [("out", key, value) for key, value, _ in expected]


@settings(max_examples=100, deadline=None)
@given(table_rows_and_clicks, _millis, _millis, _millis, st.sampled_from(["inner", "left", "outer"]), _JOINS,
       st.integers(1, 3))
def test_a_join_fed_by_a_cached_table_table_join_pairs_its_flushed_results(records, before, after, grace, table_join,
                                                                           join, batches):
    # t1 joined with t2 (uncached tables) into a store with its record cache (KTableKTableJoinMerger
    # puts every result, a null one too, and its cache forwards each key's last at the commit), whose
    # updates are joined with c.
    builder = StreamsBuilder()
    t1 = builder.table("t1", Materialized.as_("t1-store").with_caching_disabled())
    t2 = builder.table("t2", Materialized.as_("t2-store").with_caching_disabled())
    joined = getattr(t1, "join" if table_join == "inner" else f"{table_join}_join")(
        t2, lambda x, y: f"{x}&{y}", Materialized.as_("cached"))
    getattr(joined.to_stream(), join)(builder.stream("c"), lambda l, r: f"{l}+{r}",
                                      JoinWindows(before, after, grace)).to("out")
    program = compile_topology(builder.build(), "app").program(0)
    assert program.task_grouped
    model, store, expected = KsJoin(before, after, grace, join.replace("_join", "")), _CachedStore("joined"), []
    rows = {"t1": {}, "t2": {}}
    size = -(-len(records) // batches) if records else 1
    for index, (key, topic, value, ts) in enumerate(records):
        if topic == "c":
            expected += model.process(key, "right", value, ts)
        elif key is not None:
            result = table_table_update(rows, table_join, key, topic, value, ts)
            if result is not None:
                store.put(key, *result)
        if (index + 1) % size == 0 or index + 1 == len(records):
            for flushed_key, flushed, stamp in store.flush():
                expected += model.process(flushed_key, "left", flushed, stamp)
    ours, _ = run_task(program, records, batches)
    assert [(topic, None if k is None else k.decode(), v.decode()) for topic, k, v in ours
            if topic != DROPPED_LATE_TOPIC] == [("out", key, value) for key, value, _ in expected]


def _join_fed_by(builder: StreamsBuilder, table) -> None:
    table.to_stream().join(builder.stream("s"), lambda l, r: f"{l}+{r}", JoinWindows(1000, 1000, 0)).to("out")


def _cogroup(builder):
    grouped = builder.stream("e").group_by_key()
    return grouped.cogroup(lambda key, value, last: value) \
        .cogroup(builder.stream("c").group_by_key(), lambda key, value, last: value) \
        .aggregate(lambda: "", Materialized.as_("cached"))


def _regrouped(builder):
    table = builder.table("t", Materialized.as_("t-store").with_caching_disabled())
    return table.group_by(lambda key, value: (value, key)).count(Materialized.as_("cached"))


def _table_table_join(builder):
    left = builder.table("t1", Materialized.as_("t1-store").with_caching_disabled())
    right = builder.table("t2", Materialized.as_("t2-store").with_caching_disabled())
    return left.join(right, lambda x, y: f"{x}{y}", Materialized.as_("cached"))


def _foreign_key_join(builder):
    users = builder.table("users", Materialized.as_("users-store").with_caching_disabled())
    orders = builder.table("orders", Materialized.as_("orders-store").with_caching_disabled())
    return orders.join(users, lambda value: value.split(":")[0], lambda order, user: f"{order}@{user}",
                       Materialized.as_("cached"))


def _windowed_count(builder):
    return builder.stream("e").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=1))) \
        .count(Materialized.as_("cached"))


def _windowed_cogroup(builder):
    grouped = builder.stream("e").group_by_key()
    return grouped.cogroup(lambda key, value, last: value) \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=2), timedelta(seconds=1))) \
        .aggregate(lambda: "", Materialized.as_("cached"))


def _session_cogroup(builder):
    grouped = builder.stream("e").group_by_key()
    return grouped.cogroup(lambda key, value, last: value) \
        .cogroup(builder.stream("c").group_by_key(), lambda key, value, last: value) \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=1), timedelta(seconds=1))) \
        .aggregate(lambda: "", lambda key, left, right: left + right, Materialized.as_("cached"))


def _sliding_cogroup(builder):
    grouped = builder.stream("e").group_by_key()
    return grouped.cogroup(lambda key, value, last: value) \
        .windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=1))) \
        .aggregate(lambda: "", Materialized.as_("cached"))


class _ReadsCached(Processor):
    def process(self, record: Record) -> None:
        pass


def _filter_keeping_a_store(builder):
    # kept: a user processor names its store (table_step_stores.keeps_own_store)
    table = builder.table("t", Materialized.as_("t-store").with_caching_disabled())
    filtered = table.filter(lambda key, value: value is not None, Materialized.as_("cached"))
    filtered.to_stream().process(_ReadsCached, "cached")
    return filtered


class _Writer(Processor):
    """Writes each record into the kept store it names (whose cache then forwards it at the flush)."""

    def init(self, context) -> None:
        self.store = context.get_state_store("cached")

    def process(self, record) -> None:
        self.store.put(record.key, record.value)


def _kept_store_a_processor_names(builder):
    kept = builder.table("t", Materialized.as_(Stores.persistent_versioned_key_value_store("versions", _HISTORY))) \
        .filter(_kept, Materialized.as_("cached"))
    builder.stream("s").process(_Writer, "cached")
    return kept


def _joined_subtopology(compiled) -> int:
    return next(sub.id for sub in compiled.topology.subtopologies
                if any(node.kind.value == "join_window" for node in sub.nodes))


def _step_filter(builder):
    # kept for the join (table_step_stores.keeps_own_store): the filter's store, with its record cache
    table = builder.table("t", Materialized.as_("t-store").with_caching_disabled())
    return table.filter(lambda key, value: value is not None, Materialized.as_("cached"))


def _step_map_values_of_a_count(builder):
    return builder.stream("e").group_by_key().count(Materialized.as_("counts")) \
        .map_values(lambda count: f"n{count}", Materialized.as_("cached"))


def _step_filter_of_a_windowed_count(builder):
    # behind a windowed table: the runner keeps no record cache for a step's store there
    windowed = builder.stream("e").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=1)))
    return windowed.count(Materialized.as_("counts")).filter(lambda window, count: count > 1, Materialized.as_("cached"))


def _step_map_values_of_a_suppression(builder):
    counts = builder.table("t", Materialized.as_("t-store").with_caching_disabled()) \
        .group_by(lambda key, value: (value, key)).count(Materialized.as_("counts"))
    return counts.suppress(Suppressed.until_time_limit(timedelta(seconds=1), BufferConfig.unbounded())) \
        .map_values(lambda count: f"n{count}", Materialized.as_("cached"))


@pytest.mark.parametrize("cached_feed", [_cogroup, _regrouped, _table_table_join, _foreign_key_join, _windowed_count,
                                         _windowed_cogroup, _session_cogroup, _sliding_cogroup, _step_filter,
                                         _step_map_values_of_a_count])
def test_a_join_fed_by_a_compared_cache_compiles(cached_feed):
    builder = StreamsBuilder()
    _join_fed_by(builder, cached_feed(builder))
    compiled = compile_topology(builder.build(), "app")
    assert compiled.program(_joined_subtopology(compiled)).task_grouped


@pytest.mark.parametrize("cached_feed, processor", [
    (_filter_keeping_a_store, r"KTABLE-FILTER-\d+ \(cached\)"),
    (_kept_store_a_processor_names, r"KTABLE-FILTER-\d+ \(cached\)"),
    (_step_filter_of_a_windowed_count, r"KTABLE-FILTER-\d+ \(cached\)"),
    (_step_map_values_of_a_suppression, r"KTABLE-MAPVALUES-\d+ \(cached\)"),
])
def test_a_join_fed_by_a_cache_not_compared_yet_is_refused_naming_it(cached_feed, processor):
    builder = StreamsBuilder()
    _join_fed_by(builder, cached_feed(builder))
    compiled = compile_topology(builder.build(), "app")
    with pytest.raises(UnsupportedTopologyError, match=processor + " comes before the stream-stream join .*"
                                                        "record cache on.*with_caching_disabled"):
        compiled.program(_joined_subtopology(compiled))


@pytest.mark.parametrize("joined", [True, False])
def test_a_steps_cached_store_is_kept_only_where_a_stream_join_reads_it(joined):
    # kept, its cache forwarding at the batch's end, for the join; elsewhere read through to the table
    builder = StreamsBuilder()
    filtered = _step_filter(builder)
    if joined:
        _join_fed_by(builder, filtered)
    else:
        filtered.to_stream().to("out")
    compiled = compile_topology(builder.build(), "app")
    program = compiled.program(_joined_subtopology(compiled) if joined else 0)
    (step,) = [node for node in program.nodes if node.name.startswith("KTABLE-FILTER-")]
    assert (getattr(step, "store", None) == "cached") is joined
