"""The asset graph a topology becomes (no broker, no Spark): keys, partitions, partition mappings,
translator overrides, load-time errors, and the Kafka resource's handling of secrets."""


from datetime import timedelta

import dagster as dg
import pytest
from dagster.components.testing import create_defs_folder_sandbox
from pyspark import cloudpickle

from dagster_kstreams import DagsterKStreamsTranslator, KafkaResource, kstreams_assets
from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.component import KStreamsComponent, load_topology
from dagster_kstreams.orchestration.definitions import build_kstreams_definitions
from dagster_kstreams.orchestration.execution import task_runner
from dagster_kstreams.orchestration.resources import KStreamsSparkResource
from dagster_kstreams.orchestration.translator import KStreamsAssetKind
from dagster_kstreams.spark.compile import UnsupportedTopologyError
from dagster_kstreams.topology import (
    BufferConfig, CopartitionError, JoinWindows, Materialized, Repartitioned, StreamsBuilder, Suppressed,
)

import definitions
from assets import click_enrichment, profile_regions, users_per_country


def _resolved_graph(assets):
    resources = {"kafka": KafkaResource(), "pyspark": KStreamsSparkResource()}  # nothing connects at load
    return dg.Definitions(assets=assets, resources=resources).resolve_asset_graph()


def _specs_by_key(assets) -> dict[dg.AssetKey, dg.AssetSpec]:
    specs = {}
    for item in assets:
        for spec in (item.specs if isinstance(item, dg.AssetsDefinition) else [item]):
            specs[spec.key] = spec
    return specs


def test_users_per_country_graph_and_partition_mappings():
    assets = kstreams_assets(topology=users_per_country.build_topology(), app_id="upc",
                             topic_partitions={"users": 4, "users-per-country": 3})
    specs = _specs_by_key(assets)
    source, sink = dg.AssetKey(["kafka", "users"]), dg.AssetKey(["kafka", "users_per_country"])
    sub0, sub1 = dg.AssetKey(["upc", "subtopology_0"]), dg.AssetKey(["upc", "subtopology_1"])
    repartition = dg.AssetKey(["upc", "users_per_country_store_repartition"])
    store = dg.AssetKey(["upc", "store", "users_per_country_store"])
    assert set(specs) == {source, sink, sub0, sub1, repartition, store}

    def partitions(key):
        return specs[key].partitions_def.get_partition_keys()

    # Tasks = largest source partition count; the repartition topic inherits the upstream task count.
    assert partitions(sub0) == partitions(sub1) == partitions(repartition) == ["0", "1", "2", "3"]
    assert partitions(sink) == ["0", "1", "2"]
    assert specs[repartition].metadata["dagster_kstreams/topic"] == "upc-users-per-country-store-repartition"

    def mapping(child, parent):
        (dep,) = [dep for dep in specs[child].deps if dep.asset_key == parent]
        return dep.partition_mapping

    # Task p reads partition p of its inputs; any task may write any partition of its outputs.
    assert isinstance(mapping(sub0, source), dg.IdentityPartitionMapping)
    assert isinstance(mapping(repartition, sub0), dg.AllPartitionMapping)
    assert isinstance(mapping(sub1, repartition), dg.IdentityPartitionMapping)
    assert isinstance(mapping(sink, sub1), dg.AllPartitionMapping)
    assert {dep.asset_key for dep in specs[store].deps} == {repartition}

    # Dagster resolves the mappings the same way: partition 2 of the repartition topic may hold
    # records of every upstream task, and task 2 downstream reads exactly that partition.
    graph = _resolved_graph(assets)
    upstream = graph.get_parent_partition_keys_for_child("2", parent_asset_key=sub0, child_asset_key=repartition)
    assert sorted(upstream.partitions_subset.get_partition_keys()) == ["0", "1", "2", "3"]
    downstream = graph.get_parent_partition_keys_for_child("2", parent_asset_key=repartition, child_asset_key=sub1)
    assert list(downstream.partitions_subset.get_partition_keys()) == ["2"]


def test_fixed_repartition_count_gives_the_downstream_subtopology_its_own_task_count():
    builder = StreamsBuilder()
    builder.stream("events").repartition(Repartitioned.number_of_partitions_(6).with_name("spread")) \
        .to("spread-events")
    specs = _specs_by_key(kstreams_assets(topology=builder, app_id="spreader", topic_partitions={"events": 2}))
    assert len(specs[dg.AssetKey(["spreader", "subtopology_0"])].partitions_def.get_partition_keys()) == 2
    assert len(specs[dg.AssetKey(["spreader", "subtopology_1"])].partitions_def.get_partition_keys()) == 6
    # An undeclared output topic gets as many partitions as its writer has tasks.
    assert len(specs[dg.AssetKey(["kafka", "spread_events"])].partitions_def.get_partition_keys()) == 6


