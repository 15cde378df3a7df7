"""Kafka Streams as the oracle: build and run the Java harness in tests/oracle.

The Maven project is built at most once per change of its sources: a stamp in
tests/oracle/target holds a hash of pom.xml and src/, and a file lock keeps concurrent test
sessions (several pytest runs in one working tree) from building over each other.

    describe_topologies(["all"])           -> {name: Kafka Streams' describe().toString()}
    java_murmur2_partitions(keys, n)        -> [(Utils.murmur2(key), partitionForKey(key, n))]
    java_hash_set_orders(cases)            -> iteration orders of Java HashSet<String>
    run_main("kstreams.oracle.X", [...])    -> stdout of any other main added to the project
    BackgroundMain("kstreams.oracle.X", [...]).report()  -> its JSON report, run beside our side
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ORACLE_DIR = Path(__file__).resolve().parent / "oracle"
TARGET_DIR = ORACLE_DIR / "target"
CLASSES_DIR = TARGET_DIR / "classes"
CLASSPATH_FILE = TARGET_DIR / "classpath.txt"
STAMP_FILE = TARGET_DIR / "oracle-build.sha256"
LOCK_FILE = TARGET_DIR / "oracle-build.lock"

_MAVEN_GOALS = [
    "-q",
    "-B",
    "package",
    "dependency:build-classpath",
    f"-Dmdep.outputFile={CLASSPATH_FILE}",
]


# The end of a failed main's stderr that its error shows: its own message, and the Kafka Streams
# warnings and errors that led to it.
_STDERR_SHOWN = 20_000


class OracleError(RuntimeError):
    """The harness could not be built or one of its mains failed."""


def sources_hash() -> str:
    """Hash of everything the build reads: pom.xml and every file under src/."""
    digest = hashlib.sha256()
    files = [ORACLE_DIR / "pom.xml", *sorted((ORACLE_DIR / "src").rglob("*"))]
    for path in files:
        if path.is_file():
            digest.update(str(path.relative_to(ORACLE_DIR)).encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def _is_built(expected_hash: str) -> bool:
    return (
        STAMP_FILE.is_file()
        and STAMP_FILE.read_text().strip() == expected_hash
        and CLASSPATH_FILE.is_file()
        and CLASSES_DIR.is_dir()
    )


def _run_maven(extra: Sequence[str]) -> subprocess.CompletedProcess[str]:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise OracleError("mvn is not on PATH; the Kafka Streams oracle needs Maven")
    return subprocess.run(
        [mvn, *extra, *_MAVEN_GOALS],
        cwd=ORACLE_DIR,
        capture_output=True,
        text=True,
        timeout=900,
    )


def build() -> None:
    """Build the harness unless the stamp shows this exact source was built already."""
    expected = sources_hash()
    if _is_built(expected):
        return
    TARGET_DIR.mkdir(parents=True, exist_ok=True)
    with open(LOCK_FILE, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_built(expected):  # another session built it while we waited
            return
        STAMP_FILE.unlink(missing_ok=True)
        result = _run_maven([])
        if result.returncode != 0:
            # No network (or Central down): everything may already be in ~/.m2.
            offline = _run_maven(["-o"])
            if offline.returncode != 0:
                raise OracleError(
                    "building the Kafka Streams oracle failed\n"
                    f"online:\n{result.stdout}{result.stderr}\n"
                    f"offline:\n{offline.stdout}{offline.stderr}"
                )
        STAMP_FILE.write_text(expected + "\n")


def classpath() -> str:
    build()
    return os.pathsep.join([str(CLASSES_DIR), CLASSPATH_FILE.read_text().strip()])


def java_executable() -> str:
    """The java binary: $JAVA_HOME/bin/java if set, else java on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise OracleError("java is not on PATH; the Kafka Streams oracle needs Java 17+")
    return java


