"""Timestamp extractors without Spark: the built-ins (Kafka Streams' FailOnInvalidTimestamp,
LogAndSkipOnInvalidTimestamp, UsePartitionTimeOnInvalidTimestamp, WallclockTimestampExtractor),
Consumed's static and fluent forms, and the extraction a task runs on its source records
(processors/timestamps.py): deserialized records, partition time, negative results, failures.
The extracted timestamps' effect on windows and joins is compared with Kafka Streams in
tests/test_equivalence_global.py."""

from __future__ import annotations

import time

import pytest

from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.processors.timestamps import SourceTimestamps, source_timestamps
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import (
    ConsumerRecord, Consumed, FailOnInvalidTimestamp, LogAndSkipOnInvalidTimestamp, StreamsBuilder,
    UsePartitionTimeOnInvalidTimestamp, WallclockTimestampExtractor,
)
from dagster_kstreams.topology.serdes import Serdes
from dagster_kstreams.topology.timestamp_extractors import StreamsTimestampError


def _record(timestamp: int, value="v") -> ConsumerRecord:
    return ConsumerRecord("t", 0, 7, "k", value, timestamp)


def test_built_in_extractors_on_valid_and_negative_timestamps():
    assert FailOnInvalidTimestamp().extract(_record(5), -1) == 5
    with pytest.raises(StreamsTimestampError, match="topic 't' partition 0 offset 7 has an invalid"):
        FailOnInvalidTimestamp().extract(_record(-3), 10)
    assert LogAndSkipOnInvalidTimestamp().extract(_record(-3), 10) == -3  # negative: the record is dropped
    assert UsePartitionTimeOnInvalidTimestamp().extract(_record(-3), 10) == 10
    with pytest.raises(StreamsTimestampError, match="partition time is unknown"):
        UsePartitionTimeOnInvalidTimestamp().extract(_record(-3), -1)
    before = int(time.time() * 1000)
    assert before <= WallclockTimestampExtractor().extract(_record(5), -1) <= int(time.time() * 1000)


def test_consumed_takes_an_extractor_statically_or_fluently_and_refuses_anything_else():
    wall = WallclockTimestampExtractor()
    assert Consumed.with_timestamp_extractor(wall).timestamp_extractor is wall
    named = Consumed.as_("in").with_timestamp_extractor(wall)
    assert named.processor_name == "in" and named.timestamp_extractor is wall
    with pytest.raises(TypeError, match="extract\\(record, partition_time\\) or be a callable"):
        Consumed.with_timestamp_extractor(42)


def _extraction(extractor) -> SourceTimestamps:
    builder = StreamsBuilder()
    builder.stream("events", Consumed.with_(Serdes.String(), Serdes.String()).with_timestamp_extractor(extractor)) \
        .to("out")
    builder.stream("other").to("out2")
    return source_timestamps(compile_topology(builder, "app").program(0))


def test_extraction_sees_deserialized_records_and_keeps_partition_time_per_partition():
    seen = []

    def in_value(record, partition_time):
        seen.append((record.partition, record.key, record.value, record.headers, partition_time))
        return int(record.value)

    extraction = _extraction(in_value)
    partition_times: dict = {}
    times = extraction.extract(
        ["events"] * 4, [0, 1, 0, 0], [0, 0, 1, 2], [b"a", b"b", None, b"a"], [b"50", b"70", b"-1", b"40"],
        [1, 2, 3, 4], [None, [{"key": "h", "value": b"x"}], None, None], partition_times)
    assert times == [50, 70, -1, 40]
    # each partition's time is the largest timestamp extracted from it so far; a negative one is not counted
    assert [partition_time for *_, partition_time in seen] == [-1, -1, 50, 50]
    assert seen[0][1:3] == ("a", "50") and seen[1][3] == (("h", b"x"),) and seen[2][1] is None
    assert partition_times == {("events", 0): 50, ("events", 1): 70}


def test_extraction_leaves_other_topics_and_undecodable_records_their_own_timestamps():
    class Failing:
        def deserialize(self, data):
            raise ValueError("bad bytes")

    extraction = _extraction(lambda record, partition_time: 99)
    assert extraction.extract(["other", "events"], [0, 0], [0, 0], [None, None], [b"x", b"y"], [5, 6],
                              [None, None], {}) == [5, 99]
    extract, key_serde, _ = extraction.by_topic["events"]
    extraction.by_topic["events"] = (extract, key_serde, Failing())
    assert extraction.extract(["events"], [0], [0], [None], [b"y"], [6], [None], {}) == [6]


def test_an_extractor_failure_names_the_record():
    extraction = _extraction(lambda record, partition_time: int(record.value))
    with pytest.raises(ProcessingError, match="timestamp extractor of topic 'events' failed on the record at "
                                              "partition 1 offset 4: ValueError"):
        extraction.extract(["events"], [1], [4], [None], [b"not a number"], [6], [None], {})


def test_a_topology_without_extractors_needs_no_extraction():
    builder = StreamsBuilder()
    builder.stream("events").to("out")
    assert source_timestamps(compile_topology(builder, "app").program(0)) is None