class TeamTranslator(DagsterKStreamsTranslator):
    def get_asset_spec(self, props):
        spec = super().get_asset_spec(props)
        if props.kind is KStreamsAssetKind.SUBTOPOLOGY:
            spec = spec.replace_attributes(key=dg.AssetKey(["streams", props.app_id, f"task_group_{props.subtopology.id}"]))
        # Even a translator that drops deps and partitions cannot break the graph.
        return spec.replace_attributes(owners=["team:streaming"], group_name="streaming", deps=[],
                                       partitions_def=None).merge_attributes(tags={"tier": "gold"})


def test_translator_overrides_keys_groups_owners_and_tags_but_not_the_topology():
    assets = kstreams_assets(topology=users_per_country.build_topology(), app_id="upc",
                             topic_partitions={"users": 2}, translator=TeamTranslator())
    specs = _specs_by_key(assets)
    sub1 = dg.AssetKey(["streams", "upc", "task_group_1"])
    assert sub1 in specs and dg.AssetKey(["upc", "subtopology_1"]) not in specs
    for spec in specs.values():
        assert spec.owners == ["team:streaming"] and spec.group_name == "streaming" and spec.tags["tier"] == "gold"
        assert spec.partitions_def is not None
    repartition = dg.AssetKey(["upc", "users_per_country_store_repartition"])
    assert [dep.asset_key for dep in specs[sub1].deps] == [repartition]
    assert [dep.asset_key for dep in specs[repartition].deps] == [dg.AssetKey(["streams", "upc", "task_group_0"])]
    # The lag checks follow the new keys.
    defs = build_kstreams_definitions(topology=users_per_country.build_topology(), app_id="upc",
                                      topic_partitions={"users": 2}, translator=TeamTranslator())
    check_keys = {key for checks in defs.asset_checks for key in checks.check_keys}
    assert dg.AssetCheckKey(sub1, "lag_within_bound") in check_keys


def test_a_translator_giving_two_parts_one_key_is_an_error_naming_the_key():
    class OneKey(DagsterKStreamsTranslator):
        def get_asset_spec(self, props):
            return super().get_asset_spec(props).replace_attributes(key=dg.AssetKey(["same"]))

    with pytest.raises(ValueError, match=r"the same asset key: \['same'\]"):
        kstreams_assets(topology=users_per_country.build_topology(), app_id="upc", topic_partitions={"users": 2},
                        translator=OneKey())


def test_load_time_errors_name_the_topics_and_counts():
    with pytest.raises(KeyError, match="no partition count given for source topic 'users'"):
        kstreams_assets(topology=users_per_country.build_topology(), app_id="upc", topic_partitions={})
    # Joined without re-keying: clicks and profiles must be co-partitioned.
    builder = StreamsBuilder()
    builder.stream("clicks").join(builder.table("profiles"), lambda click, profile: click).to("out")
    with pytest.raises(CopartitionError, match=r"topic 'clicks' has 2 partitions but topic 'profiles' has 3"):
        KStreamsApp(builder, "joiner", {"clicks": 2, "profiles": 3})


def test_operations_spark_cannot_run_exactly_fail_at_load_naming_the_processor():
    """Definition time, not run time: loading the assets compiles every sub-topology."""
    builder = StreamsBuilder()
    # A map_values' cached store behind a suppression, before a stream-stream join: not compared with
    # Kafka Streams yet.
    builder.table("clicks", Materialized.as_("clicks-store").with_caching_disabled()) \
        .suppress(Suppressed.until_time_limit(timedelta(seconds=1), BufferConfig.unbounded())) \
        .map_values(lambda click: click, Materialized.as_("clicked")) \
        .to_stream() \
        .join(builder.stream("views"), lambda last, view: last,
              JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=10))).to("out")
    with pytest.raises(UnsupportedTopologyError,
                       match=r"application 'custom' cannot run on Spark: table KTABLE-MAPVALUES-\d+ "
                             r"\(clicked\) comes before the stream-stream join "
                             r"KSTREAM-WINDOWED-\d+ in its sub-topology with its record cache on"):
        kstreams_assets(topology=builder, app_id="custom", topic_partitions={"clicks": 2, "views": 2})


