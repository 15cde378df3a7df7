"""A foreign-key join's result kept in a versioned store, pure logic: Kafka Streams' ``KTableSource``
puts each joined value at its answer's time into the ``VersionedKeyValueStore`` and forwards it
unless the put is refused (``PUT_RETURN_CODE_NOT_PUT``: older than the store's observed time minus
its history retention), marked not latest when older than the key's latest version. So the versioned
join forwards exactly those of the plain join's updates (same input, same batches) that the store
takes, and a table-table join of it skips those marked not latest. The broker-backed comparison is
tests/test_equivalence_fk_chained_joins.py (``out-versioned``, ``out-versions``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from equivalence_io import StampValues, java_string
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import Materialized, Processor, Record, Stores, StreamsBuilder
from fk_join_tasks import Tasks
from test_versioned_tables_logic import ModelStore

RETENTION_MS = 300
JOIN_TYPES = ("join", "left_join")


def _joined_table(join_type: str, versioned: bool):
    builder = StreamsBuilder()
    accounts = builder.table("accounts", Materialized.as_("accounts-store").with_caching_disabled())
    users = builder.table("users", Materialized.as_("users-store").with_caching_disabled())
    store = Materialized.as_(Stores.persistent_versioned_key_value_store(
        "joined", timedelta(milliseconds=RETENTION_MS))) if versioned else Materialized.as_(
        "joined").with_caching_disabled()
    joined = getattr(accounts, join_type)(users, lambda value: value.split(":")[0] or None,
                                          lambda account, country: f"{account}@{java_string(country)}", store)
    return builder, joined


def _tasks(join_type: str, versioned: bool) -> Tasks:
    builder, joined = _joined_table(join_type, versioned)
    joined.to_stream().process_values(StampValues).to("changes")
    return Tasks(builder)


def _stamped(change: str) -> tuple:
    value, timestamp = change.rsplit("|t", 1)
    return (None if value == "null" else value), int(timestamp)


_account = st.tuples(st.just("accounts"), st.sampled_from(["a1", "a2", "a3"]),
                     st.sampled_from([None, "u1:1", "u2:2", ":3"]), st.integers(0, 1_500))
_user = st.tuples(st.just("users"), st.sampled_from(["u1", "u2"]), st.sampled_from([None, "fr", "de"]),
                  st.integers(0, 1_500))
_batches = st.lists(st.lists(st.one_of(_account, _user), max_size=6), max_size=8)


@settings(max_examples=60, deadline=None)
@given(_batches, st.sampled_from(JOIN_TYPES))
def test_the_versioned_result_forwards_the_plain_joins_updates_its_store_takes(batches, join_type):
    plain, versioned = _tasks(join_type, False), _tasks(join_type, True)
    for batch in batches:  # settled after each batch: answers come back between the batches
        for topic, key, value, timestamp in batch:
            plain.put(topic, key, value, timestamp)
            versioned.put(topic, key, value, timestamp)
        plain.settle()
        versioned.settle()
    store, expected = ModelStore(RETENTION_MS), []
    for key, change in plain.out["changes"]:
        value, timestamp = _stamped(change)
        if store.put(key, value, timestamp) != "expired":
            expected.append((key, change))
    assert versioned.out["changes"] == expected


def test_results_land_at_their_answers_times_dropped_when_expired_and_kept_as_history_when_late():
    tasks = _tasks("left_join", True)
    tasks.put("users", "u1", "fr", 500)
    tasks.put("accounts", "a1", "u1:5", 100)  # answered at the user's later time, 500
    tasks.put("accounts", "a2", "u2:6", 700)  # no user: a left join's null answer at its own time
    tasks.settle()  # the store's observed time is 700: a put before 400 is refused
    tasks.put("users", "u1", "de", 450)  # answers a1 at 450 < 500: history, forwarded not latest
    tasks.put("users", "u2", "es", 350)  # answers a2 at 350: expired, nothing forwarded
    tasks.settle()
    tasks.put("users", "u1", None, 1_000)  # a tombstone's answer: a1's latest becomes u1:5@null
    tasks.settle()
    assert tasks.out["changes"] == [("a1", "u1:5@fr|t500"), ("a2", "u2:6@null|t700"), ("a1", "u1:5@de|t450"),
                                    ("a1", "u1:5@null|t1000")]


class _ReadsVersions(Processor):
    """Forwards the record's value, then the store's latest version and the one as of 1 ms before it."""

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store("joined")

    def process(self, record: Record) -> None:
        reads = [self.store.get(record.key), self.store.get(record.key, record.timestamp - 1)]
        self.context.forward(record.with_value(f"{java_string(record.value)}|t{record.timestamp}|" + "|".join(
            "null" if read is None else f"{read.value()}@{read.timestamp()}" for read in reads)))


def test_a_processor_reads_the_versioned_result_as_of_times():
    builder, joined = _joined_table("join", True)
    joined.to_stream().process(_ReadsVersions, "joined").to("read")
    tasks = Tasks(builder)
    tasks.put("users", "u1", "fr", 500)
    tasks.put("accounts", "a1", "u1:5", 100)
    tasks.settle()
    tasks.put("users", "u1", "de", 300)  # out of order: a1's latest stays the one at 500
    tasks.settle()
    assert tasks.out["read"] == [("a1", "u1:5@fr|t500|u1:5@fr@500|null"),
                                 ("a1", "u1:5@de|t300|u1:5@fr@500|null")]
    tasks.put("users", "u1", "es", 700)
    tasks.settle()
    assert tasks.out["read"][-1] == ("a1", "u1:5@es|t700|u1:5@es@700|u1:5@fr@500")


@pytest.mark.parametrize("versioned", [True, False])
def test_a_table_join_of_the_versioned_result_skips_its_updates_marked_not_latest(versioned):
    """Kafka Streams' KTableKTableJoin reading a versioned table (useVersionedSemantics) skips an
    update forwarded out of order; over a plain store, the same update is the latest and joined."""
    builder, joined = _joined_table("join", versioned)
    joined.to_stream().process_values(StampValues).to("changes")
    limits = builder.table("limits", Materialized.as_("limits-store").with_caching_disabled())
    joined.join(limits, lambda row, limit: f"{row}&{limit}").to_stream().process_values(StampValues).to("limited")
    tasks = Tasks(builder)
    tasks.put("limits", "a1", "L", 0)
    tasks.put("users", "u1", "fr", 500)
    tasks.put("accounts", "a1", "u1:5", 100)
    tasks.settle()
    tasks.put("users", "u1", "de", 450)  # the result at 450 < 500: out of order in a versioned store
    tasks.settle()
    tasks.put("users", "u1", "es", 700)
    tasks.settle()
    assert [change for _, change in tasks.out["changes"]] == ["u1:5@fr|t500", "u1:5@de|t450", "u1:5@es|t700"]
    skipped = ["u1:5@de&L|t450"] if not versioned else []
    assert [row for _, row in tasks.out["limited"]] == ["u1:5@fr&L|t500", *skipped, "u1:5@es&L|t700"]


def test_a_re_grouping_of_the_versioned_result_and_a_versioned_step_after_the_result_are_admitted():
    builder, joined = _joined_table("join", True)
    joined.group_by(lambda key, value: (value, key)).count()  # skips the updates marked not latest
    compile_topology(builder, "app").program(0)
    builder, joined = _joined_table("join", False)  # put at each answer's time (tests/test_equivalence_versioned_consumers.py)
    joined.filter(lambda key, value: True, Materialized.as_(Stores.persistent_versioned_key_value_store(
        "kept", timedelta(seconds=1))))
    compile_topology(builder, "app").program(0)
