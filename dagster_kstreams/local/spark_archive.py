"""Make the driver JVM's class-data archive (:mod:`dagster_kstreams.spark.class_archive`).

A SparkSession is started with ``-XX:ArchiveClassesAtExit``, does what a worker does, and its JVM is
ended: the JVM writes the classes it loaded at its exit. What it does decides what is archived:

* with a broker (``bootstrap``), an application of the runner's own (a word count: a Python
  function, a repartition topic, a count in the JVM, exactly-once writes) runs over a few hundred
  records, as a worker's first tasks would: Kafka source, streaming engine, RocksDB state store,
  Python workers, transactional writes. Its topics are deleted afterwards;
* without one, a streaming aggregation over Spark's ``rate`` source and a Python batch job.

This must be the process's first SparkSession (a JVM's options are fixed when it starts).
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Optional

from pyspark import SparkContext

from dagster_kstreams.base.home import LocalStackError
from dagster_kstreams.base.jars import jar_paths
from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.kafka.records import produce
from dagster_kstreams.spark.class_archive import DUMP_OPTION, QUIET_OPTIONS, archive_path
from dagster_kstreams.spark.session import build_spark_session, driver_class_path
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import StreamsBuilder

__all__ = ["build_spark_archive"]

_JVM_EXIT_TIMEOUT_S = 300.0  # writing the archive takes seconds; a stuck JVM is not waited on forever
_STALE_DUMP_S = 3600.0


def build_spark_archive(bootstrap: Optional[str] = None, home: Optional[Path] = None, force: bool = False) -> Path:
    """The archive's path, made now unless it is there (or ``force``)."""
    path = archive_path(jar_paths("spark-kafka", home), home, driver_class_path(home))
    if path is None:
        raise LocalStackError("this Java cannot archive classes (JDK 13 or newer is needed): Spark starts without")
    if path.is_file() and not force:
        return path
    if SparkContext._active_spark_context is not None:
        raise LocalStackError("a SparkSession already runs in this process: the class archive needs a new JVM")
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_dumps(path.parent)
    dump = path.with_name(f"{path.stem}.{uuid.uuid4().hex[:8]}.dump")
    spark = build_spark_session("local[2]", {
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": " ".join([DUMP_OPTION + str(dump), *QUIET_OPTIONS]),
    }, app_name="dagster-kstreams-class-archive", jars_home=home)
    try:
        if bootstrap:
            _run_an_application(spark, bootstrap)
        else:
            _run_spark_alone(spark)
    finally:
        _end_the_jvm(spark)
    if not dump.is_file():
        raise LocalStackError(f"the JVM wrote no class archive at {dump}")
    dump.replace(path)  # a JVM refuses to start on a torn archive: only a whole one gets the name
    return path


def _run_an_application(spark, bootstrap: str) -> None:
    suffix = uuid.uuid4().hex[:8]
    app, lines, counts = f"class-archive-{suffix}", f"class-archive-{suffix}-lines", f"class-archive-{suffix}-counts"
    admin = KafkaAdmin(bootstrap)
    admin.create_topics({lines: 2, counts: 2})
    builder = StreamsBuilder()
    (builder.stream(lines).flat_map_values(lambda line: line.split()).group_by(lambda _key, word: word)
     .count().to_stream().to(counts))
    state = tempfile.mkdtemp(prefix="dagster-kstreams-class-archive-")
    try:
        produce(bootstrap, lines, [(f"k{i}".encode(), f"w{i % 7} w{i % 3}".encode()) for i in range(400)])
        TaskRunner(builder.build(), app, bootstrap, state_location=state, spark=spark).run_all()
    finally:
        shutil.rmtree(state, ignore_errors=True)
        admin.delete_topics([topic for topic in admin.list_topics() if topic.startswith(app)])


def _run_spark_alone(spark) -> None:
    query = (spark.readStream.format("rate").option("rowsPerSecond", 1000).load()
             .selectExpr("value % 10 AS key").groupBy("key").count()
             .writeStream.outputMode("update").format("noop").start())
    try:
        query.processAllAvailable()
        time.sleep(2)
        query.processAllAvailable()
    finally:
        query.stop()
    frame = spark.range(1000).selectExpr("id", "CAST(id AS STRING) AS text")
    frame.mapInArrow(lambda batches: batches, frame.schema).count()


def _end_the_jvm(spark) -> None:
    """Stop Spark and wait for its JVM to exit (it writes the archive on the way out): pyspark's JVM
    exits when its standard input closes."""
    gateway = SparkContext._gateway
    spark.stop()
    process = getattr(gateway, "proc", None)
    gateway.shutdown()
    SparkContext._gateway = SparkContext._jvm = None
    if process is None:
        raise LocalStackError("pyspark gave no handle on its JVM: cannot wait for the class archive")
    if process.stdin is not None:
        process.stdin.close()
    process.wait(timeout=_JVM_EXIT_TIMEOUT_S)


def _remove_stale_dumps(directory: Path) -> None:
    """Dumps left by builders that were killed before they could rename theirs."""
    for dump in directory.glob("*.dump"):
        try:
            if time.time() - dump.stat().st_mtime > _STALE_DUMP_S:
                dump.unlink()
        except OSError:
            pass
