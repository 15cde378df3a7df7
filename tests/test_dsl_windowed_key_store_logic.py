"""A user processor on a DSL key-value store keyed by windows (a materialized join of windowed tables,
a filter's store after one, a windowed aggregation's map_values' store), without Spark: Kafka Streams'
``TimestampedKeyValueStore<Windowed<K>, V>`` found by the key and the window's start, listed in its
time-windowed serde's byte order (a property over random windows), the join's stamps (the larger of
both windows' times), the join's next update overwriting a write, the filter's store read as its old
value, batches with the task state pickled in between, and what stays refused. The broker-backed
comparison with Kafka Streams is test_equivalence_dsl_store_processor.py (its windowed stores)."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dsl_store_processor_topology import key_text  # noqa: E402
from test_dsl_window_store_processor_logic import _program, _run  # noqa: E402

from dagster_kstreams.processors.errors import ProcessingError  # noqa: E402
from dagster_kstreams.processors.task_state import TaskState  # noqa: E402
from dagster_kstreams.spark.compile import UnsupportedTopologyError  # noqa: E402
from dagster_kstreams.topology import (  # noqa: E402
    BufferConfig, EmitStrategy, Grouped, Materialized, SessionWindows, StreamsBuilder, Suppressed, TimeWindows,
    ValueAndTimestamp, WindowedSerde,
)
from dagster_kstreams.topology.processor_api import Processor, Record  # noqa: E402
from dagster_kstreams.topology.serdes import Serdes, Window, Windowed  # noqa: E402

SIZE = timedelta(milliseconds=1000)
GRACE = timedelta(milliseconds=500)
WINDOWED_KEYS = WindowedSerde(Serdes.String(), 1000)
SESSION_KEYS = Serdes.SessionWindowed(Serdes.String())


def _text(stored) -> str:
    return "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"


class _Editor(Processor):
    """Forwards each update with what ``store`` holds for its window (read by the window's start, with
    another end) and every entry; puts ``edited`` 1 ms later on an update at a time ending in 0."""

    def __init__(self, store: str) -> None:
        self.store_name = store

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store(self.store_name)

    def process(self, record: Record) -> None:
        other_end = Windowed(record.key.key, Window(record.key.window.start, record.key.window.start + 7))
        listed = ",".join(f"{key_text(entry.key)}={_text(entry.value)}" for entry in self.store.all())
        self.context.forward(record.with_value(f"{record.value}|t{record.timestamp}|{_text(self.store.get(other_end))}"
                                               f"|{listed}"))
        if record.timestamp % 10 == 0:
            self.store.put(record.key, ValueAndTimestamp.make("edited", record.timestamp + 1))


def _uncached(store: str) -> Materialized:
    """Every update forwarded (Kafka Streams' record cache would forward per commit)."""
    return Materialized.as_(store).with_caching_disabled()


def _join(step=None, store="joined"):
    """Counts in tumbling windows outer-joined with concatenations in hopping ones into ``joined``
    (optionally through ``step``), edited by an _Editor on ``store``, its keys written as text."""
    builder = StreamsBuilder()
    grouped = builder.stream("in").group_by_key()
    counts = grouped.windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE)).count(_uncached("counts"))
    values = grouped.windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE).advance_by(timedelta(milliseconds=500))) \
        .reduce(lambda x, y: x + y, _uncached("values"))
    joined = counts.outer_join(values, lambda n, v: f"{n}/{v}",
                               Materialized.as_("joined").with_key_serde(WINDOWED_KEYS).with_caching_disabled())
    if step is not None:
        joined = step(joined)
    joined.to_stream().process(lambda: _Editor(store), store).select_key(lambda windowed, value: key_text(windowed)) \
        .to("out")
    return builder


ROWS = [("k", "a", 100), ("k", "b", 620), ("k", "c", 40), ("j", "d", 300), ("k", "e", 1_200)]


