"""The `dagster-kstreams` command. Each command group registers itself with `register()`."""

from __future__ import annotations

import argparse
import sys

from dagster_kstreams import generator
from dagster_kstreams.base.cli_options import CommandError
from dagster_kstreams.base.home import LocalStackError
from dagster_kstreams.kafka import lag_cli
from dagster_kstreams.kafka.admin import KafkaAdminError
from dagster_kstreams.local import cli as local_cli
from dagster_kstreams.orchestration import reset_cli
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.spark import cli as spark_cli
from dagster_kstreams.spark import query_cli
from dagster_kstreams.spark.session import SparkSessionError
from dagster_kstreams.topology import cli as topology_cli
from dagster_kstreams.topology.reference import TopologyReferenceError

# Errors a user can act on: printed as one line, no stack trace.
USER_ERRORS: tuple[type[BaseException], ...] = (
    LocalStackError, CommandError, TopologyReferenceError, KafkaAdminError, UnsupportedTopologyError,
    SparkSessionError,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dagster-kstreams",
        description="Kafka Streams topologies in Python, run on Spark: run tasks, describe a topology, see "
                    "lag, query a store, reset an application; the local Kafka broker.")
    subcommands = parser.add_subparsers(dest="command", required=True)
    local_cli.register(subcommands)
    spark_cli.register(subcommands)
    topology_cli.register(subcommands)
    lag_cli.register(subcommands)
    query_cli.register(subcommands)
    reset_cli.register(subcommands)
    generator.register(subcommands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except USER_ERRORS as error:
        print(f"dagster-kstreams: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
