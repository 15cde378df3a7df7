"""Joins of windowed tables, the Python twin of kstreams.oracle.WindowedTableJoinExamples (Java):
keep the two in step. Its functions are self-contained: Spark's Python workers cannot import
modules of tests/.

One stream s (key -> "vN"), grouped by key, aggregated three ways, every store without the record
cache: a count in tumbling windows of 1 s (grace 500 ms), the values concatenated in the same
windows, and concatenated in hopping windows of 1 s advancing by 500 ms (grace 500 ms). Kafka
Streams reads a windowed table through ``windowStore.fetch(key, window start)``:

* the count joined (inner) with the hopping concatenation (windows of one start): ``out-inner``;
* the count left-joined with the tumbling concatenation: ``out-left``;
* the tumbling concatenation outer-joined with the hopping one: ``out-outer``.

The joins' keys are windowed (Kafka's time-windowed key format, window size 1 s). And the tumbling
concatenation re-grouped by its key (repartition topic ``by-key``), the lengths of its windows'
values summed (an update subtracts its old value's): ``out-regrouped``. Through a table step: the
odd counts (a filter without a store, sending old values: the left join asks) left-joined with the
hopping concatenation: ``out-filtered``. All of these run key-grouped, in sub-topology 0.

The same stream re-keyed by its key (repartition topic ``rekeyed``: sub-topology 2), counted and
concatenated in the tumbling windows; the concatenation outer-joined with the counts labelled (a
``map_values`` with its own store, which the outer join asks for old values: its store's, none for a
new window, where the aggregation's is the initial 0) into a materialized join (its own store, keyed
by windowed keys): ``out-materialized``; that join re-grouped by key (repartition topic
``joined-by-key``), reading the old values the join sends, its values' lengths summed:
``out-joined-regrouped``; and that join left-joined with the stream's concatenation in the hopping
windows (read from the join's store, which never expires a window): ``out-rejoined``. These run
task-grouped, a group per window. There too, state after a materialized join: the odd counts (a
filter without a store) joined (inner) with the concatenation into ``odd-joined`` (a tombstone when a
count turns even), whose stream, grouped by its windowed key, is counted (``out-odd-counts``) and
reduced (``out-odd-reduced``): Kafka Streams' stores keyed by the key and the window's start, which
skip the tombstones. And a materialized join of windows of different sizes: the concatenation left-joined
with a count in 500 ms windows into ``mixed`` (``out-mixed``), whose entries are the key and the
window's start, written by the updates of either size.

Back in sub-topology 0, a join's result without a store: the tumbling concatenation outer-joined with
the hopping one (``pair``, read through both tables and the joiner at the window's start), filtered
and joined again with the counts (``out-pair-joined``) and re-grouped by key (repartition topic
``pair-by-key``), reading the old values the outer join sends: ``out-pair-regrouped``.

Sliding windows (time difference 1 s, grace 500 ms), in a sub-topology of their own (the stream
re-keyed, repartition topic ``slid``: a sliding aggregation reads the task's stream time only where no
time window counts records beside it): a count and a concatenation, joined (inner, no store):
``out-sliding-inner``; the concatenation outer-joined with the count into a materialized join
(``slide-joined``, keyed by windowed keys, so the sub-topology runs task-grouped):
``out-sliding-outer``; and the concatenation re-grouped by key (repartition topic ``slid-by-key``),
its values' lengths summed: ``out-sliding-regrouped``; and the concatenation left-joined with a count in
sliding windows of 500 ms (``out-sliding-left``), whose store's retention, 1502 ms, is the least that
keeps every window the 1 s updates read (time difference plus grace plus 2). Kafka Streams reads a
sliding table as a tumbling one (``fetch(key, windowStart)``), the windows of the two differences
meeting where a start happens to be one of both.

Session windows (gap 500 ms, grace 500 ms), in a sub-topology of their own (the stream re-keyed,
repartition topic ``sessioned``): a concatenation re-grouped by key (repartition topic
``session-by-key``), its values' lengths summed (``out-session-regrouped``); a count through a
``map_values`` re-grouped by its sessions' sizes (repartition topic ``sessions-by-size``), counted
(``out-session-sizes``); and the count through a filter (sessions of more than one record) re-grouped
by key (repartition topic ``long-sessions``) into a reduce with a subtractor (``out-long-sessions``).
A record that merges sessions sends the re-grouping a delete of each merged session with its old value
(subtracted), then the merged session (added): ``KStreamSessionWindowAggregate`` and
``KTableRepartitionMap``. There too, joins of session tables, each reading the other's session of the
updated one's start and end (``fetchSession``): the count joined (inner) with the concatenation
(``out-session-inner``), the concatenation left-joined with a count in sessions of a 300 ms gap, whose
store (retention 800 ms) no longer returns sessions the 500 ms ones still update (``out-session-left``),
and the odd counts (a filter) outer-joined with the concatenation (``out-session-outer``); keys in Kafka
Streams' session-windowed format. And chains of them (``_session_join_chains``): the odd counts' outer
join re-grouped by key through a ``map_values`` (``session-pair-by-key``, without a store: its old values
are the join's, ``out-session-pair-regrouped``); and the inner join's sessions of more than one instant (a
filter) outer-joined with the 300 ms count (read through both its tables by the session, then the filter:
``out-session-pair-joined``). Nothing there keeps a store keyed by sessions: the sub-topology runs
key-grouped.

A materialized join of session tables in a sub-topology of its own (``_materialized_session_join``: the
stream re-keyed, repartition topic ``session-joins``, the same session tables again under other store
names), so that its store, keyed by sessions, makes that sub-topology task-grouped and not the one above:
the concatenation outer-joined with the 300 ms count (``session-joined``), read by a processor naming its
store (each update with its timestamp and the store's entry: ``out-session-materialized``), re-grouped by
key (repartition topic ``session-joined-by-key``, its values' lengths summed:
``out-session-joined-regrouped``) and left-joined with the count (read from its store:
``out-session-rejoined``).
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams.topology import (
    Grouped, Materialized, Produced, Serdes, SessionWindows, SlidingWindows, StreamsBuilder, TimeWindows,
    WindowedSerde,
)
from dagster_kstreams.topology.processor_api import Processor, Record

INPUTS = ("s",)
OUTPUTS = ("out-inner", "out-left", "out-outer", "out-regrouped", "out-filtered", "out-materialized",
           "out-joined-regrouped", "out-rejoined", "out-pair-joined", "out-pair-regrouped", "out-odd-counts",
           "out-odd-reduced", "out-mixed", "out-sliding-inner", "out-sliding-outer", "out-sliding-regrouped",
           "out-sliding-left", "out-session-regrouped", "out-session-sizes", "out-long-sessions",
           "out-session-inner", "out-session-left", "out-session-outer", "out-session-materialized",
           "out-session-joined-regrouped", "out-session-pair-regrouped", "out-session-rejoined",
           "out-session-pair-joined")
# The session re-groupings' repartition topics (``<app id>-<name>-repartition``), compared record by record.
SESSION_REPARTITIONS = ("session-by-key", "long-sessions", "session-joined-by-key", "session-pair-by-key")
WINDOW_MS = 1000


def windowed_join_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of WindowedTableJoinExamples.java on ``topics`` (``INPUTS``/``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()

    def text(value):  # as Java's string concatenation writes it
        return "null" if value is None else str(value)

    size, grace = timedelta(milliseconds=WINDOW_MS), timedelta(milliseconds=500)
    grouped = builder.stream(topics["s"]).group_by_key()
    tumbling = grouped.windowed_by(TimeWindows.of_size_and_grace(size, grace))
    hopping = grouped.windowed_by(TimeWindows.of_size_and_grace(size, grace).advance_by(timedelta(milliseconds=500)))
    counts = tumbling.count(Materialized.as_("counts").with_caching_disabled())
    values = tumbling.reduce(lambda x, y: x + "," + text(y), Materialized.as_("values").with_caching_disabled())
    hopped = hopping.reduce(lambda x, y: x + ";" + text(y), Materialized.as_("hopped").with_caching_disabled())
    produced = Produced.with_(WindowedSerde(Serdes.String(), WINDOW_MS), Serdes.String())
    counts.join(hopped, lambda n, v: f"{n}|{v}").to_stream().to(topics["out-inner"], produced)
    counts.left_join(values, lambda n, v: f"{n}<{text(v)}").to_stream().to(topics["out-left"], produced)
    values.outer_join(hopped, lambda x, y: f"{text(x)}~{text(y)}").to_stream().to(topics["out-outer"], produced)
    values.group_by(lambda windowed, value: (windowed.key, value), Grouped.as_("by-key")) \
        .aggregate(lambda: "0", lambda key, value, total: str(int(total) + len(value)),
                   lambda key, value, total: str(int(total) - len(value)),
                   Materialized.as_("lengths").with_caching_disabled()) \
        .to_stream().to(topics["out-regrouped"])
    counts.filter(lambda windowed, n: n % 2 == 1).left_join(hopped, lambda n, v: f"{n}<{text(v)}") \
        .to_stream().to(topics["out-filtered"], produced)

    windowed_keys = WindowedSerde(Serdes.String(), WINDOW_MS)
    regrouped = builder.stream(topics["s"]).group_by(lambda key, value: key, Grouped.as_("rekeyed"))
    rekeyed = regrouped.windowed_by(TimeWindows.of_size_and_grace(size, grace))
    counted = rekeyed.count(Materialized.as_("counted").with_caching_disabled())
    labelled = counted.map_values(lambda n: f"#{n}",
                                  Materialized.as_("labelled").with_key_serde(windowed_keys).with_caching_disabled())
    concatenated = rekeyed.reduce(lambda x, y: x + "," + text(y),
                                  Materialized.as_("concatenated").with_caching_disabled())
    joined = concatenated.outer_join(labelled, lambda values, label: f"{text(values)}^{text(label)}",
                                     Materialized.as_("joined").with_key_serde(windowed_keys).with_caching_disabled())
    joined.to_stream().to(topics["out-materialized"], produced)
    hopped_again = regrouped.windowed_by(TimeWindows.of_size_and_grace(size, grace)
                                         .advance_by(timedelta(milliseconds=500))) \
        .reduce(lambda x, y: x + ";" + text(y), Materialized.as_("hopped-again").with_caching_disabled())
    joined.left_join(hopped_again, lambda value, hops: f"{value}@{text(hops)}").to_stream() \
        .to(topics["out-rejoined"], produced)
    joined.group_by(lambda windowed, value: (windowed.key, value), Grouped.as_("joined-by-key")) \
        .aggregate(lambda: "0", lambda key, value, total: str(int(total) + len(value)),
                   lambda key, value, total: str(int(total) - len(value)),
                   Materialized.as_("joined-lengths").with_caching_disabled()) \
        .to_stream().to(topics["out-joined-regrouped"])

    # A windowed join's result without a store, read through both tables and the joiner (sub-topology 0).
    pair = values.outer_join(hopped, lambda x, y: f"{text(x)}~{text(y)}")
    pair.filter(lambda windowed, value: not value.startswith("null")).join(counts, lambda p, n: f"{p}#{n}") \
        .to_stream().to(topics["out-pair-joined"], produced)
    pair.group_by(lambda windowed, value: (windowed.key, value), Grouped.as_("pair-by-key")) \
        .aggregate(lambda: "0", lambda key, value, total: str(int(total) + len(value)),
                   lambda key, value, total: str(int(total) - len(value)),
                   Materialized.as_("pair-lengths").with_caching_disabled()) \
        .to_stream().to(topics["out-pair-regrouped"])

    # State after a materialized windowed join, in its sub-topology (2): the odd counts joined with the
    # concatenation (a tombstone when a count turns even), its stream counted and reduced by window.
    odd_joined = counted.filter(lambda windowed, n: n % 2 == 1).join(
        concatenated, lambda n, values: f"{n}&{text(values)}",
        Materialized.as_("odd-joined").with_key_serde(windowed_keys).with_caching_disabled())
    by_window = odd_joined.to_stream().group_by_key(Grouped.with_(windowed_keys, Serdes.String()))
    by_window.count(Materialized.as_("odd-counts").with_caching_disabled()).to_stream() \
        .map_values(lambda n: str(n)).to(topics["out-odd-counts"], produced)
    by_window.reduce(lambda x, y: x + "+" + y, Materialized.as_("odd-reduced").with_caching_disabled()) \
        .to_stream().to(topics["out-odd-reduced"], produced)

    # A materialized join of windows of different sizes (sub-topology 2): the concatenation (1 s) left-joined
    # with a count in 500 ms windows (its retention covering the other's reach); both write the entry of a
    # start, Kafka Streams' store being keyed by the key and the window's start.
    quick = regrouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(milliseconds=500), grace)) \
        .count(Materialized.as_("quick-counts").with_retention(timedelta(milliseconds=1500)).with_caching_disabled())
    concatenated.left_join(quick, lambda values, n: f"{text(values)}%{text(n)}",
                           Materialized.as_("mixed").with_key_serde(windowed_keys).with_caching_disabled()) \
        .to_stream().to(topics["out-mixed"], produced)

    # Sliding windows, in a sub-topology of their own: joined without a store and materialized, and re-grouped.
    slid = builder.stream(topics["s"]).group_by(lambda key, value: key, Grouped.as_("slid"))
    sliding = slid.windowed_by(SlidingWindows.of_time_difference_and_grace(size, grace))
    slide_counts = sliding.count(Materialized.as_("slide-counts").with_caching_disabled())
    slide_values = sliding.reduce(lambda x, y: x + "," + text(y),
                                  Materialized.as_("slide-values").with_caching_disabled())
    slide_counts.join(slide_values, lambda n, v: f"{n}|{v}").to_stream().to(topics["out-sliding-inner"], produced)
    slide_values.outer_join(slide_counts, lambda v, n: f"{text(v)}~{text(n)}",
                            Materialized.as_("slide-joined").with_key_serde(windowed_keys).with_caching_disabled()) \
        .to_stream().to(topics["out-sliding-outer"], produced)
    slide_values.group_by(lambda windowed, value: (windowed.key, value), Grouped.as_("slid-by-key")) \
        .aggregate(lambda: "0", lambda key, value, total: str(int(total) + len(value)),
                   lambda key, value, total: str(int(total) - len(value)),
                   Materialized.as_("slide-lengths").with_caching_disabled()) \
        .to_stream().to(topics["out-sliding-regrouped"])
    quick_slides = slid.windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(milliseconds=500), grace)) \
        .count(Materialized.as_("quick-slides").with_retention(timedelta(milliseconds=1502)).with_caching_disabled())
    slide_values.left_join(quick_slides, lambda v, n: f"{v}%{text(n)}").to_stream() \
        .to(topics["out-sliding-left"], produced)

    # Session windows, in a sub-topology of their own: re-grouped (a merge's deletes subtract).
    sessioned = builder.stream(topics["s"]).group_by(lambda key, value: key, Grouped.as_("sessioned"))
    session_windows = sessioned.windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=500),
                                                                                       grace))
    session_counts = session_windows.count(Materialized.as_("session-counts").with_caching_disabled())
    session_values = session_windows.reduce(lambda x, y: x + "," + text(y),
                                            Materialized.as_("session-values").with_caching_disabled())
    session_values.group_by(lambda windowed, value: (windowed.key, value), Grouped.as_("session-by-key")) \
        .aggregate(lambda: "0", lambda key, value, total: str(int(total) + len(value)),
                   lambda key, value, total: str(int(total) - len(value)),
                   Materialized.as_("session-lengths").with_caching_disabled()) \
        .to_stream().to(topics["out-session-regrouped"])
    session_counts.map_values(lambda n: str(n)) \
        .group_by(lambda windowed, n: (n, windowed.key), Grouped.as_("sessions-by-size")) \
        .count(Materialized.as_("session-sizes").with_caching_disabled()) \
        .to_stream().map_values(lambda n: str(n)).to(topics["out-session-sizes"])
    session_counts.filter(lambda windowed, n: n > 1) \
        .group_by(lambda windowed, n: (windowed.key, str(n)), Grouped.as_("long-sessions")) \
        .reduce(lambda x, y: str(int(x) + int(y)), lambda x, y: str(int(x) - int(y)),
                Materialized.as_("long-session-records").with_caching_disabled()) \
        .to_stream().to(topics["out-long-sessions"])
    # Joins of session tables (fetchSession), one with sessions of another gap and a shorter retention.
    session_keys = Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.String())
    session_pair = session_counts.join(session_values, lambda n, v: f"{n}|{v}")
    session_pair.to_stream().to(topics["out-session-inner"], session_keys)
    short_counts = sessioned.windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=300), grace)) \
        .count(Materialized.as_("short-session-counts").with_caching_disabled())
    session_values.left_join(short_counts, lambda v, n: f"{v}%{text(n)}").to_stream() \
        .to(topics["out-session-left"], session_keys)
    odd_pair = session_counts.filter(lambda windowed, n: n % 2 == 1) \
        .outer_join(session_values, lambda n, v: f"{text(n)}~{text(v)}")
    odd_pair.to_stream().to(topics["out-session-outer"], session_keys)
    _session_join_chains(topics, short_counts, session_pair, odd_pair)
    _materialized_session_join(topics, builder, grace)
    return builder


class SessionJoinReader(Processor):
    """Forwards each update of the materialized join of session tables with its timestamp and what the
    join's store holds for its session (``value@timestamp``, or ``null``)."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("session-joined")

    def process(self, record: Record) -> None:
        stored = self.store.get(record.key)
        held = "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"
        value = "null" if record.value is None else record.value
        self.context.forward(record.with_value(f"{value}|t{record.timestamp}|{held}"))