def test_the_join_store_reads_windows_by_start_with_the_join_stamps_in_serde_order():
    """"c" at 40, after "b" at 620, is stamped 620 in window 0 (the larger of both windows' times); the
    processor's edit of window 0 at 100 is overwritten by the join's next update of it; a window is found
    by its key and start, whatever end the key read names; all() lists by the key's bytes, then the
    start, each window ending 1 s after its start as the serde reads it back (the hopping window at 500
    too); the hopping window at 500 has no count."""
    outputs, _ = _run(_program(_join()), ROWS)
    assert [value for key, value in outputs if key in ("[k@0/1000]", "[k@500/1500]")][:6] == [
        "1/None|t100|1/None@100|[k@0/1000]=1/None@100",
        "1/a|t100|1/a@100|[k@0/1000]=1/a@100",
        "2/a|t620|2/a@620|[k@0/1000]=2/a@620",
        "2/ab|t620|2/ab@620|[k@0/1000]=2/ab@620",
        "None/b|t620|None/b@620|[k@0/1000]=edited@621,[k@500/1500]=None/b@620",
        "3/ab|t620|3/ab@620|[k@0/1000]=3/ab@620,[k@500/1500]=edited@621",
    ]
    assert [value for key, value in outputs if key == "[j@0/1000]"][0] == \
        "1/None|t300|1/None@300|[j@0/1000]=1/None@300,[k@0/1000]=edited@621,[k@500/1500]=edited@621"


@pytest.mark.parametrize("batches", [2, 5])
def test_batches_with_the_task_state_in_between_give_the_one_batch_result(batches):
    program = _program(_join())
    whole, stored = _run(program, ROWS)
    assert _run(_program(_join()), ROWS, batches)[0] == whole
    assert TaskState.store_content(stored, program.store_slots["joined"])[(b"k", 1000)] == "edited"


def test_a_filter_of_the_join_reads_its_store_as_its_old_value():
    """The processor puts "edited" into the filter's window 0 at 100; the next update of it ("2/a" at
    621) fails the filter: the filter forwards a delete, since its store holds a value, and the one after
    ("2/ab") fails too and is dropped, its store holding none (Kafka Streams' KTableFilter sends old
    values after a materialized table, read from its own store)."""
    def step(joined):
        return joined.filter(lambda windowed, value: not value.startswith("2"),
                             Materialized.as_("kept").with_key_serde(WINDOWED_KEYS).with_caching_disabled())
    outputs, _ = _run(_program(_join(step, "kept")), [("k", "a", 100), ("k", "b", 621), ("k", "c", 40)])
    assert [(key, value.split("|")[:3]) for key, value in outputs] == [
        ("[k@0/1000]", ["1/None", "t100", "1/None@100"]), ("[k@0/1000]", ["1/a", "t100", "1/a@100"]),
        ("[k@0/1000]", ["None", "t621", "null"]), ("[k@500/1500]", ["None/b", "t621", "None/b@621"]),
        ("[k@0/1000]", ["3/ab", "t621", "3/ab@621"]), ("[k@0/1000]", ["3/abc", "t621", "3/abc@621"]),
    ]


def test_a_map_values_store_of_a_windowed_count_keeps_the_counts_stamps():
    """Kafka Streams stamps a window's update with the larger of the record's and the window's time ("c"
    at 40 after "b" at 620: 620), and the map_values' store keeps it."""
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE)).count(_uncached("c")) \
        .map_values(lambda n: f"#{n}", Materialized.as_("labels").with_key_serde(WINDOWED_KEYS)
                    .with_value_serde(Serdes.String()).with_caching_disabled()) \
        .to_stream().process(lambda: _Editor("labels"), "labels") \
        .select_key(lambda windowed, value: key_text(windowed)).to("out")
    outputs, _ = _run(_program(builder), [("k", "a", 100), ("k", "b", 620), ("k", "c", 40)])
    assert [value.split("|")[:3] for _, value in outputs] == [
        ["#1", "t100", "#1@100"], ["#2", "t620", "#2@620"], ["#3", "t620", "#3@620"]]


