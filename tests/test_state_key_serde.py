"""Which key a sub-topology's state is kept by (processors/state_key_serde.py), without Spark: the
decision itself (examples and properties), and merged streams whose sources read keys with
different serdes run as programs batch by batch (issue 14: one logical key, one aggregate, as in
Kafka Streams' store), also with stores that write keys with different serdes (task-grouped, each
store keyed by its own serde's bytes). The broker-backed comparisons with Kafka Streams are the merged
sub-topology of test_equivalence_cogroup.py and test_equivalence_store_key_serdes.py."""

from __future__ import annotations

import struct
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.state_key_serde import KEYED_STORE_TYPES, state_keying
from dagster_kstreams.topology.consumed_produced import Consumed, Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.node_specs import StoreSpec, StoreType
from dagster_kstreams.topology.processor_api import Processor, ValueAndTimestamp
from dagster_kstreams.topology.serdes import Serde, Serdes, WindowedSerde
from dagster_kstreams.topology.windows import TimeWindows
from test_cogroup_logic import _program, _run, _user_id, _UserIdSerde, _window

USER_ID = Consumed.with_(_UserIdSerde(), Serdes.String())
WINDOWED = Produced.with_(WindowedSerde(Serdes.String(), 10_000), Serdes.String())


# -- the decision ------------------------------------------------------------------------------------
def _merged_count(materialized=None, windowed_key_serde=None):
    def build(builder):
        by_user = builder.stream("a").merge(builder.stream("b", USER_ID)).group_by_key()
        by_user.count(materialized or Materialized.as_("counts").with_caching_disabled()) \
            .to_stream().to("out", Produced.with_(Serdes.String(), Serdes.Long()))
        if windowed_key_serde is not None:
            by_user.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))) \
                .count(Materialized.as_("windowed").with_key_serde(windowed_key_serde))
    return build


def test_a_merge_of_keys_read_differently_keeps_its_state_by_the_stores_key_serde():
    assert _program(_merged_count()).state_key_serde == Serdes.String()  # default.key.serde
    user_keyed = Materialized.as_("counts").with_key_serde(_UserIdSerde()).with_caching_disabled()
    assert _program(_merged_count(user_keyed)).state_key_serde == _UserIdSerde()
    # Sources that read keys alike keep the key's bytes (no state key column).
    def alike(builder):
        builder.stream("a").merge(builder.stream("b")).group_by_key().count().to_stream().to("out")
    assert _program(alike).state_key_serde is None
    # Stateless: nothing is kept, whatever the sources read.
    def stateless(builder):
        builder.stream("a").merge(builder.stream("b", USER_ID)).to("out")
    assert _program(stateless).state_key_serde is None


def test_a_stream_joined_with_a_table_whose_keys_are_read_differently_keeps_the_tables_key_serde():
    def build(builder):
        table = builder.table("t", Consumed.with_(_UserIdSerde(), Serdes.String()))
        builder.stream("a").join(table, lambda left, right: left + right).to("out")
    assert _program(build).state_key_serde == _UserIdSerde()


class _LowerCaseSerde(Serde):
    """Keys written in lower case: ``"U7"`` and ``"u7"`` are one key to it, two to Serdes.String()."""

    name = "LowerCase"

    def serialize(self, value):
        return None if value is None else value.lower().encode()

    def deserialize(self, data):
        return None if data is None else data.decode()


def test_stores_of_keys_read_differently_that_write_keys_differently_run_task_grouped_by_each_stores_serde():
    program = _program(_merged_count(windowed_key_serde=_UserIdSerde()))
    assert program.task_grouped and program.state_key_serde is None
    assert dict(program.keying.stores) == {"counts": Serdes.String(), "windowed": _UserIdSerde()}
    # The same stores on sources that read keys alike: the key's bytes serve every store.
    def alike(builder):
        by_user = builder.stream("a").merge(builder.stream("b")).group_by_key()
        by_user.count(Materialized.as_("counts"))
        by_user.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))) \
            .count(Materialized.as_("windowed").with_key_serde(_UserIdSerde()))
    alike_program = _program(alike)
    assert alike_program.state_key_serde is None and not alike_program.keying.by_store


def test_a_processor_connected_to_stores_that_write_keys_differently_is_refused_when_defined():
    stores = [StoreSpec("left", StoreType.JOIN_WINDOW, key_serde=Serdes.String()),
              StoreSpec("right", StoreType.JOIN_WINDOW, key_serde=_UserIdSerde())]
    with pytest.raises(UnsupportedTopologyError,
                       match=r"^processor J \(sub-topology 3\): its stores write keys with different serdes "
                             r"\(left \(Serdes.String\(\)\), right \(Serdes.UserId\(\)\)\)"):
        state_keying(3, [Serdes.String(), _UserIdSerde()], stores, [("J", ("right", "left"))], Serdes.String())


