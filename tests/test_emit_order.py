"""The emit order of a stateful program's output (issue 17, no Spark needed): key groups run
one after another, and sorting their output by ``emit_order`` gives Kafka Streams' order:
every update in record order without the record cache; with it, one update per key after the
records, keys in the order they were last updated (NamedCache's dirty keys)."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings, strategies as st

from dagster_kstreams.processors.records import Output
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes


def _count_rekeyed(cached: bool):
    """``count`` then every update mapped to one key (``"all"``, value ``key:count``)."""
    materialized = Materialized.as_("counts") if cached else Materialized.as_("counts").with_caching_disabled()
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().count(materialized).to_stream() \
        .map(lambda key, count: ("all", f"{key}:{count}")).to("out", Produced.with_(Serdes.String(), Serdes.String()))
    return compile_topology(builder, "app").program(0)


def _run_by_key_groups(program, keys: list[str], group_order: list[str]) -> list[str]:
    """Run each key's records as one key group (in ``group_order``, as Spark may), then sort the
    concatenated output by emit order (ties: emission order), as the batch writer does."""
    frame = pd.DataFrame({
        "key": [key.encode() for key in keys], "value": [b"v"] * len(keys), "topic": ["in"] * len(keys),
        "partition": [0] * len(keys), "offset": list(range(100, 100 + len(keys))), "timestamp": [None] * len(keys),
        "event_time": [1_000 + i for i in range(len(keys))],
    })
    outputs = []
    for key in group_order:
        out, _ = program.process_key_group(frame[frame["key"] == key.encode()], None)
        if out is not None:
            outputs.append(out)
    rows = pd.concat(outputs, ignore_index=True)
    rows = rows.sort_values("emit_order", kind="stable")
    return [value.decode() for value in rows["value"]]


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.sampled_from("abcd"), min_size=1, max_size=25), data=st.data())
def test_uncached_updates_go_out_in_record_order(keys, data):
    group_order = data.draw(st.permutations(sorted(set(keys))))
    counts: dict[str, int] = {}
    expected = []
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
        expected.append(f"{key}:{counts[key]}")
    assert _run_by_key_groups(_count_rekeyed(cached=False), keys, list(group_order)) == expected


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.sampled_from("abcd"), min_size=1, max_size=25), data=st.data())
def test_cached_updates_go_out_once_per_key_in_last_update_order(keys, data):
    group_order = data.draw(st.permutations(sorted(set(keys))))
    last_update = {key: index for index, key in enumerate(keys)}
    expected = [f"{key}:{keys.count(key)}" for key in sorted(last_update, key=last_update.get)]
    assert _run_by_key_groups(_count_rekeyed(cached=True), keys, list(group_order)) == expected


def test_output_marks_runs_of_records_with_their_emit_order():
    out = Output(ordered=True)
    out.mark(5)
    out.append("t", b"k", b"1")
    out.append("t", b"k", b"2")
    out.mark(9)
    out.mark(7)
    out.append("t", b"k", b"3")
    assert out.emit_order() == [5, 5, 7]
    unordered = Output()
    unordered.mark(5)
    unordered.append("t", b"k", b"1")
    assert unordered.emit_order() == [None]


def test_every_sub_topology_reading_several_topics_runs_in_processing_order():
    builder = StreamsBuilder()
    builder.stream("a").merge(builder.stream("b")).map_values(str.upper).to("merged")
    builder.stream("c").map_values(str.upper).to("single")
    compiled = compile_topology(builder, "app")
    merged, single = compiled.program(0), compiled.program(1)
    assert merged.needs_processing_order and not merged.stateful
    assert not single.needs_processing_order  # a single topic: offset order, no extra pass