def test_click_enrichment_repartition_topic_follows_the_table_it_joins():
    specs = _specs_by_key(kstreams_assets(topology=click_enrichment.build_topology(), app_id="ce",
                                          topic_partitions={"clicks": 2, "profiles": 5}))
    repartition = specs[dg.AssetKey(["ce", "clicks_by_user_repartition"])]
    assert len(repartition.partitions_def.get_partition_keys()) == 5  # co-partitioned with profiles
    # Kafka Streams numbers the table's sub-topology (the join) first; the re-keying one is upstream.
    app = KStreamsApp(click_enrichment.build_topology(), "ce", {"clicks": 2, "profiles": 5})
    assert app.upstream_first() == [1, 0]
    join = specs[dg.AssetKey(["ce", "subtopology_0"])]
    assert {dep.asset_key for dep in join.deps} == {repartition.key, dg.AssetKey(["kafka", "profiles"])}
    assert dg.AssetKey(["ce", "store", "profiles_store"]) in specs


def test_foreign_key_join_topics_are_intermediate_assets_and_the_answers_do_not_close_a_cycle():
    assets = kstreams_assets(topology=profile_regions.build_topology(), app_id="pr",
                             topic_partitions={"profiles": 2, "countries": 3, "profile-regions": 2})
    specs = _specs_by_key(assets)
    registration = specs[dg.AssetKey(["pr", "profile_country_subscription_registration_topic"])]
    response = specs[dg.AssetKey(["pr", "profile_country_subscription_response_topic"])]
    profiles_side, countries_side = specs[dg.AssetKey(["pr", "subtopology_0"])], specs[dg.AssetKey(["pr", "subtopology_1"])]
    # Partitioned as Kafka Streams partitions them: by foreign key with the countries, back by the profiles.
    assert len(registration.partitions_def.get_partition_keys()) == 3
    assert len(response.partitions_def.get_partition_keys()) == 2
    assert registration.metadata["dagster_kstreams/topic"] == "pr-profile-country-subscription-registration-topic"
    assert {dep.asset_key for dep in registration.deps} == {profiles_side.key}
    assert {dep.asset_key for dep in countries_side.deps} == {registration.key, dg.AssetKey(["kafka", "countries"])}
    assert {dep.asset_key for dep in response.deps} == {countries_side.key}
    # The answers go back to the profiles' sub-topology, which Dagster cannot draw (no cycles).
    assert {dep.asset_key for dep in profiles_side.deps} == {dg.AssetKey(["kafka", "profiles"])}
    assert "foreign-key join" in registration.description and "read back" in response.description
    graph = _resolved_graph(assets)
    assert graph.toposorted_asset_keys.index(profiles_side.key) < graph.toposorted_asset_keys.index(response.key)


def test_example_definitions_load_without_a_broker():
    keys = {key.to_user_string() for key in definitions.defs.resolve_all_asset_keys()}
    for app in ("users_per_country", "word_count", "click_enrichment", "profile_regions"):
        assert f"{app}/subtopology_0" in keys and f"{app}/subtopology_1" in keys
    assert {"users_per_country/users_per_country_store_repartition", "word_count/word_counts_store_repartition",
            "click_enrichment/clicks_by_user_repartition",
            "profile_regions/profile_country_subscription_registration_topic",
            "profile_regions/profile_country_subscription_response_topic",
            # The global table and the foreign-key join together: sub-topology 0 is the global store.
            "click_regions/click_user_subscription_registration_topic",
            "click_regions/click_user_subscription_response_topic", "click_regions/subtopology_1",
            "click_regions/subtopology_2", "kafka/countries"} <= keys
    assert "click_regions/subtopology_0" not in keys


def test_kafka_secrets_come_from_the_environment_and_are_never_logged(monkeypatch):
    secret = "s3cr3t-value-never-logged"
    monkeypatch.setenv("TEST_KAFKA_PASSWORD", secret)
    kafka = KafkaResource(bootstrap_servers="broker:9093", security_protocol="SASL_SSL", sasl_mechanism="PLAIN",
                          sasl_username="streams", sasl_password=dg.EnvVar("TEST_KAFKA_PASSWORD"),
                          client_config={"client.id": "dagster-kstreams"})

    @dg.asset
    def uses_kafka(context: dg.AssetExecutionContext, kafka: KafkaResource) -> dg.MaterializeResult:
        settings = kafka.client_settings()
        assert settings["sasl.password"] == secret
        assert settings["security.protocol"] == "SASL_SSL" and settings["client.id"] == "dagster-kstreams"
        context.log.info(kafka.describe_safely())
        return dg.MaterializeResult(metadata={"kafka": kafka.describe_safely()})

    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize([uses_kafka], resources={"kafka": kafka}, instance=instance)
        assert result.success
        logged = [str(record.user_message) + str(record.dagster_event) for record in
                  instance.all_logs(result.run_id)]
        assert any("sasl.password" in line for line in logged)  # says which settings are set
        assert not any(secret in line for line in logged)
        assert secret not in str(instance.get_run_by_id(result.run_id).run_config)


