"""Stream-stream joins fed, in their sub-topology, by stores with the record cache on: the Python twin
of CachedJoinFeedExamples.java (keep the two in step), its input, and which marks its versioned table puts.

Seventeen joins, each of a cached store's updates (2 s before and after, 5 s grace unless said). Ten with
the taps, in one sub-topology (two more at the end): a table read from ``rows`` left-joined with them; a count of ``marks``
inner-joined with them; ``marks`` made a table (``to_table``) outer-joined with the taps that have a
key (a null-keyed tap an outer join passes on would go to a partition the producer picks); a cogroup
of the marks and the taps (the last value of either) inner-joined with them; the rows' table
left-joined with the taps' table (uncached), that join materialized with its cache too (the rows'
cache flushed into it, then its own, as Kafka Streams flushes its stores in the order it registered
them), inner-joined with them; ``marks`` made a versioned table (8 s of history: older marks are not
put, nor forwarded) filtered into a store of its own, left-joined with the taps (within 500 ms), and
mapped into a store of its own, inner-joined with them (the filter's and the map_values' stores put
every update the versioned table forwards, out-of-order ones too); three joins of windowed counts
of the marks, each window (session) a key of its own (:func:`_cached_window_joins`); and three of windowed
cogroups of the marks and the taps (time, session and sliding windows: one store and one cache for both
inputs, each input with its own stream time; :func:`_cached_cogroup_window_joins`).
And, in the sub-topology after the repartition topic, a table of ``members`` re-grouped by the group
its value names (``<group>:<payload>``), counted with its cache, inner-joined with the ``pings``. And,
in the orders' sub-topology, the ``orders`` (``<user>:<payload>``) joined on their user with the
``users`` (a foreign-key join named ``paid``, both tables uncached), its result materialized with its
cache, inner-joined with the ``payments``. Each output value ends with ``|t`` and its record's
timestamp (a ``process_values`` after the join). And a filter keeping its own store with the record
cache on (``cached-filtered``, of the marks made an uncached table), which :class:`FilteredReader`
reads, named in ``process``: on the filter's changes (forwarded by the cache at the commit) and on the
taps that have a key (reading puts not flushed yet from the cache). And two joins of a filter's and a
map_values' own stores with the record cache on, on tables that are not versioned: the marks' uncached table
filtered into ``cached-step``, left-joined with the taps (its cache forwards each key's last mark it keeps,
which the runner keeps the store for: table_step_stores.keeps_own_store), and the rows' cached table mapped
(upper case) into ``cached-step-series``, inner-joined with them (two caches in series: at the commit the
rows' cache flushes into the map_values', then the map_values' flushes). And the marks' uncached table
transformed (:class:`MarkTransformer`) into a store of its own with the record cache on
(``cached-transformed``), whose ``to_stream`` is written as it is: the cache forwards each key's last
transformed mark once, nothing for a key whose last mark deleted it (:func:`transformed_once_per_key`).

The runner's cache forwards each key's (window's, session's) last update at the micro-batch's end,
Kafka Streams' at a commit: compared with Kafka Streams committing once, when closed after its whole input
(CommitOnceRuns.java), on input that fits one micro-batch per task (README, "Stream-stream joins
(inner, left, outer) run task-grouped"), in test_equivalence_aggregation_joins.py.
"""

from __future__ import annotations

import random
from datetime import timedelta

from equivalence_io import StampValues, java_string
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.topology import Materialized, Processor, Record, StreamsBuilder, TableJoined, ValueTransformerWithKey
from dagster_kstreams.topology.joined import StreamJoined
from dagster_kstreams.topology.processor_api import Stores
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows

INPUTS = ("rows", "taps", "marks", "members", "pings", "orders", "users", "payments")
OUTPUTS = ("out-cached-table", "out-cached-count", "out-cached-to-table", "out-cached-cogroup",
           "out-cached-table-join", "out-cached-kept", "out-cached-shouted", "out-cached-windows",
           "out-cached-sessions", "out-cached-sliding", "out-cached-regroup", "out-cached-paid",
           "out-cached-filtered", "out-cached-step", "out-cached-step-series", "out-cached-cogroup-windows",
           "out-cached-cogroup-sessions", "out-cached-cogroup-sliding", "out-cached-transformed")
# At most this many records per task and input: a task's whole input (3 topics; the re-grouping's:
# a repartition record or two per member update, and the pings) is one micro-batch of a killed run's
# 60 records.
_PER_TASK = {"rows": 12, "taps": 16, "marks": 12}
_REGROUPED_PER_TASK = {"members": 10, "pings": 14}
_SPAN_MS = 12_000
MARK_HISTORY_MS = 8_000


class FilteredReader(Processor):
    """CachedJoinFeedExamples.FilteredReader: each record, its timestamp and what the cached filter's store
    holds for its key (``value@timestamp``, or ``null``): its cache, where a put not flushed yet is."""

    def init(self, context) -> None:
        self.context = context
        self.filtered = context.get_state_store("cached-filtered")

    def process(self, record: Record) -> None:
        stored = self.filtered.get(record.key)
        stored_text = "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"
        self.context.forward(record.with_value(f"{java_string(record.value)}|t{record.timestamp}|{stored_text}"))


class MarkTransformer(ValueTransformerWithKey):
    """CachedJoinFeedExamples.MarkTransformer: the key, ``:``, the mark, ``@`` and the update's time as the
    context gives it; a tombstone stays one (it deletes the key from the transformer's store)."""

    def init(self, context) -> None:
        self.context = context

    def transform(self, read_only_key, mark):
        return None if mark is None else f"{read_only_key}:{mark}@{self.context.timestamp()}"


