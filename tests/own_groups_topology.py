"""Stores after forwarders of other keys, the Python twin of kstreams.oracle.OwnGroupExamples (Java):
keep the two in step. One sub-topology on the events, four chains and six joins:

* ``HoldBuckets`` (``process_values``, store ``buckets``) keeps each record's value under its 2 s
  bucket and key (a null value as ``~``; a record whose bucket ended by the stream time is dropped),
  and a stream-time punctuator every 2 s forwards, in store order, each key's bucket that ended by
  then, stamped with the bucket's last millisecond, and forgets it: records of any key, forwarded
  while another key's record is processed. A ``reduce`` (``bucket-totals``) joins each key's buckets.
* ``to_table`` (``latest``), suppressed until a 1 s time limit: the buffer evicts records of any
  key (tombstones too); a ``count`` (``eviction-counts``) counts each key's evictions.
* a 2 s windowed count (1 s grace, ``window-counts``), its stream grouped again by the windowed
  key: a ``reduce`` (``window-sums``) adds each window's successive counts.
* a session count (300 ms gap, 500 ms grace, ``session-counts``), its stream grouped again by the
  session key: a ``count`` (``session-updates``) counts each session's updates (a merged-away
  session's tombstone is not counted).

Three stream-stream joins fed by those forwarders pair each forwarded record with the other side's
records of *its own* key (or window):

* the punctuator's buckets left-joined with the events (1 s before, 0 after, 2 s grace): a bucket,
  stamped with its last millisecond and released once the stream time passed its end, meets the
  events of its key in its last second, and is joined with null at once without one (its window
  has closed by then). A left join, not an outer one: an event's own output (an event without a
  bucket, joined with null) would come out while Kafka Streams may not have punctuated yet, before
  or after the bucket's, where the runner always punctuates first.
* the suppression's evictions left-joined with the events (1.5 s each way, 1 s grace): an eviction,
  1 s behind the stream time, meets its key's events around its time, later ones too.
* the windowed count's stream outer-joined with its own counts times ten (500 ms, 500 ms grace): a
  window's update meets the updates of that very window only.

Three more outer joins of windowed streams with their own later updates: the session count's stream,
each update stamped with its second (``SecondTimestamps``), with its counts above 2 times ten (300 ms,
300 ms grace; StreamJoined's session-windowed key serde, which orders the outer-join store by key,
end, start: a key's sessions of one second leave it in that order); a 1 s sliding count emitting on window close
(500 ms grace, ``sliding-counts``) with its counts above 1 times ten (500 ms, 500 ms grace); a 2 s
windowed cogroup (1 s grace, ``cogroup-marks``: an ``x`` per event, a ``.`` per null value) with its
aggregates longer than one mark (400 ms, 400 ms grace). An update without a later one leaves the
outer-join store joined with null once its window closed.

``StampValues`` appends each joined record's timestamp to its value, so that the test compares them.

Every store is uncached, so the output is fixed by the input (the punctuator's records too: what a
bucket holds is fixed once the stream time passed its end, whenever Kafka Streams punctuates; the
test's input keeps the buckets' join output so too: see its ``_input``).

Its classes are self-contained: Spark's Python workers cannot import modules of tests/, and the
test ships this module by value.
"""

from __future__ import annotations

from datetime import timedelta

from equivalence_io import StampValues, java_string
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.emit_strategy import EmitStrategy
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.joined import StreamJoined
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.processor_api import FixedKeyProcessor, PunctuationType, Record, Stores
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed
from dagster_kstreams.topology.windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows

BUCKET_MS = 2_000
WINDOW_MS = 2_000
SLIDING_MS = 1_000
JOINED = ("out-held-joined", "out-evicted-joined", "out-windows-joined", "out-sessions-joined", "out-sliding-joined",
          "out-cogroup-joined")
