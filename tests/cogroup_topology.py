"""The cogroup example, the Python twin of kstreams.oracle.CogroupExamples (Java): keep the two
in step.

Cogroups in two sub-topologies: a plain one of refunds (grouped by key) and orders (re-keyed by
their user: a repartition topic); and, on clicks, views and orders again, a hopping-windowed one
(and its final results: suppressed until each window closes) and, on clicks and views, a
sliding-windowed and a session-windowed one. Every aggregate is a string of the latest
contributions (the last 60 characters), so that the order of the updates shows; the stores run
without the record cache.

One input of the plain cogroup reads its keys with another serde than the others: visits are
keyed by the user's number written as a Long, read as "u<n>" (:class:`UserIdSerde`), so that Kafka
Streams' one store, which writes every key with the String serde, merges them with the other
inputs' records of that user. (The windowed cogroups' share of it runs without Spark in
tests/test_cogroup_logic.py.)

Beside them, on clicks and views, a tumbling and a session cogroup whose stores user processors read
and edit (:class:`CogroupWindowEditor`, :class:`CogroupSessionEditor`): each input's next record goes
on from what the processor wrote.

The same two key formats meet in a sub-topology of their own, with no cogroup: calls (String keys)
merged with texts (the user's number as a Long, read as "u<n>"), then ``group_by_key()`` with a
count and a tumbling-windowed aggregate. Their stores write every key with the default serde, so
a user's calls and texts update one count and one window's aggregate.

Spark's Python workers cannot import modules of tests/: the test module ships this one by value.
"""

from __future__ import annotations

import struct
from datetime import timedelta

from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Consumed, Produced
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.named import Named
from dagster_kstreams.topology.processor_api import Processor, Record, ValueAndTimestamp
from dagster_kstreams.topology.serdes import Serde, Serdes, Window, Windowed, WindowedSerde
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows, TimeWindows

INPUTS = ("clicks", "views", "orders", "refunds", "visits", "calls", "texts")
USER_ID_KEYED = ("visits", "texts")  # keys written by UserIdSerde
OUTPUTS = ("out-plain", "out-windowed", "out-final", "out-sliding", "out-sessions", "out-final-filtered",
           "out-session-bytes", "out-store-windows", "out-store-sessions", "out-merged-counts",
           "out-merged-windowed")
# How each output's keys are read: a plain string, a time window of 10 s (5 s, 4 s), a session window.
OUTPUT_KEYS = {"out-plain": None, "out-windowed": 10_000, "out-final": 10_000, "out-sliding": 5_000,
               "out-sessions": "session", "out-final-filtered": 10_000, "out-session-bytes": "session",
               "out-store-windows": 4_000, "out-store-sessions": "session",
               "out-merged-counts": None, "out-merged-windowed": 10_000}
LONG_VALUED = ("out-merged-counts",)  # values written by Serdes.Long(); the others' by Serdes.String()
SESSION_BYTES = 600  # the session cogroup's suppression: about three of its buffered records
STORE_WINDOW_MS, STORE_GRACE_MS = 4_000, 2_000  # the windowed cogroup a processor edits: tumbling windows
STORE_GAP_MS, STORE_SESSION_GRACE_MS = 1_000, 1_000  # the session cogroup a processor edits


class UserIdSerde(Serde):
    """The user ``u<n>`` written as the Long ``n`` (CogroupExamples.USER_ID in Java)."""

    name = "UserId"

    def serialize(self, value):
        return None if value is None else struct.pack(">q", int(value[1:]))

    def deserialize(self, data):
        return None if data is None else f"u{struct.unpack('>q', data)[0]}"


def stored_text(stored) -> str:
    """A ValueAndTimestamp as both twins write it (``value@timestamp``, or ``null``)."""
    return "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"


def contributions(aggregate: str) -> int:
    """How many records an edited cogroup's aggregate holds (each adds ``,<letter><value>``)."""
    return aggregate.count(",")