def cached_join_feed_examples(topics: dict[str, str]) -> StreamsBuilder:
    """CachedJoinFeedExamples.cachedJoinFeedExamples (Java)."""
    builder = StreamsBuilder()
    windows = JoinWindows.of_time_difference_and_grace(timedelta(seconds=2), timedelta(seconds=5))
    taps = builder.stream(topics["taps"])
    rows = builder.table(topics["rows"], Materialized.as_("cached-rows"))
    rows.to_stream() \
        .left_join(taps, lambda row, tap: f"{row}+{java_string(tap)}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-table"])
    marks = builder.stream(topics["marks"])
    marks.group_by_key().count(Materialized.as_("cached-counts")) \
        .to_stream() \
        .map_values(lambda count: f"n{count}") \
        .join(taps, lambda n, tap: f"{n}+{tap}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-count"])
    keyed_taps = taps.filter(lambda key, tap: key is not None)
    marks.to_table(Materialized.as_("cached-last")) \
        .to_stream() \
        .outer_join(keyed_taps, lambda last, tap: f"{java_string(last)}+{java_string(tap)}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-to-table"])
    marks.group_by_key().cogroup(lambda key, mark, last: mark) \
        .cogroup(taps.group_by_key(), lambda key, tap, last: tap) \
        .aggregate(lambda: "", Materialized.as_("cached-latest")) \
        .to_stream() \
        .join(taps, lambda last, tap: f"{last}*{tap}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-cogroup"])
    tap_table = taps.to_table(Materialized.as_("taps-plain").with_caching_disabled())
    rows.left_join(tap_table, lambda row, tap: f"{row}&{java_string(tap)}", Materialized.as_("cached-joined")) \
        .to_stream() \
        .join(taps, lambda joined, tap: f"{joined}+{tap}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-table-join"])
    versions = Stores.persistent_versioned_key_value_store("mark-versions", timedelta(milliseconds=MARK_HISTORY_MS))
    mark_versions = marks.to_table(Materialized.as_(versions))
    mark_versions.filter(lambda key, mark: not mark.endswith("3"), Materialized.as_("cached-kept")) \
        .to_stream() \
        .left_join(taps, lambda kept, tap: f"{java_string(kept)}+{java_string(tap)}",
                   JoinWindows.of_time_difference_and_grace(timedelta(milliseconds=500), timedelta(seconds=5))) \
        .process_values(StampValues) \
        .to(topics["out-cached-kept"])
    mark_versions.map_values(str.upper, Materialized.as_("cached-shouted")) \
        .to_stream() \
        .join(taps, lambda shouted, tap: f"{shouted}+{tap}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-shouted"])
    _cached_window_joins(marks, taps, topics)
    _cached_cogroup_window_joins(marks, taps, topics)
    builder.table(topics["members"], Materialized.as_("members-plain").with_caching_disabled()) \
        .group_by(lambda member, value: (value.split(":")[0], value.split(":")[1])) \
        .count(Materialized.as_("cached-group-counts")) \
        .to_stream() \
        .map_values(lambda count: f"g{count}") \
        .join(builder.stream(topics["pings"]), lambda count, ping: f"{count}+{ping}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-regroup"])
    builder.table(topics["orders"], Materialized.as_("orders-plain").with_caching_disabled()) \
        .join(builder.table(topics["users"], Materialized.as_("users-plain").with_caching_disabled()),
              lambda order: order.split(":")[0], lambda order, user: f"{order}@{user}", TableJoined.as_("paid"),
              Materialized.as_("cached-paid")) \
        .to_stream() \
        .join(builder.stream(topics["payments"]), lambda paid, payment: f"{paid}+{payment}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-paid"])
    uncached_marks = marks.to_table(Materialized.as_("uncached-marks").with_caching_disabled())
    filtered = uncached_marks.filter(lambda key, mark: not mark.endswith("3"), Materialized.as_("cached-filtered"))
    filtered.to_stream().process(FilteredReader, "cached-filtered").to(topics["out-cached-filtered"])
    keyed_taps.process(FilteredReader, "cached-filtered").to(topics["out-cached-filtered"])
    uncached_marks.filter(lambda key, mark: not mark.endswith("5"), Materialized.as_("cached-step")) \
        .to_stream() \
        .left_join(taps, lambda mark, tap: f"{mark}+{java_string(tap)}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-step"])
    rows.map_values(str.upper, Materialized.as_("cached-step-series")) \
        .to_stream() \
        .join(taps, lambda row, tap: f"{row}+{tap}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-step-series"])
    uncached_marks.transform_values(MarkTransformer, Materialized.as_("cached-transformed")) \
        .to_stream() \
        .process_values(StampValues) \
        .to(topics["out-cached-transformed"])
    return builder


