"""The `dagster-kstreams` command. Each command group registers itself with `register()`."""

from __future__ import annotations

import argparse
import sys

from dagster_kstreams import generator
from dagster_kstreams.local import cli as local_cli
from dagster_kstreams.base.home import LocalStackError
from dagster_kstreams.spark import cli as spark_cli

# Errors a user can act on: printed as one line, no stack trace.
USER_ERRORS: tuple[type[BaseException], ...] = (LocalStackError,)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dagster-kstreams", description=__doc__)
    subcommands = parser.add_subparsers(dest="command", required=True)
    local_cli.register(subcommands)
    spark_cli.register(subcommands)
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
