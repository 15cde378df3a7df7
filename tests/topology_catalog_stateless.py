"""The catalog's stateless operators (filter, map, flat_map, peek, merge, split, foreach, print,
a pattern source, sinks whose topic an extractor picks), the DSL issue's snippets, and naming and layout.

Entries of tests/topology_catalog.py; their Java twins, under the same names, are in
tests/oracle/src/main/java/kstreams/oracle/StatelessCatalog.java. Keep the two in step.
"""

from __future__ import annotations

import re
from datetime import timedelta

from dagster_kstreams import (
    Branched,
    Consumed,
    Grouped,
    Materialized,
    Named,
    Printed,
    Produced,
    StreamsBuilder,
    TimeWindows,
    TopicNameExtractor,
)

from topology_catalog_entries import CatalogEntries, field

ENTRIES = CatalogEntries()
topology = ENTRIES.add


# ---- The snippets of the DSL issue -------------------------------------------------------


@topology
def issue_users_per_country():
    b = StreamsBuilder()
    users = b.stream("users")
    users.group_by(lambda k, v: field(v, 1)).count().to_stream().to("users-per-country")
    return b.build()


@topology
def issue_clicks_enriched_with_profiles():
    b = StreamsBuilder()
    clicks = b.stream("clicks")
    profiles = b.table("profiles")
    clicks.select_key(lambda k, v: field(v, 0)).join(
        profiles, lambda click, profile: click + "," + profile
    ).to("enriched")
    return b.build()


@topology
def issue_windowed_word_count():
    b = StreamsBuilder()
    words = b.stream("words")
    words.flat_map_values(lambda v: v.split(" ")).group_by(lambda k, w: w).windowed_by(
        TimeWindows.of_size_with_no_grace(timedelta(minutes=1))
    ).count()
    return b.build()


@topology
def issue_table_filter_map_values():
    b = StreamsBuilder()
    t = b.table("t")
    t.filter(lambda k, v: v is not None).map_values(lambda v: v)
    return b.build()


@topology
def issue_map_to_table_to_stream():
    b = StreamsBuilder()
    b.stream("input").map(lambda k, v: (k[0], v)).to_table().to_stream().to("output")
    return b.build()


@topology
def issue_count_store():
    b = StreamsBuilder()
    b.stream("input-topic").group_by_key().count(Materialized.as_("count-store"))
    return b.build()


# ---- Stateless operators -----------------------------------------------------------------


@topology
def stateless_chain():
    b = StreamsBuilder()
    rows = b.stream("rows")
    (
        rows.filter(lambda k, v: v is not None)
        .filter_not(lambda k, v: v == "")
        .map_values(lambda v: v.upper())
        .peek(lambda k, v: None)
        .map_values(lambda k, v: k + ":" + v)
        .to("rows-upper")
    )
    return b.build()


@topology
def multi_topic_source():
    b = StreamsBuilder()
    both = b.stream(["orders-eu", "orders-us"])
    both.map_values(lambda v: field(v, 2)).to("order-amounts")
    return b.build()


@topology
def merge_two_streams():
    b = StreamsBuilder()
    left = b.stream("left")
    right = b.stream("right")
    left.merge(right).filter(lambda k, v: v is not None).to("merged")
    return b.build()


@topology
def merge_after_key_change_then_count():
    b = StreamsBuilder()
    web = b.stream("web-orders")
    shop = b.stream("shop-orders")
    (
        web.select_key(lambda k, v: field(v, 0))
        .merge(shop)
        .group_by_key()
        .count()
        .to_stream()
        .to("orders-per-user")
    )
    return b.build()


@topology
def flat_map_then_reduce():
    b = StreamsBuilder()
    lines = b.stream("lines")
    (
        lines.flat_map(lambda k, v: [(word, word) for word in v.split(" ")])
        .group_by_key()
        .reduce(lambda a, c: a + c)
        .to_stream()
        .to("words-concatenated")
    )
    return b.build()


@topology
def peek_flat_map_values():
    b = StreamsBuilder()
    rows = b.stream("rows")
    (
        rows.peek(lambda k, v: None)
        .flat_map_values(lambda v: v.split(","))
        .flat_map_values(lambda k, v: [k, v])
        .to("cells")
    )
    return b.build()


@topology
def split_into_named_branches():
    b = StreamsBuilder()
    orders = b.stream("orders")
    # The dict keys are the split name followed by the branch name.
    branches = (
        orders.split(Named.as_("country-"))
        .branch(lambda k, v: field(v, 1) == "fr", Branched.as_("france"))
        .branch(lambda k, v: field(v, 1) == "de", Branched.as_("x").with_name("germany"))
        .default_branch()
    )
    branches["country-france"].to("orders-fr")
    branches["country-germany"].to("orders-de")
    branches["country-0"].to("orders-other")
    return b.build()


