"""The stream-global-table join's rules without a broker (the table's contents given; the real
table is read from Kafka in tests/test_global_topic.py, the whole join compared with Kafka Streams
in tests/test_equivalence_global.py): what each join type drops, what reaches the joiner."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dagster_kstreams.processors.global_joins import GlobalTable, StreamGlobalTableJoin
from dagster_kstreams.processors.records import Output, RecordContext
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import JoinWindows, Named, StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes


class _Contents(GlobalTable):
    """A global table whose contents are given (what a caught-up replica holds)."""

    def __init__(self, contents: dict):
        super().__init__({}, "profiles", Serdes.String(), Serdes.String())
        self.contents = contents

    def get(self, key):
        return self.contents.get(key)


def _outputs(join_type: str, records):
    builder = StreamsBuilder()
    profiles = builder.global_table("profiles")
    joiner = lambda key, click, profile: f"{key}|{click}|{profile}"  # noqa: E731
    stream = builder.stream("clicks")
    joined = (stream.join(profiles, lambda key, click: click, joiner) if join_type == "inner"
              else stream.left_join(profiles, lambda key, click: click, joiner, Named.as_("left")))
    joined.to("out")
    program = compile_topology(builder, "app", kafka_config={"bootstrap.servers": "unused:9"}).program(1)
    join = next(node for node in program.nodes if isinstance(node, StreamGlobalTableJoin))
    join.table = _Contents({"u1": "fr"})
    out = Output()
    for offset, (key, value) in enumerate(records):
        program.process_record(RecordContext("clicks", 0, offset, 0), None if key is None else key.encode(),
                               None if value is None else value.encode(), out, None)
    return [value.decode() for value in out.value]


RECORDS = [("k", "u1"), ("k", "u2"), ("k", None), (None, "u1"), (None, "u2"), ("k", ""), (None, None)]


@pytest.mark.parametrize("join_type, expected", [
    # a null value is dropped; an inner join drops a missing mapped key; a null stream key is no reason
    ("inner", ["k|u1|fr", "None|u1|fr"]),
    ("left", ["k|u1|fr", "k|u2|None", "None|u1|fr", "None|u2|None", "k||None"]),
])
def test_what_each_join_type_drops(join_type, expected):
    assert _outputs(join_type, RECORDS) == expected


def test_a_null_mapped_key_is_dropped_by_an_inner_join_and_joined_with_none_by_a_left_join():
    builder = StreamsBuilder()
    profiles = builder.global_table("profiles")
    builder.stream("clicks").left_join(profiles, lambda key, click: None, lambda click, profile: f"{click}+{profile}") \
        .to("out")
    program = compile_topology(builder, "app").program(1)
    next(node for node in program.nodes if isinstance(node, StreamGlobalTableJoin)).table = _Contents({})
    out = Output()
    program.process_record(RecordContext("clicks", 0, 0, 0), b"k", b"v", out, None)
    assert out.value == [b"v+None"]


def test_a_global_join_may_feed_a_stream_stream_join_in_its_sub_topology():
    """It forwards under the stream record's key, with its timestamp, while that record is processed:
    the join's buffers stay in the source key's group (compared with Kafka Streams in
    tests/test_equivalence_global_stream_joins.py)."""
    builder = StreamsBuilder()
    profiles = builder.global_table("profiles")
    builder.stream("orders").left_join(profiles, lambda key, order: order, lambda order, profile: order) \
        .outer_join(builder.stream("payments"), lambda order, payment: order,
                    JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=3))).to("out")
    program = compile_topology(builder, "app", kafka_config={"bootstrap.servers": "unused:9"}).program(1)
    assert program.task_grouped and any(isinstance(node, StreamGlobalTableJoin) for node in program.nodes)
