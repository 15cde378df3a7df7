"""JVM artifacts of the local stack, resolved with Maven from the poms shipped in ``jvm/``.

``jar_paths("broker")`` is the classpath of a KRaft Kafka broker; ``jar_paths("spark-kafka")``
is Spark's Kafka connector for the installed pyspark (without Spark itself, which the pyspark
wheel brings), with the project's own jar built from ``jvm/spark-kafka/src`` (a producer
interceptor: :mod:`dagster_kstreams.spark.batch_writer`); ``jar_paths("spark-hadoop")`` the
project's jar for a local driver's own class path (a file system: :mod:`dagster_kstreams.spark.session`).
Resolution copies the jars into ``<state home>/jars/<name>/`` once; a stamp holding the hash of the
pom and the sources makes later calls free, and a cached ``~/.m2`` makes them work offline.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from dagster_kstreams.base.home import LocalStackError, state_home

ARTIFACT_SETS = ("broker", "spark-kafka", "spark-hadoop")
# Pinned so that Maven need not look up the plugin's latest version (which needs the network).
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
_STAMP_NAME = ".pom-sha256"
_BUILD_DIR = ".build"
_JVM_DIR = Path(__file__).resolve().parent / "jvm"


def pom_path(name: str) -> Path:
    if name not in ARTIFACT_SETS:
        raise LocalStackError(f"unknown jar set {name!r}; known: {', '.join(ARTIFACT_SETS)}")
    return _JVM_DIR / name / "pom.xml"


def jars_dir(name: str, home: Path | None = None) -> Path:
    pom_path(name)  # validates the name
    return (home or state_home()) / "jars" / name


def _pom_digest(pom: Path) -> str:
    """The hash of ``pom`` and of the sources it builds (``src/`` beside it), if any."""
    digest = hashlib.sha256(pom.read_bytes())
    for source in sorted((pom.parent / "src").rglob("*.java")):
        digest.update(str(source.relative_to(pom.parent)).encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def _listed_jars(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.jar"))


def _is_current(directory: Path, digest: str) -> bool:
    stamp = directory / _STAMP_NAME
    return stamp.is_file() and stamp.read_text().strip() == digest and bool(_listed_jars(directory))


def _run_maven(pom: Path, output: Path, offline: bool) -> subprocess.CompletedProcess[str]:
    """Copy the pom's runtime dependencies into ``output``; a pom with sources (``src/``) is also
    built there, its jar beside them (the build's scratch in ``output/.build``, not in the package)."""
    builds = (pom.parent / "src").is_dir()
    command = [
        "mvn",
        "-B",
        "-q",
        "-Dstyle.color=never",
        *(["-o"] if offline else []),
        "-f",
        str(pom),
        *(["-DskipTests", f"-Dbuild.dir={output / _BUILD_DIR}", "package"] if builds else []),
        f"{DEPENDENCY_PLUGIN}:copy-dependencies",
        f"-DoutputDirectory={output}",
        "-DincludeScope=runtime",
    ]
    result = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if builds and result.returncode == 0:
        for jar in (output / _BUILD_DIR).glob("*.jar"):
            os.replace(jar, output / jar.name)
        shutil.rmtree(output / _BUILD_DIR, ignore_errors=True)
    return result


def resolve_jars(name: str, home: Path | None = None) -> list[Path]:
    """Resolve the jar set ``name`` if it is not resolved yet; return its jar paths."""
    pom = pom_path(name)
    target = jars_dir(name, home)
    digest = _pom_digest(pom)
    if _is_current(target, digest):
        return _listed_jars(target)
    if shutil.which("mvn") is None:
        raise LocalStackError(
            f"Maven (mvn) is not on PATH; it is needed once to resolve the {name} jars "
            f"from {pom} (install Maven 3.8+)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    # Another process (a second `make`, a test worker) may be resolving the same set.
    with open(target.parent / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_current(target, digest):
            return _listed_jars(target)
        staging = target.parent / f".{name}.staging"
        shutil.rmtree(staging, ignore_errors=True)
        result = _run_maven(pom, staging, offline=False)
        if result.returncode != 0:
            # No network: everything may still be in ~/.m2 from an earlier run.
            offline_result = _run_maven(pom, staging, offline=True)
            if offline_result.returncode != 0:
                shutil.rmtree(staging, ignore_errors=True)
                detail = _first_error_line(result.stdout + result.stderr)
                raise LocalStackError(f"Maven could not resolve the {name} jars from {pom}: {detail}")
        (staging / _STAMP_NAME).write_text(digest + "\n")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    return _listed_jars(target)


def jar_paths(name: str, home: Path | None = None) -> list[str]:
    """The jar paths of set ``name`` as strings, resolving them first if needed."""
    return [str(path) for path in resolve_jars(name, home)]


def _first_error_line(output: str) -> str:
    for line in output.splitlines():
        if "[ERROR]" in line and line.strip() != "[ERROR]":
            return line.replace("[ERROR]", "").strip()
    stripped = output.strip().splitlines()
    return stripped[-1] if stripped else "mvn failed with no output"
