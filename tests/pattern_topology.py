"""A source subscribed by a pattern, the Python twin of kstreams.oracle.PatternExamples (Java):
keep the two in step.

Its lambdas are self-contained (no module-level helpers): Spark's Python workers cannot import
modules of tests/, and the test modules ship their own functions by value.
"""

from __future__ import annotations

import re

from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.materialized import Materialized

OUTPUTS = ("out-mapped", "out-counts")


def pattern_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of PatternExamples.java: ``topics["pattern"]`` subscribed, ``OUTPUTS`` -> topic."""
    builder = StreamsBuilder()
    orders = builder.stream(re.compile(topics["pattern"]))
    orders.filter(lambda key, value: key is not None and (value is None or not value.endswith("7"))) \
        .map_values(lambda value: None if value is None else value.upper()) \
        .to(topics["out-mapped"])
    orders.group_by(lambda key, value: None if value is None else value.split(":")[0], Grouped.as_("pattern-groups")) \
        .count(Materialized.as_("pattern-counts").with_caching_disabled()) \
        .to_stream() \
        .map_values(lambda group, count: f"{group}={count}") \
        .to(topics["out-counts"])
    return builder