def _labels_of(table_of, rows, key_serde=WINDOWED_KEYS):
    """What an _Editor of ``labels``, a map_values' store over ``table_of(the "in" stream grouped, the
    "in2" one)`` keyed by ``key_serde``, forwards for ``rows``."""
    builder = StreamsBuilder()
    table_of(builder.stream("in").group_by_key(), builder.stream("in2").group_by_key()) \
        .map_values(lambda n: f"#{n}", Materialized.as_("labels").with_key_serde(key_serde)
                    .with_value_serde(Serdes.String()).with_caching_disabled()) \
        .to_stream().process(lambda: _Editor("labels"), "labels") \
        .select_key(lambda windowed, value: key_text(windowed)).to("out")
    return [(key, value.split("|")) for key, value in _run(_program(builder), rows)[0]]


@pytest.mark.parametrize("final_counts", [
    lambda grouped, _: grouped.windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE)).count(_uncached("c"))
    .suppress(Suppressed.until_window_closes(BufferConfig.unbounded())),
    lambda grouped, _: grouped.windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE))
    .emit_strategy(EmitStrategy.on_window_close()).count(_uncached("c")),
], ids=["suppressed", "emitted-on-close"])
def test_a_map_values_store_of_final_counts_keeps_each_with_its_window_stamp(final_counts):
    """Kafka Streams' suppression forwards an evicted window with its buffered update's time, and an
    aggregation emitting on window close a closed window with its stored time: both the count's third
    update's, "c" at 40 after "b" at 620: 620, once stream time passes the window's end and grace; the
    step's store keeps it, and the processor's write (at 620: "edited" at 621) is what it lists next."""
    rows = [("k", "a", 100), ("k", "b", 620), ("k", "c", 40), ("j", "d", 1_600), ("k", "e", 2_700)]
    assert _labels_of(final_counts, rows) == [
        ("[k@0/1000]", ["#3", "t620", "#3@620", "[k@0/1000]=#3@620"]),
        ("[j@1000/2000]", ["#1", "t1600", "#1@1600", "[j@1000/2000]=#1@1600,[k@0/1000]=edited@621"]),
    ]


def test_a_map_values_store_of_a_windowed_cogroup_keeps_the_stamps_of_its_one_store():
    """A windowed cogroup's inputs share one store, whose window time is the largest of every input's
    records (Kafka Streams' KStreamWindowAggregate per input, one store): "c" at 40 on "in" after "b"
    at 620 on "in2" is stamped 620."""
    def cogrouped(grouped, other):
        return grouped.cogroup(lambda key, value, total: total + 1) \
            .cogroup(other, lambda key, value, total: total + 10) \
            .windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE)).aggregate(lambda: 0, _uncached("c"))
    rows = [("k", "a", 100), ("k", "b", 620, "in2"), ("k", "c", 40)]
    assert [parts[:3] for _, parts in _labels_of(cogrouped, rows)] == [
        ["#1", "t100", "#1@100"], ["#11", "t620", "#11@620"], ["#12", "t620", "#12@620"]]


