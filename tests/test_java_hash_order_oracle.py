"""describe() prints source topics and store names in Java HashSet<String> iteration order;
the DSL's Python model of that order is checked here against a real java.util.HashSet."""

from __future__ import annotations

import random

import pytest

import oracle_harness
from dagster_kstreams.topology.describe import java_hash_order, java_hash_set_copy_order

ALPHABETS = [
    "abcdefghijklmnopqrstuvwxyz-_.0123456789",  # topic-like names
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789",  # generated names like KSTREAM-...-STATE-STORE
    "aé中\U0001f600",  # multi-byte UTF-8 and a surrogate pair in UTF-16
]


def _random_cases(count: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    cases = [[], [""], ["orders-eu", "orders-us"]]
    for _ in range(count):
        alphabet = rng.choice(ALPHABETS)
        # Sizes across the resize thresholds of a 16-bucket table (12, 24, 48).
        size = rng.choice([rng.randrange(1, 6), rng.randrange(6, 30), rng.randrange(30, 60)])
        names: list[str] = []
        while len(names) < size:
            name = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 24)))
            if name not in names:
                names.append(name)
        cases.append(names)
    return cases


@pytest.fixture(scope="module")
def cases_and_java_orders():
    cases = _random_cases(600, seed=20261122)
    return cases, oracle_harness.java_hash_set_orders(cases)


def test_java_hash_order_matches_hash_set_filled_by_add(cases_and_java_orders):
    cases, java = cases_and_java_orders
    mismatches = [(case, j[0]) for case, j in zip(cases, java) if java_hash_order(case) != j[0]]
    assert not mismatches, f"{len(mismatches)} of {len(cases)} differ, first: {mismatches[:2]}"


def test_java_hash_set_copy_order_matches_hash_set_copy_constructor(cases_and_java_orders):
    cases, java = cases_and_java_orders
    mismatches = [
        (case, j[1]) for case, j in zip(cases, java) if java_hash_set_copy_order(case) != j[1]
    ]
    assert not mismatches, f"{len(mismatches)} of {len(cases)} differ, first: {mismatches[:2]}"
