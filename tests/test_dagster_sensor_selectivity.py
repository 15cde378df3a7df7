"""What the lag sensor gives the policy to bound a downstream sub-topology's input rate: which
sub-topologies feed which, and the records each task report wrote for each reader (no broker: the
reports are materializations on a temporary instance)."""

from __future__ import annotations

import dagster as dg

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.sensors import records_out_by_reader, throughput_samples, upstreams
from dagster_kstreams.scaling import subtopology_of

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
