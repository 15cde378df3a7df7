"""``dagster-kstreams query MODULE:TOPOLOGY --app-id ID --store NAME [--key K]``: what a state store holds.

Reads the store from the checkpoints of its sub-topology's tasks under the state location, each
at its last committed batch (Spark's state data source), as Kafka Streams' interactive queries
read a store across all instances; tasks that never ran hold nothing yet. A running application
can be queried. A key-value store prints KEY and VALUE; a windowed or session store prints KEY,
the WINDOW (UTC; a session window's end is inclusive) and VALUE, a row per window. ``--key``
keeps one key (with all its windows); a key that is not text is matched by its JSON form. Values
that are not text print as JSON; ``--json`` prints every entry as one JSON document.

Spark starts with ``--master`` and stops at the end (a SparkSession already running in the
calling process is used instead, and left running).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Mapping
from typing import Any, Optional

from pyspark.sql import SparkSession

from dagster_kstreams.base.cli_options import CommandError, add_kafka_options, kafka_settings, key_value
from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.spark.cache_size_option import add_cache_size_options, cache_size_of
from dagster_kstreams.spark.checkpoint import default_state_location
from dagster_kstreams.spark.jvm import set_log_level
from dagster_kstreams.spark.session import DEFAULT_MASTER, build_spark_session
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.spark.state_location import TaskStateLocation, is_local_location
from dagster_kstreams.topology.application import ApplicationTopology
from dagster_kstreams.topology.cli import TOPOLOGY_HELP, application_id_argument, load_topology_reference
from dagster_kstreams.topology.node_specs import StoreType
from dagster_kstreams.topology.serdes import Windowed

__all__ = ["key_text", "register", "store_entries"]


def key_text(key: Any) -> str:
    """How a key is written on the command line: text as is, anything else as JSON."""
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return key.decode("utf-8", "backslashreplace")
    return json.dumps(key, sort_keys=True, default=str)


def _utc(epoch_ms: int) -> str:
    moment = dt.datetime.fromtimestamp(epoch_ms / 1000, tz=dt.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def store_entries(content: Mapping[Any, Any], key: Optional[str] = None) -> list[dict[str, Any]]:
    """``read_store``'s ``{key: value}`` as entries sorted by key (then window start): ``{"key",
    "value"}``, plus ``"window": {"start", "end"}`` (epoch ms) for a windowed or session key.
    With ``key``, only the entries whose key reads as ``key`` (:func:`key_text`)."""
    entries = []
    for stored, value in content.items():
        plain = stored.key if isinstance(stored, Windowed) else stored
        if key is not None and key_text(plain) != key:
            continue
        entry: dict[str, Any] = {"key": plain, "value": value}
        if isinstance(stored, Windowed):
            entry["window"] = {"start": stored.window.start, "end": stored.window.end}
        entries.append(entry)
    return sorted(entries, key=lambda entry: (key_text(entry["key"]), entry.get("window", {}).get("start", 0)))


def format_entries(entries: list[dict[str, Any]], store_type: StoreType) -> list[str]:
    """The text table of :func:`store_entries` (columns padded; windows as UTC intervals)."""
    closing = "]" if store_type in (StoreType.SESSION, StoreType.USER_SESSION) else ")"
    windowed = any("window" in entry for entry in entries)
    header = ["KEY", "WINDOW", "VALUE"] if windowed else ["KEY", "VALUE"]
    rows = [header]
    for entry in entries:
        value = entry["value"] if isinstance(entry["value"], str) else json.dumps(entry["value"], default=str)
        row = [key_text(entry["key"]), value]
        if "window" in entry:
            window = entry["window"]
            row.insert(1, f"[{_utc(window['start'])}, {_utc(window['end'])}{closing}")
        rows.append(row)
    widths = [max(len(row[column]) for row in rows) for column in range(len(header) - 1)]
    return ["  ".join([*(cell.ljust(width) for cell, width in zip(row, widths)), row[-1]]) for row in rows]


def _query(args: argparse.Namespace) -> int:
    app_id = application_id_argument(args.app_id)
    try:
        cache_size = cache_size_of(args)
    except ValueError as error:
        raise CommandError(str(error)) from None
    topology = load_topology_reference(args.topology)
    application = ApplicationTopology(topology, app_id)
    try:
        application.subtopology_of_store(args.store)
    except KeyError as error:
        raise CommandError(error.args[0]) from None
    store_type = topology.state_stores[args.store].type
    location = args.state_location or default_state_location()
    no_state = CommandError(f"application {app_id!r} has no task state under {location}: check --app-id and "
                            "--state-location (a task that never ran has none)")
    if is_local_location(location) and not TaskStateLocation(location, app_id).exists():
        raise no_state
    bootstrap, config = kafka_settings(args)
    KafkaAdmin(bootstrap, config).partition_counts(application.external_source_topics)  # reachable, topics exist
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # as `run` does: this interpreter on the workers
    started_here = SparkSession.getActiveSession() is None  # else: the caller's session, left running
    spark = build_spark_session(args.master, {"spark.ui.enabled": "false", **dict(args.spark_conf)},
                                app_name=f"dagster-kstreams-query-{app_id}")
    set_log_level(spark, "ERROR")
    try:
        if not TaskStateLocation(location, app_id, spark).exists():
            raise no_state
        runner = TaskRunner(topology, app_id, {"bootstrap.servers": bootstrap, **config},
                            state_location=location, spark=spark, statestore_cache_max_bytes=cache_size)
        entries = store_entries(runner.read_store(args.store), args.key)
    finally:
        if started_here:
            spark.stop()
    if args.key is not None and not entries:
        raise CommandError(f"store {args.store!r} of application {app_id!r} has no key {args.key!r}")
    if args.json:
        print(json.dumps({"application_id": app_id, "store": args.store, "type": store_type.value,
                          "entries": entries}, default=str))
    else:
        print("\n".join(format_entries(entries, store_type)))
    return 0


def register(subcommands: "argparse._SubParsersAction") -> None:
    parser = subcommands.add_parser(
        "query", help="print what a state store holds (read from the tasks' checkpoints)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topology", help=TOPOLOGY_HELP)
    parser.add_argument("--app-id", required=True, help="application id")
    parser.add_argument("--store", required=True, help="state store name, as in Materialized.as_(NAME)")
    parser.add_argument("--key", default=None, help="only this key (with all its windows)")
    parser.add_argument("--state-location", default=None,
                        help="root of the task checkpoints, as given to `run` "
                             "(default $DAGSTER_KSTREAMS_STATE_LOCATION or <DAGSTER_KSTREAMS_HOME or ./.kstreams>/state)")
    add_kafka_options(parser, timeout=False)
    parser.add_argument("--master", default=DEFAULT_MASTER, help=f"Spark master (default {DEFAULT_MASTER})")
    parser.add_argument("--spark-conf", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                        help="Spark setting (repeatable)")
    add_cache_size_options(parser)  # as given to `run`: the store is read the way the runs kept it
    parser.add_argument("--json", action="store_true", help="print the entries as one JSON document")
    parser.set_defaults(handler=_query)