def _two_stores(builder):
    """A String-keyed and a UserId-keyed topic merged, counted by a store that writes keys as they are
    and reduced by one that writes them in lower case (both uncached: every update goes out)."""
    by_user = builder.stream("a").merge(builder.stream("b", USER_ID)).group_by_key()
    by_user.count(Materialized.as_("exact").with_caching_disabled()) \
        .to_stream().to("out", Produced.with_(Serdes.String(), Serdes.Long()))
    by_user.reduce(lambda left, right: left + right,
                   Materialized.as_("folded").with_key_serde(_LowerCaseSerde()).with_caching_disabled()) \
        .to_stream().to("out")


def test_each_store_groups_keys_as_its_own_serde_writes_them():
    program = _program(_two_stores)
    assert program.task_grouped
    rows = [("a", "U7", "1", 1), ("b", _user_id(7), "2", 2), ("a", "u7", "3", 3), ("a", "U7", "4", 4),
            ("b", None, "5", 5), ("a", "u8", None, 6)]
    # counts: "U7" and "u7" (either topic's) are two keys; the folded reduce: one, whose table's stream
    # writes keys with the store's serde (lower case), as Kafka Streams' toStream() keeps it
    expected = [(b"U7", struct.pack(">q", 1)), (b"u7", b"1"), (b"u7", struct.pack(">q", 1)), (b"u7", b"12"),
                (b"u7", struct.pack(">q", 2)), (b"u7", b"123"), (b"U7", struct.pack(">q", 2)), (b"u7", b"1234")]
    assert _run(program, rows) == expected
    assert _run(program, rows, batches=len(rows)) == expected  # the state pickled between records


def _stored_text(stored) -> str:
    return "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"


class _TwoStoreAudit(Processor):
    """Reads what the count ("exact", String keys) and the reduce ("folded", lower-case keys) hold for
    a record's key; "x" puts a count of 100 and a folded "reset", a null value deletes the key from
    both and lists the keys each store has left."""

    def init(self, context):
        self.context = context
        self.exact, self.folded = context.get_state_store("exact"), context.get_state_store("folded")

    def process(self, record):
        seen = f"{_stored_text(self.exact.get(record.key))}|{_stored_text(self.folded.get(record.key))}"
        if record.value is None:
            self.exact.delete(record.key)
            self.folded.delete(record.key)
            seen += "|" + ",".join(e.key for e in self.exact.all()) + "/" + ",".join(e.key for e in self.folded.all())
        elif record.value == "x":
            self.exact.put(record.key, ValueAndTimestamp.make(100, record.timestamp))
            self.folded.put(record.key, ValueAndTimestamp.make("reset", record.timestamp))
        self.context.forward(record.with_value(seen))


def test_a_processor_reads_and_writes_each_of_its_stores_by_the_key_as_that_stores_serde_writes_it():
    def build(builder):
        merged = builder.stream("a").merge(builder.stream("b", USER_ID))
        by_user = merged.group_by_key()
        by_user.count(Materialized.as_("exact").with_caching_disabled()).to_stream() \
            .to("counts", Produced.with_(Serdes.String(), Serdes.Long()))
        by_user.reduce(lambda left, right: left + right,
                       Materialized.as_("folded").with_key_serde(_LowerCaseSerde()).with_caching_disabled())
        merged.process(_TwoStoreAudit, "exact", "folded").to("out")
    program = _program(build)
    audit = next(node.name for node in program.nodes if node.kind == "process")
    assert program.task_grouped and audit not in program.keying.processors  # it looks each store up
    rows = [("a", "U7", "1", 1), ("b", _user_id(7), "2", 2), ("a", "U7", "x", 3), ("a", "u7", "4", 4),
            ("a", "U7", "5", 5), ("a", "U7", None, 6), ("b", _user_id(7), "7", 7), ("a", "U7", "8", 8)]
    # "U7" and "u7": two counts, one folded value; the processor's writes are what the next records
    # aggregate onto, and its deletes through "U7" empty the folded value "u7" reads too
    expected = [(b"U7", b"1@1|1@1"), (b"u7", b"1@2|12@2"), (b"U7", b"2@3|12x@3"), (b"u7", b"2@4|reset4@4"),
                (b"U7", b"101@5|reset45@5"), (b"U7", b"101@5|reset45@5|u7/"), (b"u7", b"3@7|7@7"),
                (b"U7", b"1@8|78@8")]
    assert _run(program, rows) == expected
    assert _run(program, rows, batches=len(rows)) == expected  # the state pickled between records


class _WindowAudit(Processor):
    """Reads the count ("exact", String keys) and the record's 10 s window of a windowed count keyed
    by the user's number ("windowed"); "x" puts 50 into that window; a null value lists the keys of both."""

    def init(self, context):
        self.context = context
        self.exact, self.windowed = context.get_state_store("exact"), context.get_state_store("windowed")

    def process(self, record):
        start = record.timestamp // 10_000 * 10_000
        seen = f"{_stored_text(self.exact.get(record.key))}|{_stored_text(self.windowed.fetch(record.key, start))}"
        if record.value is None:
            seen += "|" + ",".join(e.key for e in self.exact.all()) + "/" + \
                ",".join(f"{e.key.key}@{e.key.window.start}" for e in self.windowed.all())
        elif record.value == "x":
            self.windowed.put(record.key, ValueAndTimestamp.make(50, record.timestamp), start)
        self.context.forward(record.with_value(seen))


