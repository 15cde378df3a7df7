"""`dagster-kstreams local up | down | status | jars | spark-archive | spark-cluster | spark-connect`: the embedded
stack from a terminal."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dagster_kstreams.base.cli_options import key_value
from dagster_kstreams.local.broker import DEFAULT_HEAP, DEFAULT_PORT, LocalBroker
from dagster_kstreams.base.jars import ARTIFACT_SETS, resolve_jars
from dagster_kstreams.local.connect_server import DEFAULT_CONNECT_PORT, LocalConnectServer
from dagster_kstreams.local.spark_archive import build_spark_archive
from dagster_kstreams.local.spark_cluster import DEFAULT_MASTER_PORT, DEFAULT_WEBUI_PORT, LocalSparkCluster


def _broker(args: argparse.Namespace) -> LocalBroker:
    return LocalBroker(
        port=args.port,
        controller_port=args.controller_port,
        state_dir=args.state_dir,
        data_dir=args.data_dir,
        heap=args.heap,
        broker_config=dict(args.broker_config),
    )


def _up(args: argparse.Namespace) -> int:
    broker = _broker(args)
    already = broker.running_pid() is not None
    status = broker.start()
    print(f"{'already running' if already else 'started'}: Kafka broker pid {status.pid}, log {status.log_file}")
    print(f"bootstrap servers: {status.bootstrap_servers}")
    return 0


def _down(args: argparse.Namespace) -> int:
    broker = _broker(args)
    print(f"stopped Kafka broker ({broker.state_dir})" if broker.stop() else "Kafka broker was not running")
    return 0


def _status(args: argparse.Namespace) -> int:
    broker = _broker(args)
    status = broker.status()
    answering = status.running and broker.answers_metadata(bootstrap_servers=status.bootstrap_servers)
    print(status.describe() + (" (answers metadata requests)" if answering else " (not answering yet)" if status.running else ""))
    return 0 if status.running else 3  # 3 = "not running", as in LSB init scripts


def _jars(args: argparse.Namespace) -> int:
    for name in args.names or ARTIFACT_SETS:
        jars = resolve_jars(name)
        print(f"{name}: {len(jars)} jars in {jars[0].parent}")
    return 0


def _spark_archive(args: argparse.Namespace) -> int:
    started = time.monotonic()
    path = build_spark_archive(args.bootstrap, force=args.force)
    print(f"Spark class archive: {path} ({path.stat().st_size >> 20} MB, {time.monotonic() - started:.0f}s)")
    return 0


def _spark_cluster(args: argparse.Namespace) -> int:
    cluster = LocalSparkCluster(args.state_dir, port=args.port, webui_port=args.webui_port, cores=args.cores,
                                memory=args.memory)
    if args.action == "up":
        already = cluster.status().running
        status = cluster.start()
        print(f"{'already running' if already else 'started'}: {status.describe()}")
        return 0
    if args.action == "down":
        print(f"stopped the Spark cluster ({cluster.state_dir})" if cluster.stop() else "Spark cluster was not running")
        return 0
    status = cluster.status()
    print(status.describe())
    return 0 if status.running else 3


def _spark_connect(args: argparse.Namespace) -> int:
    server = LocalConnectServer(args.state_dir, port=args.port, cores=args.cores)
    if args.action == "up":
        already = server.running_pid() is not None
        url = server.start()
        print(f"{'already running' if already else 'started'}: Spark Connect server {url} (log {server.log_file})")
        return 0
    if args.action == "down":
        print(f"stopped the Spark Connect server ({server.state_dir})" if server.stop()
              else "Spark Connect server was not running")
        return 0
    pid = server.running_pid()
    print(f"Spark Connect server {server.url}: " + (f"running (pid {pid})" if pid else "not running"))
    return 0 if pid else 3


def register(subcommands: argparse._SubParsersAction) -> None:
    """Add the `local` command group to the top-level parser."""
    local = subcommands.add_parser("local", help="the local Kafka broker, Spark cluster and JVM artifacts")
    actions = local.add_subparsers(dest="local_command", required=True, metavar="{up,down,status,jars,spark-archive,spark-cluster,spark-connect}")

    def broker_options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"broker port on 127.0.0.1 (default {DEFAULT_PORT})")
        parser.add_argument("--controller-port", type=int, default=None, help="KRaft controller port (default port+1)")
        parser.add_argument("--state-dir", type=Path, default=None, help="pid file, config, logs (default $DAGSTER_KSTREAMS_HOME/broker)")
        parser.add_argument("--data-dir", type=Path, default=None, help="log segments and metadata (default STATE_DIR/data)")
        parser.add_argument("--heap", default=DEFAULT_HEAP, help=f"the broker JVM's maximum heap, as -Xmx takes it (default {DEFAULT_HEAP})")
        parser.add_argument("--broker-config", action="append", default=[], type=key_value, metavar="KEY=VALUE", help="extra server.properties setting (repeatable)")

    for name, handler, text in (
        ("up", _up, "start the broker (no-op if it runs) and print the bootstrap address"),
        ("down", _down, "stop the broker started from this state directory"),
        ("status", _status, "say whether the broker runs (exit 3 if not)"),
    ):
        parser = actions.add_parser(name, help=text)
        broker_options(parser)
        parser.set_defaults(handler=handler)
    jars = actions.add_parser("jars", help="resolve the JVM artifacts with Maven (cached)")
    jars.add_argument("names", nargs="*", choices=[[], *ARTIFACT_SETS], metavar="NAME", help=f"any of {', '.join(ARTIFACT_SETS)} (default all)")
    jars.set_defaults(handler=_jars)
    archive = actions.add_parser("spark-archive", help="archive the Spark driver's classes so that sessions start "
                                 "in half the time (cached per Java and pyspark)")
    archive.add_argument("--bootstrap", default=None, help="a broker to run a small application on, so that the "
                         "archive also holds the Kafka and streaming classes")
    archive.add_argument("--force", action="store_true", help="make it again even if it is there")
    archive.set_defaults(handler=_spark_archive)
    cluster = actions.add_parser("spark-cluster", help="a standalone Spark cluster (a master and one worker) for "
                                 "worker runs with master spark://127.0.0.1:PORT")
    cluster.add_argument("action", choices=["up", "down", "status"], help="start (no-op if it runs), stop, or say "
                         "whether it runs (exit 3 if not)")
    cluster.add_argument("--port", type=int, default=None, help=f"master port (default: the running cluster's of "
                         f"this state directory, else {DEFAULT_MASTER_PORT})")
    cluster.add_argument("--webui-port", type=int, default=None, help=f"master web UI and JSON port (default: the "
                         f"running cluster's of this state directory, else {DEFAULT_WEBUI_PORT})")
    cluster.add_argument("--cores", type=int, default=4, help="cores the worker offers: at least (max_workers + "
                         "standby_workers) x spark.cores.max (default 4)")
    cluster.add_argument("--memory", default="4g", help="memory the worker offers to executors (default 4g)")
    cluster.add_argument("--state-dir", type=Path, default=None, help="pid files, logs, executors' work "
                         "(default $DAGSTER_KSTREAMS_HOME/spark-cluster)")
    cluster.set_defaults(handler=_spark_cluster)
    connect = actions.add_parser("spark-connect", help="a Spark Connect server on local[CORES] with the Kafka "
                                 "connector, for masters sc://127.0.0.1:PORT")
    connect.add_argument("action", choices=["up", "down", "status"], help="start (no-op if it runs), stop, or say "
                         "whether it runs (exit 3 if not)")
    connect.add_argument("--port", type=int, default=DEFAULT_CONNECT_PORT, help=f"its port (default {DEFAULT_CONNECT_PORT})")
    connect.add_argument("--cores", type=int, default=2, help="the cores of its local master (default 2)")
    connect.add_argument("--state-dir", type=Path, default=None, help="pid file and log "
                         "(default $DAGSTER_KSTREAMS_HOME/connect-server)")
    connect.set_defaults(handler=_spark_connect)
