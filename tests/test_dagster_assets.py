"""The example topologies as Dagster assets, materialized partition by partition on a real
Dagster instance, a real broker and real Spark: events, metadata, and the data written."""

from __future__ import annotations

import json
import random
from collections import Counter

import dagster as dg
import pytest

from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.orchestration.checks import FRESHNESS_CHECK_NAME, LAG_CHECK_NAME
from dagster_kstreams.orchestration.definitions import kstreams_definitions
from dagster_kstreams.orchestration.resources import KafkaResource, KStreamsSparkResource

from assets import click_enrichment, top_words, users_per_country, word_count

pytestmark = pytest.mark.integration

COUNTRIES = ["fr", "fr", "fr", "de", "de", "it", "es", "pt", "nl"]


@pytest.fixture(scope="module")
def instance():
    with dg.DagsterInstance.ephemeral() as instance:
        yield instance


@pytest.fixture
def resources(kafka_bootstrap, spark):
    # The session fixture's SparkSession is running: the resource gets it back (one per process).
    return {"kafka": KafkaResource(bootstrap_servers=kafka_bootstrap), "pyspark": KStreamsSparkResource(master="local[2]")}


def _with(resources, defs: dg.Definitions) -> dg.Definitions:
    return dg.Definitions.merge(defs, dg.Definitions(resources=resources))


def _long(data: bytes) -> int:
    return int.from_bytes(data, "big", signed=True)


def _assets_def(defs: dg.Definitions, key: dg.AssetKey) -> dg.AssetsDefinition:
    return defs.resolve_assets_def(key)


def _materialize(defs, resources, instance, key: dg.AssetKey, partition: int, raise_on_error: bool = True,
                 with_stores: bool = True):
    assets_def = _assets_def(defs, key)  # resolved with the definitions' resources bound
    selection = dg.AssetSelection.assets(*(assets_def.keys if with_stores else [key]))
    return dg.materialize(
        [assets_def], partition_key=str(partition), instance=instance, selection=selection,
        raise_on_error=raise_on_error,
    )


def _events_by_key(result) -> dict[dg.AssetKey, list[dg.AssetMaterialization]]:
    events: dict[dg.AssetKey, list[dg.AssetMaterialization]] = {}
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        events.setdefault(materialization.asset_key, []).append(materialization)
    return events


def _value(materialization: dg.AssetMaterialization, name: str):
    return materialization.metadata[name].value


def _key_of(defs: dg.Definitions, *path: str) -> dg.AssetKey:
    key = dg.AssetKey(list(path))
    assert key in defs.resolve_all_asset_keys(), f"{key.to_user_string()} not in {defs.resolve_all_asset_keys()}"
    return key


def _run_all_tasks(defs, resources, instance, app_key: str, subtopologies: dict[int, int]):
    """Materialize every partition of every sub-topology, upstream first; the run results by task."""
    results = {}
    for subtopology, tasks in subtopologies.items():
        key = _key_of(defs, app_key, f"subtopology_{subtopology}")
        for partition in range(tasks):
            # The last task runs with its sub-topology selected alone (`--select` in the CLI):
            # its stores are still reported.
            results[(subtopology, partition)] = _materialize(defs, resources, instance, key, partition,
                                                             with_stores=partition < tasks - 1)
    return results


