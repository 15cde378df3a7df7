"""Shared fixtures: one real Kafka broker and one SparkSession for the whole test session.

- ``kafka_bootstrap``: ``$KSTREAMS_TEST_BOOTSTRAP`` if set (``make test`` starts a broker and
  sets it); otherwise a LocalBroker on a free port in a temporary directory, stopped at the end.
- ``kafka_admin``: a ``KafkaAdmin`` on that broker.
- ``unique_topic``: ``unique_topic("orders")`` -> ``"orders-<random>"``, so tests never collide.
- ``spark``: a SparkSession on ``local[2]`` with Spark's Kafka connector, UI off, 2 shuffle partitions.
- ``spark_cluster``: a standalone Spark cluster (``LocalSparkCluster``: a master and a 4-core worker
  on free ports, in a temporary directory), started on first use and stopped at the end; its
  ``master_url`` is the ``spark://`` master, ``master_state()`` the master's JSON.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Iterator

import pytest
from hypothesis import settings

from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.local.broker import LocalBroker
from dagster_kstreams.local.processes import free_port
from dagster_kstreams.local.connect_server import LocalConnectServer
from dagster_kstreams.local.spark_cluster import LocalSparkCluster
from dagster_kstreams.spark.session import build_spark_session

TEST_BOOTSTRAP_ENV_VAR = "KSTREAMS_TEST_BOOTSTRAP"

# Property tests assert results, never time: beside the integration tests on two cores one example can
# take seconds, which hypothesis' default deadline (200 ms) would report as a failure.
settings.register_profile("results-not-time", deadline=None)
settings.load_profile("results-not-time")


# Under pytest-xdist (`make test`), the module that takes longest (about 3 minutes; a module is one
# unit of work) starts first, beside short ones: not beside the Spark Connect or UI tests, which also
# start several processes at once.
SLOWEST_MODULE = "test_elastic_workers.py"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the slowest module first, then the other modules with an integration test,
    then the modules of pure-logic tests: the long units start early and the many short ones fill
    the processes' ends, so that the processes finish together, and the elastic-workers test runs
    beside integration tests that wait, not beside the CPU-bound logic ones. Tests keep their order
    within a module."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    integration_modules = {item.path for item in items if item.get_closest_marker("integration")}

    def rank(item: pytest.Item) -> int:
        if item.path.name == SLOWEST_MODULE:
            return 0
        return 1 if item.path in integration_modules else 2

    items.sort(key=rank)  # stable: collection order within a rank


def pytest_collection_finish(session: pytest.Session) -> None:
    """When a selected test kills a run (tests/killed_runs.py), that run's process starts now, so
    that it is up by the time the test needs it (each later one starts as the last is killed)."""
    killed_runs = sys.modules.get("killed_runs")  # imported by the modules that use it, if any were collected
    if killed_runs is None:
        return
    modules = {getattr(item, "module", None) for item in session.items} - {None}
    if any(getattr(value, "__module__", None) == "killed_runs" for module in modules for value in vars(module).values()):
        killed_runs.start_next_killed_run(os.environ.get(TEST_BOOTSTRAP_ENV_VAR))


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    configured = os.environ.get(TEST_BOOTSTRAP_ENV_VAR)
    if configured:
        yield configured
        return

    port = free_port()
    controller_port = free_port()
    while controller_port == port:
        controller_port = free_port()
    broker = LocalBroker(
        port=port,
        controller_port=controller_port,
        state_dir=tmp_path_factory.mktemp("kafka-broker"),
        stop_with_parent=True,  # no orphaned broker if the test process crashes
    )
    broker.start()
    try:
        yield broker.bootstrap_servers
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_admin(kafka_bootstrap: str):
    return KafkaAdmin(kafka_bootstrap)


@pytest.fixture(scope="session")
def unique_topic() -> Callable[[str], str]:
    def make(prefix: str = "topic") -> str:
        return f"{prefix}-{uuid.uuid4().hex[:10]}"

    return make


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory):
    port = free_port()
    webui_port = free_port()
    while webui_port == port:
        webui_port = free_port()
    # 4 cores: three worker runs' applications at one core each (two workers and a standby in the
    # elastic-workers test) and one for an application that is still being removed.
    cluster = LocalSparkCluster(tmp_path_factory.mktemp("spark-cluster"), port=port, webui_port=webui_port,
                                cores=4, memory="3g", stop_with_parent=True)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark Connect server (``local[2]``, the Kafka connector's jars): ``$KSTREAMS_TEST_CONNECT``
    (``make test`` starts one beside the broker, at a higher priority than the tests), else one on a
    free port, started on first use and stopped at the end of the session. Its ``sc://`` URL."""
    given = os.environ.get("KSTREAMS_TEST_CONNECT")
    if given:
        yield given
        return
    server = LocalConnectServer(tmp_path_factory.mktemp("connect-server"), port=free_port(), cores=2,
                                stop_with_parent=True)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture(scope="session")
def spark():
    session = build_spark_session(
        "local[2]",
        {
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.session.timeZone": "UTC",
        },
        app_name="dagster-kstreams-tests",
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