def test_component_declared_in_yaml_builds_the_same_assets():
    with create_defs_folder_sandbox() as sandbox:
        sandbox.scaffold_component(
            KStreamsComponent, defs_path="users_per_country",
            defs_yaml_contents={
                "type": "dagster_kstreams.orchestration.component.KStreamsComponent",
                "attributes": {"topology": "assets.users_per_country:build_topology", "app_id": "upc-yaml",
                               "topic_partitions": {"users": 2}, "lag_bound": 7, "task_timeout_s": 300},
            },
        )
        with sandbox.build_all_defs() as defs:
            keys = {
                spec.key.to_user_string() for item in defs.assets for spec in
                (item.specs if isinstance(item, dg.AssetsDefinition) else [item])}
            checks = [key for checks in defs.asset_checks for key in checks.check_keys]
    assert {"upc_yaml/subtopology_0", "upc_yaml/subtopology_1", "upc_yaml/users_per_country_store_repartition",
            "kafka/users", "kafka/users_per_country", "upc_yaml/store/users_per_country_store"} == keys
    assert len(checks) == 4  # lag_within_bound and freshness of each sub-topology


def test_task_timeout_reaches_the_runner_of_worker_runs_and_materializations_and_is_checked_at_load():
    app = KStreamsApp(users_per_country.build_topology(), "upc", {"users": 2}, task_timeout_s=300)
    runner = task_runner(app, KafkaResource(bootstrap_servers="broker:9092"), spark=None)
    assert runner.task_timeout_s == 300  # its clients wait out a broker that is away that long, and so do a worker's reports
    default = task_runner(KStreamsApp(users_per_country.build_topology(), "upc", {"users": 2}),
                          KafkaResource(bootstrap_servers="broker:9092"), spark=None)
    assert default.task_timeout_s == 120
    with pytest.raises(ValueError, match=r"^task_timeout_s of 'upc' must be > 0, got 0$"):
        KStreamsApp(users_per_country.build_topology(), "upc", {"users": 2}, task_timeout_s=0)
    # The component's YAML field reaches the app (checked when the definitions load).
    assert "task_timeout_s of 'upc' must be > 0, got 0.0" in _component_load_errors({"task_timeout_s": 0})


def test_repartition_purge_interval_reaches_the_runner_from_the_app_and_the_component_and_is_checked():
    app = KStreamsApp(users_per_country.build_topology(), "upc", {"users": 2}, repartition_purge_interval_s=600)
    assert task_runner(app, KafkaResource(bootstrap_servers="broker:9092"), spark=None).repartition_purge_interval_s == 600
    default = task_runner(KStreamsApp(users_per_country.build_topology(), "upc", {"users": 2}),
                          KafkaResource(bootstrap_servers="broker:9092"), spark=None)
    assert default.repartition_purge_interval_s == 30  # Kafka Streams' repartition.purge.interval.ms
    with pytest.raises(ValueError, match=r"^repartition_purge_interval_s of 'upc' must be >= 0, got -1$"):
        KStreamsApp(users_per_country.build_topology(), "upc", {"users": 2}, repartition_purge_interval_s=-1)
    # The component's YAML field reaches the app (checked when the definitions load).
    assert ("repartition_purge_interval_s of 'upc' must be >= 0, got -1.0"
            in _component_load_errors({"repartition_purge_interval_s": -1}))


def _component_load_errors(attributes: dict) -> list[str]:
    """The chain of errors (each one's cause) of loading a component of the users-per-country topology with
    ``attributes``: Dagster's error names the defs.yaml, its cause the field."""
    with create_defs_folder_sandbox() as sandbox:
        sandbox.scaffold_component(KStreamsComponent, defs_path="upc", defs_yaml_contents={
            "type": "dagster_kstreams.orchestration.component.KStreamsComponent",
            "attributes": {"topology": "assets.users_per_country:build_topology", "app_id": "upc",
                           "topic_partitions": {"users": 2}, **attributes}})
        with pytest.raises(Exception) as raised:
            with sandbox.build_all_defs():
                pass
    causes = [raised.value]
    while causes[-1].__cause__ is not None:
        causes.append(causes[-1].__cause__)
    return [str(cause) for cause in causes]


