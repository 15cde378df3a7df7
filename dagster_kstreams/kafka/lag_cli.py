"""``dagster-kstreams lag [MODULE:TOPOLOGY] --app-id ID``: how far each task is behind.

With the topology: a row per task and input partition (committed offset of the consumer group
``ID``, end offset, lag), then each sub-topology's total; a partition the group never committed
shows ``-`` and counts from where the task would start (the log start, or the end for a source
declared ``latest``). Without it, the group's committed partitions only, as
``kafka-consumer-groups --describe --group ID`` lists them (no tasks: which sub-topology reads a
partition is the topology's to say). ``--json`` prints the same as one JSON document.

An application id the broker knows no committed offsets of is an error (a typo, or an
application that never ran).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from dagster_kstreams.base.cli_options import CommandError, add_kafka_options, kafka_settings
from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.kafka.task_lag import TaskPosition, task_positions, with_broker_partitions
from dagster_kstreams.topology.application import ApplicationTopology
from dagster_kstreams.topology.cli import TOPOLOGY_HELP, application_id_argument, load_topology_reference

__all__ = ["register"]


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    cells = [list(header)] + [["-" if value is None else str(value) for value in row] for row in rows]
    widths = [max(len(row[column]) for row in cells) for column in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]


def _unknown_app(app_id: str, bootstrap: str, where: str) -> CommandError:
    return CommandError(f"application {app_id!r} has no committed offsets {where}on {bootstrap}: "
                        "check --app-id (an application that never ran has none)")


def _task_report(positions: list[TaskPosition]) -> dict:
    subtopologies: dict[str, dict[str, int]] = {}
    for position in positions:
        total = subtopologies.setdefault(str(position.task.subtopology), {"lag": 0, "tasks": 0})
        total["lag"] += position.lag
        total["tasks"] += 1
    return {
        "tasks": [{"task": str(p.task), "subtopology": p.task.subtopology, "end": p.end, "position": p.position,
                   "lag": p.lag,
                   "partitions": [{"topic": tp.topic, "partition": tp.partition, "committed": tp.committed,
                                   "end": tp.end, "lag": tp.lag} for tp in p.partitions]}
                  for p in positions],
        "subtopologies": subtopologies,
        "total_lag": sum(p.lag for p in positions),
    }


def _print_tasks(report: dict) -> None:
    rows = []
    for task in report["tasks"]:
        if not task["partitions"]:
            rows.append([task["task"], "(no input topic yet)", None, None, None, 0])
        for tp in task["partitions"]:
            rows.append([task["task"], tp["topic"], tp["partition"], tp["committed"], tp["end"], tp["lag"]])
    print("\n".join(_table(["TASK", "TOPIC", "PARTITION", "COMMITTED", "END", "LAG"], rows)))
    for subtopology, total in report["subtopologies"].items():
        tasks = total["tasks"]
        print(f"sub-topology {subtopology}: lag {total['lag']} ({tasks} task{'' if tasks == 1 else 's'})")
    print(f"total lag {report['total_lag']}")


def _group_report(admin: KafkaAdmin, app_id: str) -> dict:
    committed = admin.committed_offsets(app_id)
    if not committed:
        raise _unknown_app(app_id, admin.bootstrap_servers, "")
    end = admin.end_offsets(sorted({tp.topic for tp in committed}))
    partitions = [{"topic": tp.topic, "partition": tp.partition, "committed": offset, "end": end[tp],
                   "lag": max(0, end[tp] - offset)} for tp, offset in sorted(committed.items())]
    return {"partitions": partitions, "total_lag": sum(row["lag"] for row in partitions)}


def _lag(args: argparse.Namespace) -> int:
    app_id = application_id_argument(args.app_id)
    bootstrap, config = kafka_settings(args)
    topology = load_topology_reference(args.topology) if args.topology else None
    admin = KafkaAdmin(bootstrap, config, timeout_s=args.timeout)
    if topology is not None:
        application = with_broker_partitions(ApplicationTopology(topology, app_id), admin)
        positions = task_positions(application, admin)
        if not any(tp.committed is not None for position in positions for tp in position.partitions):
            raise _unknown_app(app_id, bootstrap, "for the topics of this topology ")
        report = _task_report(positions)
    else:
        report = _group_report(admin, app_id)
    if args.json:
        print(json.dumps({"application_id": app_id, "bootstrap_servers": bootstrap, **report}))
        return 0
    print(f"application {app_id!r} (consumer group {app_id}) on {bootstrap}")
    if topology is not None:
        _print_tasks(report)
    else:
        rows = [[row["topic"], row["partition"], row["committed"], row["end"], row["lag"]] for row in report["partitions"]]
        print("\n".join(_table(["TOPIC", "PARTITION", "COMMITTED", "END", "LAG"], rows)))
        print(f"total lag {report['total_lag']} (name the topology for tasks and sub-topologies)")
    return 0


def register(subcommands: "argparse._SubParsersAction") -> None:
    parser = subcommands.add_parser(
        "lag", help="committed offset, end offset and lag of each task of an application",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topology", nargs="?", default=None, help=TOPOLOGY_HELP + "; without it, per partition only")
    parser.add_argument("--app-id", required=True, help="application id (the consumer group)")
    add_kafka_options(parser)
    parser.add_argument("--json", action="store_true", help="print the report as one JSON document")
    parser.set_defaults(handler=_lag)
