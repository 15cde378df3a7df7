"""`dagster-kstreams run MODULE:TOPOLOGY --app-id ID (--task 1_3 ... | --all)`: run tasks outside Dagster.

Each task processes its backlog (up to the end offsets seen when it starts) on a SparkSession,
printing a line per batch (records done, records per second, lag left) and a summary per task.
Task state lives under ``--state-location``, so the same command in another process or on
another machine (seeing the same location) continues where the last run stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from types import ModuleType
from typing import Any, Optional

from pyspark import cloudpickle

from dagster_kstreams.base.cli_options import CommandError, key_value
from dagster_kstreams.base.environment import BOOTSTRAP_SERVERS_ENV_VAR, DEFAULT_BOOTSTRAP_SERVERS, bootstrap_servers
from dagster_kstreams.spark.cache_size_option import add_cache_size_options, cache_size_of
from dagster_kstreams.spark.client_timeouts import DEFAULT_TASK_TIMEOUT_S
from dagster_kstreams.spark.errors import TaskFailedError
from dagster_kstreams.spark.internal_topics import PURGE_INTERVAL_S
from dagster_kstreams.spark.jvm import set_log_level
from dagster_kstreams.spark.session import DEFAULT_MASTER, build_spark_session, check_master, check_master_reachable
from dagster_kstreams.spark.strategies import DEFAULT_STATELESS_PASS, STATELESS_PASS_PLACES
from dagster_kstreams.spark.task_result import TaskProgress, TaskResult
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.spark.transactional_writer import DEFAULT_PROCESSING_GUARANTEE, PROCESSING_GUARANTEES
from dagster_kstreams.topology.application import check_application_id
from dagster_kstreams.topology.cli import find_topology_reference
from dagster_kstreams.topology.reference import TopologyReferenceError, build_topology
from dagster_kstreams.topology.view import Topology



def _find_topology(reference: str) -> tuple[Any, ModuleType]:
    """What ``package.module:name`` or ``path/to/file.py:name`` names, not yet built (see
    :mod:`dagster_kstreams.topology.reference`): checked before Spark starts."""
    try:
        target, module = find_topology_reference(reference)
    except TopologyReferenceError as error:
        raise CommandError(str(error)) from error
    # Spark's Python workers may not be able to import this module (a file outside sys.path, or
    # a cluster without the project): ship its functions by value, helpers included.
    cloudpickle.register_pickle_by_value(module)
    return target, module


def _build_topology(reference: str, target: Any) -> Topology:
    try:
        return build_topology(reference, target)
    except TopologyReferenceError as error:
        raise CommandError(str(error)) from error


def _print_progress(update: TaskProgress) -> None:
    print(
        f"task {update.task_id} batch {update.batch_id}: {update.records_done} records, "
        f"{update.records_per_second:,.0f} records/s, lag left {update.lag_left}",
        flush=True,
    )


def _print_result(result: TaskResult) -> None:
    written = ", ".join(f"{topic}={count}" for topic, count in sorted(result.records_out.items())) or "nothing"
    print(
        f"task {result.task_id} done: {result.records_in} records in {result.seconds:.1f}s "
        f"({result.records_per_second:,.0f} records/s), wrote {written}, lag left {result.total_lag_left}",
        flush=True,
    )


def _built_without_spark(reference: str, target: Any) -> Optional[Topology]:
    """The topology, or None when building it needs a SparkContext (PySpark Column expressions
    assert that one is active); it is then built once Spark runs."""
    try:
        return _build_topology(reference, target)
    except AssertionError:
        return None


def _runner(args: argparse.Namespace, topology: Topology, kafka_config: dict, spark: Any) -> TaskRunner:
    return TaskRunner(
        topology, args.app_id, kafka_config, state_location=args.state_location, spark=spark,
        deserialization_exception_handler=args.deserialization_exception_handler,
        dead_letter_topic=args.dead_letter_topic,
        max_records_per_batch=args.max_records_per_batch, processing_guarantee=args.processing_guarantee,
        task_timeout_s=args.task_timeout, stateless_pass=args.stateless_pass,
        statestore_cache_max_bytes=cache_size_of(args),
        repartition_purge_interval_s=args.repartition_purge_interval,
    )


def _run(args: argparse.Namespace) -> int:
    try:
        return _run_tasks(args)
    except (CommandError, TaskFailedError, ValueError, KeyError) as error:
        if args.verbose:
            traceback.print_exc()
        print(f"dagster-kstreams: error: {error}", file=sys.stderr)
        return 1


def _run_tasks(args: argparse.Namespace) -> int:
    if not args.task and not args.all:
        raise CommandError("name tasks with --task (e.g. --task 1_3) or run them all with --all")
    check_application_id(args.app_id)  # the cheap checks before Spark starts
    cache_size_of(args)
    check_master(args.master)
    check_master_reachable(args.master)  # a master or Connect server nobody listens at: said before the rest
    target, _module = _find_topology(args.topology)
    kafka_config = {"bootstrap.servers": args.bootstrap_servers or bootstrap_servers(), **dict(args.kafka_config)}
    topology = _built_without_spark(args.topology, target)
    if topology is not None:
        # What the runner cannot run, an unreachable broker, a missing source topic: said in a
        # second, before Spark starts (the runner is built again on the session below).
        _runner(args, topology, kafka_config, spark=None).partitioned()
    # A failure is said in one line (below); Spark's own log of it (hundreds of lines) only if asked.
    log_level = "WARN" if args.verbose else "OFF"
    spark_conf = {"spark.ui.enabled": "false", "spark.log.level": log_level,
                  "spark.ui.showConsoleProgress": str(args.verbose).lower(), **dict(args.spark_conf)}
    # Workers must run this interpreter (with pandas and pyarrow), not whatever `python3` is.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = build_spark_session(args.master, spark_conf, app_name=f"dagster-kstreams-{args.app_id}")
    set_log_level(spark, log_level)
    try:
        runner = _runner(args, topology or _build_topology(args.topology, target), kafka_config, spark)
        if args.all:
            results = runner.run_all(args.max_records, _print_progress, parallelism=args.parallelism)
            for result in results:
                _print_result(result)
        else:
            results = []
            for task_id in args.task:
                result = runner.run_task(task_id, max_records=args.max_records, progress=_print_progress)
                _print_result(result)
                results.append(result)
        if args.json:
            print(json.dumps([result.as_dict() for result in results]), flush=True)
        return 0
    finally:
        spark.stop()


def register(subcommands: "argparse._SubParsersAction") -> None:
    parser = subcommands.add_parser(
        "run", help="run stream tasks on Spark (outside Dagster)", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topology", help="MODULE:TOPOLOGY (a Topology, a StreamsBuilder, or a function returning one)")
    parser.add_argument("--app-id", required=True, help="application id: consumer group and internal topic prefix")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--task", action="append", default=[], help="task id such as 1_3 (repeatable)")
    which.add_argument("--all", action="store_true", help="every task, upstream sub-topologies first")
    parser.add_argument("--bootstrap-servers", default=None,
                        help=f"Kafka bootstrap servers "
                             f"(default ${BOOTSTRAP_SERVERS_ENV_VAR} or {DEFAULT_BOOTSTRAP_SERVERS})")
    parser.add_argument("--kafka-config", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                        help="Kafka client setting for both the admin client and Spark (repeatable)")
    parser.add_argument("--state-location", default=None,
                        help="root of task checkpoints and state: a directory or Hadoop URI "
                             "(default <DAGSTER_KSTREAMS_HOME or ./.kstreams>/state)")
    parser.add_argument("--master", default=DEFAULT_MASTER, help=f"Spark master (default {DEFAULT_MASTER}: two task slots per core)")
    parser.add_argument("--spark-conf", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                        help="Spark setting (repeatable)")
    parser.add_argument("--max-records", type=int, default=None, help="stop each task after about this many records")
    parser.add_argument("--max-records-per-batch", type=int, default=200_000,
                        help="records per micro-batch; offsets are committed after each (default 200000)")
    parser.add_argument("--processing-guarantee", choices=PROCESSING_GUARANTEES, default=DEFAULT_PROCESSING_GUARANTEE,
                        help="exactly_once_v2 (default: each batch's output and offsets in one Kafka transaction, "
                             "read read_committed) or at_least_once (Spark's Kafka sink, replays deduplicated)")
    parser.add_argument("--stateless-pass", choices=STATELESS_PASS_PLACES, default=DEFAULT_STATELESS_PASS,
                        help="under exactly_once_v2, where a stateless sub-topology's Python pass runs: on the "
                             "driver (default: one core, no trip through a Python worker per batch) or on Spark's "
                             "Python workers (every executor core, for costly functions on many cores)")
    parser.add_argument("--task-timeout", type=float, default=DEFAULT_TASK_TIMEOUT_S, metavar="SECONDS",
                        help="how long a running task waits for an unavailable broker (a restart, a coordinator "
                             f"moving) before it fails (default {DEFAULT_TASK_TIMEOUT_S:.0f})")
    add_cache_size_options(parser)
    parser.add_argument("--repartition-purge-interval", type=float, default=PURGE_INTERVAL_S, metavar="SECONDS",
                        help="Kafka Streams' repartition.purge.interval.ms, in seconds: how often a task deletes what "
                             f"it consumed of its repartition topics (default {PURGE_INTERVAL_S:.0f}; inf: never)")
    parser.add_argument("--deserialization-exception-handler", choices=["fail", "log_and_continue"], default="fail")
    parser.add_argument("--dead-letter-topic", default=None,
                        help="with log_and_continue: write undeserializable records here")
    parser.add_argument("--parallelism", type=int, default=None,
                        help="with --all: by default every task runs at once, sub-topologies pipelined (on all "
                             "the cores of --master); N runs one sub-topology after another, N of its tasks at a time")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON line at the end")
    parser.add_argument("--verbose", action="store_true",
                        help="Spark's own log (warnings and errors) and a failure's stack trace, not only its cause")
    parser.set_defaults(handler=_run)
