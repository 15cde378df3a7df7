"""A topology named by a reference string, as the CLI and the YAML component take it:
``package.module:attribute`` or ``path/to/file.py:attribute``.

The attribute may be a :class:`~.view.Topology`, a ``StreamsBuilder``, or a function returning
either (called with no arguments). The module is returned too, for callers that must ship its
functions to another process (the CLI registers it with Spark's cloudpickle).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from .view import Topology, as_topology

__all__ = ["TopologyReferenceError", "build_topology", "find_topology", "load_topology"]


class TopologyReferenceError(ValueError):
    """The reference is malformed, or names nothing that is (or builds) a topology."""


def load_topology(reference: str) -> tuple[Topology, ModuleType]:
    """The topology ``reference`` names, and the module it comes from.

    A ``.py`` path (or one with a path separator) is executed as a module named after the file's
    stem and entered in ``sys.modules`` under that name; anything else is imported. Raises
    :class:`TopologyReferenceError` for a malformed reference, a missing file, module or
    attribute, or an attribute that is not a topology; errors raised by the user's own code
    while it runs (other than a failed import) propagate unchanged.
    """
    target, module = find_topology(reference)
    return build_topology(reference, target), module


def find_topology(reference: str) -> tuple[Any, ModuleType]:
    """What ``reference`` names (a Topology, a StreamsBuilder or a function returning one) and its
    module, not yet built: the cheap half of :func:`load_topology`, for a caller that checks the
    reference before it starts what building needs (a SparkContext, for Column expressions)."""
    module_name, separator, attribute = reference.partition(":")
    if not separator or not module_name or not attribute:
        raise TopologyReferenceError(
            f"topology must look like 'package.module:attribute' or 'path/to/file.py:attribute', got {reference!r}")
    module = _load_module(reference, module_name)
    try:
        return getattr(module, attribute), module
    except AttributeError as error:
        raise TopologyReferenceError(
            f"cannot load topology {reference!r}: module {module_name!r} has no attribute {attribute!r}") from error


def build_topology(reference: str, target: Any) -> Topology:
    """The topology of ``target`` (what :func:`find_topology` found for ``reference``): a function
    is called with no arguments."""
    if callable(target) and not isinstance(target, Topology) and not hasattr(target, "build"):
        target = target()
    try:
        return as_topology(target)
    except TypeError:
        raise TopologyReferenceError(
            f"{reference!r} is a {type(target).__name__}, not a Topology or a StreamsBuilder") from None


def _load_module(reference: str, module_name: str) -> ModuleType:
    if module_name.endswith(".py") or os.sep in module_name:
        path = Path(module_name).resolve()
        if not path.is_file():
            raise TopologyReferenceError(f"cannot load topology {reference!r}: no such file: {path}")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise TopologyReferenceError(f"cannot load topology {reference!r}: {error}") from error
