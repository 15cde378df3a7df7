"""Settings read from the environment: one name per setting, all ``DAGSTER_KSTREAMS_*``.

``DAGSTER_KSTREAMS_BOOTSTRAP_SERVERS`` names the Kafka cluster for the CLI and the project's
``definitions.py`` alike (as ``DAGSTER_KSTREAMS_HOME`` names the state directory). The older
``KSTREAMS_BOOTSTRAP_SERVERS`` is still read when the new name is unset, with a one-line
deprecation warning on stderr, once per process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Optional, TextIO

__all__ = [
    "BOOTSTRAP_SERVERS_ENV_VAR",
    "DEFAULT_BOOTSTRAP_SERVERS",
    "DEPRECATED_BOOTSTRAP_SERVERS_ENV_VAR",
    "bootstrap_servers",
]

BOOTSTRAP_SERVERS_ENV_VAR = "DAGSTER_KSTREAMS_BOOTSTRAP_SERVERS"
DEPRECATED_BOOTSTRAP_SERVERS_ENV_VAR = "KSTREAMS_BOOTSTRAP_SERVERS"
DEFAULT_BOOTSTRAP_SERVERS = "127.0.0.1:9092"

_warned: set[str] = set()


def bootstrap_servers(environ: Optional[Mapping[str, str]] = None, warnings_to: Optional[TextIO] = None) -> str:
    """``$DAGSTER_KSTREAMS_BOOTSTRAP_SERVERS``, else the deprecated ``$KSTREAMS_BOOTSTRAP_SERVERS``
    (warned about once per process), else ``127.0.0.1:9092`` (what ``dagster-kstreams local up``
    starts)."""
    environ = os.environ if environ is None else environ
    configured = environ.get(BOOTSTRAP_SERVERS_ENV_VAR)
    if configured:
        return configured
    deprecated = environ.get(DEPRECATED_BOOTSTRAP_SERVERS_ENV_VAR)
    if deprecated:
        if DEPRECATED_BOOTSTRAP_SERVERS_ENV_VAR not in _warned:
            _warned.add(DEPRECATED_BOOTSTRAP_SERVERS_ENV_VAR)
            print(f"dagster-kstreams: warning: {DEPRECATED_BOOTSTRAP_SERVERS_ENV_VAR} is deprecated; "
                  f"set {BOOTSTRAP_SERVERS_ENV_VAR} instead", file=warnings_to or sys.stderr, flush=True)
        return deprecated
    return DEFAULT_BOOTSTRAP_SERVERS
