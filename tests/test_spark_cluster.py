"""Spark beyond local mode: what a cluster master gets (the project's zip for executors, one core
per application), Spark Connect refused in one line, and `dagster-kstreams local spark-cluster` and
`spark-connect`.

A real standalone cluster running worker runs is exercised by tests/test_elastic_workers.py (the
``spark_cluster`` fixture); these checks start no JVM.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import zipfile

import dagster as dg
import pytest

from dagster_kstreams.cli import main
from dagster_kstreams.local.processes import free_port, process_command_line
from dagster_kstreams.local.spark_cluster import (
    CLUSTER_FILE, DEFAULT_MASTER_PORT, MASTER_CLASS, WORKER_CLASS, LocalSparkCluster,
)
from dagster_kstreams.orchestration.resources import KStreamsSparkResource
from dagster_kstreams.spark.project_archive import project_archive
from dagster_kstreams.spark.session import SparkSessionError, spark_conf

CONNECT = "sc://127.0.0.1:15002"


def _one_line_error(capsys, fragment: str) -> None:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dagster-kstreams: error: "), err
    assert fragment in err[0], err[0]


def test_a_spark_connect_master_is_accepted_by_the_resource_and_its_settings_are_the_session_s_only():
    assert KStreamsSparkResource(master=CONNECT).master == CONNECT
    settings = spark_conf(CONNECT, {"spark.sql.shuffle.partitions": "3", "spark.ui.enabled": "false"})
    assert settings == {"spark.remote": CONNECT, "spark.sql.shuffle.partitions": "3"}  # the server's are its own


def test_the_resource_checks_a_literal_master_at_configuration_and_leaves_an_env_var_to_the_run():
    with pytest.raises(SparkSessionError, match="'spark:/nohost' is not a master URL"):
        KStreamsSparkResource(master="spark:/nohost")
    assert KStreamsSparkResource(master=dg.EnvVar("SPARK_MASTER_OF_SOME_DEPLOYMENT")).master is not None
    assert KStreamsSparkResource(master="spark://10.0.0.5:7077").master == "spark://10.0.0.5:7077"


def test_dagster_kstreams_run_names_a_spark_connect_server_nobody_listens_at_in_one_line(capsys, kafka_bootstrap):
    assert main(["run", "assets.word_count:build_topology", "--app-id", "connect-unreachable", "--all",
                 "--bootstrap-servers", kafka_bootstrap, "--master", "sc://127.0.0.1:1"]) == 1
    _one_line_error(capsys, "Spark Connect server 'sc://127.0.0.1:1' is unreachable (127.0.0.1:1: Connection refused)")


def test_a_cluster_master_ships_the_project_and_takes_one_core_unless_told():
    settings = spark_conf("spark://10.0.0.5:7077", {"spark.submit.pyFiles": "/opt/mine.zip"})
    python_files = settings["spark.submit.pyFiles"].split(",")
    assert python_files == ["/opt/mine.zip", str(project_archive())]
    assert settings["spark.cores.max"] == "1"
    assert spark_conf("spark://10.0.0.5:7077", {"spark.cores.max": "3"})["spark.cores.max"] == "3"
    kubernetes = spark_conf("k8s://https://10.0.0.1:6443")
    assert kubernetes["spark.submit.pyFiles"] == str(project_archive()) and "spark.cores.max" not in kubernetes
    local = spark_conf("local[2]")
    assert "spark.submit.pyFiles" not in local and "spark.cores.max" not in local


def test_the_project_zip_is_importable_on_its_own_and_made_once(tmp_path):
    archive = project_archive(tmp_path)
    assert project_archive(tmp_path) == archive and len(list(archive.parent.iterdir())) == 1
    with zipfile.ZipFile(archive) as opened:
        names = set(opened.namelist())
    assert {"dagster_kstreams/__init__.py", "dagster_kstreams/processors/program.py"} <= names
    # A Python that has only the zip on its path (-S: no site-packages, so no installed copy).
    found = subprocess.run(
        [sys.executable, "-S", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
         "import dagster_kstreams.topology.task_id as m; print(m.__file__)", str(archive)],
        capture_output=True, text=True, check=True).stdout.strip()
    assert found.startswith(str(archive)), found


def test_spark_cluster_status_and_a_taken_port_are_one_line(capsys, tmp_path):
    assert main(["local", "spark-cluster", "status", "--state-dir", str(tmp_path)]) == 3
    assert capsys.readouterr().out.startswith("Spark cluster not running")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["local", "spark-cluster", "up", "--state-dir", str(tmp_path), "--port", str(port),
                     "--webui-port", str(free_port())]) == 1
    _one_line_error(capsys, f"the master port 127.0.0.1:{port} is taken")
    assert main(["local", "spark-cluster", "down", "--state-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == "Spark cluster was not running"


def test_spark_connect_status_and_a_taken_port_are_one_line(capsys, tmp_path):
    assert main(["local", "spark-connect", "status", "--state-dir", str(tmp_path), "--port", "15999"]) == 3
    assert capsys.readouterr().out.strip() == "Spark Connect server sc://127.0.0.1:15999: not running"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["local", "spark-connect", "up", "--state-dir", str(tmp_path), "--port", str(port)]) == 1
    _one_line_error(capsys, f"the port 127.0.0.1:{port} is taken")
    assert main(["local", "spark-connect", "down", "--state-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == "Spark Connect server was not running"


def _stand_in(tmp_path, role: str, main_class: str) -> subprocess.Popen:
    """A process whose command line names ``main_class``, recorded as ``role``'s pid: what the
    cluster's bookkeeping looks for, with no JVM to start."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", main_class])
    (tmp_path / f"{role}.pid").write_text(str(process.pid))
    return process


def test_status_and_down_without_ports_find_the_ports_up_recorded(capsys, tmp_path):
    master = _stand_in(tmp_path, "master", MASTER_CLASS)
    worker = _stand_in(tmp_path, "worker", WORKER_CLASS)
    try:
        (tmp_path / CLUSTER_FILE).write_text(json.dumps({"port": 17391, "webui_port": 18391}))
        found = LocalSparkCluster(tmp_path)
        assert (found.master_url, found.webui_url) == ("spark://127.0.0.1:17391", "http://127.0.0.1:18391")
        assert LocalSparkCluster(tmp_path, port=17000).master_url == "spark://127.0.0.1:17000"  # given wins
        assert main(["local", "spark-cluster", "status", "--state-dir", str(tmp_path)]) == 0
        assert capsys.readouterr().out.startswith("Spark cluster running: master spark://127.0.0.1:17391, ")
        assert main(["local", "spark-cluster", "down", "--state-dir", str(tmp_path)]) == 0
        assert capsys.readouterr().out.strip() == f"stopped the Spark cluster ({tmp_path})"
        assert process_command_line(master.pid) is None and process_command_line(worker.pid) is None  # stopped
        assert not (tmp_path / CLUSTER_FILE).exists()
    finally:
        for process in (master, worker):
            process.kill()
            process.wait()
    # Nothing runs from this state directory: the defaults, whatever a stale file says.
    (tmp_path / CLUSTER_FILE).write_text(json.dumps({"port": 17391, "webui_port": 18391}))
    assert LocalSparkCluster(tmp_path).master_url == f"spark://127.0.0.1:{DEFAULT_MASTER_PORT}"
