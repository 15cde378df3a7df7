"""The foreign-key join example (``KTable.join/left_join(other, foreign_key_extractor, joiner)``),
the Python twin of kstreams.oracle.ForeignKeyJoinExamples (Java): keep the two in step.

Accounts (account -> "user:amount"; an empty user is a null foreign key) joined with users
(user -> country): an inner join with generated names and a value-only extractor, and a left
join of the accounts not "frozen", named ``acct-user``, materialized, with a key-value extractor.
Its lambdas are self-contained (Spark's Python workers cannot import modules of tests/).
"""

from __future__ import annotations

from dagster_kstreams.topology import StreamsBuilder, TableJoined
from dagster_kstreams.topology.materialized import Materialized

STORES = ("accounts-store", "users-store", "accounts-with-country")
INPUTS = ("accounts", "users")
OUTPUTS = ("out-inner", "out-left")
# The join's internal topics, as named in the graph (the application prefixes its id).
INTERNAL_TOPICS = ("KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000004-topic",
                   "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000012-topic",
                   "acct-user-subscription-registration-topic", "acct-user-subscription-response-topic")


def fk_join_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of ForeignKeyJoinExamples.java on ``topics`` (``INPUTS``/``OUTPUTS`` -> topic)."""
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
    return builder
