"""Stream-stream joins fed, in their sub-topology, by stores with the record cache on: the Python twin
of CachedJoinFeedExamples.java (keep the two in step), and its input.

Five joins of one sub-topology, each of a cached store's updates with the taps (2 s before and
after, 5 s grace): a table read from ``rows`` left-joined with the taps; a count of ``marks``
inner-joined with them; ``marks`` made a table (``to_table``) outer-joined with the taps that have a
key (a null-keyed tap an outer join passes on would go to a partition the producer picks); ``marks``
made a versioned table (8 s of history: older marks are not put, nor forwarded) filtered into a
store of its own, left-joined with the taps (within 500 ms), and mapped into a store of its own,
inner-joined with them (the filter's and the map_values' stores put every update the versioned
table forwards, out-of-order ones too); and three joins of windowed counts of the marks, each window
(session) a key of its own (:func:`_cached_window_joins`). Each output value ends with ``|t`` and its
record's timestamp (a ``process_values`` after the join).

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
from dagster_kstreams.topology import Materialized, StreamsBuilder
from dagster_kstreams.topology.joined import StreamJoined
from dagster_kstreams.topology.processor_api import Stores
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows

INPUTS = ("rows", "taps", "marks")
OUTPUTS = ("out-cached-table", "out-cached-count", "out-cached-to-table", "out-cached-kept", "out-cached-shouted",
           "out-cached-windows", "out-cached-sessions", "out-cached-sliding")
# At most this many records per task and input: a task's whole input (3 topics) is one micro-batch of
# a killed run's 60 records.
_PER_TASK = {"rows": 12, "taps": 16, "marks": 12}
_SPAN_MS = 12_000
MARK_HISTORY_MS = 8_000


def cached_join_feed_examples(topics: dict[str, str]) -> StreamsBuilder:
    """CachedJoinFeedExamples.cachedJoinFeedExamples (Java)."""
    builder = StreamsBuilder()
    windows = JoinWindows.of_time_difference_and_grace(timedelta(seconds=2), timedelta(seconds=5))
    taps = builder.stream(topics["taps"])
    builder.table(topics["rows"], Materialized.as_("cached-rows")) \
        .to_stream() \
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
    marks.to_table(Materialized.as_("cached-last")) \
        .to_stream() \
        .outer_join(taps.filter(lambda key, tap: key is not None),
                    lambda last, tap: f"{java_string(last)}+{java_string(tap)}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-to-table"])
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


def cached_join_feed_input(base: int, partitions: int, seed: int = 8) -> dict[str, list[tuple]]:
    """``{input: [(key, value, partition, timestamp)]}`` in production order, per partition: a tap at
    ``base``, then taps, rows and marks in random order over 12 s (out of order within and beyond the
    joins' grace), null keys, null values (tombstones of rows and marks, skipped by the count), keys
    updated several times; no timestamp twice in a task (Kafka Streams would pick among a tie by its
    queue's order)."""
    rng = random.Random(seed)
    keys = {p: [k for k in (f"q{i}" for i in range(8)) if default_partition(k.encode(), partitions) == p]
            for p in range(partitions)}
    records: dict[str, list[tuple]] = {name: [] for name in INPUTS}
    for partition in range(partitions):
        times = iter(rng.sample(range(base + 1, base + _SPAN_MS), sum(_PER_TASK.values())))
        records["taps"].append((rng.choice(keys[partition]), f"t{partition}.first", partition, base))
        for name, count in _PER_TASK.items():
            for i in range(count - (name == "taps")):
                key = None if rng.random() < 0.08 else rng.choice(keys[partition])
                value = None if rng.random() < 0.15 else f"{name[0]}{partition}.{i}"
                records[name].append((key, value, partition, next(times)))
    return records
