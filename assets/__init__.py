"""Example topologies. A module here that builds Dagster definitions exposes them as ``defs``
from this package, and ``definitions.py`` merges them in.

Three applications: users counted per country, word count, and click enrichment (a stream-table
join). Spark runs through dagster-pyspark: ``KSTREAMS_SPARK_MASTER`` (default ``local[*]``) and
``KSTREAMS_SPARK_CONF`` (a JSON object of extra ``spark.*`` settings).

Each application has elastic workers: a lag sensor (``<app>_lag_sensor``; it starts running
with the code location when ``KSTREAMS_WORKER_SENSORS=running``, else turn it on in the UI's
Automation page) launches worker runs of
``<app>_workers`` when lag builds up and retires them when it has stayed low for a minute. Idle
applications have no worker (``min_workers=0``). Try it with a burst from the generator::

    dagster-kstreams generate --rate 200 --burst-every 60 --burst-seconds 10 --burst-factor 10
"""

import json
import os

import dagster as dg

from dagster_kstreams.orchestration.resources import KStreamsSparkResource
from dagster_kstreams.orchestration.workers import ElasticWorkers
from dagster_kstreams.scaling import ScalingConfig

from . import click_enrichment, users_per_country, word_count

SPARK_MASTER_ENV_VAR = "KSTREAMS_SPARK_MASTER"
SPARK_CONF_ENV_VAR = "KSTREAMS_SPARK_CONF"

WORKER_SENSORS_ENV_VAR = "KSTREAMS_WORKER_SENSORS"

# Sized for a laptop: a worker runs one SparkSession; catching up a burst within half a minute at
# the default capacity takes a few of them, and a minute of low lag sends them home.
ELASTIC_WORKERS = ElasticWorkers(
    scaling=ScalingConfig(min_workers=0, max_workers=4, catch_up_seconds=30, scale_down_stabilization_seconds=60,
                          default_worker_records_per_second=500),
    sensor_interval_seconds=10,
    # Not running by default yet: a worker would take the tasks that test_ui_materialize
    # materializes by hand (that test must set KSTREAMS_WORKER_SENSORS=stopped first).
    default_status=(dg.DefaultSensorStatus.RUNNING if os.environ.get(WORKER_SENSORS_ENV_VAR) == "running"
                    else dg.DefaultSensorStatus.STOPPED),
)

defs = dg.Definitions.merge(
    users_per_country.build_defs(elastic_workers=ELASTIC_WORKERS),
    word_count.build_defs(elastic_workers=ELASTIC_WORKERS),
    click_enrichment.build_defs(elastic_workers=ELASTIC_WORKERS),
    dg.Definitions(resources={"pyspark": KStreamsSparkResource(
        master=os.environ.get(SPARK_MASTER_ENV_VAR, "local[*]"),
        spark_config=json.loads(os.environ.get(SPARK_CONF_ENV_VAR) or "{}"),
    )}),
)