def test_component_names_a_topology_that_cannot_be_loaded():
    with pytest.raises(ValueError, match="must look like 'package.module:attribute'"):
        load_topology("assets.users_per_country")
    with pytest.raises(ValueError, match="cannot load topology 'assets.users_per_country:nothing'"):
        load_topology("assets.users_per_country:nothing")
    assert len(load_topology("assets.users_per_country:build_topology").subtopologies) == 2


def test_spark_gets_the_java_spelling_of_sasl_and_ssl_settings(monkeypatch):
    monkeypatch.setenv("TEST_KAFKA_PASSWORD", 'pa"ss')
    kafka = KafkaResource(bootstrap_servers="broker:9094", security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                          sasl_username="streams", sasl_password=dg.EnvVar("TEST_KAFKA_PASSWORD"),
                          ssl_ca_location="/etc/kafka/ca.pem", java_client_config={"ssl.endpoint.identification.algorithm": ""})
    kafka = kafka.process_config_and_initialize()  # what a run sees: the EnvVar resolved
    java = kafka.java_client_settings()
    assert java["sasl.jaas.config"] == ('org.apache.kafka.common.security.scram.ScramLoginModule required '
                                        'username="streams" password="pa\\"ss";')
    assert (java["ssl.truststore.type"], java["ssl.truststore.location"]) == ("PEM", "/etc/kafka/ca.pem")
    assert java["ssl.endpoint.identification.algorithm"] == "" and "sasl.password" not in java
    assert kafka.client_settings()["sasl.password"] == 'pa"ss'  # librdkafka's spelling for the admin client

    # The runner's admin client gets librdkafka's settings, Spark's source and sink the Java ones.
    plain = KafkaResource(bootstrap_servers="broker:9094", security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                          sasl_username="u", sasl_password="p")
    app = KStreamsApp(users_per_country.build_topology(), "upc", {"users": 2})
    runner = task_runner(app, plain, spark=None)
    assert runner.kafka_config["sasl.username"] == "u"
    assert runner.spark_kafka_options() == {
        "kafka.bootstrap.servers": "broker:9094", "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";',
    }


def test_project_modules_defining_topology_functions_are_shipped_to_spark_by_value():
    app = KStreamsApp(users_per_country.build_topology(), "upc", {"users": 2})
    task_runner(app, KafkaResource(bootstrap_servers="broker:9092"), spark=None)
    # country_of lives in assets/users_per_country.py, which Spark workers on a cluster cannot import.
    assert "assets.users_per_country" in cloudpickle.list_registry_pickle_by_value()
    assert not any(name.startswith(("json", "dagster_kstreams")) for name in cloudpickle.list_registry_pickle_by_value())


def test_a_global_tables_topic_is_an_upstream_asset_read_whole_by_every_task():
    builder = StreamsBuilder()
    countries = builder.global_table("countries")
    builder.stream("clicks").join(countries, lambda key, click: click.split(",")[1], lambda click, country: country) \
        .to("clicks-with-country")
    assets = kstreams_assets(topology=builder, app_id="gt",
                             topic_partitions={"clicks": 3, "countries": 2, "clicks-with-country": 3})
    specs = _specs_by_key(assets)
    clicks, countries_topic = dg.AssetKey(["kafka", "clicks"]), dg.AssetKey(["kafka", "countries"])
    sub1 = dg.AssetKey(["gt", "subtopology_1"])  # sub-topology 0 is the global store: no asset, no task
    assert dg.AssetKey(["gt", "subtopology_0"]) not in specs
    assert specs[countries_topic].partitions_def.get_partition_keys() == ["0", "1"]
    assert specs[sub1].partitions_def.get_partition_keys() == ["0", "1", "2"]
    deps = {dep.asset_key: dep.partition_mapping for dep in specs[sub1].deps}
    assert isinstance(deps[clicks], dg.IdentityPartitionMapping)
    assert isinstance(deps[countries_topic], dg.AllPartitionMapping)
    assert "for global store" not in specs[sub1].description and "Sub-topology: 1" in specs[sub1].description
    graph = _resolved_graph(assets)
    read = graph.get_parent_partition_keys_for_child("2", parent_asset_key=countries_topic, child_asset_key=sub1)
    assert sorted(read.partitions_subset.get_partition_keys()) == ["0", "1"]


def test_a_global_tables_topic_needs_its_partition_count():
    builder = StreamsBuilder()
    builder.stream("clicks").join(builder.global_table("countries"), lambda key, click: click,
                                  lambda click, country: country).to("out")
    with pytest.raises(KeyError, match="global table's topic 'countries'"):
        kstreams_assets(topology=builder, app_id="gt", topic_partitions={"clicks": 1, "out": 1})
