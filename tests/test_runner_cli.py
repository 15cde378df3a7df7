"""`dagster-kstreams run`: tasks continue in another process from the state the last run left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from dagster_kstreams.cli import build_parser, main
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.spark.task_runner import TaskRunner

pytestmark = pytest.mark.integration


def _users(count: int, start: int = 0) -> list[tuple[bytes, bytes]]:
    countries = ["fr", "fr", "fr", "de", "de", "it"]
    return [(f"u{i}".encode(), f"u{i},{countries[(i * 5) % 6]}".encode()) for i in range(start, start + count)]


def _load(path: Path):
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["build"]()


def test_cli_continues_a_task_started_in_another_process(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path):
    users, per_country = unique_topic("users"), unique_topic("per-country")
    kafka_admin.create_topics({users: 2, per_country: 2})
    module = tmp_path / "country_counts.py"
    module.write_text(textwrap.dedent(f"""
        from dagster_kstreams.topology import StreamsBuilder

        def build():
            builder = StreamsBuilder()
            builder.stream({users!r}).group_by(lambda key, value: value.split(",")[1]).count() \\
                .to_stream().to({per_country!r})
            return builder.build()
    """))
    app_id = unique_topic("app")
    state = tmp_path / "state"
    first = _users(50)
    produce(kafka_bootstrap, users, first)
    TaskRunner(_load(module), app_id, kafka_bootstrap, state_location=str(state), spark=spark).run_all()

    more = _users(30, start=50)
    produce(kafka_bootstrap, users, more)
    command = [
        sys.executable, "-m", "dagster_kstreams.cli", "run", f"{module}:build", "--app-id", app_id, "--all",
        "--bootstrap-servers", kafka_bootstrap, "--state-location", str(state), "--master", "local[1]",
        "--spark-conf", "spark.sql.shuffle.partitions=1", "--json",
    ]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600,
                               env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = completed.stdout.strip().splitlines()
    assert any(line.startswith("task 0_0 batch") and "records/s" in line and "lag left 0" in line for line in lines)
    results = {result["task_id"]: result for result in json.loads(lines[-1])}
    assert sorted(results) == ["0_0", "0_1", "1_0", "1_1"]
    # The second process read only the new records: the first process's offsets were its start.
    assert sum(results[task]["records_in"] for task in ("0_0", "0_1")) == len(more)
    # ... and counted on from the first process's state.
    expected = Counter(value.decode().split(",")[1] for _, value in first + more)
    assert final_values(read_topic(kafka_bootstrap, per_country), bytes.decode,
                        lambda data: int.from_bytes(data, "big", signed=True)) == dict(expected)


def test_cli_runs_a_topology_with_column_expressions(kafka_bootstrap, kafka_admin, unique_topic, tmp_path):
    """PySpark Column expressions need a SparkContext: the CLI builds such a topology once Spark runs."""
    words, shouted = unique_topic("words"), unique_topic("shouted")
    kafka_admin.create_topics({words: 1, shouted: 1})
    module = tmp_path / "shouting.py"
    module.write_text(textwrap.dedent(f"""
        from pyspark.sql import functions as F
        from dagster_kstreams.topology import Consumed, Produced, Serdes, StreamsBuilder

        def build():
            builder = StreamsBuilder()
            builder.stream({words!r}, Consumed.with_(Serdes.String(), Serdes.String())) \\
                .map_values(F.upper(F.col("value"))).to({shouted!r}, Produced.with_(Serdes.String(), Serdes.String()))
            return builder.build()
    """))
    produce(kafka_bootstrap, words, [(b"a", b"hello"), (b"b", b"streams")])
    command = [
        sys.executable, "-m", "dagster_kstreams.cli", "run", f"{module}:build", "--app-id", unique_topic("app"),
        "--all", "--bootstrap-servers", kafka_bootstrap, "--state-location", str(tmp_path / "state"),
        "--master", "local[1]", "--spark-conf", "spark.sql.shuffle.partitions=1",
    ]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600,
                               env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert [(record.key, record.value) for record in read_topic(kafka_bootstrap, shouted)] == [
        (b"a", b"HELLO"), (b"b", b"STREAMS")]


def test_cli_reports_a_bad_task_id_in_one_line(tmp_path):
    module = tmp_path / "tiny.py"
    module.write_text("from dagster_kstreams.topology import StreamsBuilder\n"
                      "def build():\n    b = StreamsBuilder()\n    b.stream('a').to('b')\n    return b.build()\n")
    with pytest.raises(SystemExit):  # argparse: --task and --all are exclusive
        main(["run", f"{module}:build", "--app-id", "x", "--task", "0_0", "--all"])
    assert main(["run", f"{module}:nope", "--app-id", "x", "--all"]) == 1


def test_cli_says_what_is_missing_before_spark_starts(kafka_bootstrap, unique_topic, spark, tmp_path, capsys):
    """A missing source topic and an unreachable broker: one line each, found before any SparkSession
    is made (in this process, one would be the tests' own, and the command stops its session)."""
    missing = unique_topic("missing")
    module = tmp_path / "reads_nothing.py"
    module.write_text("from dagster_kstreams.topology import StreamsBuilder\n"
                      f"def build():\n    b = StreamsBuilder()\n    b.stream({missing!r}).to('out')\n    return b.build()\n")
    assert main(["run", f"{module}:build", "--app-id", "x", "--all", "--bootstrap-servers", kafka_bootstrap]) == 1
    assert main(["run", f"{module}:build", "--app-id", "x", "--all", "--bootstrap-servers", "127.0.0.1:1",
                 "--kafka-config", "socket.connection.setup.timeout.ms=1000"]) == 1
    errors = capsys.readouterr().err.strip().splitlines()
    assert errors[0] == f"dagster-kstreams: error: topic {missing!r} does not exist on {kafka_bootstrap}"
    assert errors[1].startswith("dagster-kstreams: error: Kafka at 127.0.0.1:1 is unreachable")
    assert len(errors) == 2
    assert spark.range(3).count() == 3  # the tests' session was never touched


@pytest.mark.parametrize("argv, option", [
    (["local", "up", "--broker-config", "log.retention.hours"], "--broker-config"),
    (["run", "assets.word_count:build_topology", "--bootstrap-servers", "127.0.0.1:1", "--spark-conf", "=x"],
     "--spark-conf"),
    (["run", "assets.word_count:build_topology", "--bootstrap-servers", "127.0.0.1:1", "--kafka-config", "acks"],
     "--kafka-config"),
])
def test_settings_options_reject_anything_but_key_value(argv, option, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 2
    assert f"argument {option}: expects KEY=VALUE, got" in capsys.readouterr().err


def test_settings_options_collect_repeated_pairs():
    args = build_parser().parse_args(["local", "up", "--broker-config", "a=1", "--broker-config", " b = x=y "])
    assert dict(args.broker_config) == {"a": "1", "b": "x=y"}
