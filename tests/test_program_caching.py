"""Kafka Streams' record cache on the Spark runner's key groups (no Spark needed): with caching
(the default) an aggregation or table forwards its final value once per key and micro-batch;
``Materialized.with_caching_disabled()`` forwards every update, as Kafka Streams does."""

from __future__ import annotations

import pandas as pd
import pytest

from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes


def _program(materialized: Materialized, shape: str):
    builder = StreamsBuilder()
    if shape == "count":
        table = builder.stream("in").group_by_key().count(materialized)
    elif shape == "reduce":
        table = builder.stream("in").group_by_key().reduce(lambda total, value: total + value, materialized)
    else:  # the latest value per key
        table = builder.stream("in").to_table(materialized)
    table.to_stream().to("out", Produced.with_(Serdes.String(), Serdes.Long() if shape == "count" else Serdes.String()))
    return compile_topology(builder, "app").program(0)


def _outputs(program, values):
    frame = pd.DataFrame({
        "key": [b"k"] * len(values), "value": [value.encode() for value in values], "topic": ["in"] * len(values),
        "partition": [0] * len(values), "offset": list(range(len(values))), "timestamp": [None] * len(values),
        "event_time": [1_000 + i for i in range(len(values))],
    })
    out, _ = program.process_key_group(frame, None)
    return [] if out is None else [(key, value) for key, value in zip(out["key"], out["value"])]


@pytest.mark.parametrize("shape, updates", [
    ("count", [1, 2, 3]),
    ("reduce", ["a", "ab", "abc"]),
    ("table", ["a", "b", "c"]),
])
def test_caching_disabled_forwards_every_update_and_caching_the_last(shape, updates):
    encode = (lambda n: n.to_bytes(8, "big")) if shape == "count" else str.encode
    expected = [(b"k", encode(update)) for update in updates]
    assert _outputs(_program(Materialized.as_("store").with_caching_disabled(), shape), ["a", "b", "c"]) == expected
    assert _outputs(_program(Materialized.as_("store"), shape), ["a", "b", "c"]) == expected[-1:]
