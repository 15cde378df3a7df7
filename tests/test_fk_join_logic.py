"""Foreign-key table-table joins without Spark: Kafka Streams' hash and wire formats, the
instruction sequences of each case (foreign key changes, tombstones on both sides, null foreign
keys, stale answers), and a property: when every update is answered before the next, the joined
tables are the relational join of the two tables (with answers in flight they need not be, in
Kafka Streams either: see the delete-and-write-again case). The broker-backed
comparison with Kafka Streams itself is tests/test_equivalence_fk_join.py."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.fk_join_wire import (
    Instruction, Response, Subscription, decode_response, decode_subscription, encode_response,
    encode_subscription, murmur3_hash128,
)
from dagster_kstreams.topology import Materialized, StreamsBuilder
from dagster_kstreams.topology.application import ApplicationTopology

from fk_join_tasks import TOPICS, Tasks, example_tasks, subscribers
from fk_join_topology import (INPUTS, ORDER_INPUTS, ORDER_OUTPUTS, PLACED_OUTPUT, fk_join_examples,
                              fk_join_partitioned_examples)


# -- hash and wire format ---------------------------------------------------------------------
def test_hash_is_kafka_streams_murmur3_hash128():
    # Printed by org.apache.kafka.streams.state.internals.Murmur3.hash128 (kafka-streams 4.3.1).
    expected = {
        "": (-7122613646888064702, -8341524471658347240),
        "a": (3702349557448790408, -1601067453332442517),
        "alice:42": (-3276769427156219922, 1590532875358500915),
        "0123456789abcdef": (1904622552327088487, -2893518741649893711),
        "0123456789abcdefXYZ": (-4957902349534487282, 3628389848199853365),
        "u12:99-the-longer-value-of-31b": (8150046840086018416, 4197433376420116141),
        "été": (-467379907359023275, 3817403006651263490),
    }
    for text, hashed in expected.items():
        assert murmur3_hash128(text.encode()) == hashed, text


def test_subscription_and_response_bytes_are_kafka_streams_format():
    sub = Subscription((1, -2), Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, b"pk", 7)
    assert encode_subscription(sub) == (b"\x01\x03" + (1).to_bytes(8, "big") + (-2).to_bytes(8, "big", signed=True)
                                        + b"pk" + b"\x00\x00\x00\x07")
    assert encode_subscription(Subscription(None, Instruction.DELETE_KEY_AND_PROPAGATE, b"k", 0)) == \
        b"\x81\x01k\x00\x00\x00\x00"
    assert encode_response(Response(None, None)) == b"\x80"
    assert encode_response(Response((0, 1), b"fr")) == b"\x00" + bytes(15) + b"\x01fr"


@given(st.one_of(st.none(), st.tuples(st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-(1 << 63), (1 << 63) - 1))),
       st.sampled_from(list(Instruction)), st.binary(max_size=40), st.integers(0, (1 << 31) - 1),
       st.one_of(st.none(), st.binary(min_size=1, max_size=40)))
def test_wire_formats_round_trip(hash_, instruction, key, partition, value):
    sub = Subscription(hash_, instruction, key, partition)
    assert decode_subscription(encode_subscription(sub)) == sub
    assert decode_response(encode_response(Response(hash_, value))) == Response(hash_, value)


def test_inner_and_left_join_follow_the_foreign_key_and_both_tables_updates():
    tasks = example_tasks()
    tasks.put("users", "u1", "fr")
    tasks.put("accounts", "a1", "u1:5")
    tasks.settle()
    assert tasks.out["inner"] == [("a1", "u1:5@fr")]
    assert tasks.out["left"] == [("a1", "u1:5@fr")]
    tasks.put("users", "u1", "de")  # the right row changes: every subscriber is answered again
    tasks.settle()
    assert tasks.out["inner"][-1] == tasks.out["left"][-1] == ("a1", "u1:5@de")
    tasks.put("accounts", "a1", "u2:5")  # to a missing user: inner tombstone, left with null
    tasks.settle()
    assert tasks.out["inner"][-1] == ("a1", None)
    assert tasks.out["left"][-1] == ("a1", "u2:5@null")
    assert subscribers(tasks, "u1") == [] and subscribers(tasks, "u2") == [b"a1", b"a1"]  # inner, left
    tasks.put("users", "u1", "es")  # the old foreign key was unsubscribed: nothing
    tasks.settle()
    assert tasks.out["inner"][-1] == ("a1", None) and tasks.out["left"][-1] == ("a1", "u2:5@null")
    tasks.put("users", "u2", "it")
    tasks.put("users", "u2", None)  # right tombstone
    tasks.settle()
    assert tasks.out["inner"][-2:] == [("a1", "u2:5@it"), ("a1", None)]
    assert tasks.out["left"][-2:] == [("a1", "u2:5@it"), ("a1", "u2:5@null")]
    tasks.put("accounts", "a1", None)  # left tombstone
    tasks.settle()
    assert tasks.out["inner"][-1] == tasks.out["left"][-1] == ("a1", None)


def test_null_foreign_key_inner_join_unsubscribes_left_join_joins_with_null():
    tasks = example_tasks()
    tasks.put("users", "u1", "fr")
    tasks.put("accounts", "a1", ":5")  # null foreign key: inner skips it, left joins it with null
    tasks.settle()
    assert "inner" not in tasks.out
    assert tasks.out["left"] == [("a1", ":5@null")]
    tasks.put("accounts", "a1", "u1:5")
    tasks.put("accounts", "a1", ":6")  # was subscribed: the inner join unsubscribes with a tombstone
    tasks.settle()
    assert tasks.out["inner"] == [("a1", None)]  # u1:5's answer is stale by then
    assert tasks.out["left"][-1] == ("a1", ":6@null")


def test_stale_answers_are_dropped_by_the_hash_of_the_current_left_value():
    tasks = example_tasks()
    tasks.put("users", "u1", "fr")
    tasks.put("accounts", "a1", "u1:5")
    tasks.put("accounts", "a1", "u1:6")
    tasks.settle()
    # Two subscriptions, two answers; the first was asked for u1:5 and is dropped.
    assert tasks.out["inner"] == [("a1", "u1:6@fr")]
    assert tasks.out["left"] == [("a1", "u1:6@fr")]


def test_a_left_row_the_filter_drops_leaves_the_left_join():
    tasks = example_tasks()
    tasks.put("users", "u1", "fr")
    tasks.put("accounts", "a1", "u1:5")
    tasks.settle()
    tasks.put("accounts", "a1", "frozen:5")  # filtered out: a tombstone for the left join only
    tasks.settle()
    assert tasks.out["left"] == [("a1", "u1:5@fr"), ("a1", None)]
    assert tasks.out["inner"] == [("a1", "u1:5@fr"), ("a1", None)]  # "frozen" is a missing user


def test_a_right_update_a_filter_turns_from_null_into_null_answers_nobody():
    """Kafka Streams' KTableFilter drops it (old values are sent for the join), so neither join
    re-emits; a right table read from its topic answers even a tombstone of a missing row."""
    builder = StreamsBuilder()
    accounts = builder.table("accounts", Materialized.as_("accounts-store").with_caching_disabled())
    users = builder.table("users", Materialized.as_("users-store").with_caching_disabled())
    def user(value):
        return value.split(":")[0] or None

    accounts.join(users.filter(lambda key, country: country != "xx"), user, lambda a, c: a + "@" + c) \
        .to_stream().to("inner")
    accounts.left_join(users, user, lambda a, c: f"{a}@{c}").to_stream().to("left")
    tasks = Tasks(builder)
    tasks.put("accounts", "a1", "u1:5")
    tasks.put("users", "u1", "xx")
    tasks.settle()
    assert tasks.out["inner"] == [] and tasks.out["left"] == [("a1", "u1:5@xx")]
    tasks.put("users", "u1", None)  # filtered null -> null: dropped before the inner join
    tasks.put("users", "u1", None)  # a missing row's tombstone: answered by the left join
    tasks.settle()
    assert tasks.out["inner"] == []
    assert tasks.out["left"] == [("a1", "u1:5@xx"), ("a1", "u1:5@None"), ("a1", "u1:5@None")]


def test_a_joined_table_read_downstream_keeps_its_store():
    """The joined table is a KTableSource: a table-table join after it reads its store, which
    Kafka Streams then materializes (the catalog's foreign_key_join_result_read_downstream)."""
    builder = StreamsBuilder()
    orders = builder.table("orders")
    products = builder.stream("products").to_table()
    priced = orders.join(products, lambda order: order.split(",")[0], lambda order, product: order + "|" + product)
    priced.map_values(str.upper).join(builder.table("discounts"), lambda line, discount: line + "-" + discount) \
        .to_stream().to("priced-orders")
    tasks = Tasks(builder)
    tasks.put("discounts", "o1", "10%")
    tasks.put("orders", "o1", "p1,2")
    tasks.put("products", "p1", "widget")
    tasks.settle()
    tasks.put("products", "p1", "gadget")
    tasks.settle()
    # (What the table-table join emits for the discount alone, before, is not this join's.)
    assert tasks.out["priced-orders"][-2:] == [("o1", "P1,2|WIDGET-10%"), ("o1", "P1,2|GADGET-10%")]


_UPDATES = st.lists(st.tuples(
    st.sampled_from(["accounts", "users"]),
    st.sampled_from(["1", "2", "3"]),
    st.sampled_from([None, "u1:1", "u1:2", "u2:1", ":1", "frozen:1", "fr", "de"]),
), max_size=40)


@settings(max_examples=150, deadline=None)
@given(_UPDATES)
def test_answered_before_the_next_update_the_joined_tables_are_the_join_of_both_tables(steps):
    tasks = example_tasks()
    accounts, users = {}, {}
    for topic, number, value in steps:
        key = ("a" if topic == "accounts" else "u") + number
        if value is not None and (":" in value) != (topic == "accounts"):
            value = None
        tasks.put(topic, key, value)
        tasks.settle()
        table = accounts if topic == "accounts" else users
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value

        def user(row):
            return row.split(":")[0] or None

        inner = {a: f"{v}@{users[user(v)]}" for a, v in accounts.items() if user(v) in users}
        left = {a: f"{v}@{users.get(user(v)) or 'null'}" for a, v in accounts.items() if not v.startswith("frozen")}
        assert tasks.table("inner") == inner
        assert tasks.table("left") == left


def test_a_row_deleted_and_written_again_before_its_answers_keeps_its_old_join_as_kafka_streams_does():
    """Kafka Streams 4.3.1's protocol, kept as is: the unsubscribe's null answer carries the hash
    of the deleted (null) value, which is stale once the row is back; the new foreign key is
    missing, so nothing answers it. The inner join keeps the old result until the row or the new
    foreign row changes again."""
    tasks = example_tasks()
    tasks.put("users", "u1", "fr")
    tasks.put("accounts", "a2", "u1:1")
    tasks.settle()
    tasks.put("accounts", "a2", None)
    tasks.put("accounts", "a2", "u2:1")
    tasks.settle()
    assert tasks.table("inner") == {"a2": "u1:1@fr"}
    assert tasks.table("left") == {"a2": "u2:1@null"}  # the left join re-subscribes with a null answer
    tasks.put("users", "u2", "de")
    tasks.settle()
    assert tasks.table("inner") == {"a2": "u2:1@de"}


def test_the_answers_are_the_one_topic_written_back_to_an_earlier_sub_topology():
    application = ApplicationTopology(fk_join_examples(TOPICS).build(), "app", {"accounts": 2, "users": 3})
    assert application.execution_order() == [0, 1]
    assert application.written_back(0) == ["app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000012-topic",
                                           "app-acct-user-subscription-response-topic"]
    assert application.written_back(1) == []
    # Partitioned as Kafka Streams does: subscriptions as the users, answers as the accounts.
    counts = application.partition_counts
    assert counts["app-acct-user-subscription-registration-topic"] == 3
    assert counts["app-acct-user-subscription-response-topic"] == 2


def test_joined_tables_on_either_side_are_read_through_their_join():
    """Issue 14: a foreign-key join of table-table joins' results (no store) reads them through the
    join's value getter, as Kafka Streams does: the joined table's old value unsubscribes its foreign
    key, answers are checked against the hash of the joined value now, and a filter on the right
    joined table drops an update null before and after (no answer)."""
    builder = StreamsBuilder()
    a, b, u, v = (builder.table(name, Materialized.as_(f"{name}-store").with_caching_disabled())
                  for name in ("a", "b", "u", "v"))

    def user(value):
        return value.split(":")[0] or None

    kept = u.outer_join(v, lambda x, y: f"{x}~{y}").filter(lambda key, value: not value.startswith("None"))
    a.join(b, lambda x, y: x + "+" + y).join(kept, user, lambda left, right: left + "@" + right) \
        .to_stream().to("inner")
    tasks = Tasks(builder)
    tasks.put("u", "u1", "fr")
    tasks.put("a", "k1", "u1:1")
    tasks.put("b", "k1", "b1")
    tasks.settle()
    assert tasks.out["inner"] == [("k1", "u1:1+b1@fr~None")]
    tasks.put("v", "u1", "x")  # the right joined table changes: answered
    tasks.settle()
    tasks.put("b", "k1", "b2")
    tasks.put("b", "k1", "b3")  # the answer to b2's subscription is stale by then
    tasks.settle()
    assert tasks.out["inner"][1:] == [("k1", "u1:1+b1@fr~x"), ("k1", "u1:1+b3@fr~x")]
    tasks.put("a", "k1", "u2:1")  # to a missing user: u1 unsubscribed (the old joined value's key)
    tasks.settle()
    assert tasks.out["inner"][-1] == ("k1", None)
    assert subscribers(tasks, "u1") == [] and subscribers(tasks, "u2") == [b"k1"]
    count = len(tasks.out["inner"])
    tasks.put("u", "u1", None)  # not subscribed any more
    tasks.put("v", "u2", "y")  # "None~y": filtered before and after, dropped before the join
    tasks.put("v", "u2", None)
    tasks.settle()
    assert len(tasks.out["inner"]) == count
    tasks.put("u", "u2", "de")
    tasks.settle()
    assert tasks.out["inner"][count:] == [("k1", "u2:1+b3@de~None")]


def test_a_second_pass_runs_the_left_tables_and_what_reads_the_answers_they_are_sent():
    application = ApplicationTopology(fk_join_examples(TOPICS).build(), "app", {"accounts": 2, "users": 3})
    # The accounts resolve their answers; the users see no new subscription from that.
    assert application.run_again() == [0]
    topics = {**TOPICS, **{name: name for name in (*ORDER_INPUTS, *ORDER_OUTPUTS, PLACED_OUTPUT)}}
    partitioned = ApplicationTopology(fk_join_partitioned_examples(topics).build(), "app",
                                      dict.fromkeys((*INPUTS, *ORDER_INPUTS), 2))
    # The orders' sub-topology (2) comes after the users' (1), which answers its subscriptions in
    # the second pass; the orders resolve those answers in the same pass.
    assert partitioned.execution_order() == [0, 1, 2]
    assert partitioned.run_again() == [0, 1, 2]
