"""A suppression keeps each buffered update's record context (topic, partition, offset) and emits the
update in it, as Kafka Streams' ``BufferValue`` keeps its ``ProcessorRecordContext``: the buffer against a
model, a buffer pickled by an older version (no context kept) loading and evicting, and a program whose
processor and topic-name extractor after the suppression see the buffered record's context. The
comparison with Kafka Streams is test_equivalence_suppress.py (suppress_context_topology.py)."""

from __future__ import annotations

import pickle
from datetime import timedelta

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.suppress import BufferedUpdate, SuppressionBuffer
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.processor_api import FixedKeyProcessor
from dagster_kstreams.topology.serdes import Serdes
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed

_PUTS_AND_EXPIRIES = st.lists(st.one_of(
    st.tuples(st.just("put"), st.integers(0, 20), st.sampled_from([b"a", b"b", b"c"])),
    st.tuples(st.just("expire"), st.integers(0, 20), st.none()),
), max_size=40)


@settings(max_examples=200)
@given(_PUTS_AND_EXPIRIES)
def test_an_evicted_update_carries_the_context_of_its_keys_latest_put(operations):
    """Model: a key's latest put replaces its context (Kafka Streams' buffer keeps the latest update's)."""
    buffer, latest = SuppressionBuffer(), {}
    for number, (operation, argument, key) in enumerate(operations):
        if operation == "put":
            latest[key] = ("in", number % 2, number, False)
            buffer.put(argument, key, key, f"v{number}", argument, source=latest[key])
            continue
        for evicted in buffer.expired(argument):
            assert evicted.source == latest.pop(evicted.key)
            assert evicted.value == f"v{evicted.source[2]}"


def test_a_buffer_pickled_by_an_older_version_loads_and_evicts_without_a_context():
    """An older version pickled its records as ``(key, value, timestamp[, headers[, old]])`` tuples: they
    load and go out with no context of their own (the evicting record's, Suppress._emit)."""
    buffer = SuppressionBuffer()
    buffer.put(1, b"a", "a", "new", 1, source=("in", 0, 7, False))
    buffer._records[b"b"] = ("b", "old", 2, [{"key": "h", "value": None}], "prior")
    buffer._records[b"c"] = ("c", "older", 3)
    buffer._order += [(2, b"b"), (3, b"c")]
    loaded = pickle.loads(pickle.dumps(buffer))
    assert list(loaded.expired(3)) == [
        BufferedUpdate("a", "new", 1, None, None, ("in", 0, 7, False)),
        BufferedUpdate("b", "old", 2, [{"key": "h", "value": None}], "prior", None),
        BufferedUpdate("c", "older", 3, None, None, None),
    ]


class _StampOffset(FixedKeyProcessor):
    def init(self, context) -> None:
        self.context = context

    def process(self, record) -> None:
        metadata = self.context.record_metadata()
        self.context.forward(record.with_value(f"{record.value}@{metadata.partition}/{metadata.offset}"))


def test_a_processor_and_an_extractor_after_the_suppression_see_the_buffered_records_context():
    """Each update goes out when a later record evicts it: stamped and routed by its own offset."""
    builder = StreamsBuilder()
    builder.table("in", Materialized.as_("in-store").with_caching_disabled()).suppress(Suppressed.until_time_limit(timedelta(milliseconds=10), BufferConfig.unbounded())) \
        .to_stream().process_values(_StampOffset) \
        .to(lambda key, value, record_context: f"out-{record_context.offset()}")
    program = compile_topology(builder, "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    rows = [("a", "v0", 0), ("b", "v1", 5), ("c", "v2", 30), ("a", "v3", 31), ("d", "v4", 60)]
    frame = pd.DataFrame({
        "key": [key.encode() for key, _, _ in rows], "value": [value.encode() for _, value, _ in rows],
        "topic": ["in"] * len(rows), "partition": [1] * len(rows), "offset": [100 + i for i in range(len(rows))],
        "timestamp": [None] * len(rows), "event_time": [t for _, _, t in rows], "merge_time": [t for _, _, t in rows],
        "seq": list(range(len(rows))), "stream_time": [max(t for _, _, t in rows[:i + 1]) for i in range(len(rows))],
        "stream_time_before": [-1] + [max(t for _, _, t in rows[:i]) for i in range(1, len(rows))],
    })
    out, _ = program.process_task_batch(frame, None)
    out = out.sort_values("emit_order", kind="stable")
    assert list(zip(out["topic"], out["value"])) == [
        ("out-100", b"v0@1/100"), ("out-101", b"v1@1/101"),  # evicted by c at offset 102
        ("out-102", b"v2@1/102"), ("out-103", b"v3@1/103"),  # evicted by d at offset 104
    ]
