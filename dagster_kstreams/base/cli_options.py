"""Option types and option groups shared by the ``dagster-kstreams`` subcommands."""

from __future__ import annotations

import argparse

from dagster_kstreams.base.environment import BOOTSTRAP_SERVERS_ENV_VAR, DEFAULT_BOOTSTRAP_SERVERS, bootstrap_servers

__all__ = ["CommandError", "add_kafka_options", "kafka_settings", "key_value"]


class CommandError(Exception):
    """A mistake a user can fix from the command line (a wrong app id, store, reference ...):
    ``dagster-kstreams`` prints it as one line, without a stack trace."""


def key_value(text: str) -> tuple[str, str]:
    """``--x KEY=VALUE`` (repeatable with ``action="append"``; ``dict()`` of the list is the settings).

    argparse reports a malformed pair as ``argument --x: expects KEY=VALUE, got '...'``."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expects KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def add_kafka_options(parser: argparse.ArgumentParser, timeout: bool = True) -> None:
    """``--bootstrap-servers``, ``--kafka-config KEY=VALUE`` and (unless ``timeout`` is False)
    ``--timeout``, read back with :func:`kafka_settings`. The environment is read when the command
    runs, not when the parser is built, so a deprecated variable is only warned about by a
    command that uses Kafka."""
    parser.add_argument("--bootstrap-servers", default=None,
                        help=f"Kafka bootstrap servers (default ${BOOTSTRAP_SERVERS_ENV_VAR} or {DEFAULT_BOOTSTRAP_SERVERS})")
    parser.add_argument("--kafka-config", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                        help="librdkafka client setting, e.g. security.protocol=SASL_SSL (repeatable)")
    if timeout:
        parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                            help="how long to wait for Kafka to answer before giving up (default 10)")


def kafka_settings(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """``(bootstrap servers, client settings)`` from the options of :func:`add_kafka_options`."""
    return args.bootstrap_servers or bootstrap_servers(), dict(args.kafka_config)
