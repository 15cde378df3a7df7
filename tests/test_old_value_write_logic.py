"""A table's update carries the old value from before it to every child, whatever a user processor among
the children writes into the table's store, without Spark: Kafka Streams fixes the ``Change``'s old value
(and the new one) before it forwards the update, so a processor's write becomes the old value of the key's
next update only, whichever child comes first. Checked against a model on random updates, with the
processor before and after a re-grouping and an outer table-table join. The broker-backed comparison with
Kafka Streams is test_equivalence_dsl_store_processor.py (old_value_write_topology.py)."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.changes import Change, ChangedSerde
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import (
    Materialized, Serdes, Stores, StreamsBuilder, TimeWindows, ValueAndTimestamp, WindowedSerde,
)
from dagster_kstreams.topology.processor_api import Processor, Record
from stream_join_model import run_task

CHANGES = "app-groups-repartition"


class _Rewriter(Processor):
    """Puts ``value + "!"`` into the table's store at a timestamp that is a multiple of 3, deletes the key
    at one past it (as old_value_write_topology.StoreRewriter)."""

    def init(self, context) -> None:
        self.store = context.get_state_store("items-store")

    def process(self, record: Record) -> None:
        if record.value is not None and record.timestamp % 3 == 0:
            self.store.put(record.key, ValueAndTimestamp.make(record.value + "!", record.timestamp + 1))
        elif record.timestamp % 3 == 1:
            self.store.delete(record.key)


class _PutAhead(Processor):
    """Puts a version 20 ms ahead into a windowed table's versioned step at a timestamp that is a multiple of
    3 (the step's next updates of the window before it are then out of order)."""

    def init(self, context) -> None:
        self.store = context.get_state_store("steps")

    def process(self, record: Record) -> None:
        if record.timestamp % 3 == 0:
            self.store.put(record.key, 100 + (record.value or 0), record.timestamp + 20)


def _text(value) -> str:
    return "null" if value is None else value


def _topology(processor_first: bool, cached: bool = False):
    builder = StreamsBuilder()
    items_store = Materialized.as_("items-store")
    items = builder.table("items", items_store if cached else items_store.with_caching_disabled())
    others = builder.table("others", Materialized.as_("others-store").with_caching_disabled())

    def rewriter() -> None:
        items.to_stream().process(_Rewriter, "items-store")

    if processor_first:
        rewriter()
    items.group_by(lambda key, value: ("g", value)) \
        .reduce(lambda total, value: f"{total}+{value}", lambda total, value: f"{total}-{value}",
                Materialized.as_("groups").with_caching_disabled())
    items.outer_join(others, lambda item, other: f"{_text(item)}+{_text(other)}").to_stream().to("joined")
    if not processor_first:
        rewriter()
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _model(records) -> tuple[list[Change], list[tuple[str, object]]]:
    """What Kafka Streams sends the re-grouping (one group: ``Change(new, old)``) and what the outer join
    forwards, for ``records`` ``[(key, topic, value, timestamp)]``."""
    items, others, changes, joined = {}, {}, [], []
    for key, topic, value, timestamp in records:
        table = items if topic == "items" else others
        old = table.get(key)
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
        if topic == "items" and (value is not None or old is not None):
            changes.append(Change(value, old))
        if value is not None or old is not None or (others if topic == "items" else items).get(key) is not None:
            item, other = (value, others.get(key)) if topic == "items" else (items.get(key), value)
            joined.append((key, None if item is None and other is None else f"{_text(item)}+{_text(other)}"))
        if topic == "items" and value is not None and timestamp % 3 == 0:
            items[key] = value + "!"
        elif topic == "items" and timestamp % 3 == 1:
            items.pop(key, None)
    return changes, joined


_records = st.lists(
    st.tuples(st.sampled_from(["k1", "k2", "k3"]), st.sampled_from(["items", "items", "others"]),
              st.one_of(st.none(), st.sampled_from(["a", "b", "c"])), st.integers(0, 9)),
    max_size=30,
).map(lambda rows: [(key, topic, value, 10 * i + step) for i, (key, topic, value, step) in enumerate(rows)])


@settings(max_examples=60, deadline=None)
@given(_records, st.integers(1, 3))
def test_a_processor_writing_the_tables_store_changes_no_old_value_in_flight(records, batches):
    serde = ChangedSerde(Serdes.String())
    expected_changes, expected_joined = _model(records)
    for processor_first in (True, False):
        outputs, _ = run_task(_topology(processor_first), records, batches)
        changes = [serde.deserialize(value) for topic, _, value in outputs if topic == CHANGES]
        joined = [(key.decode(), None if value is None else value.decode())
                  for topic, key, value in outputs if topic == "joined"]
        assert (changes, joined) == (expected_changes, expected_joined), processor_first


def test_the_next_update_takes_the_processors_write_as_its_old_value():
    """a at 30 is rewritten to a! (30 % 3 == 0): b at 41 leaves a!, not a; c at 43 leaves b and is deleted
    (43 % 3 == 1): d at 44 leaves nothing; e at 45 leaves d and is rewritten: f at 47 leaves e!."""
    records = [("k", "items", "a", 30), ("k", "items", "b", 41), ("k", "items", "c", 43),
               ("k", "items", "d", 44), ("k", "items", "e", 45), ("k", "items", "f", 47)]
    outputs, _ = run_task(_topology(processor_first=True), records)
    serde = ChangedSerde(Serdes.String())
    assert [serde.deserialize(value) for topic, _, value in outputs if topic == CHANGES] == [
        Change("a", None), Change("b", "a!"), Change("c", "b"), Change("d", None), Change("e", "d"),
        Change("f", "e!")]


def test_with_the_record_cache_a_flushed_update_keeps_its_old_value():
    """The cache forwards each key's last update at the batch's end (Kafka Streams' commit), which the
    processor rewrites (a at 30, c at 33): the re-grouping gets the flushed update's old value (none), in
    either child order."""
    records = [("k", "items", "a", 30), ("j", "items", "c", 33)]
    serde = ChangedSerde(Serdes.String())
    for processor_first in (True, False):
        program = _topology(processor_first, cached=True)
        outputs, _ = run_task(program, records)
        assert [serde.deserialize(value) for topic, _, value in outputs if topic == CHANGES] == [
            Change("a", None), Change("c", None)], processor_first


def _windowed_step_regrouped(processor_first: bool):
    builder = StreamsBuilder()
    steps = builder.stream("items").group_by_key() \
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(milliseconds=100))) \
        .count(Materialized.as_("counts").with_caching_disabled()) \
        .filter(lambda window, count: count % 3 != 0, Materialized.as_(
            Stores.persistent_versioned_key_value_store("steps", timedelta(milliseconds=60)))
            .with_key_serde(WindowedSerde(Serdes.String(), 100)).with_value_serde(Serdes.Long()))

    def put_ahead() -> None:
        steps.to_stream().process(_PutAhead, "steps")

    if processor_first:
        put_ahead()
    steps.group_by(lambda window, count: (window.key, f"{window.window.start}:{count}")) \
        .count(Materialized.as_("groups").with_caching_disabled())
    if not processor_first:
        put_ahead()
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def test_a_windowed_tables_versioned_step_is_regrouped_alike_before_or_after_a_processor_putting_into_it():
    """Counts of 100 ms windows filtered into a versioned step (a count of 3 or 6 fails: a tombstone); the
    processor puts 100 + the count 20 ms ahead at a multiple of 3. Window 0: the updates at 3 to 31 are
    older than a version put ahead (to no group); 7 at 50 replaces 105, put at 50, and leaves it as its old
    value. Window 100: 2 at 150 leaves 101 (put at 140), 4 at 170 leaves 102 (put at 170); 6 at 180 is
    older than 105 (put at 191)."""
    times = (0, 3, 10, 12, 30, 31, 50, 60, 120, 150, 160, 170, 171, 180)
    records = [("k", "items", "v", t) for t in times]
    serde = ChangedSerde(Serdes.String())
    expected = [Change("0:1", None), Change("0:7", "0:105"), Change("0:8", "0:7"), Change("100:1", None),
                Change("100:2", "100:101"), Change("100:4", "100:102"), Change("100:5", "100:4")]
    for processor_first in (True, False):
        outputs, _ = run_task(_windowed_step_regrouped(processor_first), records)
        assert [serde.deserialize(value) for topic, _, value in outputs if topic == "app-groups-repartition"] \
            == expected, processor_first