@topology
def split_unnamed_with_consumers():
    b = StreamsBuilder()
    logs = b.stream("logs")
    (
        logs.split()
        .branch(lambda k, v: v.startswith("ERROR"),
                Branched.with_consumer(lambda ks: ks.to("errors")))
        .branch(lambda k, v: v.startswith("WARN"),
                Branched.with_consumer(lambda ks: ks.map_values(lambda v: v[5:]).to("warnings")))
        .no_default_branch()
    )
    return b.build()


@topology
def split_with_prefix_and_chains():
    b = StreamsBuilder()
    orders = b.stream("orders")
    branches = (
        orders.split(Named.as_("route-"))
        .branch(lambda k, v: int(field(v, 2)) > 100,
                Branched.with_function(lambda ks: ks.map_values(lambda v: "big:" + v), "big"))
        .branch(lambda k, v: int(field(v, 2)) == 0,
                Branched.with_consumer(lambda ks: ks.to("orders-free")))
        .default_branch(Branched.as_("small"))
    )
    branches["route-big"].to("orders-big")
    branches["route-small"].to("orders-small")
    return b.build()


@topology
def merge_of_branches():
    b = StreamsBuilder()
    events = b.stream("events")
    branches = (
        events.split(Named.as_("kind-"))
        .branch(lambda k, v: v.startswith("a"))
        .default_branch()
    )
    (
        branches["kind-1"].map_values(lambda v: v.upper())
        .merge(branches["kind-0"])
        .to("events-normalised")
    )
    return b.build()


@topology
def pattern_source():
    b = StreamsBuilder()
    orders = b.stream(re.compile("orders-.*"))
    orders.map_values(lambda v: v.upper()).to("orders-upper")
    return b.build()


@topology
def foreach_and_print():
    b = StreamsBuilder()
    audit = b.stream("audit")
    audit.foreach(lambda k, v: None)
    audit.filter(lambda k, v: v.startswith("ERROR")).print(Printed.to_sys_out().with_label("audit"))
    audit.peek(lambda k, v: None, Named.as_("log-audit")).foreach(lambda k, v: None, Named.as_("discard"))
    return b.build()


@topology
def merge_and_peek_named():
    b = StreamsBuilder()
    card = b.stream("card-payments")
    bank = b.stream("bank-payments")
    (
        card.merge(bank, Named.as_("all-payments"))
        .peek(lambda k, v: None, Named.as_("audit-payment"))
        .to("payments-all")
    )
    return b.build()


# ---- Naming and layout -------------------------------------------------------------------


@topology
def named_operators_everywhere():
    b = StreamsBuilder()
    events = b.stream("events", Consumed.as_("events-source"))
    (
        events.filter(lambda k, v: v is not None, Named.as_("drop-nulls"))
        .map_values(lambda v: v.strip(), Named.as_("trim"))
        .select_key(lambda k, v: field(v, 0), Named.as_("key-by-user"))
        .group_by_key(Grouped.as_("events-by-user"))
        .count(Named.as_("count-events"), Materialized.as_("events-per-user"))
        .to_stream(Named.as_("count-changes"))
        .map_values(lambda c: str(c), Named.as_("format-count"))
        .to("events-per-user", Produced.as_("events-per-user-sink"))
    )
    return b.build()


@topology
def two_independent_pipelines():
    b = StreamsBuilder()
    a = b.stream("topic-a")
    c = b.stream("topic-c")
    a.map_values(lambda v: v + "!").to("topic-a-out")
    c.group_by(lambda k, v: v).count()
    bb = b.stream("topic-b")
    bb.filter(lambda k, v: len(v) > 3).to("topic-b-out")
    return b.build()


@topology
def more_than_ten_subtopologies():
    # Sub-topology ids 10 and up: ordered as numbers, not as strings.
    b = StreamsBuilder()
    for i in range(6):
        b.stream(f"in-{i}").group_by(lambda k, v: v).count().to_stream().to(f"counts-{i}")
    return b.build()


# ---- Sinks whose topic an extractor picks ------------------------------------------------


class RouteByPartition(TopicNameExtractor):
    """describe() prints its str(); the Java twin's toString() says the same."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def extract(self, key, value, record_context):
        return f"{self.prefix}{record_context.partition()}"

    def __str__(self) -> str:
        return f"RouteByPartition({self.prefix})"


def route_by_key(key, value, record_context):
    return f"orders-{key}"


@topology
def sinks_with_topic_extractors():
    # A function's describe() is its module and qualified name (a lambda's too); the Java twins'
    # toString() print the same, as Kafka Streams prints any extractor's toString().
    b = StreamsBuilder()
    orders = b.stream("orders")
    orders.to(RouteByPartition("orders-p"))
    orders.filter(lambda k, v: v is not None).to(route_by_key, Produced.as_("by-key"))
    orders.to(lambda key, value: "orders-" + value)
    return b.build()