def _cached_window_joins(marks, taps, topics: dict[str, str]) -> None:
    """CachedJoinFeedExamples.cachedWindowJoins (Java): windowed counts of the marks with the record
    cache on, each window's (session's) count forwarded at the commit, in the order of the windows' last
    updates (all keys), stamped with its largest timestamp (a session's: its end), joined under the
    window's own key: 2 s windows every 1 s (3 s grace) outer-joined with the taps' uncached counts of
    the same windows (within 1 s, 2 s grace); sessions (1 s gap, 2 s grace) outer-joined with their
    counts above 1 times ten (500 ms, 500 ms grace); 1 s sliding windows (2 s grace) inner-joined with
    their counts times ten (500 ms, 500 ms grace). Each output keyed by the window's key, the window in
    its value."""
    window_keys = WindowedSerde(Serdes.String(), 2000)
    hopping = TimeWindows.of_size_and_grace(timedelta(seconds=2), timedelta(seconds=3)).advance_by(timedelta(seconds=1))
    tap_windows = taps.group_by_key().windowed_by(hopping) \
        .count(Materialized.as_("tap-windows").with_caching_disabled()) \
        .to_stream()
    marks.group_by_key().windowed_by(hopping) \
        .count(Materialized.as_("cached-mark-windows")) \
        .to_stream() \
        .outer_join(tap_windows, lambda marked, tapped: f"{java_string(marked)}/{java_string(tapped)}",
                    JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=2)),
                    StreamJoined.with_(window_keys, Serdes.Long(), Serdes.Long())) \
        .map(lambda window, value: (window.key, f"{window.window.start}:{value}")) \
        .process_values(StampValues) \
        .to(topics["out-cached-windows"])
    session_keys = WindowedSerde(Serdes.String(), session=True)
    sessions = marks.group_by_key() \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=1), timedelta(seconds=2))) \
        .count(Materialized.as_("cached-mark-sessions")) \
        .to_stream()
    tenfold_sessions = sessions.filter(lambda session, count: count is not None and count > 1) \
        .map_values(lambda count: count * 10)
    sessions.outer_join(tenfold_sessions, lambda count, tenfold: f"{java_string(count)}/{java_string(tenfold)}",
                        JoinWindows.of_time_difference_and_grace(timedelta(milliseconds=500),
                                                                 timedelta(milliseconds=500)),
                        StreamJoined.with_(session_keys, Serdes.Long(), Serdes.Long())) \
        .map(lambda session, value: (session.key, f"{session.window.start}-{session.window.end}:{value}")) \
        .process_values(StampValues) \
        .to(topics["out-cached-sessions"])
    sliding_keys = WindowedSerde(Serdes.String(), 1000)
    sliding = marks.group_by_key() \
        .windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=2))) \
        .count(Materialized.as_("cached-mark-sliding")) \
        .to_stream()
    sliding.join(sliding.map_values(lambda count: count * 10), lambda count, tenfold: f"{count}/{tenfold}",
                 JoinWindows.of_time_difference_and_grace(timedelta(milliseconds=500), timedelta(milliseconds=500)),
                 StreamJoined.with_(sliding_keys, Serdes.Long(), Serdes.Long())) \
        .map(lambda window, value: (window.key, f"{window.window.start}:{value}")) \
        .process_values(StampValues) \
        .to(topics["out-cached-sliding"])


def _cached_cogroup_window_joins(marks, taps, topics: dict[str, str]) -> None:
    """CachedJoinFeedExamples.cachedCogroupWindowJoins (Java): windowed cogroups of the marks and the taps
    (each window's values joined by commas, ``null`` for a null value) with the record cache on (one store
    and one cache for both inputs), each window's (session's) aggregate forwarded at the commit, joined under
    the window's own key: 2 s windows every 1 s (3 s grace) inner-joined with the taps' uncached counts of
    the same windows (within 1 s, 2 s grace); sessions (1 s gap, 2 s grace) outer-joined with themselves
    upper-cased where they hold a comma (500 ms, 500 ms grace); 1 s sliding windows (2 s grace) left-joined
    with themselves upper-cased (500 ms, 500 ms grace). Each output keyed by the window's key, the window in
    its value."""
    def adder(key, value, aggregate):
        return f"{aggregate},{java_string(value)}"

    hopping = TimeWindows.of_size_and_grace(timedelta(seconds=2), timedelta(seconds=3)).advance_by(timedelta(seconds=1))
    tap_windows = taps.group_by_key().windowed_by(hopping) \
        .count(Materialized.as_("tap-cogroup-windows").with_caching_disabled()) \
        .to_stream()
    cogrouped = marks.group_by_key().cogroup(adder).cogroup(taps.group_by_key(), adder)
    cogrouped.windowed_by(hopping) \
        .aggregate(lambda: "", Materialized.as_("cached-cogroup-windows")) \
        .to_stream() \
        .join(tap_windows, lambda values, tapped: f"{values}/{tapped}",
              JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=2)),
              StreamJoined.with_(WindowedSerde(Serdes.String(), 2000), Serdes.String(), Serdes.Long())) \
        .map(lambda window, value: (window.key, f"{window.window.start}:{value}")) \
        .process_values(StampValues) \
        .to(topics["out-cached-cogroup-windows"])
    sessions = cogrouped \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=1), timedelta(seconds=2))) \
        .aggregate(lambda: "", lambda key, left, right: left + right, Materialized.as_("cached-cogroup-sessions")) \
        .to_stream()
    shouted_sessions = sessions.filter(lambda session, values: values is not None and values.count(",") > 1) \
        .map_values(str.upper)
    sessions.outer_join(shouted_sessions, lambda values, shouted: f"{java_string(values)}/{java_string(shouted)}",
                        JoinWindows.of_time_difference_and_grace(timedelta(milliseconds=500),
                                                                 timedelta(milliseconds=500)),
                        StreamJoined.with_(WindowedSerde(Serdes.String(), session=True), Serdes.String(),
                                           Serdes.String())) \
        .map(lambda session, value: (session.key, f"{session.window.start}-{session.window.end}:{value}")) \
        .process_values(StampValues) \
        .to(topics["out-cached-cogroup-sessions"])
    sliding = cogrouped \
        .windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=2))) \
        .aggregate(lambda: "", Materialized.as_("cached-cogroup-sliding")) \
        .to_stream()
    sliding.left_join(sliding.map_values(str.upper), lambda values, shouted: f"{values}/{java_string(shouted)}",
                      JoinWindows.of_time_difference_and_grace(timedelta(milliseconds=500), timedelta(milliseconds=500)),
                      StreamJoined.with_(WindowedSerde(Serdes.String(), 1000), Serdes.String(), Serdes.String())) \
        .map(lambda window, value: (window.key, f"{window.window.start}:{value}")) \
        .process_values(StampValues) \
        .to(topics["out-cached-cogroup-sliding"])


