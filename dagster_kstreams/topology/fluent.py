"""Java's fluent configuration API in Python, shared by the DSL's configuration objects.

* ``with_*`` setters: on an immutable dataclass they return a copy (``dataclasses.replace``), as
  Java's fluent setters do in effect. The mixins below hold the setters several objects share;
  each class keeps its own.
* Static factories named like a field (``Grouped.keySerde(serde)`` beside ``grouped.keySerde()``):
  :func:`install_static_factories`.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping, Optional, Self

from .serdes import Serde

__all__ = ["WithName", "WithSerdes", "WithJoinSerdes", "WithLogging", "install_static_factories"]


class WithName:
    """``with_name`` of an object with a ``name`` field."""

    def with_name(self, name: str) -> Self:
        return replace(self, name=name)


class WithSerdes:
    """``with_key_serde`` / ``with_value_serde`` of an object with ``key_serde`` and ``value_serde`` fields."""

    def with_key_serde(self, serde: Serde) -> Self:
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Serde) -> Self:
        return replace(self, value_serde=serde)


class WithJoinSerdes(WithSerdes):
    """Plus ``with_other_value_serde``: the other side of a join."""

    def with_other_value_serde(self, serde: Serde) -> Self:
        return replace(self, other_value_serde=serde)


class WithLogging:
    """``with_logging_enabled`` / ``with_logging_disabled`` of an object with a ``logging_enabled`` field
    (the topic configuration Java takes is not kept)."""

    def with_logging_enabled(self, config: Optional[dict] = None) -> Self:
        return replace(self, logging_enabled=True)

    def with_logging_disabled(self) -> Self:
        return replace(self, logging_enabled=False)


class _ClassFactory:
    """On the class, a static factory; on an instance, the field of the same name.

    Java has both ``Grouped.keySerde(serde)`` (a factory) and ``grouped.keySerde()``; in Python
    ``Grouped.key_serde(serde)`` builds a ``Grouped`` while ``grouped.key_serde`` is the field.
    (The ``..._`` spellings, e.g. ``Repartitioned.number_of_partitions_(3)``, stay available.)
    """

    def __init__(self, factory):
        self.factory = factory

    def __get__(self, instance, owner):
        if instance is None:
            return self.factory
        raise AttributeError(self.factory.__name__)  # unset field: instances always have it set


def install_static_factories(cls: type, factories: Mapping[str, Callable]) -> None:
    """Make each ``cls.<field>`` a static factory on the class, the field on an instance."""
    for name, factory in factories.items():
        setattr(cls, name, _ClassFactory(factory))
