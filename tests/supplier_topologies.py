"""Small topologies over a windowed count whose store comes from a supplier, for the tests of what the Spark
runner takes and refuses of a supplier's store when the application is defined (the plain RocksDB store,
stores kept short, of another window size or retaining duplicates)."""

from __future__ import annotations

from dagster_kstreams.orchestration.app import check_runnable
from dagster_kstreams.topology import EmitStrategy, Materialized, StreamsBuilder
from dagster_kstreams.topology.processor_api import Processor


class StoreReader(Processor):
    """A user processor naming the count's store ``counts``."""

    def init(self, context) -> None:
        self.store = context.get_state_store("counts")

    def process(self, record) -> None:
        pass


# What a short-kept store's aggregation is still refused with: the option that makes it so and the reason the
# refusal names (both windowed_count's and the sliding tests' own topologies take these options).
STILL_REFUSED_SHORT = [
    ({"cached": True}, "with the record cache on"),
    ({"emit_on_close": True}, "emitting on window close"),
    ({"read_by_processor": True}, "read by a user processor"),
]


def windowed_count(windows, supplier, cached=False, emit_on_close=False, read_by_processor=False, joined=False):
    """``clicks`` counted in ``windows`` into the supplier's store, to ``out``; with its record cache on, emitting
    on window close, its table joined with itself, its store read by a processor on the way, as asked."""
    builder = StreamsBuilder()
    windowed = builder.stream("clicks").group_by_key().windowed_by(windows)
    if emit_on_close:
        windowed = windowed.emit_strategy(EmitStrategy.on_window_close())
    materialized = Materialized.as_(supplier)
    counts = windowed.count(materialized if cached else materialized.with_caching_disabled())
    if joined:
        counts = counts.join(counts.map_values(lambda count: count + 1), lambda left, right: left + right)
    stream = counts.to_stream()
    if read_by_processor:
        stream.process(StoreReader, "counts")
    stream.to("out")
    return builder.build()


def cogroup_count(windows, supplier):
    """``clicks`` cogrouped and counted in ``windows`` into the supplier's store, to ``out``."""
    builder = StreamsBuilder()
    builder.stream("clicks").group_by_key().cogroup(lambda key, value, count: count + 1) \
        .windowed_by(windows).aggregate(lambda: 0, Materialized.as_(supplier).with_caching_disabled()) \
        .to_stream().to("out")
    return builder.build()


def runnable(topology) -> None:
    """Raise what the runner refuses of ``topology`` when defined."""
    check_runnable(topology, "supplier-stores", {"clicks": 2})