OUTPUTS = ("out-punctuated", "out-suppressed", "out-windowed", "out-sessions", *JOINED)
OUTPUT_KEYS = {"out-punctuated": None, "out-suppressed": None, "out-windowed": WINDOW_MS, "out-sessions": "session",
               "out-held-joined": None, "out-evicted-joined": None, "out-windows-joined": WINDOW_MS,
               "out-sessions-joined": "session", "out-sliding-joined": SLIDING_MS, "out-cogroup-joined": WINDOW_MS}
LONG_VALUED = ("out-suppressed", "out-windowed", "out-sessions")


class HoldBuckets(FixedKeyProcessor):
    def init(self, context) -> None:
        self.context = context
        self.buckets = context.get_state_store("buckets")
        context.schedule(BUCKET_MS, PunctuationType.STREAM_TIME, self.release)

    def process(self, record) -> None:
        if record.key is None:
            return
        bucket = record.timestamp // BUCKET_MS
        if (bucket + 1) * BUCKET_MS <= self.context.current_stream_time_ms():
            return  # its bucket was released already
        slot = f"{bucket:012d}|{record.key}"
        held = self.buckets.get(slot)
        value = "~" if record.value is None else record.value
        self.buckets.put(slot, value if held is None else f"{held},{value}")

    def release(self, now: int) -> None:
        for entry in self.buckets.all():
            bucket, key = int(entry.key[:12]), entry.key[13:]
            end = (bucket + 1) * BUCKET_MS
            if end > now:
                break
            self.context.forward(Record(key, f"{bucket}:{entry.value}", end - 1))
            self.buckets.delete(entry.key)


class SecondTimestamps(FixedKeyProcessor):
    """Each record stamped with the start of its second (Java: OwnGroupExamples.SecondTimestamps)."""

    def process(self, record) -> None:
        self.context.forward(record.with_timestamp(record.timestamp // 1000 * 1000))


def own_group_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of OwnGroupExamples.java, on ``topics`` ("events" and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("buckets"),
                                                           Serdes.String(), Serdes.String()))
    events = builder.stream(topics["events"])
    held = events.process_values(HoldBuckets, "buckets")
    held.group_by_key() \
        .reduce(lambda total, bucket: (total + "+" + bucket)[-80:],
                Materialized.as_("bucket-totals").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-punctuated"])
    evictions = events.to_table(Materialized.as_("latest").with_caching_disabled()) \
        .suppress(Suppressed.until_time_limit(timedelta(seconds=1), BufferConfig.unbounded())) \
        .to_stream()
    evictions.group_by_key() \
        .count(Materialized.as_("eviction-counts").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-suppressed"], Produced.with_(Serdes.String(), Serdes.Long()))
    windowed = WindowedSerde(Serdes.String(), WINDOW_MS)
    window_stream = events.group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(milliseconds=WINDOW_MS), timedelta(seconds=1))) \
        .count(Materialized.as_("window-counts").with_caching_disabled()) \
        .to_stream()
    window_stream.group_by_key(Grouped.with_(windowed, Serdes.Long())) \
        .reduce(lambda total, count: total + count, Materialized.as_("window-sums").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-windowed"], Produced.with_(windowed, Serdes.Long()))
    session_keys = WindowedSerde(Serdes.String(), session=True)
    session_stream = events.group_by_key() \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=300),
                                                              timedelta(milliseconds=500))) \
        .count(Materialized.as_("session-counts").with_caching_disabled()) \
        .to_stream()
    session_stream.group_by_key(Grouped.with_(session_keys, Serdes.Long())) \
        .count(Materialized.as_("session-updates").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-sessions"], Produced.with_(session_keys, Serdes.Long()))
    held.left_join(events, lambda bucket, event: f"{java_string(bucket)}|{java_string(event)}",
                    JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=2))
                    .after(timedelta(0))) \
        .process_values(StampValues) \
        .to(topics["out-held-joined"])
    evictions.left_join(events, lambda evicted, event: f"{java_string(evicted)}|{java_string(event)}",
                        JoinWindows.of_time_difference_and_grace(timedelta(milliseconds=1500), timedelta(seconds=1))) \
        .process_values(StampValues) \
        .to(topics["out-evicted-joined"])
    window_stream.outer_join(window_stream.map_values(lambda count: count * 10),
                             lambda count, tenfold: f"{java_string(count)}/{java_string(tenfold)}",
                             JoinWindows.of_time_difference_and_grace(timedelta(milliseconds=500),
                                                                      timedelta(milliseconds=500)),
                             StreamJoined.with_(windowed, Serdes.Long(), Serdes.Long())) \
        .process_values(StampValues) \
        .to(topics["out-windows-joined"], Produced.with_(windowed, Serdes.String()))
    _joins_after_other_windows(builder, events, session_stream, session_keys, topics)
    return builder


