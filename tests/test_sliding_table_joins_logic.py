"""Joins of sliding-window tables, key-grouped and task-grouped, give each key the same sequence.

tests/test_equivalence_windowed_table_joins.py compares sliding-window joins with Kafka Streams in a
sub-topology that runs task-grouped (a materialized join keeps a store by window there). Without
such a store the sub-topology runs key-grouped: each key's row holds its windows and the task's
stream time comes with each record. Both read the other table's window of the updated window's start
(Kafka Streams' ``fetch(key, windowStart)``), so every key's output is the same in both.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import Materialized, Produced, Serdes, SlidingWindows, StreamsBuilder, WindowedSerde

WINDOWED = WindowedSerde(Serdes.String(), 1000)
JOINED = ("out-inner", "out-left")


def _program(materialized: bool):
    """A count and a concatenation in sliding windows of 1 s joined, and the concatenation left-joined
    with a count in 500 ms sliding windows (retention 1502 ms: the least the 1 s windows' reach admits);
    ``materialized``: an outer join with a store of its own beside them, which makes it task-grouped."""
    builder = StreamsBuilder()
    grouped = builder.stream("in").group_by_key()
    grace = timedelta(milliseconds=500)
    sliding = grouped.windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(seconds=1), grace))
    counts = sliding.count(Materialized.as_("counts").with_caching_disabled())
    values = sliding.reduce(lambda x, y: x + "," + y, Materialized.as_("values").with_caching_disabled())
    quick = grouped.windowed_by(SlidingWindows.of_time_difference_and_grace(timedelta(milliseconds=500), grace)) \
        .count(Materialized.as_("quick").with_retention(timedelta(milliseconds=1502)).with_caching_disabled())
    produced = Produced.with_(WINDOWED, Serdes.String())
    counts.join(values, lambda n, v: f"{n}|{v}").to_stream().to("out-inner", produced)
    values.left_join(quick, lambda v, n: f"{v}%{n}").to_stream().to("out-left", produced)
    if materialized:
        values.outer_join(counts, lambda v, n: f"{v}~{n}", Materialized.as_("joined").with_key_serde(WINDOWED)
                          .with_caching_disabled()).to_stream().to("out-outer", produced)
    return compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _records(seed: int) -> list:
    """``(context, key, value)`` in processing order: 3 keys, out of order by up to 1.5 s (some late),
    null values (skipped by sliding windows, and by their stream time)."""
    rng = random.Random(seed)
    records, stream_time = [], None
    for offset in range(300):
        timestamp = 10_000 + offset * 100 - (rng.randint(1, 1500) if rng.random() < 0.2 else 0)
        key = rng.choice((b"a", b"b", b"c"))
        value = None if rng.random() < 0.05 else f"v{offset}".encode()
        before = stream_time
        if value is not None:
            stream_time = timestamp if stream_time is None else max(stream_time, timestamp)
        context = RecordContext("in", 0, offset, timestamp=timestamp, stream_time=stream_time,
                                stream_time_before=before, raw_key=key, position=offset)
        records.append((context, key, value))
    return records


def _by_key(out) -> dict:
    """``{(topic, key): [(window start bytes, value)]}`` of the joins' records, in order."""
    found: dict = {}
    for topic, key, value in zip(out.topic, out.key, out.value):
        if topic in JOINED:
            found.setdefault((topic, key[:-8]), []).append((key[-8:], value))
    return found


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_sliding_joins_key_grouped_forward_what_task_grouped_ones_forward(seed):
    key_grouped, task_grouped = _program(False), _program(True)
    assert not key_grouped.task_grouped and task_grouped.task_grouped
    records = _records(seed)
    expected, _ = task_grouped.run_task_batch(records, None)
    actual = {}
    for key in (b"a", b"b", b"c"):
        out, _ = key_grouped.run_key_group([record for record in records if record[1] == key], None)
        actual.update(_by_key(out))
    expected = _by_key(expected)
    assert actual == expected
    assert any(value.endswith(b"%None") for (topic, _), found in expected.items() if topic == "out-left"
               for _, value in found)
    assert len(expected) == 6 and all(len(found) > 20 for found in expected.values())
