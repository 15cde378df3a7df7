"""A topology loaded by the CLI from a file (``path/to/topology.py:build``) whose functions call a
helper defined in that file must compute what Kafka Streams computes for the same code.

Found while writing the issue-4 equivalence tests: the CLI registers the file as module
``<file stem>`` in the driver only. cloudpickle pickles a module-level function by reference
(module name + qualified name), so a Spark Python worker unpickling the lambda's reference to
the helper tries ``import <file stem>`` and fails with ModuleNotFoundError unless the file's
directory happens to be on the workers' path. Plain lambdas work; ordinary Python (a lambda
calling a ``def`` next to it) does not.

Compared: each key's final value, with the timestamp its record was written with (Kafka Streams'
``KStreamMapValues`` forwards the input record's own: the inputs carry distinct old ones).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from equivalence_io import final_values_and_times
from dagster_kstreams.kafka.records import produce, read_topic

pytestmark = pytest.mark.integration

T0 = (int(time.time()) - 3600) * 1000  # recent (broker retention), far from the time of the run


def test_cli_runs_a_topology_file_whose_lambda_calls_a_helper_of_that_file(
    kafka_bootstrap, kafka_admin, unique_topic, tmp_path
):
    source, sink = unique_topic("file-helper-in"), unique_topic("file-helper-out")
    kafka_admin.create_topics({source: 1, sink: 1})
    produce(kafka_bootstrap, source, [(f"k{i}".encode(), f"fr,word{i}".encode(), None, T0 + i * 7) for i in range(10)])
    # Outside the working directory and outside sys.path, as a user's project file would be.
    module_dir = tmp_path / "elsewhere"
    module_dir.mkdir()
    module = module_dir / "helper_topology.py"
    module.write_text(textwrap.dedent(f"""
        from dagster_kstreams.topology.consumed_produced import Consumed, Produced
        from dagster_kstreams.topology import StreamsBuilder
        from dagster_kstreams.topology.serdes import Serdes


        def country(value):
            return value[: value.index(",")]


        def build():
            builder = StreamsBuilder()
            builder.stream({source!r}, Consumed.with_(Serdes.String(), Serdes.String())) \\
                .map_values(lambda value: country(value).upper()) \\
                .to({sink!r}, Produced.with_(Serdes.String(), Serdes.String()))
            return builder.build()
    """))
    completed = subprocess.run(
        [sys.executable, "-m", "dagster_kstreams.cli", "run", f"{module}:build", "--app-id", unique_topic("app"),
         "--all", "--bootstrap-servers", kafka_bootstrap, "--state-location", str(tmp_path / "state"),
         "--master", "local[1]"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        # PYTHONFAULTHANDLER: a crash of the driver (seen once: SIGSEGV) leaves a Python traceback.
        env={**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONFAULTHANDLER": "1"},
    )
    errors = [line for line in completed.stderr.splitlines() if "Error" in line][-3:]
    assert completed.returncode == 0, f"the CLI failed (exit {completed.returncode}): " \
                                      f"{errors or completed.stderr[-2000:]}"
    assert final_values_and_times(read_topic(kafka_bootstrap, sink)) == {f"k{i}": ("FR", T0 + i * 7) for i in range(10)}
