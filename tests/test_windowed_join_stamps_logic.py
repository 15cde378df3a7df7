"""A join of windowed tables stamps its update, as Kafka Streams' ``KTableKTableJoin`` and its left,
right and outer kin do, with the larger of the update's timestamp and the other table's window's
(``KTableWindowValueGetter`` gives the window store's timestamp), without Spark. The case that needs
it: a materialized join of windows of different sizes keeps windowed keys of its own, so its
sub-topology runs task-grouped and each update travels in its window's group; the other table's window
is in the source key's group, and so is its timestamp (test_equivalence_windowed_table_joins.py,
``out-mixed``, compares it with Kafka Streams)."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd

from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import TimeWindows

GRACE = timedelta(milliseconds=500)


def _mixed_sizes_join():
    """A 1 s concatenation left-joined with a 500 ms count into a store keyed by windowed keys."""
    builder = StreamsBuilder()
    grouped = builder.stream("in").group_by_key()
    concatenated = grouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=1), GRACE)) \
        .reduce(lambda x, y: f"{x},{y}", Materialized.as_("values").with_caching_disabled())
    quick = grouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(milliseconds=500), GRACE)) \
        .count(Materialized.as_("quick").with_retention(timedelta(milliseconds=1500)).with_caching_disabled())
    windowed_keys = WindowedSerde(Serdes.String(), 1000)
    concatenated.left_join(quick, lambda values, n: f"{values}%{n}",
                           Materialized.as_("mixed").with_key_serde(windowed_keys).with_caching_disabled()) \
        .to_stream().to("out", Produced.with_(windowed_keys, Serdes.String()))
    program = compile_topology(builder, "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    assert program.task_grouped  # the case: the store keyed by windowed keys
    return program


def _stamped_output(program, rows):
    """Rows ``(key, value, timestamp)`` of one partition, one batch: ``[(value, timestamp)]`` written."""
    stream_times, stream = [], -1
    for _, _, timestamp in rows:
        stream_times.append((max(stream, timestamp), stream))
        stream = max(stream, timestamp)
    frame = pd.DataFrame({
        "key": [key.encode() for key, _, _ in rows], "value": [value.encode() for _, value, _ in rows],
        "topic": ["in"] * len(rows), "partition": [0] * len(rows), "offset": list(range(len(rows))),
        "timestamp": [None] * len(rows), "event_time": [t for _, _, t in rows], "merge_time": [t for _, _, t in rows],
        "seq": list(range(len(rows))), "stream_time": [now for now, _ in stream_times],
        "stream_time_before": [before for _, before in stream_times],
    })
    out, _ = program.process_task_batch(frame, None)
    out = out[out["topic"] == "out"].sort_values("emit_order", kind="stable")
    return [(value.decode(), int(timestamp)) for value, timestamp in zip(out["value"], out["timestamp_ms"])]


def test_an_update_of_the_right_table_is_stamped_with_the_left_window_when_later():
    # v2 (850 ms) stamps the 1 s window [0, 1000) with 850; v3, out of order at 417 ms, updates the 500 ms
    # window [0, 500), which joins the 1 s window of its start: max(417, 850).
    output = _stamped_output(_mixed_sizes_join(), [("k", "v1", 100), ("k", "v2", 850), ("k", "v3", 417)])
    assert output == [("v1%None", 100), ("v1%1", 100), ("v1,v2%1", 850),
                      ("v1,v2,v3%1", 850), ("v1,v2,v3%2", 850)]