def _joins_after_other_windows(builder: StreamsBuilder, events, session_stream, session_keys, topics) -> None:
    """Three outer joins of windowed streams with their own later updates (a session's count above 2, a
    sliding window's above 1, a cogroup's window's aggregate longer than one mark): a window's update
    meets that window's later ones only, and one without leaves the outer-join store once its window
    closed, in the order of the join's key serde. The sessions' updates are stamped with their second
    (SecondTimestamps), so a key's sessions wait in the outer-join store under one timestamp and leave
    it in the session serde's order: end, then start (a session merged with an earlier record after
    the one it grew from)."""
    bucketed = session_stream.process_values(SecondTimestamps)
    bucketed.outer_join(bucketed.filter(lambda session, count: count is not None and count > 5)
                        .map_values(lambda count: count * 10),
                        lambda count, tenfold: f"{java_string(count)}/{java_string(tenfold)}",
                        JoinWindows.of_time_difference_and_grace(timedelta(milliseconds=300),
                                                                 timedelta(milliseconds=300)),
                        StreamJoined.with_(session_keys, Serdes.Long(), Serdes.Long())) \
        .process_values(StampValues) \
        .to(topics["out-sessions-joined"], Produced.with_(session_keys, Serdes.String()))
    sliding_keys = WindowedSerde(Serdes.String(), SLIDING_MS)
    sliding_stream = events.group_by_key() \
        .windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(milliseconds=SLIDING_MS),
                                                                 timedelta(milliseconds=500))) \
        .emit_strategy(EmitStrategy.on_window_close()) \
        .count(Materialized.as_("sliding-counts").with_caching_disabled()) \
        .to_stream()
    sliding_stream.outer_join(sliding_stream.filter(lambda window, count: count > 1).map_values(lambda count: count * 10),
                              lambda count, tenfold: f"{java_string(count)}/{java_string(tenfold)}",
                              JoinWindows.of_time_difference_and_grace(timedelta(milliseconds=500),
                                                                       timedelta(milliseconds=500)),
                              StreamJoined.with_(sliding_keys, Serdes.Long(), Serdes.Long())) \
        .process_values(StampValues) \
        .to(topics["out-sliding-joined"], Produced.with_(sliding_keys, Serdes.String()))
    cogroup_keys = WindowedSerde(Serdes.String(), WINDOW_MS)
    cogroup_stream = events.group_by_key() \
        .cogroup(lambda key, event, marks: marks + ("." if event is None else "x")) \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(milliseconds=WINDOW_MS), timedelta(seconds=1))) \
        .aggregate(lambda: "", Materialized.as_("cogroup-marks").with_caching_disabled()) \
        .to_stream()
    cogroup_stream.outer_join(cogroup_stream.filter(lambda window, marks: len(marks) > 1),
                              lambda marks, later: f"{java_string(marks)}/{java_string(later)}",
                              JoinWindows.of_time_difference_and_grace(timedelta(milliseconds=400),
                                                                       timedelta(milliseconds=400)),
                              StreamJoined.with_(cogroup_keys, Serdes.String(), Serdes.String())) \
        .process_values(StampValues) \
        .to(topics["out-cogroup-joined"], Produced.with_(cogroup_keys, Serdes.String()))
