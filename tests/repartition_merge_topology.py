"""Kafka Streams' ``RepartitionOptimizingTest`` topology, built with ``topology.optimization=all``: one
re-keyed stream (``map`` upper-casing the key) filtered and written out, counted, aggregated, reduced
behind a filter and a peek, and joined with its own counts. Optimized, the four groupings and the
join read one repartition topic (``count-groupByKey-repartition``), and the filter and the peek run
after it.

Used twice: as the describe() catalog's ``optimized_repartition_optimizing_test`` (on the topics
named as the input and outputs) and run on Spark against Kafka Streams in
tests/test_equivalence_repartition_merge.py. The Java twin is RepartitionMergeExamples.repartitionOptimizingTest;
keep the two in step. Every output value is stamped (``|t`` and the record's timestamp); the stores
are uncached, so that every update is written.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Mapping, Optional

from dagster_kstreams import (
    Consumed,
    Grouped,
    JoinWindows,
    Materialized,
    Named,
    Produced,
    StreamJoined,
    StreamsBuilder,
    StreamsConfig,
)

from equivalence_io import StampValues, java_string

INPUTS = ("input",)
OUTPUTS = ("processed", "counts", "aggregates", "reduced", "joined")
ALL = {StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: StreamsConfig.OPTIMIZE}


def _upper(text: Optional[str]) -> Optional[str]:
    return None if text is None else text.upper()


def repartition_optimizing_test(topics: Mapping[str, str]):
    """The topology on ``topics`` (``{name: topic}`` for ``INPUTS`` and ``OUTPUTS``), optimized."""
    builder = StreamsBuilder()
    source = builder.stream(topics["input"], Consumed.as_("sourceStream"))
    mapped = source.map(lambda k, v: (_upper(k), v), Named.as_("source-map"))
    (
        mapped.filter(lambda k, v: k == "B", Named.as_("process-filter"))
        .map_values(_upper, Named.as_("process-mapValues"))
        .process_values(StampValues)
        .to(topics["processed"], Produced.as_("process"))
    )
    counts = (
        mapped.group_by_key(Grouped.as_("count-groupByKey"))
        .count(Named.as_("count"), Materialized.as_("count-store").with_caching_disabled())
        .to_stream(Named.as_("count-toStream"))
        .map_values(lambda c: str(c), Named.as_("count-format"))
    )
    counts.process_values(StampValues).to(topics["counts"], Produced.as_("count-to"))
    (
        mapped.group_by_key(Grouped.as_("aggregate-groupByKey"))
        .aggregate(lambda: "0", lambda k, v, agg: str(int(agg) + len(v)), Named.as_("aggregate"),
                   Materialized.as_("aggregate-store").with_caching_disabled())
        .to_stream(Named.as_("aggregate-toStream"))
        .process_values(StampValues)
        .to(topics["aggregates"], Produced.as_("reduce-to"))
    )
    (
        mapped.filter(lambda k, v: True, Named.as_("reduce-filter"))
        .peek(lambda k, v: None, Named.as_("reduce-peek"))
        .group_by_key(Grouped.as_("reduce-groupByKey"))
        .reduce(lambda v1, v2: v1 + ":" + v2, Named.as_("reducer"),
                Materialized.as_("reduce-store").with_caching_disabled())
        .to_stream(Named.as_("reduce-toStream"))
        .process_values(StampValues)
        .to(topics["reduced"])
    )
    (
        mapped.filter(lambda k, v: k == "A" or k == "E", Named.as_("join-filter"))
        .join(counts, lambda v1, v2: f"{java_string(v1)}:{v2}",
              JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=5)),
              StreamJoined.as_("join-store").with_name("join"))
        .process_values(StampValues)
        .to(topics["joined"], Produced.as_("join-to"))
    )
    return builder.build(ALL)
