"""Everything the library asks of Spark's JVM through py4j, in one place, with its Spark Connect answer.

A classic session (local mode, ``spark://``, ``k8s://``, ``yarn``) has its driver's JVM in this
process: ``sparkContext``, its ``SparkConf`` and Hadoop's FileSystem are reachable through py4j. A
Spark Connect session (``sc://``) is a gRPC client with no JVM behind it: each function here either
does the same thing without one, or says in one line that Connect cannot
(:class:`~dagster_kstreams.spark.errors.SparkSessionError`). Nothing else in the library touches
``sparkContext`` or ``_jvm``.
"""

from __future__ import annotations

from typing import Any

from pyspark import SparkContext

from dagster_kstreams.spark.errors import SparkSessionError

__all__ = ["classic_session_runs", "is_connect", "query_session", "honor_pyspark_python", "set_log_level",
           "quiet_task_logs", "running_jars", "hadoop_file_system"]

# What of Spark's log a running task quiets (quiet_task_logs). Spark's micro-batch loop logs every
# query that ends by an exception at ERROR ("Query ... terminated with error"), with the whole JVM
# and Python stack: a task's query ends so whenever its run stops it between batches
# (batch_writer.RUN_ENDED), which is no error, and a query that did fail is reported by the runner
# in one line (errors.failure_reason), with Spark's own text at DEBUG (running_task.py). The Kafka
# clients' network layer logs a warning at every failed connection, several a second per client
# while a broker is down (a task waits task_timeout_s or longer for it: README, "When the broker goes away");
# one a minute says as much.
_MICRO_BATCH_LOOP_LOGGER = "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution"
_KAFKA_NETWORK_LOGGER = "org.apache.kafka.clients.NetworkClient"
_KAFKA_NETWORK_WARNINGS_PER_SECOND = 1 / 60


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (``sc://``), which has no JVM in this process."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def classic_session_runs() -> bool:
    """Whether this process runs a classic SparkContext (a driver's JVM behind py4j)."""
    return SparkContext._active_spark_context is not None


def query_session(spark: Any) -> Any:
    """The session a task's query is built on: a new session of ``spark`` (its own SQL settings,
    the same SparkContext), or ``spark`` itself over Connect, which has no ``newSession``: the tasks
    of one runner set the same settings on it."""
    return spark if is_connect(spark) else spark.newSession()


def honor_pyspark_python(spark: Any) -> None:
    """Run Python workers with ``spark.pyspark.python`` when the session sets it.

    A driver started from a plain Python process (not spark-submit) takes its workers'
    interpreter from ``$PYSPARK_PYTHON`` only, else a bare ``python3`` that may lack pandas and
    pyarrow; the conf setting would be silently ignored. A Connect server starts its workers
    with its own setting: nothing to do here.
    """
    if is_connect(spark):
        return
    context = spark.sparkContext
    configured = context.getConf().get("spark.pyspark.python", None)
    if configured and getattr(context, "pythonExec", configured) != configured:
        context.pythonExec = configured


def set_log_level(spark: Any, level: str) -> None:
    """Spark's log level in the driver (a Connect server keeps its own)."""
    if not is_connect(spark):
        spark.sparkContext.setLogLevel(level)


def quiet_task_logs(spark: Any) -> None:
    """Keep Spark's log free of a task query's end and of a broker outage's every retry (above), once
    per JVM; a Connect server keeps its own log."""
    if is_connect(spark):
        return
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    context = log4j.LogManager.getContext(False)
    configuration = context.getConfiguration()
    if configuration.getLoggers().containsKey(_KAFKA_NETWORK_LOGGER):
        return
    # An explicit level, as Spark's console shows a logger with one at it rather than at the root's:
    # a warning, or nothing when the log is quieter than that (`dagster-kstreams run` turns it off).
    root = context.getRootLogger().getLevel()
    level = root if root.isMoreSpecificThan(log4j.Level.WARN) else log4j.Level.WARN
    network = log4j.core.config.LoggerConfig(_KAFKA_NETWORK_LOGGER, level, True)
    network.addFilter(log4j.core.filter.BurstFilter.newBuilder().setLevel(log4j.Level.WARN)
                      .setRate(_KAFKA_NETWORK_WARNINGS_PER_SECOND).setMaxBurst(1).build())
    configuration.addLogger(_KAFKA_NETWORK_LOGGER, network)
    configuration.addLogger(_MICRO_BATCH_LOOP_LOGGER,
                            log4j.core.config.LoggerConfig(_MICRO_BATCH_LOOP_LOGGER, log4j.Level.OFF, True))
    context.updateLoggers()


def running_jars(spark: Any) -> str:
    """``spark.jars`` of the running application (a Connect server's are its own: not known here)."""
    return spark.sparkContext.getConf().get("spark.jars", "")


def hadoop_file_system(spark: Any, location: str) -> tuple[Any, Any, Any]:
    """Hadoop's ``FileSystem`` of ``location`` in the driver's JVM, its ``Path`` class, and a function
    that reads a stream to a string (``IOUtils.toString``)."""
    if spark is None or is_connect(spark):
        raise SparkSessionError(
            f"location {location!r} is not a local directory: it is read through Hadoop's FileSystem in the "
            "driver's JVM, which a Spark Connect session (or no session) does not have; use a local directory "
            "(one the Connect server sees at the same path)")
    jvm = spark.sparkContext._jvm
    path_class = jvm.org.apache.hadoop.fs.Path
    file_system = path_class(location).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return file_system, path_class, jvm.org.apache.commons.io.IOUtils.toString