def test_a_map_values_store_of_sessions_keeps_each_by_its_end_and_deletes_merged_ones():
    """Kafka Streams stamps a session's update with its end and forwards a tombstone for each session merged
    away, stamped with that one's end; the step's store, keyed by the session-windowed serde, holds each
    session by its key, end and start (a window read with another end is another entry), lists them in
    that serde's byte order (the key, then the end, then the start), and keeps a processor's write to a
    session merged away ("edited" at 101, written after its tombstone) for good."""
    def sessions(grouped, _):
        return grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(SIZE, GRACE)).count(_uncached("c"))
    rows = [("k", "a", 100), ("k", "b", 300), ("j", "c", 250), ("k", "d", 3_000), ("k", "e", 2_200)]
    outputs = _labels_of(sessions, rows, SESSION_KEYS)
    assert all(parts[2] == "null" for _, parts in outputs)  # read with the end at start + 7: no entry
    assert [(key, [parts[0], parts[1], parts[3]]) for key, parts in outputs] == [
        ("[k@100/100]", ["#1", "t100", "[k@100/100]=#1@100"]),
        ("[k@100/100]", ["None", "t100", ""]),
        ("[k@100/300]", ["#2", "t300", "[k@100/100]=edited@101,[k@100/300]=#2@300"]),
        ("[j@250/250]", ["#1", "t250", "[j@250/250]=#1@250,[k@100/100]=edited@101,[k@100/300]=edited@301"]),
        ("[k@3000/3000]", ["#1", "t3000", "[j@250/250]=edited@251,[k@100/100]=edited@101,[k@100/300]=edited@301,"
                                          "[k@3000/3000]=#1@3000"]),
        ("[k@3000/3000]", ["None", "t3000", "[j@250/250]=edited@251,[k@100/100]=edited@101,[k@100/300]=edited@301"]),
        ("[k@2200/3000]", ["#2", "t3000", "[j@250/250]=edited@251,[k@100/100]=edited@101,[k@100/300]=edited@301,"
                                          "[k@2200/3000]=#2@3000,[k@3000/3000]=edited@3001"]),
    ]


class _Lister(Processor):
    """On the join's first update, puts ``windows`` (``(key, start)``) into its store, then forwards
    ``all()``'s keys and those of a range."""

    def __init__(self, windows) -> None:
        self.windows = windows

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("joined")

    def process(self, record: Record) -> None:
        for key, start in self.windows:
            self.store.put(Windowed(key, Window(start, start + 1000)), ValueAndTimestamp.make("put", record.timestamp))
        listed = [key_text(entry.key) for entry in self.store.all()]
        ranged = [key_text(entry.key) for entry in self.store.range(*_RANGE)]
        self.context.forward(record.with_value(";".join(listed) + "|" + ";".join(ranged)))


_RANGE = (Windowed("b", Window(0, 1000)), Windowed("c", Window(2**40, 2**40 + 1000)))


def _lister_program(windows):
    builder = StreamsBuilder()
    grouped = builder.stream("in").group_by_key()
    tumbling = grouped.windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE))
    tumbling.count(_uncached("counts")).join(
        tumbling.reduce(lambda x, y: x + y, _uncached("values")), lambda n, v: f"{n}/{v}",
        Materialized.as_("joined").with_key_serde(WINDOWED_KEYS).with_caching_disabled()) \
        .to_stream().process(lambda: _Lister(windows), "joined").select_key(lambda windowed, value: "listed").to("out")
    return _program(builder)


_WINDOWS = st.lists(st.tuples(st.sampled_from(["a", "b", "ab", "b\u00e9", "c", "ca", "zz", ""]),
                              st.integers(min_value=0, max_value=2**41)), min_size=1, max_size=8)


@settings(max_examples=40, deadline=None)
@given(_WINDOWS)
def test_all_and_range_answer_in_the_windowed_serdes_byte_order(windows):
    """What Kafka Streams' RocksDB store answers: the entries ordered by the serialized windowed key (the
    key's bytes, then the start's 8 big-endian bytes), a range by the same bytes, inclusive; the join's
    own entry (zz's window 0, its update's) among them, a window put twice one entry."""
    outputs, _ = _run(_lister_program(windows), [("zz", "v", 5)])
    in_store = {*windows, ("zz", 0)}
    by_bytes = sorted(WINDOWED_KEYS.serialize(Windowed(key, Window(start, start + 1000))) for key, start in in_store)
    low, high = (WINDOWED_KEYS.serialize(window) for window in _RANGE)
    expected = ";".join(key_text(WINDOWED_KEYS.deserialize(raw)) for raw in by_bytes)
    in_range = ";".join(key_text(WINDOWED_KEYS.deserialize(raw)) for raw in by_bytes if low <= raw <= high)
    assert outputs[0] == ("listed", f"{expected}|{in_range}")