def test_users_per_country_partitions_report_tasks_topics_and_stores(
    kafka_bootstrap, kafka_admin, unique_topic, resources, instance, tmp_path
):
    users, per_country, app_id = unique_topic("users"), unique_topic("users-per-country"), unique_topic("upc")
    kafka_admin.create_topic(users, users_per_country.TOPIC_PARTITIONS["users"])
    defs = _with(resources, users_per_country.build_defs(app_id, users, per_country,
                                                         state_location=str(tmp_path / "state"), lag_bound=10))
    app = app_id.replace("-", "_")
    rows = [(f"user{i}".encode(), json.dumps({"user_id": f"user{i}", "name": f"N{i}",
                                             "country": COUNTRIES[i % len(COUNTRIES)]}).encode()) for i in range(90)]
    produce(kafka_bootstrap, users, rows)

    # The lag check fails while the input waits, and says by how much.
    check_job = dg.define_asset_job("lag_checks", selection=dg.AssetSelection.all_asset_checks())
    checks = dg.Definitions.merge(defs, dg.Definitions(jobs=[check_job]))
    before = checks.resolve_job_def("lag_checks").execute_in_process(instance=instance)
    evaluations = {(e.asset_check_evaluation_data.asset_key, e.asset_check_evaluation_data.check_name):
                   e.asset_check_evaluation_data
                   for e in before.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"}
    upstream_check = evaluations[(_key_of(defs, app, "subtopology_0"), LAG_CHECK_NAME)]
    assert not upstream_check.passed
    assert upstream_check.metadata["total_lag"].value == len(rows)
    # Input waits and no task has reported: the freshness check fails as an error, naming the tasks.
    freshness = evaluations[(_key_of(defs, app, "subtopology_0"), FRESHNESS_CHECK_NAME)]
    assert not freshness.passed and freshness.severity is dg.AssetCheckSeverity.ERROR
    assert set(freshness.metadata["stale_tasks"].value) == {"0_0", "0_1"}
    # Nothing waits downstream yet (the repartition topic does not exist): fresh.
    assert evaluations[(_key_of(defs, app, "subtopology_1"), FRESHNESS_CHECK_NAME)].passed
    # The check observes the input topic, partition by partition.
    observations = [e.event_specific_data.asset_observation for e in before.all_events
                    if e.event_type_value == "ASSET_OBSERVATION"]
    assert {o.asset_key for o in observations} == {_key_of(defs, "kafka", users.replace("-", "_"))}
    assert sorted(o.partition for o in observations) == ["0", "1"]
    assert sum(o.metadata["end_offset"].value for o in observations) == len(rows)
    assert sum(o.metadata["lag"].value for o in observations) == len(rows)

    results = _run_all_tasks(defs, resources, instance, app, {0: 2, 1: 2})
    sub0, sub1 = _key_of(defs, app, "subtopology_0"), _key_of(defs, app, "subtopology_1")
    repartition = _key_of(defs, app, "users_per_country_store_repartition")
    store = _key_of(defs, app, "store", "users_per_country_store")
    sink = _key_of(defs, "kafka", per_country.replace("-", "_"))

    records_in = {0: 0, 1: 0}
    upstream_batches = 0
    written = {repartition: 0, sink: 0}
    for (subtopology, partition), result in results.items():
        events = _events_by_key(result)
        (task,) = events[sub0 if subtopology == 0 else sub1]
        assert task.partition == str(partition)
        assert _value(task, "task") == f"{subtopology}_{partition}"
        for name in ("records_in", "records_out", "seconds", "records_per_second", "lag_left", "offsets_from",
                     "offsets_to"):
            assert name in task.metadata, name
        assert _value(task, "lag_left") == 0
        assert _value(task, "offset_to") - _value(task, "offset_from") == _value(task, "records_in")
        assert _value(task, "seconds") > 0
        records_in[subtopology] += _value(task, "records_in")
        upstream_batches += _value(task, "batches") if subtopology == 0 else 0
        if subtopology == 1:
            (store_event,) = events[store]
            assert store_event.partition == str(partition)
        # The topic partitions the task wrote, with the records it added to each.
        # Offsets, as Kafka counts them: under exactly-once (the default) each batch's transaction
        # adds one commit marker to every partition it wrote.
        topic = repartition if subtopology == 0 else sink
        added = sum(_value(event, "records") for event in events.get(topic, []))
        markers = _value(task, "batches") * len(events.get(topic, []))
        assert _value(task, "records_out") <= added <= _value(task, "records_out") + markers
        for event in events.get(topic, []):
            assert _value(event, "written_by_task") == f"{subtopology}_{partition}"
            assert _value(event, "offset_to") - _value(event, "offset_from") == _value(event, "records")
        written[topic] += _value(task, "records_out")

    assert records_in[0] == len(rows)
    # Downstream offsets include the upstream transactions' markers (at most one per batch and partition).
    assert len(rows) <= records_in[1] <= len(rows) + 2 * upstream_batches
    assert written[repartition] == len(rows)  # every user goes through the repartition topic
    expected = Counter(COUNTRIES[i % len(COUNTRIES)] for i in range(len(rows)))
    output = read_topic(kafka_bootstrap, per_country)
    assert written[sink] == len(output)
    assert final_values(output, bytes.decode, _long) == dict(expected)

    # The instance knows which partitions are materialized, including the reported topic partitions.
    assert instance.get_materialized_partitions(sub0) == {"0", "1"}
    assert instance.get_materialized_partitions(sub1) == {"0", "1"}
    assert instance.get_materialized_partitions(repartition) == {"0", "1"}
    assert instance.get_materialized_partitions(sink) == {
        str(record.partition) for record in output}

    after = checks.resolve_job_def("lag_checks").execute_in_process(instance=instance)
    verdicts = [e.asset_check_evaluation_data for e in after.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert len(verdicts) == 4 and all(verdict.passed for verdict in verdicts)


def test_word_count_then_top_words_one_pipeline_of_two_applications(
    kafka_bootstrap, kafka_admin, unique_topic, resources, instance, tmp_path
):
    lines, counts, top = unique_topic("text-lines"), unique_topic("word-counts"), unique_topic("top-words")
    app_id, top_app_id = unique_topic("wc"), unique_topic("tw")
    kafka_admin.create_topic(lines, word_count.TOPIC_PARTITIONS["text-lines"])
    # Loaded together: word count declares its output topic, top words depends on it.
    defs = _with(resources, kstreams_definitions(
        word_count.build_app(app_id, lines, counts, state_location=str(tmp_path / "state")),
        top_words.build_app(top_app_id, counts, top, state_location=str(tmp_path / "state"))))
    app, top_app = app_id.replace("-", "_"), top_app_id.replace("-", "_")
    generator = random.Random(7)
    vocabulary = ["kafka", "streams", "dagster", "spark", "topic", "task", "the", "a"]
    documents = [" ".join(generator.choice(vocabulary) for _ in range(generator.randint(1, 9))).capitalize()
                 for _ in range(40)]
    produce(kafka_bootstrap, lines, [(f"doc{i}".encode(), json.dumps({"doc_id": f"doc{i}", "text": text}).encode())
                                     for i, text in enumerate(documents)])

    results = _run_all_tasks(defs, resources, instance, app, {0: 2, 1: 2})
    expected = Counter(word for text in documents for word in text.lower().split())
    assert final_values(read_topic(kafka_bootstrap, counts), bytes.decode, _long) == dict(expected)
    upstream_out = sum(_value(_events_by_key(results[(0, p)])[_key_of(defs, app, "subtopology_0")][0], "records_out")
                       for p in range(2))
    assert upstream_out == sum(expected.values())  # one repartition record per word
    # Word count's tasks reported the partitions of word-counts they wrote: the topic the second app reads.
    counts_key = _key_of(defs, "kafka", counts.replace("-", "_"))
    assert instance.get_materialized_partitions(counts_key) == {"0", "1"}

    # Task p of top words reads partition p of word-counts, and keeps the words counted MIN_COUNT times or more.
    top_results = _run_all_tasks(defs, resources, instance, top_app, {0: 2})
    read = sum(_value(_events_by_key(top_results[(0, p)])[_key_of(defs, top_app, "subtopology_0")][0], "records_in")
               for p in range(2))
    # Offsets read: the records, plus the commit marker of each word count batch that wrote a partition.
    counting_batches = sum(_value(_events_by_key(results[(1, p)])[_key_of(defs, app, "subtopology_1")][0], "batches")
                           for p in range(2))
    assert len(read_topic(kafka_bootstrap, counts)) <= read <= len(read_topic(kafka_bootstrap, counts)) + 2 * counting_batches
    frequent = {word: count for word, count in expected.items() if count >= top_words.MIN_COUNT}
    assert frequent and final_values(read_topic(kafka_bootstrap, top), bytes.decode, _long) == frequent


def test_click_enrichment_joins_clicks_with_profiles(
    kafka_bootstrap, kafka_admin, unique_topic, resources, instance, tmp_path
):
    clicks, profiles, enriched = unique_topic("clicks"), unique_topic("profiles"), unique_topic("enriched-clicks")
    kafka_admin.create_topics({clicks: 2, profiles: 2})
    app_id = unique_topic("ce")
    defs = _with(resources, click_enrichment.build_defs(app_id, clicks, profiles, enriched,
                                                        state_location=str(tmp_path / "state")))
    app = app_id.replace("-", "_")
    users = {f"user{i}": {"user_id": f"user{i}", "name": f"N{i}", "country": COUNTRIES[i % len(COUNTRIES)],
                          "tier": "gold" if i % 4 == 0 else "free"} for i in range(12)}
    produce(kafka_bootstrap, profiles, [(user.encode(), json.dumps(profile).encode()) for user, profile in users.items()])
    click_rows = [{"click_id": f"c{i}", "user_id": f"user{i % 12}", "url": f"/page/{i % 5}", "ts": 1_700_000_000 + i}
                  for i in range(60)]
    produce(kafka_bootstrap, clicks, [(row["click_id"].encode(), json.dumps(row).encode()) for row in click_rows])

    # Sub-topology 1 re-keys the clicks; sub-topology 0 (the profiles table's) joins.
    _run_all_tasks(defs, resources, instance, app, {1: 2, 0: 2})
    output = [json.loads(record.value) for record in read_topic(kafka_bootstrap, enriched)]
    assert sorted(row["click_id"] for row in output) == sorted(row["click_id"] for row in click_rows)
    for row in output:
        profile = users[row["user_id"]]
        assert (row["name"], row["country"], row["tier"]) == (profile["name"], profile["country"], profile["tier"])


def test_a_partition_count_that_differs_from_the_broker_fails_the_run_naming_both_counts(
    kafka_admin, unique_topic, resources, instance, tmp_path
):
    users, per_country, app_id = unique_topic("users"), unique_topic("users-per-country"), unique_topic("upc")
    kafka_admin.create_topic(users, 5)  # the definitions declare 2
    defs = _with(resources, users_per_country.build_defs(app_id, users, per_country,
                                                         state_location=str(tmp_path / "state")))
    result = _materialize(defs, resources, instance, _key_of(defs, app_id.replace("-", "_"), "subtopology_0"), 0,
                          raise_on_error=False)
    assert not result.success
    (failure,) = [event for event in result.all_events if event.is_step_failure]
    message = str(failure.step_failure_data.error)
    assert f"topic {users!r} has 5 partitions on the broker but 2" in message
