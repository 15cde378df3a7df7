"""A user processor's versioned store (``Stores.versioned_key_value_store_builder``), without Spark:
what ``put``, ``delete`` and ``get`` return as read from Kafka Streams 4.3.1's ``RocksDBVersionedStore``
behind its metered layer, against a store that keeps every version (pruning changes no answer), and
what is still refused. The broker-backed comparison with Kafka Streams is
test_equivalence_processor_api.py (VersionLog)."""

from __future__ import annotations

import pickle
from datetime import timedelta

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.user_processors import user_store_content
from dagster_kstreams.processors.user_versioned_store import VersionedKeyValueStore
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import Materialized, StreamsBuilder, TopologyException, VersionedRecord
from dagster_kstreams.topology.node_specs import StoreType
from dagster_kstreams.topology.processor_api import Processor, Stores
from dagster_kstreams.topology.serdes import Serdes

RETENTION = 100
NOT_PUT = VersionedKeyValueStore.PUT_RETURN_CODE_NOT_PUT


def _store(content=None) -> VersionedKeyValueStore:
    supplier = Stores.persistent_versioned_key_value_store("v", RETENTION)
    return VersionedKeyValueStore.of("v", Serdes.String(), Serdes.String(), supplier, {} if content is None else content)


def _record(value, timestamp):
    return VersionedRecord(value, timestamp)


def test_put_returns_the_valid_to_minus_one_for_the_latest_and_long_min_value_when_expired():
    store = _store()
    assert store.put("k", "a", 10) == -1
    assert store.put("k", "c", 50) == -1
    assert store.put("k", "b", 30) == 50  # out of order: valid until the next version
    assert store.put("k", None, 40) == 50  # a tombstone in the history
    assert store.put("k", "b2", 30) == 40  # same timestamp: replaced
    assert store.put("other", "x", 200) == -1  # observed time 200: puts before 100 are refused
    assert store.put("k", "late", 99) == NOT_PUT == -(2 ** 63)
    assert store.get("k") == _record("c", 50)
    assert [store.get("k", t) for t in (100, 49)] == [_record("c", 50), None]  # 49: past the history
    with pytest.raises(ValueError, match="versioned store v: key cannot be null"):
        store.put(None, "x", 300)


def test_reads_give_no_valid_to_as_kafka_streams_metered_store():
    store = _store()
    store.put("k", "a", 10)
    store.put("k", "b", 20)
    found = store.get("k", 15)
    assert found == _record("a", 10) and found.valid_to() is None
    assert repr(found) == "<a,10,Optional.empty>" and repr(VersionedRecord("a", 10, 20)) == "<a,10,Optional[20]>"


def test_delete_returns_the_record_valid_at_its_time_and_an_expired_one_is_not_made():
    store = _store()
    store.put("k", "a", 10)
    store.put("k", "b", 20)
    assert store.delete("k", 15) == _record("a", 10)  # out of order: a tombstone from 15 to 20
    assert store.get("k", 17) is None and store.get("k") == _record("b", 20)
    assert store.delete("k", 30) == _record("b", 20) and store.get("k") is None
    assert store.delete("k", 30) is None  # nothing valid then
    store.put("z", "z", 500)
    assert store.delete("k", 399) is None  # expired: not made, the observed time stays
    assert store.put("k", "c", 400) == -1 and store.get("k") == _record("c", 400)


def test_the_content_is_plain_data_that_survives_a_pickle():
    content: dict = {}
    _store(content).put("k", "a", 10)
    assert _store(pickle.loads(pickle.dumps(content))).get("k", 10) == _record("a", 10)


class _EveryVersion:
    """The versioned store as its javadoc states it: every version kept; a write older than the
    observed time minus the history retention refused; a read older than that sees only the latest."""

    def __init__(self):
        self.observed, self.versions = -1, {}

    def write(self, key, value, timestamp):
        if timestamp < self.observed - RETENTION:
            return NOT_PUT, None
        before = self.get(key, timestamp)
        self.observed = max(self.observed, timestamp)
        history = self.versions.setdefault(key, {})
        history[timestamp] = value
        later = [t for t in history if t > timestamp]
        return (min(later) if later else -1), before

    def get(self, key, as_of=None):
        history = self.versions.get(key, {})
        if not history:
            return None
        latest = max(history)
        if as_of is None or (as_of < self.observed - RETENTION and latest <= as_of):
            found = latest
        elif as_of < self.observed - RETENTION:
            return None
        else:
            found = max((t for t in history if t <= as_of), default=None)
        return None if found is None or history[found] is None else _record(history[found], found)


_operations = st.lists(st.tuples(st.sampled_from(["put", "delete", "get"]), st.sampled_from(["a", "b"]),
                                 st.integers(0, 500), st.sampled_from(["x", "y", None])), max_size=80)


@settings(max_examples=300, deadline=None)
@given(_operations)
def test_the_pruned_store_answers_as_the_store_that_keeps_every_version(operations):
    store, model = _store(), _EveryVersion()
    for operation, key, timestamp, value in operations:
        if operation == "put":
            assert store.put(key, value, timestamp) == model.write(key, value, timestamp)[0]
        elif operation == "delete":
            code, before = model.write(key, None, timestamp)
            assert store.delete(key, timestamp) == (None if code == NOT_PUT else before)
        else:
            assert store.get(key) == model.get(key)
            assert store.get(key, timestamp) == model.get(key, timestamp)


