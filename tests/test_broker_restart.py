"""A running task rides through a broker restart: the broker stops for ten seconds and comes back,
and the task pauses, then goes on; nothing is lost or counted twice, and the run does not fail.

The broker is this test's own (the session's is never stopped): a KRaft broker in a temporary
directory, stopped and started again on the same ports and data.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.local.broker import LocalBroker, free_port
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import StreamsBuilder

pytestmark = pytest.mark.integration

DOWN_SECONDS = 10


@pytest.fixture
def own_broker(tmp_path):
    port, controller_port = free_port(), free_port()
    while controller_port == port:
        controller_port = free_port()
    broker = LocalBroker(port=port, controller_port=controller_port, state_dir=tmp_path / "broker",
                         stop_with_parent=True)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def _records(start: int, count: int) -> list[tuple[bytes, bytes]]:
    return [(f"k{i % 7}".encode(), b"x") for i in range(start, start + count)]


def _until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


def test_a_running_task_pauses_while_the_broker_restarts_and_then_goes_on_exactly(own_broker, spark, tmp_path):
    bootstrap = own_broker.bootstrap_servers
    admin = KafkaAdmin(bootstrap)
    admin.create_topics({"clicks": 1, "clicks-per-user": 1})
    builder = StreamsBuilder()
    builder.stream("clicks").group_by_key().count().to_stream().to("clicks-per-user")
    runner = TaskRunner(builder.build(), "restart", bootstrap, state_location=str(tmp_path / "state"), spark=spark)

    before, after = _records(0, 100), _records(100, 100)
    produce(bootstrap, "clicks", before)
    running = runner.start_task("0_0")
    try:
        _until(lambda: sum(running.processed.values()) == len(before), 60, "the first records processed")
        own_broker.stop()
        time.sleep(DOWN_SECONDS)
        own_broker.start()  # same ports, same data
        produce(bootstrap, "clicks", after)
        _until(lambda: sum(running.processed.values()) == len(before) + len(after) or not running.active,
               runner.task_timeout_s, "the records sent after the restart processed")
        assert running.failure() is None and running.active  # a pause, not a failed run
    finally:
        running.stop()
    assert running.failure() is None
    expected = Counter(key.decode() for key, _ in before + after)
    counts = final_values(read_topic(bootstrap, "clicks-per-user"), bytes.decode,
                          lambda value: int.from_bytes(value, "big", signed=True))
    assert counts == dict(expected)  # nothing lost, nothing counted twice
    assert admin.lag("restart", ["clicks"]) == {("clicks", 0): 0}