def _lengths(joined, name: str, output: str, topics) -> None:
    """A join of session tables re-grouped by key (repartition topic ``name``), its values' lengths summed."""
    joined.group_by(lambda windowed, value: (windowed.key, value), Grouped.as_(name)) \
        .aggregate(lambda: "0", lambda key, value, total: str(int(total) + len(value)),
                   lambda key, value, total: str(int(total) - len(value)),
                   Materialized.as_(f"{name}-lengths").with_caching_disabled()) \
        .to_stream().to(topics[output])


def _session_join_chains(topics, short_counts, session_pair, odd_pair) -> None:
    """Joins of session tables without a store re-grouped and joined again (sub-topology of ``sessioned``,
    which stays key-grouped: nothing in it keeps a store keyed by sessions)."""
    def text(value):
        return "null" if value is None else str(value)

    produced = Produced.with_(WindowedSerde(Serdes.String(), session=True), Serdes.String())
    _lengths(odd_pair.map_values(lambda value: value.replace("~", "")), "session-pair-by-key",
             "out-session-pair-regrouped", topics)
    session_pair.filter(lambda windowed, value: windowed.window.end > windowed.window.start) \
        .outer_join(short_counts, lambda p, n: f"{text(p)}#{text(n)}").to_stream() \
        .to(topics["out-session-pair-joined"], produced)


