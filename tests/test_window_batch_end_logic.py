"""A task-grouped time-windowed aggregation forgets, at the end of each micro-batch, the windows its store
no longer returns, cut by the store's time (the last window start of the stream time: the cut a record's
reads take, :func:`dagster_kstreams.processors.supplier_shape.store_time`), not by the stream time: with a
supplier kept less than its windows stay open, a window kept past the batch's end is still read by a late
record, as Kafka Streams' store returns it. Without Spark: the program run in one batch and record by
record (its state pickled in between, as a checkpoint would) forwards the same updates. Compared with Kafka
Streams in tests/test_equivalence_windows.py (out-short-kept, in a sub-topology made task-grouped by the
processor stamping out-plain-kept's updates)."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pandas as pd
import pytest

from equivalence_io import StampValues
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.spark.state_keys import STATE_KEY_COLUMN
from dagster_kstreams.topology import Materialized, Stores, StreamsBuilder, TimeWindows
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde

MS = timedelta(milliseconds=1)


def _program():
    """A count over windows of 10 ms advancing by 2 ms (grace 5 ms) from a store kept 11 ms, its updates
    stamped by a processor (which makes the sub-topology task-grouped)."""
    builder = StreamsBuilder()
    builder.stream("in").group_by_key() \
        .windowed_by(TimeWindows.of_size_and_grace(10 * MS, 5 * MS).advance_by(2 * MS)) \
        .aggregate(lambda: "", lambda key, value, agg: f"{agg}+{value}",
                   Materialized.as_(Stores.in_memory_window_store("kept", 11 * MS, 10 * MS, False))
                   .with_caching_disabled()) \
        .to_stream().process_values(StampValues).to("out", Produced.with_(WindowedSerde(Serdes.String(), 10),
                                                                          Serdes.String()))
    return compile_topology(builder, "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _run(program, timestamps, batch_size: int) -> list:
    """The values written to "out", one key's records at ``timestamps`` run ``batch_size`` at a time."""
    outputs, stored = [], None
    stream_times = list(itertools.accumulate(timestamps, max))
    for first in range(0, len(timestamps), batch_size):
        times = timestamps[first:first + batch_size]
        seq = list(range(first, first + len(times)))
        frame = pd.DataFrame({
            "key": [b"k"] * len(times), "value": [str(t).encode() for t in times], "topic": ["in"] * len(times),
            "partition": [0] * len(times), "offset": seq, "timestamp": [None] * len(times), "event_time": times,
            "merge_time": seq, "seq": seq, "stream_time": stream_times[first:first + len(times)],
            "stream_time_before": ([-1] + stream_times)[first:first + len(times)],
        })
        if program.state_key_serde is not None:
            frame[STATE_KEY_COLUMN] = program.state_keys(list(frame["key"]), list(frame["topic"]))
        out, stored = program.process_task_batch(frame, stored)
        if out is not None:
            out = out.sort_values("emit_order", kind="stable")
            outputs += [value.decode() for topic, value in zip(out["topic"], out["value"]) if topic == "out"]
    return outputs


@pytest.mark.parametrize("timestamps", [[10, 21, 11], [10, 21, 20, 11, 12]])
def test_a_window_the_store_still_returns_outlives_the_batch_end(timestamps):
    """After 21 the store's time is 20: the window at 10 is kept (above 20 - 11), though the stream time minus
    the retention (10) would cut it; the late record at 11 adds to it."""
    program = _program()
    assert program.task_grouped
    whole = _run(program, timestamps, len(timestamps))
    assert "+10+11|t11" in whole
    assert _run(program, timestamps, 1) == whole
