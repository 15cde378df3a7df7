"""SparkSessions with Spark's Kafka connector on the classpath.

The pyspark wheel carries no Kafka connector; its jars (resolved with Maven by
``dagster_kstreams.base.jars``) go in ``spark.jars``. ``spark_conf`` returns the settings as
a dict, so the Dagster layer can hand the same configuration to dagster-pyspark's
``PySparkResource(spark_config=...)``.
"""

from __future__ import annotations

import os
import re
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from dagster_kstreams.base.jars import jar_paths
from dagster_kstreams.spark.class_archive import java_options
from dagster_kstreams.spark.project_archive import project_archive

DEFAULT_MASTER = "local[*]"
DEFAULT_APP_NAME = "dagster-kstreams"
CONNECTOR_JAR_PREFIX = "spark-sql-kafka-0-10_"

# Spark writes a task's checkpoint (offset and commit logs, state store files) through Hadoop. Through
# FileContext (Spark's default checkpoint manager) the local default (ChecksumFs) writes a .crc file
# beside each file and, without Hadoop's native library, forks a `readlink` or `chmod` for every file
# operation; RawLocalFs writes the files alone. A local state location uses FileSystem's API instead
# (``strategies.configure_session``: fewer forks still); its local file system stays Hadoop's
# default, because RocksDB's snapshot upload casts it to LocalFileSystem. A ``spark.hadoop.``
# setting of the user's wins.
CHECKPOINT_FILE_CONTEXT = {"spark.hadoop.fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.RawLocalFs"}


class SparkSessionError(RuntimeError):
    """Spark could not be configured or started; the message names the setting at fault."""


# The master URL forms Spark itself accepts (SparkMasterRegex, SparkSubmit); checked here so
# that a typo is one clear error instead of a JVM stack trace from the gateway.
_MASTER_FORMS = (
    re.compile(r"local"),
    re.compile(r"local\[([0-9]+|\*)\]"),
    re.compile(r"local\[([0-9]+|\*)\s*,\s*[0-9]+\]"),
    re.compile(r"local-cluster\[\s*[0-9]+\s*,\s*[0-9]+\s*,\s*[0-9]+\s*\]"),
    re.compile(r"spark://.+"),
    re.compile(r"k8s://.+"),
    re.compile(r"yarn"),
)


# Why a task cannot run through Spark Connect (README, "Beyond one machine"): said in one line.
SPARK_CONNECT_REFUSAL = (
    "Spark Connect cannot run a task: its foreachBatch function runs in a Python process of the Connect "
    "server, away from the worker's fencing producer, offset commits and reports, and a Connect session "
    "has no SparkContext for the checkpoint reads; use local[...], spark://, k8s:// or yarn"
)
# Cores one worker run's application takes on a standalone cluster unless spark.cores.max says
# otherwise: Spark's default is every free core, so the first application (a standby, say) would
# leave none to the next worker run, whose tasks would then wait for executors indefinitely.
DEFAULT_CLUSTER_CORES_PER_APPLICATION = "1"
# Spark caps it at spark.rpc.message.maxSize (128m by default) in any case.
LOCAL_MAX_DIRECT_RESULT_SIZE = "64m"


def _is_local_master(master: str) -> bool:
    return master == "local" or master.startswith(("local[", "local-cluster["))


def check_master(master: str) -> str:
    if master.startswith("sc://"):
        raise SparkSessionError(f"Spark master {master!r}: {SPARK_CONNECT_REFUSAL}")
    if not any(form.fullmatch(master) for form in _MASTER_FORMS):
        raise SparkSessionError(
            f"Spark master {master!r} is not a master URL Spark accepts: use local, local[N], local[*], "
            "local[N,F], local-cluster[N,C,M], spark://HOST:PORT, k8s://HOST:PORT or yarn"
        )
    return master


def check_master_reachable(master: str, timeout_s: float = 3.0) -> None:
    """For a standalone master (``spark://HOST:PORT[,HOST:PORT...]``): something accepts a connection
    at one of its addresses. Spark itself would retry for a minute, print a stack trace a try, and
    end with "Cannot call methods on a stopped SparkContext"."""
    if not master.startswith("spark://"):
        return
    failures = []
    for address in master[len("spark://"):].split(","):
        host, _, port = address.strip().rpartition(":")
        if not host or not port.isdigit():
            raise SparkSessionError(f"Spark master {master!r}: {address!r} is not HOST:PORT")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
            return
        except OSError as error:
            failures.append(f"{address}: {error.strerror or error}")
    raise SparkSessionError(f"Spark master {master!r} is unreachable ({'; '.join(failures)}): is a Spark master "
                            "running there?")


