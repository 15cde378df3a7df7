"""The catalog's families gather into one CATALOG: each entry under its function name, and a name
defined in two families refused rather than one entry silently hiding the other."""

from __future__ import annotations

import pytest

from topology_catalog import CATALOG
from topology_catalog_entries import CatalogEntries, merged
from topology_catalog_stateless import ENTRIES as STATELESS
from topology_catalog_tables import ENTRIES as TABLES


def test_an_entry_is_registered_under_its_function_name():
    family = CatalogEntries()

    @family.add
    def one_topology():
        return "built"

    assert list(family) == ["one_topology"] and family["one_topology"]() == "built"


def test_families_merge_in_order_and_a_name_in_two_of_them_is_refused():
    first, second = CatalogEntries(), CatalogEntries()
    first["a"], first["b"], second["c"] = (lambda: 1), (lambda: 2), (lambda: 3)
    assert list(merged(first, second)) == ["a", "b", "c"]
    second["b"] = lambda: 4
    with pytest.raises(ValueError, match=r"\['b'\]"):
        merged(first, second)


def test_the_catalog_holds_every_entry_of_its_families():
    assert set(STATELESS) <= set(CATALOG) and set(TABLES) <= set(CATALOG)
    assert CATALOG["issue_users_per_country"] is STATELESS["issue_users_per_country"]
