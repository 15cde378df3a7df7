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

Modules, each importing only those listed above it:

* :mod:`.translator` — :class:`DagsterKStreamsTranslator` (override any ``get_*`` hook);
* :mod:`.resources` — :class:`KafkaResource`, :class:`KStreamsSparkResource` (dagster-pyspark);
* :mod:`.app` — :class:`KStreamsApp`, the app model: a topology bound to its app id and declared
  partition counts (an ``ApplicationTopology``, the owner of its facts) and its asset specs;
* :mod:`.protocol` — what the lag sensor and worker runs tell each other (run tags, held tasks,
  heartbeats, the task list format);
* :mod:`.start_timing` — where a worker run's start goes, stage by stage (recorded by the worker);
* :mod:`.execution` — what materializing partition ``p`` of sub-topology ``s`` does (runs task
  ``s_p`` on Spark and reports it); shared with worker runs;
* :mod:`.assets` — :func:`kstreams_assets`, and :func:`assets_of` for several apps (each topic once);
* :mod:`.checks` — the health checks: ``lag_within_bound`` and ``freshness``;
* :mod:`.workers` — the worker job (a run owning the tasks its tags name) and :class:`ElasticWorkers`,
  passed as ``build_kstreams_definitions(..., elastic_workers=ElasticWorkers(...))``;
* :mod:`.sensors` — the lag sensor that launches, retags and retires worker runs (and reports health);
* :mod:`.definitions` — :func:`kstreams_definitions` (several apps, one graph) and
  :func:`build_kstreams_definitions` (one app): assets, checks, and the elastic workers' job and
  sensor as one ``Definitions``;
* :mod:`.component` — :class:`KStreamsComponent` for ``dg`` YAML, with a ``translation:`` field.
"""