class _Nothing(Processor):
    def init(self, context):
        self.context = context

    def process(self, record):
        pass


def test_a_processor_gets_a_versioned_store_added_with_add_state_store():
    builder_of = Stores.versioned_key_value_store_builder
    store = builder_of(Stores.persistent_versioned_key_value_store("v", timedelta(seconds=2)),
                       Serdes.String(), Serdes.String())
    spec = store.spec()
    assert spec.type is StoreType.USER_VERSIONED and spec.history_retention_ms == 2_000 and not spec.caching
    with pytest.raises(TopologyException, match="Versioned stores do not support caching"):
        store.with_caching_enabled()
    with pytest.raises(TypeError, match="versioned_key_value_store_builder expects a versioned store supplier"):
        builder_of(Stores.persistent_key_value_store("kv"))
    with pytest.raises(TypeError, match="key_value_store_builder expects a key-value store supplier"):
        Stores.key_value_store_builder(Stores.persistent_versioned_key_value_store("v", 1))
    builder = StreamsBuilder()
    builder.add_state_store(store)
    builder.stream("in").process(_Nothing, "v")
    program = compile_topology(builder.build(), "app").program(0)
    content: dict = {}
    _store(content).put("k", "a", 10)
    _store(content).put("gone", None, 11)
    assert user_store_content(program, pickle.dumps({"values": {"papi.store.v": content}}), "v") == {"k": "a"}


def _versioned(name: str) -> Materialized:
    return Materialized.as_(Stores.persistent_versioned_key_value_store(name, timedelta(minutes=1)))


def test_every_versioned_dsl_store_is_viewed_and_so_is_a_plain_step_s_over_a_versioned_table():
    builder = StreamsBuilder()
    builder.table("t", _versioned("v"))
    builder.stream("s").process(_Nothing, "v")
    compile_topology(builder.build(), "app").program(0)
    builder = StreamsBuilder()  # an aggregation's, a table-table join's, a filter's, a foreign-key join's
    builder.stream("s").group_by_key().count(_versioned("v")).to_stream().process(_Nothing, "v")
    a, b = builder.table("a"), builder.table("b")
    a.join(b, lambda x, y: x, _versioned("j")).to_stream().process(_Nothing, "j")
    a.filter(lambda k, v: True, _versioned("f")).to_stream().process(_Nothing, "f")
    a.join(b, lambda value: value, lambda x, y: x, _versioned("fk")).to_stream().process(_Nothing, "fk")
    compile_topology(builder.build(), "app").program(0)
    builder = StreamsBuilder()  # a re-grouped table's, after the re-grouping's repartition topic
    builder.table("t").group_by(lambda k, v: (v, v)).count(_versioned("v")).to_stream().process(_Nothing, "v")
    compile_topology(builder.build(), "app").program(1)
    builder = StreamsBuilder()  # a plain store's filter over a versioned table (a TimestampedKeyValueStore)
    builder.table("t", _versioned("v")).filter(lambda k, v: True, Materialized.as_("kept")) \
        .to_stream().process(_Nothing, "kept")
    compile_topology(builder.build(), "app").program(0)


class _PutPrice(Processor):
    def init(self, context):
        self.context, self.prices = context, context.get_state_store("prices")

    def process(self, record):
        written = self.prices.put(record.key, record.value, record.timestamp)
        self.context.forward(record.with_value(f"put={written}|{self.prices.get(record.key, record.timestamp)}"))


def _frame(rows):
    return pd.DataFrame({
        "key": [r[0].encode() for r in rows], "value": [r[1].encode() for r in rows],
        "topic": [r[3] for r in rows], "partition": [0] * len(rows), "offset": list(range(len(rows))),
        "timestamp": [None] * len(rows), "event_time": [r[2] for r in rows], "merge_time": [r[2] for r in rows],
        "seq": list(range(len(rows))),
    })


def test_a_processors_latest_put_into_a_versioned_tables_store_is_the_tables_value_for_what_reads_it():
    """A processor puts prices into the versioned table's own store: the latest one is what a
    table-table join reads next, an older one only history; the table's own out-of-order update after
    them is skipped by the join (not latest), as Kafka Streams' KTableSource puts it."""
    builder = StreamsBuilder()
    prices = builder.table("prices", Materialized.as_(Stores.persistent_versioned_key_value_store("prices", 10_000)))
    limits = builder.table("limits", Materialized.as_("limits").with_caching_disabled())
    limits.join(prices, lambda limit, price: f"{limit}<{price}").to_stream().to("joined")
    builder.stream("cmd").process(_PutPrice, "prices").to("puts")
    program = compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    rows = [("k", "p1", 1000, "prices"), ("k", "p2", 3000, "cmd"), ("k", "old", 2000, "cmd"),
            ("k", "L", 4000, "limits"), ("k", "p0", 2500, "prices")]
    stored, outputs = None, []
    for row in rows:  # a batch each: the state goes through a checkpoint in between
        out, stored = program.process_task_batch(_frame([row]), stored)
        if out is not None:
            outputs += [value.decode() for value in out.sort_values("emit_order", kind="stable")["value"]]
    assert outputs == ["put=-1|<p2,3000,Optional.empty>", "put=3000|<old,2000,Optional.empty>", "L<p2"]
