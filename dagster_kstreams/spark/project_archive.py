"""The ``dagster_kstreams`` package as a zip, for executors that do not have it installed.

A task's Python passes (``mapInArrow``, ``applyInPandasWithState``) run in executors' Python
workers, which unpickle functions of this package and so must import it. In local mode they
share the driver's machine and environment; on a cluster (``spark://``, ``k8s://``, ``yarn``)
they may not. The zip goes in ``spark.submit.pyFiles``: Spark serves it from the driver and
puts it first on each executor Python worker's path, so executors always run the driver's
version of the package, even where another one is installed. Executors still need the
package's dependencies (pandas, pyarrow, confluent-kafka) in the Python they run
(``spark.pyspark.python``).

The zip is made once per content of the package (its ``.py`` files), in the state home.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path
from typing import Optional

from dagster_kstreams.base.home import state_home

__all__ = ["ARCHIVE_DIRECTORY", "project_archive"]

ARCHIVE_DIRECTORY = "project-archive"
_PACKAGE_DIRECTORY = Path(__file__).resolve().parents[1]  # .../dagster_kstreams


def _package_files() -> list[Path]:
    return sorted(path for path in _PACKAGE_DIRECTORY.rglob("*.py") if "__pycache__" not in path.parts)


def project_archive(home: Optional[Path] = None) -> Path:
    """The path of the zip of this package as it is now, made unless it is there."""
    files = _package_files()
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.relative_to(_PACKAGE_DIRECTORY)}\0".encode())
        digest.update(path.read_bytes())
    target = (home or state_home()) / ARCHIVE_DIRECTORY / f"dagster_kstreams-{digest.hexdigest()[:16]}.zip"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, Path(_PACKAGE_DIRECTORY.name) / path.relative_to(_PACKAGE_DIRECTORY))
    partial.replace(target)  # another process making the same zip at once writes the same bytes
    return target
