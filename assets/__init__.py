"""Example topologies. A module here that builds Dagster definitions exposes them as ``defs``
from this package, and ``definitions.py`` merges them in.

Three applications: users counted per country, word count, and click enrichment (a stream-table
join). Spark runs through dagster-pyspark: ``KSTREAMS_SPARK_MASTER`` (default ``local[*]``) and
``KSTREAMS_SPARK_CONF`` (a JSON object of extra ``spark.*`` settings).
"""

import json
import os

import dagster as dg

from dagster_kstreams.orchestration.resources import KStreamsSparkResource

from . import click_enrichment, users_per_country, word_count

SPARK_MASTER_ENV_VAR = "KSTREAMS_SPARK_MASTER"
SPARK_CONF_ENV_VAR = "KSTREAMS_SPARK_CONF"

defs = dg.Definitions.merge(
    users_per_country.build_defs(),
    word_count.build_defs(),
    click_enrichment.build_defs(),
    dg.Definitions(resources={"pyspark": KStreamsSparkResource(
        master=os.environ.get(SPARK_MASTER_ENV_VAR, "local[*]"),
        spark_config=json.loads(os.environ.get(SPARK_CONF_ENV_VAR) or "{}"),
    )}),
)
