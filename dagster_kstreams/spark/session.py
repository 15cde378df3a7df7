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
from dagster_kstreams.spark.errors import SparkSessionError
from dagster_kstreams.spark.jvm import classic_session_runs, honor_pyspark_python, running_jars
from dagster_kstreams.spark.project_archive import project_archive

# Each task a worker runs is a streaming query of its own, and each micro-batch of it a Spark job
# that waits for a free task slot: local[N] has N. With one slot a core (Spark's local[*]) the
# batches of four tasks on two cores queued behind each other's, 30-40% longer than with two slots
# a core (bench/README.md, "Latency at a steady rate"); the operating system shares the cores instead.
LOCAL_SLOTS_PER_CORE = 2


def default_master() -> str:
    """``local[N]``: :data:`LOCAL_SLOTS_PER_CORE` task slots per core this process may run on."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return f"local[{LOCAL_SLOTS_PER_CORE * cores}]"


DEFAULT_MASTER = default_master()
DEFAULT_APP_NAME = "dagster-kstreams"
CONNECTOR_JAR_PREFIX = "spark-sql-kafka-0-10_"

# Spark writes a task's checkpoint (offset and commit logs, state store files) through Hadoop. Through
# FileContext (Spark's default checkpoint manager) the local default (ChecksumFs) writes a .crc file
# beside each file and, without Hadoop's native library, forks a `readlink` or `chmod` for every file
# operation; RawLocalFs writes the files alone. A local state location uses FileSystem's API instead
# (``task_session.configure_session``: fewer forks still); its local file system stays Hadoop's
# default, because RocksDB's snapshot upload casts it to LocalFileSystem. A ``spark.hadoop.``
# setting of the user's wins.
CHECKPOINT_FILE_CONTEXT = {"spark.hadoop.fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.RawLocalFs"}

# A local session's `file:` file system (the project's spark-hadoop jar, ``dagster_kstreams/base/jvm``):
# Hadoop's local one, setting a new file's permissions in process where Hadoop's, without its native
# library, forks a `chmod`: four to six forks on every micro-batch's critical path (the offset and
# commit logs, a state store's changelog, their checksums), about 100 ms a batch on a busy 2-core
# machine (bench/README.md). Local masters only: executors elsewhere lack the jar on their class path
# (Spark opens `file:` before it loads ``spark.jars``, hence the driver's class path).
LOCAL_FILE_SYSTEM = {"spark.hadoop.fs.file.impl": "dagster.kstreams.NioLocalFileSystem"}

# A worker's or a materialization's stderr is a log (Dagster's, or the terminal `dagster dev` shares
# with the daemon), where Spark's console progress bar, redrawn with carriage returns for every
# stage of every micro-batch, is noise; a task's progress is the runner's own lines and metadata.
QUIET_CONSOLE = {"spark.ui.showConsoleProgress": "false"}


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
    re.compile(r"sc://[^/:;]+(:[0-9]+)?/?(;.*)?"),
)


# Spark Connect's port when an sc:// URL names none (pyspark's ChannelBuilder.default_port()).
DEFAULT_CONNECT_PORT = 15002
# Cores one worker run's application takes on a standalone cluster unless spark.cores.max says
# otherwise: Spark's default is every free core, so the first application (a standby, say) would
# leave none to the next worker run, whose tasks would then wait for executors indefinitely.
DEFAULT_CLUSTER_CORES_PER_APPLICATION = "1"
# Spark caps it at spark.rpc.message.maxSize (128m by default) in any case.
LOCAL_MAX_DIRECT_RESULT_SIZE = "64m"


def _is_local_master(master: str) -> bool:
    return master == "local" or master.startswith(("local[", "local-cluster["))


def is_connect_master(master: str) -> bool:
    """A Spark Connect server's URL (``sc://HOST[:PORT][/;param=value...]``) rather than a master's."""
    return master.startswith("sc://")


def check_master(master: str) -> str:
    if not any(form.fullmatch(master) for form in _MASTER_FORMS):
        raise SparkSessionError(
            f"Spark master {master!r} is not a master URL Spark accepts: use local, local[N], local[*], "
            "local[N,F], local-cluster[N,C,M], spark://HOST:PORT, k8s://HOST:PORT, yarn or sc://HOST[:PORT]"
        )
    return master


def check_master_reachable(master: str, timeout_s: float = 3.0) -> None:
    """For a standalone master (``spark://HOST:PORT[,HOST:PORT...]``) or a Spark Connect server
    (``sc://HOST[:PORT]``): something accepts a connection at one of its addresses. Spark itself
    would retry for a minute (Connect: until its own deadline), print a stack trace a try, and end
    with "Cannot call methods on a stopped SparkContext"."""
    if is_connect_master(master):
        address = master[len("sc://"):].split("/")[0].split(";")[0]
        addresses = [address if ":" in address else f"{address}:{DEFAULT_CONNECT_PORT}"]
        what = "Spark Connect server"
    elif master.startswith("spark://"):
        addresses = [address.strip() for address in master[len("spark://"):].split(",")]
        what = "Spark master"
    else:
        return
    failures = []
    for address in addresses:
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise SparkSessionError(f"{what} {master!r}: {address!r} is not HOST:PORT")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
            return
        except OSError as error:
            failures.append(f"{address}: {error.strerror or error}")
    raise SparkSessionError(f"{what} {master!r} is unreachable ({'; '.join(failures)}): is a {what} "
                            "running there?")


def spark_conf(
    master: str = DEFAULT_MASTER,
    conf: Mapping[str, Any] | None = None,
    app_name: str = DEFAULT_APP_NAME,
    jars_home: Path | None = None,
) -> dict[str, str]:
    """All ``spark.*`` settings for a session that can read and write Kafka.

    ``conf`` wins over the defaults, except that ``spark.jars`` and ``spark.driver.extraClassPath``
    are merged: the connector jars (and the project's spark-hadoop jar) are appended to any given there.
    """
    user_conf = {str(key): str(value) for key, value in (conf or {}).items()}
    for key in user_conf:
        if not key.startswith("spark."):
            raise SparkSessionError(f"Spark setting {key!r} must start with 'spark.'")
    check_master(master)
    if is_connect_master(master):
        # The Connect server is its own application: its jars (the Kafka connector), Python and
        # driver options are set where it starts (README, "Spark Connect"); a session can set its
        # SQL settings only (Connect warns of each other one and ignores it).
        return {"spark.remote": master, **{key: value for key, value in user_conf.items() if key.startswith("spark.sql.")}}
    settings: dict[str, str] = {"spark.master": master, "spark.app.name": app_name, **CHECKPOINT_FILE_CONTEXT,
                                **QUIET_CONSOLE}
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
            **LOCAL_FILE_SYSTEM,
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
        class_path = driver_class_path(jars_home, user_conf.get("spark.driver.extraClassPath", ""))
        settings["spark.driver.extraClassPath"] = class_path
        # The class-data archive first, so that the user's own options win over ours.
        driver_options = " ".join([*java_options(jars, jars_home, class_path),
                                   settings.get("spark.driver.extraJavaOptions", "")])
        if driver_options.strip():
            settings["spark.driver.extraJavaOptions"] = driver_options.strip()
    return settings


def driver_class_path(jars_home: Path | None = None, user_class_path: str = "") -> str:
    """``spark.driver.extraClassPath`` of a driver started here: the user's, then the project's
    spark-hadoop jar, whose classes Spark needs before it loads ``spark.jars`` (and which need
    nothing from there: a class on this path cannot see the Kafka client that ``spark.jars`` brings)."""
    entries = [*user_class_path.split(os.pathsep), *jar_paths("spark-hadoop", jars_home)]
    return os.pathsep.join(entry for entry in entries if entry)


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
    if is_connect_master(master):
        return _connect_session(master, settings)
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
    if CONNECTOR_JAR_PREFIX not in running_jars(session):
        raise SparkSessionError(
            "a SparkSession already runs in this process without the Kafka connector in spark.jars; "
            "stop it (spark.stop()) before calling build_spark_session"
        )
    honor_pyspark_python(session)
    return session


def _connect_session(master: str, settings: Mapping[str, str]) -> SparkSession:
    """A Spark Connect session on the server at ``master``, with the SQL settings of ``settings``.

    pyspark runs a process in one mode: once a Connect session is built, its functions
    (``pyspark.sql.functions``) build Connect expressions, and a classic session's DataFrames
    can no longer use them; before, they build JVM columns. So a process where a classic session
    runs is refused, in one line."""
    if classic_session_runs():
        raise SparkSessionError(f"Spark Connect server {master!r}: a classic SparkSession already runs in this "
                                "process, and pyspark runs one process in one mode; stop it (spark.stop()) or "
                                "use Spark Connect from another process")
    builder = SparkSession.builder.remote(master)
    for key, value in settings.items():
        if key != "spark.remote":
            builder = builder.config(key, value)
    try:
        return builder.getOrCreate()
    except Exception as error:  # SparkConnectGrpcException, PySparkRuntimeError: one line
        raise SparkSessionError(f"Spark Connect server {master!r} could not be used: {_first_line(error)}") from error


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    for line in text.splitlines():
        line = line.strip().lstrip(": ")
        if "Exception:" in line or "Error:" in line:
            return line[:300]
    return (text.splitlines() or [type(error).__name__])[0][:300]
