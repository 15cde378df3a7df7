"""Versioned stores on a table-table join's, a re-grouped table's and a cogroup's ``Materialized``,
pure logic: the compiled program against a model of Kafka Streams 4.3.1's processors over its
versioned store (``KTableKTable*Join`` stamping with the larger of both rows' times, then
``KTableKTableJoinMerger``'s put; ``KTableAggregate``; ``KStreamAggregate``), whatever the
micro-batches. The same rules are compared with Kafka Streams itself in
tests/test_equivalence_table_join_timestamps.py (joins, cogroup) and
tests/test_equivalence_versioned_consumers.py (re-grouping)."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from equivalence_io import StampValues, java_string
from dagster_kstreams.processors.changes import Change, ChangedSerde
from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import Materialized, Stores, StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes
from test_versioned_tables_logic import ModelStore, _run as run_in_batches

RETENTION_MS = 100
JOIN_TYPES = ("join", "left_join", "outer_join")


def _versioned(name: str) -> Materialized:
    return Materialized.as_(Stores.persistent_versioned_key_value_store(name, timedelta(milliseconds=RETENTION_MS)))


def _compile(builder):
    return compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _run(program, records, cuts) -> list[tuple]:
    """``records``: ``(topic, key, value, timestamp)``; the program's sink records ``(topic, key, value)``
    (test_versioned_tables_logic's run, in micro-batches cut at ``cuts``)."""
    return [record[:3] for record in run_in_batches(records, [cut for cut in cuts if cut < len(records)], program)]


# -- a table-table join into a versioned store ---------------------------------------------------
def _join_program(join_type: str):
    builder = StreamsBuilder()
    a = builder.table("a", Materialized.as_("a-store").with_caching_disabled())
    b = builder.table("b", Materialized.as_("b-store").with_caching_disabled())
    joined = getattr(a, join_type)(b, lambda x, y: f"{java_string(x)}&{java_string(y)}", _versioned("joined"))
    joined.to_stream().process_values(StampValues).to("changes")
    builder.stream("s").join(joined, lambda value, row: f"{value}@{row}").process_values(StampValues).to("read")
    return _compile(builder)


def _joined(left, right) -> str:
    return f"{java_string(left)}&{java_string(right)}"


def _expected_join(join_type: str, records, joined=_joined) -> list[tuple]:
    """Kafka Streams: each table keeps ``(value, timestamp)`` per key; an update of either joins the
    other's row by the join's rule, stamped with the larger of its own and the other row's time; the
    merger puts that into the versioned store (expired: nothing forwarded); ``to_stream`` emits every
    put; a stream record reads the joined table as of its own timestamp. ``joined(a, b)``: the value
    put for rows ``a`` and ``b`` (the joiner, or the joiner and a step after it)."""
    tables = {"a": {}, "b": {}}
    store, out = ModelStore(RETENTION_MS), []
    for topic, key, value, timestamp in records:
        if key is None:
            continue
        if topic == "s":
            row = store.as_of(key, timestamp)
            if value is not None and row is not None:
                out.append(("read", key, f"{value}@{row}|t{timestamp}"))
            continue
        this, other = tables[topic], tables["b" if topic == "a" else "a"]
        old = this.get(key, (None, None))[0]
        if value is None:
            this.pop(key, None)
        else:
            this[key] = (value, timestamp)
        other_value, other_time = other.get(key, (None, -1))
        left_side = topic == "a"
        if join_type == "join" or (join_type == "left_join" and not left_side):
            forwards = other_value is not None
        else:
            forwards = other_value is not None or value is not None or old is not None
        if not forwards:
            continue
        a_value, b_value = (value, other_value) if left_side else (other_value, value)
        if join_type == "outer_join":
            present = a_value is not None or b_value is not None
        elif join_type == "left_join":
            present = a_value is not None
        else:
            present = a_value is not None and b_value is not None
        value_put = joined(a_value, b_value) if present else None
        stamp = max(timestamp, other_time)
        if store.put(key, value_put, stamp) != "expired":
            out.append(("changes", key, f"{java_string(value_put)}|t{stamp}"))
    return out


_join_records = st.lists(st.tuples(st.sampled_from(["a", "b", "s"]), st.sampled_from(["k", "m", None]),
                                   st.sampled_from(["x", None]), st.integers(0, 400)), max_size=40)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(JOIN_TYPES), _join_records, st.lists(st.integers(0, 40), max_size=3))
def test_a_join_into_a_versioned_store_forwards_what_kafka_streams_forwards_whatever_the_batches(
        join_type, records, cuts):
    records = [(topic, key, None if value is None else f"{topic}{i}", timestamp)
               for i, (topic, key, value, timestamp) in enumerate(records)]
    assert _run(_join_program(join_type), records, cuts) == _expected_join(join_type, records)


def test_a_join_update_older_than_the_key_s_latest_is_history_and_one_older_than_the_history_is_dropped():
    records = [("a", "k", "a1", 300), ("b", "k", "b1", 100),  # joined at 300
               ("b", "k", "b2", 150),  # joined at 300 again: replaces that version, the latest
               ("a", "k", "a2", 250),  # joined at max(250, 150): out of order, history only
               ("s", "k", "o1", 260), ("s", "k", "o2", 310),
               ("a", "k", "a3", 210),  # joined at 210: within 100 of 300, history only
               ("b", "k", "b3", 130),  # joined at max(130, 210): replaces the version at 210
               ("a", "k", "a4", 90),  # joined at max(90, 130) < 300 - 100: dropped
               ("s", "k", "o3", 220), ("s", "k", "o4", 205)]
    assert _run(_join_program("join"), records, []) == [
        ("changes", "k", "a1&b1|t300"), ("changes", "k", "a1&b2|t300"), ("changes", "k", "a2&b2|t250"),
        ("read", "k", "o1@a2&b2|t260"), ("read", "k", "o2@a1&b2|t310"),
        ("changes", "k", "a3&b2|t210"), ("changes", "k", "a3&b3|t210"),
        ("read", "k", "o3@a3&b3|t220"),  # o4 at 205: before every version kept
    ]


