"""A worker run rides through a broker restart: the broker stops for ten seconds and comes back,
and the run's task pauses, then goes on; nothing is lost or counted twice, and the run does not fail.

The worker run is the app's worker job with the tags the lag sensor gives it, executed against a
real (temporary) Dagster instance in this process (on the test's SparkSession: a subprocess would
cost a JVM start), so everything the run does through the outage is real: its task's query, its
reports (end offsets and lag read from Kafka), its heartbeat and held tasks, its events. The lag
sensor gives the run its tags, ticks (and fails in one line) while the broker is down, and leaves
the run alone after it.

The broker is this test's own (the session's is never stopped): a KRaft broker in a temporary
directory, stopped and started again on the same ports and data.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import dagster as dg
import pytest

from sensor_ticks import tick_sensor
from dagster_kstreams.kafka.admin import KafkaAdmin, KafkaAdminError, TopicPartition
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.local.broker import LocalBroker
from dagster_kstreams.local.processes import free_port
from dagster_kstreams.orchestration.definitions import build_kstreams_definitions
from dagster_kstreams.orchestration.protocol import (
    TAG_TASKS,
    TAG_WORKER,
    parse_tasks,
    read_heartbeats,
    read_held,
    retiring_tags,
)
from dagster_kstreams.orchestration.resources import KafkaResource, KStreamsSparkResource
from dagster_kstreams.orchestration.workers import ElasticWorkers
from dagster_kstreams.topology import StreamsBuilder

pytestmark = pytest.mark.integration

DOWN_SECONDS = 10
APP_ID = "restart"


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


def _until(condition, timeout: float, what: str, worker: threading.Thread) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if not worker.is_alive():
            raise AssertionError(f"the worker run ended while waiting for {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)



def test_a_worker_run_pauses_while_the_broker_restarts_and_then_goes_on_exactly(own_broker, spark, tmp_path):
    bootstrap = own_broker.bootstrap_servers
    admin = KafkaAdmin(bootstrap)
    admin.create_topics({"clicks": 1, "clicks-per-user": 1})
    builder = StreamsBuilder()
    builder.stream("clicks").group_by_key().count().to_stream().to("clicks-per-user")
    # Reports every second (each reads end offsets from Kafka), so the run reports through the outage.
    elastic = ElasticWorkers(heartbeat_interval_seconds=1, heartbeat_timeout_seconds=DOWN_SECONDS,
                             idle_seconds=0.2, report_interval_seconds=1, idle_report_seconds=1)
    defs = build_kstreams_definitions(
        topology=builder, app_id=APP_ID, topic_partitions={"clicks": 1, "clicks-per-user": 1},
        state_location=str(tmp_path / "state"), elastic_workers=elastic,
        resources={"kafka": KafkaResource(bootstrap_servers=bootstrap), "pyspark": KStreamsSparkResource(master="local[2]")})
    job = defs.get_job_def(f"{APP_ID}_workers")

    def committed() -> int:
        return admin.committed_offsets(APP_ID, ["clicks"]).get(TopicPartition("clicks", 0), 0)

    before, after = _records(0, 100), _records(100, 100)
    produce(bootstrap, "clicks", before)
    with dg.instance_for_test() as instance:
        tick = tick_sensor(defs, instance, None)
        (request,) = tick.run_requests  # worker-0 with the app's one task
        assert parse_tasks(request.tags[TAG_TASKS]) == {"0_0"}
        results = []
        worker = threading.Thread(target=lambda: results.append(
            job.execute_in_process(instance=instance, tags=request.tags, raise_on_error=False)), daemon=True)
        worker.start()
        try:
            _until(lambda: committed() == len(before), 120, "the first records processed", worker)
            (run,) = instance.get_runs(dg.RunsFilter(job_name=job.name))

            own_broker.stop()
            down_at = time.monotonic()
            # A tick while the broker is down fails in one line (the daemon ticks again later) and
            # touches no run.
            with pytest.raises(KafkaAdminError, match=r"^Kafka at \S+ is unreachable \(.*\)[^\n]*$"):
                tick_sensor(defs, instance, tick.cursor)
            assert instance.get_run_by_id(run.run_id).status is dg.DagsterRunStatus.STARTED
            time.sleep(max(0.0, DOWN_SECONDS - (time.monotonic() - down_at)))
            own_broker.start()  # same ports, same data
            produce(bootstrap, "clicks", after)
            _until(lambda: committed() == len(before) + len(after), 120, "the records sent after the restart processed",
                   worker)

            # A pause, not a failed run: still running, still holding its task, still beating, and the
            # lag sensor's next tick sees it so (nothing launched, nothing marked failed).
            assert instance.get_run_by_id(run.run_id).status is dg.DagsterRunStatus.STARTED
            assert read_held(instance, [run.run_id])[run.run_id] == {"0_0"}
            assert time.time() - read_heartbeats(instance, [run.run_id])[run.run_id] < DOWN_SECONDS
            assert tick_sensor(defs, instance, tick.cursor).run_requests == []
            assert instance.get_run_by_id(run.run_id).status is dg.DagsterRunStatus.STARTED
        finally:  # retired whatever happened, so that no query outlives the test on the shared session
            for run in instance.get_runs(dg.RunsFilter(job_name=job.name)):
                instance.add_run_tags(run.run_id, retiring_tags())  # what the sensor does on scale-down
            worker.join(timeout=120)
        assert not worker.is_alive(), "the retired worker run did not end"
        (result,) = results
        assert result.success and instance.get_run_by_id(run.run_id).status is dg.DagsterRunStatus.SUCCESS
        assert result.dagster_run.tags[TAG_WORKER] == "worker-0"
        reports = instance.fetch_materializations(dg.AssetKey([APP_ID, "subtopology_0"]), limit=1000).records
        reported = sum(record.asset_materialization.metadata["records_in"].value for record in reports)
        assert reported == len(before) + len(after)  # every record reported once, through the outage too
    expected = Counter(key.decode() for key, _ in before + after)
    counts = final_values(read_topic(bootstrap, "clicks-per-user"), bytes.decode,
                          lambda value: int.from_bytes(value, "big", signed=True))
    assert counts == dict(expected)  # nothing lost, nothing counted twice
    assert admin.lag(APP_ID, ["clicks"]) == {("clicks", 0): 0}