def cached_join_feed_input(base: int, partitions: int, seed: int = 8) -> dict[str, list[tuple]]:
    """``{input: [(key, value, partition, timestamp)]}`` in production order, per partition: a tap at
    ``base``, then taps, rows and marks in random order over 12 s (out of order within and beyond the
    joins' grace), null keys, null values (tombstones of rows and marks, skipped by the count and the
    cogroup), keys updated several times; then members and pings the same way (their own random
    sequence). No timestamp twice in a task (Kafka Streams would pick among a tie by its queue's
    order). A member's value names a group (a key of its partition, which the pings are keyed by):
    each repartition partition is written by one upstream task, in its order."""
    keys = {p: [k for k in (f"q{i}" for i in range(8)) if default_partition(k.encode(), partitions) == p]
            for p in range(partitions)}
    members = {p: [m for m in (f"m{i}" for i in range(8)) if default_partition(m.encode(), partitions) == p]
               for p in range(partitions)}
    records: dict[str, list[tuple]] = {name: [] for name in INPUTS}
    for rng, per_task in ((random.Random(seed), _PER_TASK), (random.Random(seed + 1), _REGROUPED_PER_TASK)):
        for partition in range(partitions):
            times = iter(rng.sample(range(base + 1, base + _SPAN_MS), sum(per_task.values())))
            if "taps" in per_task:
                records["taps"].append((rng.choice(keys[partition]), f"t{partition}.first", partition, base))
            for name, count in per_task.items():
                for i in range(count - (name == "taps")):
                    key = None if rng.random() < 0.08 else rng.choice((members if name == "members" else keys)[partition])
                    value = None if rng.random() < 0.15 else f"{name[0]}{partition}.{i}"
                    if name == "members" and value is not None:
                        value = f"{rng.choice(keys[partition])}:{value}"
                    records[name].append((key, value, partition, next(times)))
    _orders_input(records, base, partitions, random.Random(seed + 2))
    return records


