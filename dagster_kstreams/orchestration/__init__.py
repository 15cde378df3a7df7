"""The Dagster layer: a topology becomes partitioned assets.

::

    import dagster as dg
    from dagster_kstreams import (
        KafkaResource, KStreamsSparkResource, StreamsBuilder, build_kstreams_definitions,
    )

    builder = StreamsBuilder()
    builder.stream("users").group_by(lambda user_id, user: json.loads(user)["country"]).count() \\
        .to_stream().to("users-per-country")

    defs = dg.Definitions.merge(
        build_kstreams_definitions(topology=builder.build(), app_id="users-per-country",
                                   topic_partitions={"users": 4}),
        dg.Definitions(resources={
            "kafka": KafkaResource(bootstrap_servers="broker:9092"),
            "pyspark": KStreamsSparkResource(master="local[*]"),
        }),
    )

* :mod:`.translator` — :class:`DagsterKStreamsTranslator` (override ``get_asset_spec``);
* :mod:`.assets` — :func:`kstreams_assets`, :func:`build_kstreams_definitions`, :class:`KStreamsApp`,
  the ``lag_within_bound`` checks;
* :mod:`.execution` — what materializing partition ``p`` of sub-topology ``s`` does (runs task
  ``s_p`` on Spark and reports it); shared with worker runs;
* :mod:`.workers` — the worker job (a run owning the tasks its tags name) and :class:`ElasticWorkers`,
  passed as ``build_kstreams_definitions(..., elastic_workers=ElasticWorkers(...))``;
* :mod:`.sensors` — the lag sensor that launches, retags and retires worker runs;
* :mod:`.resources` — :class:`KafkaResource`, :class:`KStreamsSparkResource` (dagster-pyspark);
* :mod:`.component` — :class:`KStreamsComponent` for ``dg`` YAML.
"""
