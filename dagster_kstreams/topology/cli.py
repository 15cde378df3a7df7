"""``dagster-kstreams describe MODULE:TOPOLOGY [--json]``: a topology as Kafka Streams describes it.

The text is ``Topology.describe()`` exactly as Kafka Streams prints it (``System.out.println``):
same node names, sub-topology numbering and layout. ``--json`` prints the same description as
one JSON document (sub-topologies, their nodes in the printed order, each node's type, topics or
stores, predecessors and successors) plus the topology's repartition topics and state stores.
No broker and no Spark are needed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from types import ModuleType
from typing import Any

from dagster_kstreams.base.cli_options import CommandError
from dagster_kstreams.topology.application import check_application_id
from dagster_kstreams.topology.reference import build_topology, find_topology
from dagster_kstreams.topology.view import Topology

__all__ = ["TOPOLOGY_HELP", "application_id_argument", "find_topology_reference", "load_topology_reference",
           "register"]

TOPOLOGY_HELP = ("MODULE:TOPOLOGY, e.g. assets.word_count:build_topology or path/to/app.py:topology "
                 "(a Topology, a StreamsBuilder, or a function returning one)")


def load_topology_reference(reference: str) -> Topology:
    """The topology ``reference`` names (how every command that takes ``MODULE:TOPOLOGY`` loads
    it); modules next to the caller are importable, as with
    ``python -m``. A bad reference raises
    :class:`~dagster_kstreams.topology.reference.TopologyReferenceError` (one line)."""
    target, _module = find_topology_reference(reference)
    return build_topology(reference, target)


def find_topology_reference(reference: str) -> tuple[Any, ModuleType]:
    """What ``reference`` names and its module, not yet built (for ``run``, which builds it once
    Spark runs); modules next to the caller are importable, as with ``python -m``."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return find_topology(reference)


def application_id_argument(text: str) -> str:
    """``--app-id``, checked by Kafka Streams' rule (a :class:`CommandError` naming it)."""
    try:
        return check_application_id(text)
    except ValueError as error:
        raise CommandError(str(error)) from None


def describe_json(topology: Topology) -> dict:
    """``--json``: the description's data, and the facts a tool wants next to it."""
    return {
        **topology.describe().as_dict(),
        "repartition_topics": sorted(topology.repartition_topics),
        "state_stores": {name: topology.subtopology_of_store(name).id for name in sorted(topology.state_stores)},
    }


def _describe(args: argparse.Namespace) -> int:
    topology = load_topology_reference(args.topology)
    if args.json:
        print(json.dumps(describe_json(topology), indent=2))
    else:
        print(topology.describe())  # println: the description, then a newline
    return 0


def register(subcommands: "argparse._SubParsersAction") -> None:
    parser = subcommands.add_parser(
        "describe", help="print a topology as Kafka Streams' Topology.describe() does",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topology", help=TOPOLOGY_HELP)
    parser.add_argument("--json", action="store_true", help="print the description as JSON")
    parser.set_defaults(handler=_describe)
