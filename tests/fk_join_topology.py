"""The foreign-key join example (``KTable.join/left_join(other, foreign_key_extractor, joiner)``),
the Python twin of kstreams.oracle.ForeignKeyJoinExamples (Java): keep the two in step.

Accounts (account -> "user:amount"; an empty user is a null foreign key) joined with users
(user -> country): an inner join with generated names and a value-only extractor, and a left
join of the accounts not "frozen", named ``acct-user``, materialized, with a key-value extractor.
Its lambdas are self-contained (Spark's Python workers cannot import modules of tests/).

The partitioned examples add a third sub-topology whose join result goes on through the stream:
orders (order -> "user:amount") joined with the same users, its ``to_stream`` stamped with each
record's timestamp (``out-orders``) and inner-joined with payments keyed by order within 2 s
(``out-paid``, stamped too): a foreign-key join's answers carry Kafka Streams' timestamps, and a
stream-stream join pairs them by those.
"""

from __future__ import annotations

from datetime import timedelta

from equivalence_io import StampValues
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.topology import StreamsBuilder, TableJoined
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.windows import JoinWindows

STORES = ("accounts-store", "users-store", "accounts-with-country")
INPUTS = ("accounts", "users")
OUTPUTS = ("out-inner", "out-left")
# The join's internal topics, as named in the graph (the application prefixes its id).
INTERNAL_TOPICS = ("KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000004-topic",
                   "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000012-topic",
                   "acct-user-subscription-registration-topic", "acct-user-subscription-response-topic")


# The partitioned join's topics (fk_join_partitioned_examples), and its internal ones.
PLACED_OUTPUT = "out-placed"
PLACED_INTERNAL_TOPICS = ("placed-subscription-registration-topic", "placed-subscription-response-topic")
# The orders' join and its stream-stream join (fk_join_partitioned_examples), and their internal topics.
ORDER_INPUTS = ("orders", "payments")
ORDER_OUTPUTS = ("out-orders", "out-paid")
ORDER_INTERNAL_TOPICS = ("paid-subscription-registration-topic", "paid-subscription-response-topic")
PAYMENT_WINDOW = timedelta(seconds=2)


def fk_join_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of ForeignKeyJoinExamples.java on ``topics`` (``INPUTS``/``OUTPUTS`` -> topic)."""
    return _fk_join_examples(topics)[0]


def murmur_when_odd(topic, key, value, num_partitions):
    """ForeignKeyJoinExamples.MURMUR_WHEN_ODD: a key whose last character is an odd digit (Java's
    ``char - '0'``, so "frozen" too) placed as Kafka's
    default partitioner places it (where the tables' topics have it), else left to that default;
    a ``TableJoined`` partitioner is called with a null value."""
    if value is not None:
        raise ValueError(f"a TableJoined partitioner got the value {value!r}")
    return default_partition(key.encode(), num_partitions) if (ord(key[-1]) - ord("0")) % 2 else None


def by_key_number(topic, key, value, num_partitions):
    """ForeignKeyJoinExamples.BY_KEY_NUMBER: "<letter><n>" to partition n modulo the count."""
    return int(key[1:]) % num_partitions


def fk_join_partitioned_examples(topics: dict[str, str]) -> StreamsBuilder:
    """:func:`fk_join_examples` and ForeignKeyJoinExamples.partitionedJoin: an inner join with
    ``TableJoined`` partitioners (named ``placed``) whose output goes out placed by the key; and
    ForeignKeyJoinExamples.paidOrders (module docstring)."""
    builder, accounts, users = _fk_join_examples(topics)
    accounts.join(users, lambda value: value.split(":")[0] or None, lambda account, country: account + "#" + country,
                  TableJoined.with_(murmur_when_odd, murmur_when_odd).with_name("placed")) \
        .to_stream().to(topics[PLACED_OUTPUT], Produced.stream_partitioner(by_key_number))
    orders = builder.table(topics["orders"], Materialized.as_("orders-store").with_caching_disabled())
    joined = orders.join(users, lambda value: value.split(":")[0] or None, lambda order, country: order + "@" + country,
                         TableJoined.as_("paid")).to_stream()
    joined.process_values(StampValues).to(topics["out-orders"])
    joined.join(builder.stream(topics["payments"]), lambda order, payment: order + "+" + payment,
                JoinWindows.of_time_difference_and_grace(PAYMENT_WINDOW, timedelta(hours=1))) \
        .process_values(StampValues).to(topics["out-paid"])
    return builder


def _fk_join_examples(topics: dict[str, str]):
    builder = StreamsBuilder()
    # No record cache: every update of either table is joined.
    accounts = builder.table(topics["accounts"], Materialized.as_("accounts-store").with_caching_disabled())
    users = builder.table(topics["users"], Materialized.as_("users-store").with_caching_disabled())
    accounts.join(users, lambda value: value.split(":")[0] or None,
                  lambda account, country: account + "@" + country) \
        .to_stream().to(topics["out-inner"])
    accounts.filter(lambda account, value: not value.startswith("frozen")) \
        .left_join(users, lambda account, value: value.split(":")[0] or None,
                   lambda account, country: account + "@" + str(country).replace("None", "null"),
                   TableJoined.as_("acct-user"),
                   Materialized.as_("accounts-with-country").with_caching_disabled()) \
        .to_stream().to(topics["out-left"])
    return builder, accounts, users