def _materialized_session_join(topics, builder, grace) -> None:
    """A materialized join of session tables, read by a processor naming its store, re-grouped and joined
    again, in a sub-topology of its own (the stream re-keyed, repartition topic ``session-joins``, with its
    own copies of the session tables): its store keyed by sessions makes its sub-topology run task-grouped,
    which would take the ``sessioned`` sub-topology's joins and re-groupings with it."""
    def text(value):
        return "null" if value is None else str(value)

    session_keys = WindowedSerde(Serdes.String(), session=True)
    produced = Produced.with_(session_keys, Serdes.String())
    rekeyed = builder.stream(topics["s"]).group_by(lambda key, value: key, Grouped.as_("session-joins"))
    windows = rekeyed.windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=500), grace))
    counts = windows.count(Materialized.as_("joined-session-counts").with_caching_disabled())
    values = windows.reduce(lambda x, y: x + "," + text(y),
                            Materialized.as_("joined-session-values").with_caching_disabled())
    short_counts = rekeyed.windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(milliseconds=300), grace)) \
        .count(Materialized.as_("joined-short-counts").with_caching_disabled())
    joined = values.outer_join(short_counts, lambda v, n: f"{text(v)}^{text(n)}",
                               Materialized.as_("session-joined").with_key_serde(session_keys).with_caching_disabled())
    joined.to_stream().process(SessionJoinReader, "session-joined").to(topics["out-session-materialized"], produced)
    _lengths(joined, "session-joined-by-key", "out-session-joined-regrouped", topics)
    joined.left_join(counts, lambda j, n: f"{j}@{text(n)}").to_stream() \
        .to(topics["out-session-rejoined"], produced)
