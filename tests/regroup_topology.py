"""The table re-grouping example (``KTable.group_by`` with count, reduce and aggregate), the
Python twin of kstreams.oracle.RegroupExamples (Java): keep the two in step.

Its lambdas are self-contained (no module-level helpers): Spark's Python workers cannot import
modules of tests/, and the test modules ship their own functions by value.
"""

from __future__ import annotations

from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes

STORES = ("users-store", "users-per-country", "accounts-store", "branch-sums", "branch-history")
INPUTS = ("users", "accounts")
OUTPUTS = ("out-counts", "out-sums", "out-history")
# Repartition topics, as named in the application (<app id>-<name>-repartition).
REPARTITION_TOPICS = {"users": "users-per-country-repartition", "accounts": "by-branch-repartition"}


def regroup_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of RegroupExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    _users_per_country(builder, topics)
    _branches(builder, topics)
    return builder


def _users_per_country(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    # user -> country, with the record cache: a re-grouping sees one update per key and commit.
    users = builder.table(topics["users"], Materialized.as_("users-store"))
    users.map_values(lambda country: country.lower()) \
        .group_by(lambda user, country: (None if country == "none" else country,
                                         None if country == "anon" else user)) \
        .count(Materialized.as_("users-per-country")) \
        .to_stream() \
        .to(topics["out-counts"], Produced.with_(Serdes.String(), Serdes.Long()))


def _branches(builder: StreamsBuilder, topics: dict[str, str]) -> None:
    # account -> "branch:amount", without the record cache: every update is re-grouped.
    accounts = builder.table(topics["accounts"], Materialized.as_("accounts-store").with_caching_disabled())
    by_branch = accounts.filter(lambda account, value: not value.startswith("frozen")) \
        .group_by(lambda account, value: (None if value.split(":")[0] == "closed" else value.split(":")[0],
                                          value.split(":")[1]),
                  Grouped.as_("by-branch"))
    by_branch.reduce(lambda total, amount: str(int(total) + int(amount)),
                     lambda total, amount: None if int(total) == int(amount) else str(int(total) - int(amount)),
                     Materialized.as_("branch-sums")) \
        .to_stream().to(topics["out-sums"])
    by_branch.aggregate(lambda: "",
                        lambda branch, amount, history: (history + "+" + amount)[-60:],
                        lambda branch, amount, history: (history + "-" + amount)[-60:],
                        Materialized.as_("branch-history").with_caching_disabled()) \
        .to_stream().to(topics["out-history"])
