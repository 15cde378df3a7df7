"""What the lag sensor gives the policy to bound a downstream sub-topology's input rate: which
sub-topologies feed which, and the records each task report wrote for each reader (no broker: the
reports are materializations on a temporary instance), and one tick on a real broker."""

from __future__ import annotations

import dagster as dg
import pytest
from sensor_ticks import tick_sensor

from dagster_kstreams.kafka.records import produce
from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.definitions import build_kstreams_definitions
from dagster_kstreams.orchestration.resources import KafkaResource, KStreamsSparkResource
from dagster_kstreams.orchestration.sensors import records_out_by_reader, throughput_samples, upstreams
from dagster_kstreams.orchestration.workers import ElasticWorkers
from dagster_kstreams.scaling import ScalingConfig, subtopology_of
from dagster_kstreams.topology import StreamsBuilder

from assets import users_per_country

APP = KStreamsApp(users_per_country.build_topology(), "upc", {"users": 2})
(REPARTITION,) = APP.application.repartition_topics


def test_the_sub_topology_fed_by_the_repartition_topic_is_bounded_by_its_writer():
    assert upstreams(APP) == {"1": ("0",)}


def test_records_written_count_for_the_sub_topologies_that_read_them():
    sink = APP.application.sink_topics(1)[0]
    assert records_out_by_reader(APP, {REPARTITION: 70, sink: 12}) == {"1": 70}
    assert records_out_by_reader(APP, {}) == {}


def test_a_workers_report_reaches_the_policy_with_what_it_wrote_for_each_reader():
    with dg.instance_for_test() as instance:
        metadata = {"task": dg.MetadataValue.text("0_1"), "records_in": dg.MetadataValue.int(100),
                    "seconds": dg.MetadataValue.float(5.0), "records_out_by_topic": dg.MetadataValue.json(
                        {REPARTITION: 100})}
        instance.report_runless_asset_event(dg.AssetMaterialization(APP.subtopology_key(0), partition="1",
                                                                    metadata=metadata))
        del metadata["records_out_by_topic"]  # a report from before it was read: says nothing
        metadata["task"] = dg.MetadataValue.text("0_0")
        instance.report_runless_asset_event(dg.AssetMaterialization(APP.subtopology_key(0), partition="0",
                                                                    metadata=metadata))
        samples = {sample.task_id: sample for sample in throughput_samples(instance, APP, 0.0)}
    assert samples["0_1"].records_out == {"1": 100} and samples["0_0"].records_out is None
    assert all(subtopology_of(task) == "0" for task in samples)


@pytest.mark.integration
def test_a_tick_caps_the_downstreams_rate_at_the_upstreams_input_rate_times_its_selectivity(
        kafka_bootstrap, kafka_admin, unique_topic, tmp_path):
    """On a real broker: the repartition topic fills at 10x the source's pace (an upstream draining a
    backlog) and the upstream's reports say one record out per record in; the downstream's input
    rate is the source's, and the cap is observed."""
    source, sink, app_id = unique_topic("bound-in"), unique_topic("bound-out"), unique_topic("bound-app")
    kafka_admin.create_topics({source: 2})
    builder = StreamsBuilder()
    builder.stream(source).group_by(lambda _, value: value).count().to_stream().to(sink)
    elastic = ElasticWorkers(scaling=ScalingConfig(max_workers=4, rate_smoothing_seconds=0))
    defs = build_kstreams_definitions(
        topology=builder, app_id=app_id, topic_partitions={source: 2, sink: 2}, create_sink_topics=True,
        state_location=str(tmp_path / "state"), elastic_workers=elastic,
        resources={"kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
                   "pyspark": KStreamsSparkResource(master="local[1]")})
    app = KStreamsApp(builder.build(), app_id, {source: 2, sink: 2})
    (repartition,) = app.application.repartition_topics
    kafka_admin.create_topics({repartition: 2})
    with dg.instance_for_test() as instance:
        result = tick_sensor(defs, instance, None)
        produce(kafka_bootstrap, source, [(f"k{i}".encode(), b"v") for i in range(100)])
        produce(kafka_bootstrap, repartition, [(f"v{i}".encode(), b"1") for i in range(1000)])
        for partition in ("0", "1"):
            instance.report_runless_asset_event(dg.AssetMaterialization(
                app.subtopology_key(0), partition=partition,
                metadata={"task": dg.MetadataValue.text(f"0_{partition}"), "records_in": dg.MetadataValue.int(500),
                          "seconds": dg.MetadataValue.float(5.0),
                          "records_out_by_topic": dg.MetadataValue.json({repartition: 500})}))
        result = tick_sensor(defs, instance, result.cursor)
    observations = {event.asset_key: event.metadata for event in result.asset_events
                    if isinstance(event, dg.AssetObservation)}
    upstream, downstream = observations[app.subtopology_key(0)], observations[app.subtopology_key(1)]
    assert "input_rate_bound" not in upstream and upstream["input_rate"].value > 0
    assert downstream["input_rate_bound"].value == pytest.approx(upstream["input_rate"].value, abs=0.2)
    assert downstream["input_rate"].value == pytest.approx(upstream["input_rate"].value, abs=0.2)
    assert downstream["lag"].value == 1000