def test_a_processor_reads_and_writes_a_window_store_by_the_key_as_that_stores_serde_writes_it():
    def build(builder):
        merged = builder.stream("a").merge(builder.stream("b", USER_ID))
        by_user = merged.group_by_key()
        by_user.count(Materialized.as_("exact").with_caching_disabled())
        by_user.windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=10))) \
            .count(Materialized.as_("windowed").with_key_serde(_UserIdSerde()).with_caching_disabled())
        merged.process(_WindowAudit, "exact", "windowed").to("out")
    program = _program(build)
    rows = [("a", "U7", "1", 1_000), ("b", _user_id(7), "x", 2_000), ("a", "U7", "3", 3_000), ("a", "U7", None, 4_000)]
    # "U7" and the Long 7 share the windowed count's window, which goes on from the processor's 50 (a
    # null value counts in a time-windowed count, as in Kafka Streams' KStreamWindowAggregate)
    expected = [(b"U7", b"1@1000|1@1000"), (b"u7", b"1@2000|2@2000"), (b"U7", b"2@3000|51@3000"),
                (b"U7", b"2@3000|52@4000|U7,u7/u7@0")]
    assert _run(program, rows) == expected
    assert _run(program, rows, batches=len(rows)) == expected


_SERDES = st.sampled_from([Serdes.String(), Serdes.Long(), _UserIdSerde(), Serdes.ByteArray()])
_STORES = st.lists(st.builds(lambda index, kind, serde: StoreSpec(f"s{index}", kind, key_serde=serde),
                             st.integers(0, 5), st.sampled_from(list(StoreType)), st.one_of(st.none(), _SERDES)),
                   max_size=6, unique_by=lambda store: store.name)


@settings(max_examples=200, deadline=None)
@given(st.lists(_SERDES, min_size=1, max_size=4), _STORES, _SERDES)
def test_the_state_is_keyed_by_the_one_serde_every_keyed_store_writes_keys_with_else_by_each_stores(
        sources, stores, default):
    written = {store.name: store.key_serde or default for store in stores if store.type in KEYED_STORE_TYPES}
    processors = [(f"p-{store.name}", (store.name,)) for store in stores]
    keying = state_keying(0, sources, stores, processors, default)
    if len(set(sources)) < 2 or not written:
        assert keying.serde is None and not keying.by_store  # the source key's bytes group the state
    elif len(set(written.values())) == 1:
        assert {keying.serde} == set(written.values()) and not keying.by_store
    else:  # each store by its own serde, found by each processor of it
        assert keying.serde is None and dict(keying.stores) == written
        assert dict(keying.processors) == {f"p-{name}": serde for name, serde in written.items()}
    # Stores that are not keyed by the record's key (suppression buffers, the Processor API's) and
    # the order of the stores never change it.
    others = [StoreSpec("other", kind, key_serde=_UserIdSerde()) for kind in StoreType if kind not in KEYED_STORE_TYPES]
    assert state_keying(0, sources, [*others, *reversed(stores)], processors, default) == keying


# -- merged programs ---------------------------------------------------------------------------------
def _user_counts(outputs):
    return [(key, None if value is None else struct.unpack(">q", value)[0]) for key, value in outputs]


def test_a_merged_count_of_keys_read_differently_counts_each_user_once():
    program = _program(_merged_count())
    rows = [("a", "u7", "1", 1), ("b", _user_id(7), "2", 2), ("b", _user_id(8), "3", 3), ("a", "u7", None, 4),
            ("b", None, "5", 5), ("a", "u8", "6", 6), ("b", _user_id(7), "7", 7)]
    # null values and null keys are skipped by count, as by Kafka Streams' KStreamAggregate
    expected = [(b"u7", 1), (b"u7", 2), (b"u8", 1), (b"u8", 2), (b"u7", 3)]
    assert _user_counts(_run(program, rows)) == expected
    assert _user_counts(_run(program, rows, batches=len(rows))) == expected


def test_a_merged_windowed_aggregate_of_keys_read_differently_shares_each_users_windows():
    def build(builder):
        builder.stream("a").merge(builder.stream("b", USER_ID)).group_by_key() \
            .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=2))) \
            .aggregate(lambda: "", lambda key, value, agg: agg + str(value),
                       Materialized.as_("w").with_caching_disabled()) \
            .to_stream().to("out", WINDOWED)
    program = _program(build)
    assert program.state_key_serde == Serdes.String()
    rows = [("a", "u7", "1", 1_000), ("b", _user_id(7), None, 2_000), ("b", _user_id(7), "3", 11_000),
            ("a", "u7", "4", 12_000)]
    expected = [(_window("u7", 0), b"1"), (_window("u7", 0), b"1None"), (_window("u7", 10_000), b"3"),
                (_window("u7", 10_000), b"34")]
    assert _run(program, rows) == expected
    assert _run(program, rows, batches=2) == expected
