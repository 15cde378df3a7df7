"""The process a killed run runs in (:mod:`killed_runs`): `dagster-kstreams run` with its SparkSession
started before it is told what to run.

``python killed_run_process.py MASTER [BOOTSTRAP]`` imports the command, starts the SparkSession that
``dagster-kstreams run --master MASTER`` asks for (the same ``build_spark_session`` settings), warms
it up as a standby worker does when given a broker (:class:`~dagster_kstreams.spark.warm_up.WarmUp`
on a small counting application of its own: the Kafka source, the state store, the Python workers
and the code generator loaded before the run's first query needs them), then reads one JSON line
from stdin, ``{"argv": [...], "cwd": ..., "path": [...]}``, and runs
``dagster_kstreams.cli.main(argv)`` in ``cwd`` with ``path`` first on ``sys.path``. The command finds
the session already up (``getOrCreate``) and goes on as it would in a fresh process: its own Spark
driver, its own Python workers, its progress lines on stdout. The tests start the next such process
as soon as the last one is killed, so that a killed run no longer waits for a Python process, a JVM
and its first query to start.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from typing import Any, Optional

from dagster_kstreams import cli
from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.kafka.records import produce
from dagster_kstreams.spark.session import build_spark_session
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.spark.warm_up import WarmUp
from dagster_kstreams.topology import StreamsBuilder

# What `dagster-kstreams run` itself sets (dagster_kstreams/spark/cli.py) for a run without --verbose.
RUN_SPARK_CONF = {"spark.ui.enabled": "false", "spark.log.level": "OFF", "spark.ui.showConsoleProgress": "false"}


WARM_UP_RECORDS = 100


def warm_up(spark: Any, bootstrap: str) -> None:
    """One query of a small application of this process's own (a Python filter and a count), run
    once with its output discarded: nothing of the run to come is touched."""
    topic = f"killed-run-warm-up-{uuid.uuid4().hex[:10]}"
    KafkaAdmin(bootstrap).create_topics({topic: 1, f"{topic}-counts": 1})
    produce(bootstrap, topic, [(f"key-{i % 10}".encode(), b"x") for i in range(WARM_UP_RECORDS)])
    builder = StreamsBuilder()
    builder.stream(topic).filter(lambda key, value: value is not None).group_by_key().count() \
        .to_stream().to(f"{topic}-counts")
    state = tempfile.mkdtemp(prefix="killed-run-warm-up-")
    warming = WarmUp(TaskRunner(builder, topic, bootstrap, state_location=state, spark=spark), WARM_UP_RECORDS).start()
    while not warming.done:
        time.sleep(0.1)
    shutil.rmtree(state, ignore_errors=True)


def main(master: str, bootstrap: Optional[str]) -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = build_spark_session(master, RUN_SPARK_CONF, app_name="dagster-kstreams-killed-run")
    spark.sparkContext.setLogLevel("OFF")
    if bootstrap:
        warm_up(spark, bootstrap)
    request = sys.stdin.readline()
    if not request:  # the tests ended without needing this process
        spark.stop()
        return 0
    command = json.loads(request)
    os.chdir(command["cwd"])
    sys.path[:0] = command["path"]
    return cli.main(command["argv"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