def _orders_input(records: dict[str, list[tuple]], base: int, partitions: int, rng: random.Random) -> None:
    """The foreign-key join's input, in which the answers come back in one order in Kafka Streams
    however its tasks interleave. Per partition: users (some never written) each written once in the
    first second, before every order, so that the users' task has answered no subscription when it
    reads them; orders (each naming a user of its own partition, so that one users' task answers a
    partition's subscriptions, in their order) over the next 10 s, out of order, some written again
    onto another user (the earlier answer, stale or not, is overwritten in the cache by the later
    one), one deleted; payments keyed by order in between, null keys and null values among them. The
    last order written names a user no other order names, whose row is written again after every
    order: its answer comes again (the subscriber's only, so last in the cache either way, whether
    the users' task reads that row before or after the subscription), and the cache forwards the
    second one only; a payment next to each of its two answers."""
    for partition in range(partitions):
        users = [u for u in (f"u{i}" for i in range(24)) if default_partition(u.encode(), partitions) == partition]
        orders = [o for o in (f"o{i}" for i in range(16)) if default_partition(o.encode(), partitions) == partition]
        last_user, users = users[0], users[1:]
        for i, (user, timestamp) in enumerate(zip([last_user] + users[:-1], sorted(rng.sample(range(base + 1, base + 1000), 8)))):
            records["users"].append((user, f"u{partition}.{i}", partition, timestamp))
        times = iter(rng.sample(range(base + 1000, base + _SPAN_MS - 1500), 22))
        written: list[str] = []
        for i in range(9):
            again = written and rng.random() < 0.25
            order = rng.choice(written) if again else rng.choice([o for o in orders if o not in written] or orders)
            written.append(order)
            records["orders"].append((order, f"{rng.choice(users)}:r{partition}.{i}", partition, next(times)))
        records["orders"].append((rng.choice(written), None, partition, next(times)))
        last_order = rng.choice([o for o in orders if o not in written] or orders)
        records["orders"].append((last_order, f"{last_user}:r{partition}.last", partition, base + _SPAN_MS - 1000))
        records["users"].append((last_user, f"u{partition}.again", partition, base + _SPAN_MS + 500))
        for i in range(11):
            key = None if rng.random() < 0.08 else rng.choice(orders)
            value = None if rng.random() < 0.1 else f"y{partition}.{i}"
            records["payments"].append((key, value, partition, next(times)))
        for i, timestamp in enumerate((base + _SPAN_MS - 900, base + _SPAN_MS + 700)):
            records["payments"].append((last_order, f"y{partition}.last{i}", partition, timestamp))


def last_values(records: dict, name: str) -> dict:
    """Per key of input ``name`` (not null), its last value in production order (a key is on one partition)."""
    return {key: value for key, value, _, _ in records[name] if key is not None}


def transformed_once_per_key(records: dict, partition: int) -> list[tuple[str, str]]:
    """What the transformer's cached store forwards from ``partition`` at its one commit: each key's last
    transformed mark, stamped with its time, in the order of the keys' last marks; nothing for a key whose
    last mark is a tombstone (absent at the commit, and before it)."""
    last: dict = {}
    for key, mark, in_partition, timestamp in records["marks"]:
        if in_partition == partition and key is not None:
            last.pop(key, None)
            last[key] = None if mark is None else f"{key}:{mark}@{timestamp}|t{timestamp}"
    return [(key, value) for key, value in last.items() if value is not None]


def last_put_marks(records: dict, partition: int) -> tuple[dict, set]:
    """Per key of ``partition``, the last mark its versioned table put (in processing order: a mark
    older than the store's observed time minus its history is not put), and the keys whose last put
    mark is older than one put before it (an out-of-order update, not the versioned table's latest)."""
    observed, last_put, last_time, out_of_order = None, {}, {}, set()
    for key, value, in_partition, timestamp in records["marks"]:
        if in_partition != partition or key is None:
            continue
        if observed is not None and timestamp < observed - MARK_HISTORY_MS:
            continue
        observed = timestamp if observed is None else max(observed, timestamp)
        (out_of_order.add if timestamp < last_time.get(key, timestamp) else out_of_order.discard)(key)
        last_put[key], last_time[key] = value, max(timestamp, last_time.get(key, timestamp))
    return last_put, out_of_order