# -- refused ---------------------------------------------------------------------------------
class _Nothing(Processor):
    def process(self, record: Record) -> None:
        pass


def _step_over(table_of, store_serde=WINDOWED_KEYS):
    """A processor naming the store of a map_values over the table ``table_of(grouped stream)``."""
    builder = StreamsBuilder()
    materialized = Materialized.as_("kept")
    if store_serde is not None:
        materialized = materialized.with_key_serde(store_serde)
    table_of(builder.stream("in").group_by_key()).map_values(lambda v: f"{v}", materialized) \
        .to_stream().process(_Nothing, "kept")
    return builder


def test_a_windowed_store_without_a_time_windowed_key_serde_is_refused_naming_it():
    builder = StreamsBuilder()
    windows = builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE))
    windows.count().join(windows.reduce(lambda x, y: x + y), lambda n, v: f"{n}/{v}", Materialized.as_("joined"))
    builder.stream("s").process(_Nothing, "joined")
    with pytest.raises(UnsupportedTopologyError, match="processor KSTREAM-PROCESSOR-.*store joined belongs to "
                                                       "KTABLE-MERGE-.*keyed by windows.*with_key_serde"):
        _program(builder)
    with pytest.raises(UnsupportedTopologyError, match="store kept belongs to KTABLE-MAPVALUES-.*keyed by windows"):
        _program(_step_over(lambda grouped: grouped.windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE)).count(),
                            None))


def test_a_windowed_join_the_runner_does_not_run_stays_refused_with_its_store_named():
    """A processor of another topic naming the join's store merges the sub-topologies: the windowed
    aggregations then keep their own stream time, whose tables the runner does not join."""
    builder = StreamsBuilder()
    windows = builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE))
    windows.count().join(windows.reduce(lambda x, y: x + y), lambda n, v: f"{n}/{v}",
                         Materialized.as_("joined").with_key_serde(WINDOWED_KEYS))
    builder.stream("s").process(_Nothing, "joined")
    with pytest.raises(UnsupportedTopologyError, match="KSTREAM-AGGREGATE-.* keeps its own stream time"):
        _program(builder)


@pytest.mark.parametrize("table_of", [
    lambda grouped: grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(SIZE, GRACE)).count(),
    lambda grouped: grouped.cogroup(lambda key, value, total: total + 1)
    .windowed_by(SessionWindows.of_inactivity_gap_and_grace(SIZE, GRACE)).aggregate(lambda: 0, lambda k, a, b: a + b),
    lambda grouped: grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(SIZE, GRACE)).count()
    .suppress(Suppressed.until_window_closes(BufferConfig.unbounded())),
], ids=["session", "session-cogroup", "suppressed-session"])
def test_a_step_store_over_sessions_is_given_with_a_session_windowed_key_serde_only(table_of):
    """Kafka Streams keys it by the key, the session's end and its start: a time-windowed serde (or none)
    cannot write those keys, and is refused naming the processor, the step and the serde it needs."""
    assert _program(_step_over(table_of, SESSION_KEYS)) is not None
    for serde in (WINDOWED_KEYS, None):
        with pytest.raises(UnsupportedTopologyError, match="processor KSTREAM-PROCESSOR-.*store kept belongs to "
                                                           "KTABLE-MAPVALUES-.*keyed by windows.*Serdes.SessionWindowed"):
            _program(_step_over(table_of, serde))


def test_a_step_store_over_time_windows_with_a_session_windowed_serde_is_refused_naming_it():
    with pytest.raises(UnsupportedTopologyError, match="store kept belongs to KTABLE-MAPVALUES-.*keyed by windows.*"
                                                       "a time-windowed serde"):
        _program(_step_over(lambda grouped: grouped.windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE)).count(),
                            SESSION_KEYS))


