"""Stream-stream joins fed, in their sub-topology, by stores with the record cache on: the Python twin
of CachedJoinFeedExamples.java (keep the two in step), and its input.

Three joins of one sub-topology, each of a cached store's updates with the taps (2 s before and
after, 5 s grace): a table read from ``rows`` left-joined with the taps; a count of ``marks``
inner-joined with them; ``marks`` made a table (``to_table``) outer-joined with the taps that have a
key (a null-keyed tap an outer join passes on would go to a partition the producer picks). Each
output value ends with ``|t`` and its record's timestamp (a ``process_values`` after the join).

The runner's cache forwards each key's last update at the micro-batch's end, Kafka Streams' at a
commit: compared with Kafka Streams committing once, when closed after its whole input
(CommitOnceRuns.java), on input that fits one micro-batch per task (README, "Stream-stream joins
(inner, left, outer) run task-grouped"), in test_equivalence_aggregation_joins.py.
"""

from __future__ import annotations

import random
from datetime import timedelta

from equivalence_io import StampValues, java_string
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.topology import Materialized, Processor, Record, StreamsBuilder
from dagster_kstreams.topology.windows import JoinWindows

INPUTS = ("rows", "taps", "marks")
OUTPUTS = ("out-cached-table", "out-cached-count", "out-cached-to-table", "out-cached-kept")
# At most this many records per task and input: a task's whole input (3 topics) is one micro-batch of
# a killed run's 60 records.
_PER_TASK = {"rows": 12, "taps": 16, "marks": 12}
_SPAN_MS = 12_000


class KeptReader(Processor):
    """CachedJoinFeedExamples.KeptReader: each record, its timestamp and what the cached filter's store
    holds for its key (``value@timestamp``, or ``null``): its cache, where a put not flushed yet is."""

    def init(self, context) -> None:
        self.context = context
        self.kept = context.get_state_store("cached-kept")

    def process(self, record: Record) -> None:
        stored = self.kept.get(record.key)
        stored_text = "null" if stored is None else f"{stored.value()}@{stored.timestamp()}"
        self.context.forward(record.with_value(f"{java_string(record.value)}|t{record.timestamp}|{stored_text}"))


def cached_join_feed_examples(topics: dict[str, str]) -> StreamsBuilder:
    """CachedJoinFeedExamples.cachedJoinFeedExamples (Java)."""
    builder = StreamsBuilder()
    windows = JoinWindows.of_time_difference_and_grace(timedelta(seconds=2), timedelta(seconds=5))
    taps = builder.stream(topics["taps"])
    builder.table(topics["rows"], Materialized.as_("cached-rows")) \
        .to_stream() \
        .left_join(taps, lambda row, tap: f"{row}+{java_string(tap)}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-table"])
    marks = builder.stream(topics["marks"])
    marks.group_by_key().count(Materialized.as_("cached-counts")) \
        .to_stream() \
        .map_values(lambda count: f"n{count}") \
        .join(taps, lambda n, tap: f"{n}+{tap}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-count"])
    keyed_taps = taps.filter(lambda key, tap: key is not None)
    marks.to_table(Materialized.as_("cached-last")) \
        .to_stream() \
        .outer_join(keyed_taps, lambda last, tap: f"{java_string(last)}+{java_string(tap)}", windows) \
        .process_values(StampValues) \
        .to(topics["out-cached-to-table"])
    kept = marks.to_table(Materialized.as_("uncached-last").with_caching_disabled()) \
        .filter(lambda key, mark: not mark.endswith("3"), Materialized.as_("cached-kept"))
    kept.to_stream().process(KeptReader, "cached-kept").to(topics["out-cached-kept"])
    keyed_taps.process(KeptReader, "cached-kept").to(topics["out-cached-kept"])
    return builder


def cached_join_feed_input(base: int, partitions: int, seed: int = 8) -> dict[str, list[tuple]]:
    """``{input: [(key, value, partition, timestamp)]}`` in production order, per partition: a tap at
    ``base``, then taps, rows and marks in random order over 12 s (out of order within and beyond the
    joins' grace), null keys, null values (tombstones of rows and marks, skipped by the count), keys
    updated several times; no timestamp twice in a task (Kafka Streams would pick among a tie by its
    queue's order)."""
    rng = random.Random(seed)
    keys = {p: [k for k in (f"q{i}" for i in range(8)) if default_partition(k.encode(), partitions) == p]
            for p in range(partitions)}
    records: dict[str, list[tuple]] = {name: [] for name in INPUTS}
    for partition in range(partitions):
        times = iter(rng.sample(range(base + 1, base + _SPAN_MS), sum(_PER_TASK.values())))
        records["taps"].append((rng.choice(keys[partition]), f"t{partition}.first", partition, base))
        for name, count in _PER_TASK.items():
            for i in range(count - (name == "taps")):
                key = None if rng.random() < 0.08 else rng.choice(keys[partition])
                value = None if rng.random() < 0.15 else f"{name[0]}{partition}.{i}"
                records[name].append((key, value, partition, next(times)))
    return records
