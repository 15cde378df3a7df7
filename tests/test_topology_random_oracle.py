"""Random-program differential test: hundreds of random DSL programs built by dagster_kstreams
and by Kafka Streams 4.3.1 (compiled against the oracle's classpath) must describe() the same.

Complements the hand-written catalog (test_describe_oracle.py) with combinations nobody wrote
down: fan-outs whose ``-->`` order depends on Kafka's TreeSet, repartition reuse, materialization
decided by later joins, counters burned by named operators. Set KSTREAMS_RANDOM_PROGRAMS=N to
try more programs, KSTREAMS_RANDOM_SEED=S to shift the seeds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from datetime import timedelta  # noqa: F401  (used by the generated programs)

import pytest

import oracle_harness
from topology_random_programs import java_sources, random_program

import dagster_kstreams
from dagster_kstreams import *  # noqa: F401,F403  (the generated programs use the public names)

COUNT = int(os.environ.get("KSTREAMS_RANDOM_PROGRAMS", "300"))
FIRST_SEED = int(os.environ.get("KSTREAMS_RANDOM_SEED", "0"))


@pytest.fixture(scope="module")
def programs_and_java_descriptions(tmp_path_factory):
    programs = [random_program(seed) for seed in range(FIRST_SEED, FIRST_SEED + COUNT)]
    workdir = tmp_path_factory.mktemp("random-programs")
    sources = java_sources(programs)
    for file_name, source in sources.items():
        (workdir / file_name).write_text(source)
    classpath = oracle_harness.classpath()
    javac = shutil.which("javac")
    assert javac, "javac (JDK 17+) is needed for the random-program oracle"
    compiled = subprocess.run([javac, "-nowarn", "-cp", classpath, "-d", str(workdir), *sources],
                              cwd=workdir, capture_output=True, text=True, timeout=600)
    assert compiled.returncode == 0, compiled.stderr[-5000:]
    ran = subprocess.run([oracle_harness.java_executable(), "-Xss16m", "-cp", f"{workdir}{os.pathsep}{classpath}",
                          "RandomPrograms"], capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-5000:]
    java = dict(re.findall(r"=== (\d+)\n(.*?)\n=== end\n", ran.stdout, re.S))
    assert len(java) == COUNT
    return programs, java


def test_random_programs_describe_like_kafka_streams(programs_and_java_descriptions):
    programs, java = programs_and_java_descriptions
    mismatches = []
    for program in programs:
        namespace = dict(vars(dagster_kstreams))
        namespace["timedelta"] = timedelta
        try:
            exec(program.python_source() + "result = str(b.build().describe())", namespace)  # noqa: S102
            ours = namespace["result"]
        except Exception as error:  # noqa: BLE001 - compared with Kafka's own failure below
            ours = f"!error {type(error).__name__}: {error}"
        expected = java[str(program.seed)]
        if expected.startswith("!error"):
            if not ours.startswith("!error"):
                mismatches.append((program, expected, ours))
        elif ours != expected:
            mismatches.append((program, expected, ours))
    if mismatches:
        program, expected, ours = mismatches[0]
        pytest.fail(
            f"{len(mismatches)} of {len(programs)} random programs differ; first, seed {program.seed}:\n"
            f"{program.python_source()}\n--- Kafka Streams\n{expected}\n--- ours\n{ours}",
            pytrace=False,
        )


def test_random_programs_cover_the_dsl(programs_and_java_descriptions):
    programs, _ = programs_and_java_descriptions
    text = "\n".join(line for p in programs for line in p.python)
    for operation in ("outer_join(", "split(", "suppress(", "windowed_by(SessionWindows", "to_table(",
                      "repartition(", "group_by(lambda k, v: (v, v)", "merge("):
        assert operation in text, operation