def test_a_windowed_store_beside_session_windows_is_refused_naming_it():
    """Beside session windows a sub-topology keeps each window's group by its key, start and end
    (own_groups.py), where Kafka Streams' time-windowed serde writes the key and the start only: a
    processor's put of a window by another end would be a second entry, and all() would read each end
    from the table's windows rather than from the serde's size. So the view is refused there."""
    builder = StreamsBuilder()
    grouped = builder.stream("in").group_by_key()
    grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(SIZE, GRACE)).count() \
        .to_stream().select_key(lambda windowed, value: key_text(windowed)).to("sessions-out")
    grouped.windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE)).count() \
        .map_values(lambda n: f"#{n}", Materialized.as_("kept").with_key_serde(WINDOWED_KEYS)
                    .with_value_serde(Serdes.String())) \
        .to_stream().process(_Nothing, "kept")
    with pytest.raises(UnsupportedTopologyError, match="processor KSTREAM-PROCESSOR-.*store kept belongs to "
                                                       "KTABLE-MAPVALUES-.*session windows"):
        _program(builder)


@pytest.mark.parametrize("store_of", [
    lambda windowed: windowed.group_by_key(Grouped.with_(WINDOWED_KEYS, Serdes.String()))
    .count(Materialized.as_("c").with_key_serde(WINDOWED_KEYS)),
    lambda windowed: windowed.to_table(Materialized.as_("c").with_key_serde(WINDOWED_KEYS)),
    lambda windowed: windowed.to_table().map_values(lambda v: v, Materialized.as_("c").with_key_serde(WINDOWED_KEYS)),
], ids=["count", "to_table", "to_table-map_values"])
def test_an_aggregation_or_to_table_of_a_windowed_tables_stream_is_refused_naming_it(store_of):
    """A count or to_table of a windowed table's stream in its sub-topology (or a map_values after the
    to_table) keys its store by the windows, whose groups the task's state keeps by key and start: the
    plain key-value view would look them up by the serde's bytes (and fail at the first read). Not
    compared with Kafka Streams: refused."""
    builder = StreamsBuilder()
    windowed = builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE)).count() \
        .to_stream().map_values(lambda n: f"{n}")
    store_of(windowed).to_stream().process(_Nothing, "c")
    owners = "(KSTREAM-AGGREGATE|KSTREAM-TOTABLE|KTABLE-MAPVALUES)"
    with pytest.raises(UnsupportedTopologyError,
                       match=f"processor KSTREAM-PROCESSOR-.*store c belongs to {owners}-.*keys are windows"):
        _program(builder)


class _PlainKeyWriter(Processor):
    """Puts into the join's store under the window's plain key, and reads it back (no listing)."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("joined")

    def process(self, record: Record) -> None:
        self.store.put(record.key.key, ValueAndTimestamp.make("plain", record.timestamp))
        self.context.forward(record.with_value(_text(self.store.get(record.key.key))))


def test_a_key_that_is_no_window_fails_the_processor_naming_the_store():
    """Kafka Streams' time-windowed serializer fails a put whose key is no Windowed (ClassCastException):
    the view fails it too, naming the store, rather than writing the slot of the plain key's group."""
    builder = StreamsBuilder()
    tumbling = builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE))
    tumbling.count(_uncached("counts")).join(
        tumbling.reduce(lambda x, y: x + y, _uncached("values")), lambda n, v: f"{n}/{v}",
        Materialized.as_("joined").with_key_serde(WINDOWED_KEYS).with_caching_disabled()) \
        .to_stream().process(_PlainKeyWriter, "joined").select_key(lambda windowed, value: "k").to("out")
    with pytest.raises(ProcessingError, match="processor KSTREAM-PROCESSOR-.*store joined: its keys are windows"):
        _run(_program(builder), [("k", "a", 100)])
