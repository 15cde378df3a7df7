"""Where the local stack keeps its state: jars, broker data, pid files, logs, DAGSTER_HOME."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV_VAR = "DAGSTER_KSTREAMS_HOME"


class LocalStackError(RuntimeError):
    """A problem with the local stack that a user can fix (missing tool, taken port, ...).

    The CLI prints its message as one line instead of a stack trace.
    """


def state_home() -> Path:
    """``$DAGSTER_KSTREAMS_HOME``, or ``<cwd>/.kstreams`` when it is unset."""
    configured = os.environ.get(HOME_ENV_VAR)
    return Path(configured).expanduser().resolve() if configured else Path.cwd() / ".kstreams"
