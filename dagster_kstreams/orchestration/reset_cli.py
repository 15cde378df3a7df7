"""``dagster-kstreams reset MODULE:TOPOLOGY --app-id ID [--to-datetime TIME] [--dry-run]``: start over.

As Kafka Streams' application reset tool (``kafka-streams-application-reset``): the input topics'
committed offsets go back to the earliest offsets (``--to-datetime``: to the first record at or
after that time), the internal topics are deleted (the repartition topics, and any other
``<app-id>-...-repartition`` or ``-changelog`` topic), and so is the tasks' state (their Spark
checkpoints under the state location). The next run processes the input again from there.
``--dry-run`` prints the plan and changes nothing.

It refuses while the application runs:
  - a worker run of the application is queued, starting or running in the Dagster instance of
    $DAGSTER_HOME (retire the workers and stop the app's lag sensor first, or the sensor starts
    them again);
  - the consumer group ID has members (a Kafka Streams instance with the same id), as Kafka
    Streams' tool refuses.
A process started outside Dagster (``dagster-kstreams run``) cannot be seen: stop it first. The
reset takes every task's transactional id before changing anything, so such a process can
commit nothing afterwards.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time

import dagster as dg
from pyspark.sql import SparkSession

from dagster_kstreams.base.cli_options import CommandError, add_kafka_options, kafka_settings, key_value
from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.kafka.fencing import FenceError
from dagster_kstreams.kafka.task_lag import with_broker_partitions
from dagster_kstreams.orchestration.protocol import TAG_APP, TAG_WORKER, app_id_tag, read_heartbeats, read_processes
from dagster_kstreams.spark.checkpoint import default_state_location
from dagster_kstreams.spark.reset import apply_reset, plan_reset
from dagster_kstreams.spark.session import build_spark_session
from dagster_kstreams.spark.state_location import TaskStateLocation, is_local_location
from dagster_kstreams.topology.application import ApplicationTopology
from dagster_kstreams.topology.cli import TOPOLOGY_HELP, application_id_argument, load_topology_reference

__all__ = ["live_worker_runs", "register"]

_RECENT_RUNS = 200


def live_worker_runs(instance: dg.DagsterInstance, app_id: str, now: float) -> list[str]:
    """The application's worker runs that are not finished (queued, starting, started, canceling),
    each as ``run <id> (<worker>, <status>, last heartbeat Ns ago on host:pid)``."""
    records = instance.get_run_records(dg.RunsFilter(tags={TAG_APP: app_id_tag(app_id)}), limit=_RECENT_RUNS)
    live = [record.dagster_run for record in records if not record.dagster_run.is_finished]
    beats = read_heartbeats(instance, [run.run_id for run in live])
    processes = read_processes(instance, [run.run_id for run in live])
    described = []
    for run in live:
        details = [run.tags.get(TAG_WORKER, "no worker tag"), run.status.value]
        if run.run_id in beats:
            details.append(f"last heartbeat {now - beats[run.run_id]:.0f}s ago")
        if run.run_id in processes:
            details.append(f"on {processes[run.run_id]}")
        described.append(f"run {run.run_id} ({', '.join(details)})")
    return described


def _check_not_running(admin: KafkaAdmin, app_id: str) -> list[str]:
    """What was checked, as lines; a :class:`CommandError` if the application runs."""
    members = admin.group_members(app_id)
    if members:
        raise CommandError(f"application {app_id!r} is running: consumer group {app_id!r} has members "
                           f"{', '.join(members)}; stop them first")
    checked = [f"checked: consumer group {app_id!r} has no members"]
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        return checked + ["checked: no Dagster instance (DAGSTER_HOME is not set), so no worker runs"]
    try:
        with dg.DagsterInstance.get() as instance:
            live = live_worker_runs(instance, app_id, time.time())
    except dg.DagsterError as error:
        raise CommandError(f"cannot open the Dagster instance of DAGSTER_HOME={home}: "
                           f"{str(error).strip().splitlines()[0]}") from None
    if live:
        raise CommandError(f"application {app_id!r} is running: {'; '.join(live)} in the Dagster instance of "
                           f"DAGSTER_HOME={home}; retire its workers and stop its lag sensor first")
    return checked + [f"checked: no worker run of {app_id!r} is queued or running in the Dagster instance of "
                      f"DAGSTER_HOME={home}"]


def _parse_time(text: str) -> dt.datetime:
    """ISO 8601; without a zone, local time (as Kafka Streams' tool reads ``--to-datetime``)."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(f"--to-datetime expects an ISO 8601 time such as 2024-05-01T12:00:00Z, got {text!r}") from None
    return moment if moment.tzinfo is not None else moment.astimezone()


def _reset(args: argparse.Namespace) -> int:
    app_id = application_id_argument(args.app_id)
    to_time = _parse_time(args.to_datetime) if args.to_datetime else None
    topology = load_topology_reference(args.topology)
    bootstrap, config = kafka_settings(args)
    admin = KafkaAdmin(bootstrap, config, timeout_s=args.timeout)
    application = with_broker_partitions(ApplicationTopology(topology, app_id), admin)
    checked = _check_not_running(admin, app_id)
    location = args.state_location or default_state_location()
    spark, started_here = None, SparkSession.getActiveSession() is None
    if not is_local_location(location):  # Hadoop's FileSystem reads and deletes it
        spark = build_spark_session("local[1]", {"spark.ui.enabled": "false", **dict(args.spark_conf)},
                                    app_name=f"dagster-kstreams-reset-{app_id}")
    try:
        state = TaskStateLocation(location, app_id, spark)
        plan = plan_reset(application, admin, state, to_time)
        if not plan.finds_the_application:
            raise CommandError(f"application {app_id!r} has no committed offsets or internal topics on {bootstrap} "
                               f"and no task state under {plan.state_location}: check --app-id and --state-location")
        print("\n".join(checked + plan.describe()), flush=True)
        if args.dry_run:
            print("dry run: nothing changed")
            return 0
        try:
            apply_reset(plan, admin, state, config)
        except FenceError as error:
            raise CommandError(f"could not take the tasks of {app_id!r} over before the reset (nothing changed): "
                               f"{error}") from None
    finally:
        if spark is not None and started_here:  # not a session the caller runs
            spark.stop()
    print(f"reset done: the next run of {app_id!r} processes its input from the offsets above")
    return 0


def register(subcommands: "argparse._SubParsersAction") -> None:
    parser = subcommands.add_parser(
        "reset", help="reset an application, as Kafka Streams' application reset tool does",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topology", help=TOPOLOGY_HELP)
    parser.add_argument("--app-id", required=True, help="application id (consumer group, internal topic prefix)")
    parser.add_argument("--to-datetime", default=None, metavar="TIME",
                        help="reset the input topics to the first record at or after TIME (ISO 8601, e.g. "
                             "2024-05-01T12:00:00Z; local time without a zone) instead of the earliest offsets")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    parser.add_argument("--state-location", default=None,
                        help="root of the task checkpoints, as given to `run` "
                             "(default $DAGSTER_KSTREAMS_STATE_LOCATION or <DAGSTER_KSTREAMS_HOME or ./.kstreams>/state)")
    add_kafka_options(parser)
    parser.add_argument("--spark-conf", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                        help="Spark setting, for a state location that is not a local directory (repeatable)")
    parser.set_defaults(handler=_reset)
