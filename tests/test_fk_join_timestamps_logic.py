"""Foreign-key joins' timestamps without Spark: an answer carries the larger of the subscription's
and the right row's timestamps (the row's kept beside its subscribers, or read from the record cache
before its flush), an answer to a right update that update's; a subscription slot of the previous
layout still loads. The broker-backed comparison is tests/test_equivalence_fk_join.py (orders)."""

from __future__ import annotations

import pickle

from dagster_kstreams.topology import Materialized, StreamsBuilder

from fk_join_tasks import Tasks, example_tasks, subscribers


def test_answers_carry_the_later_of_the_subscriptions_and_the_right_rows_timestamps():
    """Kafka Streams' SubscriptionJoinProcessorSupplier stamps an answer with the larger of the
    subscription's timestamp and the right row's (a deletion's null answer too, while the row is
    there); ForeignTableJoinProcessorSupplier an answer to a right update with that update's."""
    tasks = example_tasks()
    tasks.put("users", "u1", "fr", 500)
    tasks.put("accounts", "a1", "u1:5", 100)  # older than the right row: the answer is the row's time
    tasks.put("accounts", "a2", "u1:6", 900)  # newer: its own
    tasks.put("accounts", "a3", "u2:1", 300)  # no right row: nothing (inner), then the update's time
    tasks.settle()
    assert tasks.answer_times == {"a1": [500], "a2": [900]}
    tasks.put("users", "u2", "de", 200)
    tasks.put("users", "u1", "es", 50)  # a right update answers with its own time, even an older one
    tasks.settle()
    assert tasks.answer_times == {"a1": [500, 50], "a2": [900, 50], "a3": [200]}
    tasks.put("accounts", "a3", None, 150)  # unsubscribed with a null answer, at the row's time 200
    tasks.put("accounts", "a1", "u1:7", 40)  # re-subscribed: the right row's time is now 50
    tasks.settle()
    assert tasks.answer_times["a3"] == [200, 200] and tasks.answer_times["a1"] == [500, 50, 50]
    tasks.put("users", "u1", None, 60)
    tasks.settle()
    tasks.put("accounts", "a2", None, 30)  # the right row is gone: the subscription's own time
    tasks.settle()
    assert tasks.answer_times["a2"] == [900, 50, 60, 30]
    assert tasks.out["inner"][-1] == ("a2", None)


def test_a_cached_right_rows_timestamp_is_read_before_its_flush():
    """With its record cache, the right table forwards its update to the foreign table join at the
    flush; a subscription processed before that reads the new row through the cache (Kafka Streams'
    value getter too), and its timestamp with it."""
    builder = StreamsBuilder()
    accounts = builder.table("accounts", Materialized.as_("accounts-store").with_caching_disabled())
    users = builder.table("users", Materialized.as_("users-store"))  # cached
    accounts.join(users, lambda value: value.split(":")[0] or None, lambda a, c: a + "@" + c) \
        .to_stream().to("inner")
    tasks = Tasks(builder)
    tasks.put("accounts", "a1", "u1:5", 100)
    tasks.deliver("accounts")
    (registration,) = [topic for topic, records in tasks.waiting.items() if records]
    tasks.put("users", "u1", "fr", 500)
    tasks.deliver("users", registration)  # one batch: the user's row, then the subscription
    tasks.settle()
    assert tasks.answer_times == {"a1": [500, 500]}  # the subscription's answer, then the flushed update's
    assert tasks.out["inner"] == [("a1", "u1:5@fr")] * 2


def test_a_subscription_slot_of_the_previous_version_still_loads():
    """Before the right row's timestamp was kept beside them, the slot held the subscribers alone:
    such a slot still loads, its answers keep the subscription's time until the right row changes."""
    tasks = example_tasks()
    tasks.put("users", "u1", "fr", 500)
    tasks.put("accounts", "a1", "u1:5", 100)
    tasks.settle()
    program, row = tasks.programs[1], list(tasks.state[1][b"u1"])
    for store, slot in program.store_slots.items():
        if "subscription" in store.lower() and row[slot] is not None:
            row[slot] = pickle.dumps(pickle.loads(row[slot])[1])  # the old layout
    tasks.state[1][b"u1"] = tuple(row)
    tasks.put("accounts", "a2", "u1:6", 100)
    tasks.settle()
    assert tasks.answer_times["a2"] == [100]  # the right row's time is not known
    tasks.put("users", "u1", "de", 700)
    tasks.put("accounts", "a3", "u1:7", 100)
    tasks.settle()
    assert tasks.answer_times["a3"] == [700]
    assert subscribers(tasks, "u1") == [b"a1", b"a2", b"a3"] * 2  # inner, left