def spark_conf(
    master: str = DEFAULT_MASTER,
    conf: Mapping[str, Any] | None = None,
    app_name: str = DEFAULT_APP_NAME,
    jars_home: Path | None = None,
) -> dict[str, str]:
    """All ``spark.*`` settings for a session that can read and write Kafka.

    ``conf`` wins over the defaults, except that ``spark.jars`` is merged: the connector jars
    are appended to any jars given there.
    """
    user_conf = {str(key): str(value) for key, value in (conf or {}).items()}
    for key in user_conf:
        if not key.startswith("spark."):
            raise SparkSessionError(f"Spark setting {key!r} must start with 'spark.'")
    check_master(master)
    settings: dict[str, str] = {"spark.master": master, "spark.app.name": app_name, **CHECKPOINT_FILE_CONTEXT}
    if _is_local_master(master):
        # Local mode on a laptop or CI box: stay on loopback, and run Python workers with this
        # interpreter (the bare `python3` Spark would pick may lack pandas/pyarrow).
        settings |= {
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.pyspark.python": sys.executable,
            "spark.pyspark.driver.python": sys.executable,
            # A batch's result (the Arrow records a task's writer collects) bigger than this goes
            # through the block manager: a put and a fetch from itself per batch, and under load a
            # "TaskResultLost" that failed a word-count run. In one JVM nothing limits a direct one.
            "spark.task.maxDirectResultSize": LOCAL_MAX_DIRECT_RESULT_SIZE,
        }
    else:
        # Executors elsewhere import this package from the zip the driver serves, never from
        # whatever their machine has (or lacks).
        python_files = [path for path in user_conf.pop("spark.submit.pyFiles", "").split(",") if path]
        settings["spark.submit.pyFiles"] = ",".join(dict.fromkeys([*python_files, str(project_archive(jars_home))]))
        if master.startswith("spark://"):
            settings["spark.cores.max"] = DEFAULT_CLUSTER_CORES_PER_APPLICATION
    connector_jars = jar_paths("spark-kafka", jars_home)
    user_jars = [jar for jar in user_conf.pop("spark.jars", "").split(",") if jar]
    settings |= user_conf
    jars = list(dict.fromkeys([*user_jars, *connector_jars]))
    settings["spark.jars"] = ",".join(jars)
    if user_conf.get("spark.submit.deployMode") != "cluster":  # the driver's JVM starts on this machine
        # The class-data archive first, so that the user's own options win over ours.
        driver_options = " ".join([*java_options(jars, jars_home), settings.get("spark.driver.extraJavaOptions", "")])
        if driver_options.strip():
            settings["spark.driver.extraJavaOptions"] = driver_options.strip()
    return settings


def build_spark_session(
    master: str = DEFAULT_MASTER,
    conf: Mapping[str, Any] | None = None,
    app_name: str = DEFAULT_APP_NAME,
    jars_home: Path | None = None,
) -> SparkSession:
    """A SparkSession on ``master`` with the Kafka connector; any ``spark.*`` setting in ``conf``.

    If a session already runs in this process it is returned (Spark allows one SparkContext per
    process), but only if it has the connector on its classpath.
    """
    settings = spark_conf(master, conf, app_name, jars_home)
    check_master_reachable(master)
    if _is_local_master(master):
        # Without it Spark's JVM binds to the host's first interface when the hostname
        # resolves to loopback; local mode needs nothing but 127.0.0.1.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as error:  # Py4JJavaError, PySparkRuntimeError: report the master, briefly
        raise SparkSessionError(f"Spark could not start with master {master!r}: {_first_line(error)}") from error
    running_jars = session.sparkContext.getConf().get("spark.jars", "")
    if CONNECTOR_JAR_PREFIX not in running_jars:
        raise SparkSessionError(
            "a SparkSession already runs in this process without the Kafka connector in spark.jars; "
            "stop it (spark.stop()) before calling build_spark_session"
        )
    honor_pyspark_python(session)
    return session


def honor_pyspark_python(spark) -> None:
    """Run Python workers with ``spark.pyspark.python`` when the session sets it.

    A driver started from a plain Python process (not spark-submit) takes its workers'
    interpreter from ``$PYSPARK_PYTHON`` only, else a bare ``python3`` that may lack pandas and
    pyarrow; the conf setting would be silently ignored.
    """
    context = spark.sparkContext
    configured = context.getConf().get("spark.pyspark.python", None)
    if configured and getattr(context, "pythonExec", configured) != configured:
        context.pythonExec = configured


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    for line in text.splitlines():
        line = line.strip().lstrip(": ")
        if "Exception:" in line or "Error:" in line:
            return line[:300]
    return (text.splitlines() or [type(error).__name__])[0][:300]
