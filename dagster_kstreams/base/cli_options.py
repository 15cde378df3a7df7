"""Option types shared by the ``dagster-kstreams`` subcommands."""

from __future__ import annotations

import argparse

__all__ = ["key_value"]


def key_value(text: str) -> tuple[str, str]:
    """``--x KEY=VALUE`` (repeatable with ``action="append"``; ``dict()`` of the list is the settings).

    argparse reports a malformed pair as ``argument --x: expects KEY=VALUE, got '...'``."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expects KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()