def run_main(main_class: str, args: Sequence[str] = (), stdin: str | None = None,
             timeout: float = 300) -> str:
    """Run one main of the harness and return its stdout; raise with the end of its stderr (its
    message, after Kafka Streams' own warnings and errors) on failure."""
    result = subprocess.run(
        [java_executable(), "-cp", classpath(), main_class, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode != 0:
        raise OracleError(
            f"{main_class} {' '.join(args)} exited with {result.returncode}\n{result.stderr[-_STDERR_SHOWN:]}"
        )
    return result.stdout


class BackgroundMain:
    """A main of the project run in a thread (Kafka Streams mostly waits: for its group, its
    repartition topics, its commits) while our side of a test runs; :meth:`report` waits for it and
    returns the JSON it printed. :meth:`close` waits for it whatever became of it (a test that
    failed first never asked)."""

    def __init__(self, main_class: str, args: Sequence[str], timeout: float = 600):
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafka-streams")
        self._run = self._pool.submit(run_main, main_class, args, timeout=timeout)
        self._report: dict | None = None

    def report(self) -> dict:
        if self._report is None:
            self._report = json.loads(self.stdout())
            self._pool.shutdown()
        return self._report

    def stdout(self) -> str:
        """Waits for the main; what it printed."""
        return self._run.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def java_topology_names() -> list[str]:
    """Names in the Java catalog (kstreams.oracle.TopologyCatalog), in definition order."""
    return run_main("kstreams.oracle.DescribeTopologies").split()


def describe_topologies(names: Iterable[str] = ("all",)) -> dict[str, str]:
    """Kafka Streams' Topology.describe().toString() for each catalog name.

    A topology that Kafka Streams refused to build maps to "!error: <exception>".
    """
    out = run_main("kstreams.oracle.DescribeTopologies", list(names))
    return json.loads(out)


def java_murmur2_partitions(keys: Sequence[bytes], num_partitions: int) -> list[tuple[int, int]]:
    """(Utils.murmur2(key), BuiltInPartitioner.partitionForKey(key, n)) for each key."""
    stdin = "".join(key.hex() + "\n" for key in keys)
    out = run_main("kstreams.oracle.Murmur2Partitions", [str(num_partitions)], stdin=stdin)
    rows = [tuple(int(field) for field in line.split()) for line in out.splitlines()]
    if len(rows) != len(keys):
        raise OracleError(f"expected {len(keys)} results from Murmur2Partitions, got {len(rows)}")
    return rows  # type: ignore[return-value]


def _encode_strings(items: Sequence[str]) -> str:
    return " ".join("x" + item.encode("utf-8").hex() for item in items)


def _decode_strings(line: str) -> list[str]:
    return [bytes.fromhex(token[1:]).decode("utf-8") for token in line.split()]


def java_hash_set_orders(cases: Sequence[Sequence[str]]) -> list[tuple[list[str], list[str]]]:
    """For each list of strings, the iteration order of Java's ``HashSet<String>`` built
    (1) with ``add`` in list order and (2) as ``new HashSet<>(list)``."""
    stdin = "".join(_encode_strings(case) + "\n" for case in cases)
    lines = run_main("kstreams.oracle.JavaHashSetOrder", stdin=stdin).split("\n")
    if len(lines) < 2 * len(cases):
        raise OracleError(f"expected {2 * len(cases)} lines from JavaHashSetOrder, got {len(lines)}")
    return [
        (_decode_strings(lines[2 * i]), _decode_strings(lines[2 * i + 1]))
        for i in range(len(cases))
    ]


def run_streams_apps(bootstrap: str, state_dir: str, runs: Sequence[tuple[str, str, str, str]],
                     threads: int = 1, stores: bool = True, timeout: float = 900) -> list[dict]:
    """Run real Kafka Streams apps (kstreams.oracle.StreamsApp), one after another in one JVM.

    Each run is ``(topology, application_id, input_topic, output_topic)``; it processes the
    input topic to its end offsets, then its stores are read with interactive queries. Returns,
    per run: ``{"topology", "application_id", "records", "seconds", "records_per_second",
    "stores": {store: {key: value}}}``.
    """
    args = ["--bootstrap", bootstrap, "--state-dir", state_dir, "--threads", str(threads)]
    if not stores:
        args.append("--no-stores")
    args += [":".join(run) for run in runs]
    return json.loads(run_main("kstreams.oracle.StreamsApp", args, timeout=timeout))["runs"]


def start_latency_app(bootstrap: str, state_dir: str, application_id: str, input_topic: str, output_topic: str,
                      commit_interval_ms: int = 100, threads: int = 1, stderr=None) -> subprocess.Popen:
    """Start kstreams.oracle.LatencyApp: users per country (JSON user values, ``country`` field),
    record cache off, at_least_once, running until ``stop`` is written to its stdin (or stdin
    closes). Its stdout (text) carries ``{"state": "RUNNING"}`` once running, then one JSON line
    with ``"stopped": true`` when it has closed. For bench/latency.py."""
    return subprocess.Popen(
        [java_executable(), "-cp", classpath(), "kstreams.oracle.LatencyApp",
         "--bootstrap", bootstrap, "--state-dir", state_dir, "--application-id", application_id,
         "--input", input_topic, "--output", output_topic,
         "--commit-interval-ms", str(commit_interval_ms), "--threads", str(threads)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr if stderr is not None else subprocess.DEVNULL,
        text=True, bufsize=1,
    )