class CogroupWindowEditor(Processor):
    """On each update of the ``store-windows`` cogroup (uncached): forwards the update with what the
    store holds for the window (``fetch(key, start)``), the key's windows one size around it, every
    key's window of that start (``fetch_all``) and the windows of keys ``u1`` to ``u3`` back to one size
    before it, backward; then resets an aggregate of 3 records to ``R`` (stamped 7 ms after the
    record) and deletes an ``R`` aggregate with 2 records more: each input's next record of the window
    goes on from what it wrote."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("store-windows")

    def process(self, record: Record) -> None:
        key, start = record.key.key, record.key.window.start
        around = ",".join(f"{entry.key}={stored_text(entry.value)}"
                          for entry in self.store.fetch(key, start - STORE_WINDOW_MS, start + STORE_WINDOW_MS))
        same_start = ",".join(f"{entry.key.key}={stored_text(entry.value)}" for entry in self.store.fetch_all(start, start))
        keys = ",".join(f"{entry.key.key}@{entry.key.window.start}={stored_text(entry.value)}"
                        for entry in self.store.backward_fetch("u1", "u3", start - STORE_WINDOW_MS, start))
        self.context.forward(record.with_value(f"{record.value}|t{record.timestamp}|"
                                               f"{stored_text(self.store.fetch(key, start))}|{around}|{same_start}|{keys}"))
        if record.value.startswith("R") and contributions(record.value) >= 2:
            self.store.put(key, None, start)
        elif not record.value.startswith("R") and contributions(record.value) == 3:
            self.store.put(key, ValueAndTimestamp.make("R", record.timestamp + 7), start)


def session_text(entry) -> str:
    """A session store entry as both twins write it (``key@start-end=value``)."""
    return f"{entry.key.key}@{entry.key.window.start}-{entry.key.window.end}={entry.value}"


class CogroupSessionEditor(Processor):
    """On each update of the ``store-sessions`` cogroup (uncached; a merged-away session's tombstone
    included): forwards it with what the store holds for the session (``fetch_session``), the key's
    sessions within a gap of it (``find_sessions``) and the sessions of keys ``u1`` to ``u3``, backward;
    then resets an aggregate of 3 records to ``R``, removes an ``R`` session with 2 records more, and
    after a first record of a key ending in 1 puts a session ``A`` a half gap after it, which the key's
    next records may merge with."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("store-sessions")

    def process(self, record: Record) -> None:
        key, start, end = record.key.key, record.key.window.start, record.key.window.end
        stored = self.store.fetch_session(key, start, end)
        around = ",".join(session_text(entry) for entry in self.store.find_sessions(key, start - STORE_GAP_MS,
                                                                                    end + STORE_GAP_MS))
        keys = ",".join(session_text(entry) for entry in self.store.backward_fetch("u1", "u3"))
        value = record.value
        self.context.forward(record.with_value(f"{'null' if value is None else value}|t{record.timestamp}|"
                                               f"{'null' if stored is None else stored}|{around}|{keys}"))
        if value is None:
            return
        if value.startswith("R") and contributions(value) >= 2:
            self.store.remove(record.key)
        elif not value.startswith("R") and contributions(value) == 3:
            self.store.put(record.key, "R")
        elif contributions(value) == 1 and key.endswith("1"):
            ahead = end + STORE_GAP_MS // 2
            self.store.put(Windowed(key, Window(ahead, ahead + 50)), "A")


