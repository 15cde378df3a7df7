"""The process a killed run runs in (:mod:`killed_runs`): `dagster-kstreams run` with its SparkSession
started before it is told what to run.

``python killed_run_process.py MASTER`` imports the command, starts the SparkSession that
``dagster-kstreams run --master MASTER`` asks for (the same ``build_spark_session`` settings), then
reads one JSON line from stdin, ``{"argv": [...], "cwd": ..., "path": [...]}``, and runs
``dagster_kstreams.cli.main(argv)`` in ``cwd`` with ``path`` first on ``sys.path``. The command finds
the session already up (``getOrCreate``) and goes on as it would in a fresh process: its own Spark
driver, its own Python workers, its progress lines on stdout. The tests start the next such process
while the last one runs, so that a killed run no longer waits for a Python and a JVM to start.
"""

from __future__ import annotations

import json
import os
import sys

from dagster_kstreams import cli
from dagster_kstreams.spark.session import build_spark_session

# What `dagster-kstreams run` itself sets (dagster_kstreams/spark/cli.py) for a run without --verbose.
RUN_SPARK_CONF = {"spark.ui.enabled": "false", "spark.log.level": "OFF", "spark.ui.showConsoleProgress": "false"}


def main(master: str) -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = build_spark_session(master, RUN_SPARK_CONF, app_name="dagster-kstreams-killed-run")
    spark.sparkContext.setLogLevel("OFF")
    request = sys.stdin.readline()
    if not request:  # the tests ended without needing this process
        spark.stop()
        return 0
    command = json.loads(request)
    os.chdir(command["cwd"])
    sys.path[:0] = command["path"]
    return cli.main(command["argv"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
