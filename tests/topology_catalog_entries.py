"""What the modules of the topology catalog share: a registry of entries, and the reading of a row.

Keys and values are strings; a record value is a comma-separated row such as "alice,fr,42"
(user, country, amount), so that the functions mean the same thing on both sides (the Java twins
read a row with CatalogRow.field).
"""

from __future__ import annotations

from collections.abc import Callable

TopologyFunction = Callable[[], object]


class CatalogEntries(dict[str, TopologyFunction]):
    """The entries of one family of the catalog: name -> the function that builds its topology, in
    definition order."""

    def add(self, fn: TopologyFunction) -> TopologyFunction:
        """Register ``fn`` under its function name (a decorator)."""
        self[fn.__name__] = fn
        return fn


def merged(*families: CatalogEntries) -> dict[str, TopologyFunction]:
    """One catalog of every family's entries, family by family; a name in two families is an error
    rather than one entry silently hiding the other."""
    catalog: dict[str, TopologyFunction] = {}
    for family in families:
        twice = sorted(set(catalog) & set(family))
        if twice:
            raise ValueError(f"catalog entries defined in two families: {twice}")
        catalog.update(family)
    return catalog


def field(row: str, index: int) -> str:
    return row.split(",")[index]