def cogroup_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of CogroupExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    orders = builder.stream(topics["orders"])
    refunds_by_user = builder.stream(topics["refunds"]).group_by_key()
    visits_by_user = builder.stream(topics["visits"], Consumed.with_(UserIdSerde(), Serdes.String())).group_by_key()
    orders_by_user = orders.group_by(lambda key, value: None if value is None else value.split(",")[0],
                                     Grouped.with_(Serdes.String(), Serdes.String()))
    refunds_by_user.cogroup(lambda key, value, agg: (agg + "r" + value)[-60:]) \
        .cogroup(orders_by_user, lambda key, value, agg: (agg + "o" + value)[-60:]) \
        .cogroup(visits_by_user, lambda key, value, agg: (agg + "s" + value)[-60:]) \
        .aggregate(lambda: "", Named.as_("activity"), Materialized.as_("activity-store").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-plain"])

    clicks_by_user = builder.stream(topics["clicks"]).group_by_key()
    views_by_user = builder.stream(topics["views"]).group_by_key()
    # Windowed aggregations see null values too (Java's string concatenation writes "null").
    windowed = clicks_by_user \
        .cogroup(lambda key, value, agg: (agg + "c" + ("null" if value is None else value))[-60:]) \
        .cogroup(views_by_user, lambda key, value, agg: (agg + "v" + ("null" if value is None else value))[-60:]) \
        .cogroup(orders_by_user, lambda key, value, agg: (agg + "o" + ("null" if value is None else value))[-60:]) \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=3))
                     .advance_by(timedelta(seconds=5))) \
        .aggregate(lambda: "",  # the suppression buffer serializes the windowed keys: the store names the key serde
                   Materialized.as_("activity-windows").with_key_serde(Serdes.String()).with_caching_disabled())
    windowed.to_stream() \
        .to(topics["out-windowed"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String()))
    windowed.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()).with_name("final-windows")) \
        .to_stream() \
        .to(topics["out-final"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String()))
    # A filter before a suppression: every input's aggregation sends its old aggregate (a new window's:
    # the initializer's "", which passes), so an update whose old and new both fail never reaches it.
    windowed.filter(lambda window, agg: len(agg) % 3 != 1) \
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()).with_name("final-filtered-windows")) \
        .to_stream() \
        .to(topics["out-final-filtered"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String()))
    clicks_by_user.cogroup(lambda key, value, agg: (agg + "c" + ("null" if value is None else value))[-60:]) \
        .cogroup(views_by_user, lambda key, value, agg: (agg + "v" + ("null" if value is None else value))[-60:]) \
        .windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(seconds=5), timedelta(seconds=2))) \
        .aggregate(lambda: "", Named.as_("sliding"), Materialized.as_("activity-sliding").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-sliding"], Produced.with_(WindowedSerde(Serdes.String(), 5_000), Serdes.String()))
    sessions = clicks_by_user \
        .cogroup(lambda key, value, agg: (agg + "c" + ("null" if value is None else value))[-60:]) \
        .cogroup(views_by_user, lambda key, value, agg: (agg + "v" + ("null" if value is None else value))[-60:]) \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=3), timedelta(seconds=2))) \
        .aggregate(lambda: "", lambda key, left, right: (left + "|" + right)[-60:], Named.as_("sessions"),
                   Materialized.as_("activity-sessions").with_key_serde(Serdes.String()).with_caching_disabled())
    sessions.to_stream() \
        .to(topics["out-sessions"], Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.String()))
    # Until a time limit in a buffer bounded in bytes, each record sized with its update's old aggregate
    # (a merged-away session's, with its removal); the oldest go out early.
    sessions.suppress(Suppressed.until_time_limit(timedelta(seconds=30),
                                                  BufferConfig.max_bytes(SESSION_BYTES).emit_early_when_full())
                      .with_name("session-bytes")) \
        .to_stream() \
        .to(topics["out-session-bytes"], Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.String()))

    # Cogroups whose stores processors read and edit (every input's next record goes on from the edit)
    clicks_by_user.cogroup(lambda key, value, agg: (agg + ",c" + ("null" if value is None else value))[-60:]) \
        .cogroup(views_by_user, lambda key, value, agg: (agg + ",v" + ("null" if value is None else value))[-60:]) \
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(milliseconds=STORE_WINDOW_MS),
                                                   timedelta(milliseconds=STORE_GRACE_MS))) \
        .aggregate(lambda: "", Named.as_("edited-windows"), Materialized.as_("store-windows").with_caching_disabled()) \
        .to_stream() \
        .process(CogroupWindowEditor, "store-windows") \
        .to(topics["out-store-windows"], Produced.with_(WindowedSerde(Serdes.String(), STORE_WINDOW_MS), Serdes.String()))
    clicks_by_user.cogroup(lambda key, value, agg: (agg + ",c" + ("null" if value is None else value))[-60:]) \
        .cogroup(views_by_user, lambda key, value, agg: (agg + ",v" + ("null" if value is None else value))[-60:]) \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=STORE_GAP_MS),
                                                                timedelta(milliseconds=STORE_SESSION_GRACE_MS))) \
        .aggregate(lambda: "", lambda key, left, right: (left + right)[-60:], Named.as_("edited-sessions"),
                   Materialized.as_("store-sessions").with_caching_disabled()) \
        .to_stream() \
        .process(CogroupSessionEditor, "store-sessions") \
        .to(topics["out-store-sessions"], Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.String()))

    calls = builder.stream(topics["calls"])
    texts = builder.stream(topics["texts"], Consumed.with_(UserIdSerde(), Serdes.String()))
    merged_by_user = calls.merge(texts).group_by_key()
    merged_by_user.count(Named.as_("merged-count"), Materialized.as_("merged-counts").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-merged-counts"], Produced.with_(Serdes.String(), Serdes.Long()))
    merged_by_user.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=3))) \
        .aggregate(lambda: "", lambda key, value, agg: (agg + ("null" if value is None else value))[-60:],
                   Named.as_("merged-windows"), Materialized.as_("merged-windows-store").with_caching_disabled()) \
        .to_stream() \
        .to(topics["out-merged-windowed"], Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String()))
    return builder
