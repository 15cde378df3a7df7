"""The readers of the suppression example's suppressed prices table (``held-read``) other than its own
re-grouping and left join: the Python twin of kstreams.oracle.SuppressedReaderExamples (Java), part of
suppress_examples() (tests/suppress_topology.py); keep the two in step.

Its lambdas are self-contained (no module-level helpers): Spark's Python workers cannot import
modules of tests/, and the test modules ship their own functions by value.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed

# The outputs, in the order SuppressedReaderExamples takes them.
READER_OUTPUTS = ("out-held-looked-up", "out-held-kept-joined", "out-joined-held-joined", "out-joined-held-regrouped",
                  "out-held-kept-regrouped", "out-held-twice-joined", "out-held-twice-looked-up")
# The repartition topics of the re-groupings here (Kafka Streams' run waits until they are consumed).
READER_REGROUPINGS = ("joined-held-by-family", "held-kept-by-family")


def other_suppressed_readers(prices, held_read, held_joined, topics: dict[str, str]) -> None:
    """The table's updates looking the suppressed table up (a stream-table join, through the buffer), a
    join through a filter with a store of its own after the suppression (that store), the same filter
    re-grouped by key family (each update subtracts what the filter last forwarded, from its store), the
    suppressed left join joined and re-grouped by key family, and the suppressed table suppressed again,
    left-joined and looked up by the table (through both buffers)."""
    prices.to_stream().join(held_read, lambda mine, held: mine + "|" + held).to(topics["out-held-looked-up"])
    kept = held_read.filter(lambda key, value: not value.startswith("x"),
                            Materialized.as_("held-kept").with_caching_disabled())
    kept.join(prices, lambda held, mine: held + "|" + mine).to_stream().to(topics["out-held-kept-joined"])
    joined_held = held_joined.suppress(Suppressed.until_time_limit(timedelta(seconds=1), BufferConfig.unbounded())
                                       .with_name("joined-held"))
    joined_held.join(prices, lambda held, mine: held + "/" + mine).to_stream().to(topics["out-joined-held-joined"])
    joined_held.group_by(lambda key, value: (key[0], value), Grouped.as_("joined-held-by-family")) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "+" + value, lambda key, value, agg: agg + "-" + value,
                   Materialized.as_("joined-held-families").with_caching_disabled()) \
        .to_stream().to(topics["out-joined-held-regrouped"])
    kept.group_by(lambda key, value: (key[0], value), Grouped.as_("held-kept-by-family")) \
        .aggregate(lambda: "", lambda key, value, agg: agg + "+" + value, lambda key, value, agg: agg + "-" + value,
                   Materialized.as_("held-kept-families").with_caching_disabled()) \
        .to_stream().to(topics["out-held-kept-regrouped"])
    held_twice = held_read.suppress(Suppressed.until_time_limit(timedelta(seconds=1), BufferConfig.unbounded())
                                    .with_name("held-twice"))
    prices.left_join(held_twice, lambda mine, held: mine + "|" + ("null" if held is None else held)) \
        .to_stream().to(topics["out-held-twice-joined"])
    prices.to_stream().join(held_twice, lambda mine, held: mine + "/" + held).to(topics["out-held-twice-looked-up"])
