"""A class-data archive for the driver JVM: Spark's classes mapped from one file, not loaded one by one.

Most of a worker's start is its JVM loading and linking Spark's classes (``bench/README.md``): the
SparkSession, then the first query's Kafka source, streaming engine, state store and code
generator. Java's application class-data sharing (AppCDS, JDK 13+) keeps those classes, parsed
and verified, in an archive that later JVMs map at start. Measured on the 2-core machine: a
``local[1]`` session and its first Kafka and aggregation queries in 6-10 s with the archive,
14-18 s without.

The archive is made once per Java, pyspark and connector jars
(:func:`dagster_kstreams.local.spark_archive.build_spark_archive`, ``dagster-kstreams local
spark-archive``, which ``make demo`` and ``make test`` run) and lives in the state home, named by
a digest of what it depends on, so that a new Java or pyspark simply gets a new one. A session
uses it only if it is there (:func:`java_options`); a JVM whose archive does not match (another
class path, say) runs without it, as Java's default ``-Xshare:auto`` does. The archive is written
to a temporary name and renamed once its JVM has exited, because a JVM refuses to start on a
truncated archive.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Optional, Sequence

import pyspark

from dagster_kstreams.base.home import state_home

__all__ = ["ARCHIVE_DIRECTORY", "DUMP_OPTION", "QUIET_OPTIONS", "archive_path", "java_options", "java_release"]

ARCHIVE_DIRECTORY = "spark-class-archive"
_FIRST_DYNAMIC_ARCHIVE_JAVA = 13  # -XX:ArchiveClassesAtExit / a dynamic -XX:SharedArchiveFile
DUMP_OPTION = "-XX:ArchiveClassesAtExit="
# CDS says why it skips a class while dumping, and why it ignores an archive that does not match:
# neither is something a user can act on.
QUIET_OPTIONS = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")


def _java_home() -> Optional[Path]:
    """The Java that pyspark launches: ``$JAVA_HOME``, else ``java`` on the PATH."""
    configured = os.environ.get("JAVA_HOME")
    if configured:
        return Path(configured)
    java = shutil.which("java")
    return Path(os.path.realpath(java)).parent.parent if java else None


def java_release(java_home: Optional[Path]) -> Optional[str]:
    """``JAVA_VERSION`` from the Java's ``release`` file ("17.0.13"), or None."""
    try:
        lines = (java_home / "release").read_text().splitlines() if java_home else []
    except OSError:
        return None
    for line in lines:
        if line.startswith("JAVA_VERSION="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


def _major(release: str) -> int:
    first = release.split(".")[0]
    return int(first) if first.isdigit() else 0


def archive_path(extra_jars: Sequence[str] = (), home: Optional[Path] = None, class_path: str = "") -> Optional[Path]:
    """Where the archive for this Java, pyspark, ``extra_jars`` (``spark.jars``) and the driver's
    ``class_path`` (``spark.driver.extraClassPath``, which comes first on the JVM's class path that
    the archive must match) lives; None if this Java cannot use one."""
    java_home = _java_home()
    release = java_release(java_home)
    if release is None or _major(release) < _FIRST_DYNAMIC_ARCHIVE_JAVA:
        return None
    spark_jars = Path(pyspark.__file__).parent / "jars"
    digest = hashlib.sha256()
    digest.update(f"{os.path.realpath(java_home)}\0{release}\0{pyspark.__version__}\0{class_path}\0".encode())
    class_path_jars = [Path(entry) for entry in class_path.split(os.pathsep) if entry]
    for jar in [*sorted(spark_jars.glob("*.jar")), *(Path(jar) for jar in extra_jars), *class_path_jars]:
        try:
            digest.update(f"{jar}\0{jar.stat().st_size}\0".encode())
        except OSError:
            digest.update(f"{jar}\0missing\0".encode())
    return (home or state_home()) / ARCHIVE_DIRECTORY / f"spark-{pyspark.__version__}-{digest.hexdigest()[:16]}.jsa"


def java_options(extra_jars: Sequence[str] = (), home: Optional[Path] = None, class_path: str = "") -> list[str]:
    """The driver JVM's options that map the archive, if it has been made; else none."""
    path = archive_path(extra_jars, home, class_path)
    if path is None or not path.is_file():
        return []
    return [f"-XX:SharedArchiveFile={path}", *QUIET_OPTIONS]
