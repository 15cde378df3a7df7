"""Example topologies. A module here that builds Dagster definitions exposes them as ``defs``
from this package, and ``definitions.py`` merges them in.

Seven applications: users counted per country, word count, click enrichment (a stream-table join),
profile regions (a foreign-key table-table join), clicks per country and minute (a global table of
profiles, click times from a timestamp extractor), click regions (a foreign-key join, then a global
table), and top words, which reads what word count writes: loaded together by ``kstreams_definitions``,
word count and top words are one lineage graph (``word_count/subtopology_1 -> kafka/word_counts ->
top_words/subtopology_0``). Spark runs through dagster-pyspark: ``DAGSTER_KSTREAMS_SPARK_MASTER``
(default: two task slots per core, ``local[2N]`` on N cores) and ``DAGSTER_KSTREAMS_SPARK_CONF`` (a JSON object of extra ``spark.*`` settings).

Each application has elastic workers: a lag sensor (``<app>_lag_sensor``, running as soon as
the code location loads; ``DAGSTER_KSTREAMS_WORKER_SENSORS=stopped`` leaves them stopped, e.g. to
materialize partitions by hand) launches worker runs of ``<app>_workers`` when lag builds up and
retires them when it has stayed low for three minutes. Idle applications have no worker
(``min_workers=0``). Try it with a burst from the generator (README, "Watching it scale")::

    dagster-kstreams generate users --create-topics --rate 100 --burst-every 180 --burst-seconds 30 --burst-factor 10
"""

import dataclasses
import json
import os

import dagster as dg

from dagster_kstreams.orchestration.definitions import kstreams_definitions
from dagster_kstreams.orchestration.resources import KStreamsSparkResource
from dagster_kstreams.orchestration.workers import ElasticWorkers
from dagster_kstreams.scaling import ScalingConfig
from dagster_kstreams.spark.session import DEFAULT_MASTER

from . import (click_enrichment, click_regions, clicks_per_country, profile_regions, top_words, users_per_country,
               word_count)

SPARK_MASTER_ENV_VAR = "DAGSTER_KSTREAMS_SPARK_MASTER"
SPARK_CONF_ENV_VAR = "DAGSTER_KSTREAMS_SPARK_CONF"

WORKER_SENSORS_ENV_VAR = "DAGSTER_KSTREAMS_WORKER_SENSORS"

# Sized for a laptop: a worker runs one SparkSession; catching up a burst within half a minute at
# the default capacity takes a few of them. A cold worker needs 15-20 s to start (JVM and
# SparkSession, first queries), longer on a busy laptop, so the scale-down window is three minutes: a worker
# launched for a burst is not retired before it has started, nor while the burst's backlog drains.
# Capacity is measured from warm batches only (the first run of each task in a worker is cold), and
# only from batches of 15 s or more: shorter ones (a quiet stream's) are mostly a query's fixed cost.
ELASTIC_WORKERS = ElasticWorkers(
    scaling=ScalingConfig(min_workers=0, max_workers=4, catch_up_seconds=30, scale_down_stabilization_seconds=180,
                          default_worker_records_per_second=500, min_sample_seconds=15, warmup_batches=1),
    sensor_interval_seconds=10,
    # Running by default; a worker takes the tasks that lag, so a test (or a person) that
    # materializes partitions by hand sets DAGSTER_KSTREAMS_WORKER_SENSORS=stopped first.
    default_status=(dg.DefaultSensorStatus.STOPPED if os.environ.get(WORKER_SENSORS_ENV_VAR) == "stopped"
                    else dg.DefaultSensorStatus.RUNNING),
)

# Users per country, the app "Watching it scale" in the README follows, keeps one warm standby: a
# worker run with its SparkSession up and no task, which takes tasks within a sensor tick when the
# lag calls for a worker (the others start cold when asked).
STANDBY_ELASTIC_WORKERS = dataclasses.replace(
    ELASTIC_WORKERS, scaling=dataclasses.replace(ELASTIC_WORKERS.scaling, standby_workers=1))

defs = dg.Definitions.merge(
    kstreams_definitions(users_per_country.build_app(), elastic_workers=STANDBY_ELASTIC_WORKERS),
    kstreams_definitions(word_count.build_app(), top_words.build_app(), click_enrichment.build_app(),
                         profile_regions.build_app(),
                         # reads the clicks and profiles click enrichment declares (profiles as a global table)
                         clicks_per_country.build_app(topics_declared_elsewhere=["clicks", "profiles"]),
                         # clicks through their users' profiles (a foreign-key join) to their region (a global table)
                         click_regions.build_app(topics_declared_elsewhere=["clicks", "profiles", "countries"]),
                         elastic_workers=ELASTIC_WORKERS),
    dg.Definitions(resources={"pyspark": KStreamsSparkResource(
        master=os.environ.get(SPARK_MASTER_ENV_VAR, DEFAULT_MASTER),
        spark_config=json.loads(os.environ.get(SPARK_CONF_ENV_VAR) or "{}"),
    )}),
)