# -- a re-grouped table and a cogroup into versioned stores ---------------------------------------
def _regroup_program():
    builder = StreamsBuilder()
    table = builder.table("t", Materialized.as_("t-store").with_caching_disabled())
    sums = table.group_by(lambda key, value: (value[0], value)).aggregate(
        lambda: "", lambda key, value, agg: f"{agg}+{value}", lambda key, value, agg: f"{agg}-{value}",
        _versioned("sums"))
    sums.to_stream().process_values(StampValues).to("sums")
    return compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String())


def test_a_regrouped_aggregate_into_a_versioned_store_stamps_and_drops_as_kafka_streams():
    """``KTableAggregate``: the larger of the record's and the aggregate's time; a put older than the
    store's observed time minus the history is dropped, and the aggregate misses that change."""
    program = _regroup_program().program(1)
    changes = [("x", "x1", None, 200), ("x", "x2", None, 50), ("y", "y1", None, 400), ("z", "z1", None, 120),
               ("x", None, "x2", 310), ("z", "z2", None, 330)]
    serde = ChangedSerde(Serdes.String())
    contexts = [(RecordContext("app-sums-repartition", 0, offset, timestamp=timestamp, position=offset,
                               raw_key=group.encode()), group.encode(), serde.serialize(Change(new, old)))
                for offset, (group, new, old, timestamp) in enumerate(changes)]
    out, _ = program.run_task_batch(contexts, None)
    assert [(key.decode(), value.decode()) for key, value in zip(out.key, out.value)] == [
        ("x", "+x1|t200"), ("x", "+x1+x2|t200"),  # stamped with the aggregate's later time
        ("y", "+y1|t400"),
        # z1 at 120 < 400 - 100: dropped
        ("x", "+x1+x2-x2|t310"),
        ("z", "+z2|t330"),  # z1 never counted
    ]


def test_a_cogroup_into_a_versioned_store_stamps_each_update_with_the_aggregate_s_latest_time():
    builder = StreamsBuilder()
    clicks = builder.stream("c").group_by_key()
    views = builder.stream("v").group_by_key()
    clicks.cogroup(lambda key, value, agg: agg + value).cogroup(views, lambda key, value, agg: agg + value.upper()) \
        .aggregate(lambda: "", _versioned("both")).to_stream().process_values(StampValues).to("both")
    records = [("c", "k", "a", 300), ("v", "k", "b", 100), ("c", "m", "c", 150), ("v", "n", "d", 220)]
    assert _run(_compile(builder), records, []) == [
        ("both", "k", "a|t300"), ("both", "k", "aB|t300"),
        # m at 150 < 300 - 100: dropped; n at 220: a first version, within the history
        ("both", "n", "D|t220"),
    ]


# -- the DSL ---------------------------------------------------------------------------------
def test_a_versioned_store_is_taken_by_joins_regroupings_and_cogroups_never_cached():
    builder = StreamsBuilder()
    a, b = builder.table("a"), builder.table("b")
    a.join(b, lambda x, y: x, _versioned("j").with_caching_enabled())
    a.group_by(lambda k, v: (v, v)).count(_versioned("g"))
    builder.stream("s").group_by_key().cogroup(lambda k, v, agg: agg).aggregate(lambda: "", _versioned("c"))
    stores = builder.build().state_stores
    assert [(stores[name].caching, stores[name].history_retention_ms) for name in ("j", "g", "c")] == \
        [(False, RETENTION_MS)] * 3


def test_a_foreign_key_join_into_a_versioned_store_runs_its_left_sub_topology_task_grouped():
    """Its result is put into the versioned store at each answer's time (the store's observed time is
    the task's: tests/test_fk_join_versioned_result_logic.py runs it)."""
    builder = StreamsBuilder()
    builder.table("a").join(builder.table("b"), lambda value: value, lambda x, y: x, _versioned("fk")) \
        .to_stream().to("o")
    topology = builder.build()
    assert topology.state_stores["fk"].history_retention_ms == RETENTION_MS  # as Kafka Streams defines it
    program = compile_topology(topology, "app").program(0)
    (result,) = [node for node in program.nodes if node.name.startswith("KTABLE-FK-JOIN-OUTPUT-")]
    assert program.task_grouped and result.table.store == "fk" and result.table.retention_ms == RETENTION_MS


def test_a_versioned_join_s_updates_reach_what_takes_the_not_latest_mark():
    builder = StreamsBuilder()
    joined = builder.table("a").join(builder.table("b"), lambda x, y: x, _versioned("j"))
    joined.to_stream().process_values(StampValues).to("o")
    joined.join(builder.table("c"), lambda x, y: x).to_stream().to("p")  # skips out-of-order updates
    joined.group_by(lambda k, v: (v, k)).count()  # so does a re-grouping
    _compile(builder)
